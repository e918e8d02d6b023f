"""peagle_cdk: P-EAGLE speculative decoding on Amazon SageMaker with vLLM, as CDK constructs.

    from peagle_cdk import PeagleEndpoint, EndpointMonitoring, ModelWeights

    endpoint = PeagleEndpoint(stack, "Chat", model="gpt-oss-20b", instance_type="ml.g6e.xlarge",
                              weights=ModelWeights.from_bucket(bucket, "models/gpt-oss-20b/"))
    EndpointMonitoring(stack, "ChatMonitoring", endpoint=endpoint, alarm_action=SnsAction(topic))

Named `peagle_cdk` rather than `constructs`: a top-level package called `constructs` would shadow
the `constructs` library that aws-cdk-lib itself imports, and a generic name could collide with
another package in your environment.
"""

from peagle.catalog import InstanceType, ModelPair
from peagle_cdk.access_checks import RuntimeAccessChecks
from peagle_cdk.catalog_ids import InstanceTypes, ModelPairs, Profiles
from peagle_cdk.endpoint_monitoring import AlarmThresholds, EndpointMonitoring
from peagle_cdk.endpoint_props import (
    AbBaseline,
    Autoscaling,
    DataCapture,
    EndpointMode,
    ModelWeights,
    Rollout,
    Routing,
    ScheduledCapacity,
    ServingImage,
    Speculation,
)
from peagle_cdk.model_artifacts import ModelArtifactsLocation
from peagle_cdk.peagle_endpoint import PeagleEndpoint
from peagle_cdk.private_network import INTERFACE_ENDPOINTS, PrivateNetwork
from peagle_cdk.serving_image_build import BaseImage
from peagle_cdk.settings_model import MeasuredCapacity, ProfileOverrides, SloSettings

__all__ = [
    "AbBaseline",
    "AlarmThresholds",
    "BaseImage",
    "Autoscaling",
    "DataCapture",
    "EndpointMode",
    "EndpointMonitoring",
    "INTERFACE_ENDPOINTS",
    "InstanceTypes",
    "InstanceType",
    "MeasuredCapacity",
    "ModelArtifactsLocation",
    "ModelPair",
    "ModelPairs",
    "ModelWeights",
    "PeagleEndpoint",
    "PrivateNetwork",
    "ProfileOverrides",
    "Profiles",
    "Rollout",
    "Routing",
    "RuntimeAccessChecks",
    "ScheduledCapacity",
    "ServingImage",
    "SloSettings",
    "Speculation",
]
