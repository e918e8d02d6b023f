"""The P-EAGLE endpoint: model, endpoint config and endpoint for one plan."""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_kms as kms
from constructs import Construct

from cdk_constructs.nag import acknowledge

from cdk_constructs.model_artifacts import ModelArtifactsLocation, artifacts_bucket_name, pair_prefix
from cdk_constructs.peagle_endpoint import PeagleEndpoint
from cdk_constructs.peagle_model import PeagleModel
from peagle.config import DeploymentConfig
from peagle.container_env import container_environment
from peagle.planner import Plan


class EndpointStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: DeploymentConfig,
        plan: Plan,
        artifacts_key: kms.IKey | None = None,
        **kwargs,
    ) -> None:
        """
        :param artifacts_key: KMS key of the project's artifacts bucket (ArtifactsStack); used when
            config.artifacts.s3_uri is unset and weights live in that bucket under models/<pair>/.
        """
        super().__init__(scope, id, **kwargs)
        if config.artifacts.s3_uri:
            key = (
                kms.Key.from_key_arn(self, "ArtifactsKey", config.artifacts.kms_key_arn)
                if config.artifacts.kms_key_arn
                else None
            )
            artifacts = ModelArtifactsLocation.from_s3_uri(config.artifacts.s3_uri, key=key)
        else:
            artifacts = ModelArtifactsLocation(
                bucket_name=artifacts_bucket_name(config.name), prefix=pair_prefix(plan.pair_id), key=artifacts_key
            )
        vpc = config.network.vpc
        self.model = PeagleModel(
            self,
            "PeagleModel",
            environment=container_environment(plan, config),
            artifacts=artifacts,
            network_isolation=config.network.isolation,
            subnet_ids=vpc.subnet_ids if vpc else None,
            security_group_ids=vpc.security_group_ids if vpc else None,
        )
        volume_key = None
        if not plan.instance.local_nvme:
            volume_key = kms.Key(
                self, "VolumeKey", enable_key_rotation=True, description="P-EAGLE endpoint ML storage volume"
            )
        self.endpoint = PeagleEndpoint(
            self,
            "PeagleEndpoint",
            model=self.model,
            instance_type=plan.instance_type,
            instance_count=plan.instance_count,
            container_startup_timeout_seconds=plan.container_startup_timeout_seconds,
            model_download_timeout_seconds=plan.model_download_timeout_seconds,
            volume_key=volume_key,
        )
        if volume_key is None:
            acknowledge(self.endpoint.endpoint_config, "NIST.800.53.R5-SageMakerEndpointConfigurationKMSKeyConfigured",
                f"{plan.instance_type} has local NVMe instance storage: SageMaker rejects a KmsKeyId "
                "there, and NVMe instance store is encrypted at rest by the Nitro hardware.",
            )

        CfnOutput(self, "EndpointName", value=self.endpoint.endpoint_name, description="SageMaker endpoint to invoke")
        CfnOutput(self, "ExecutionRoleArn", value=self.model.execution_role.role.role_arn)
        CfnOutput(self, "ImageUri", value=self.model.image.image_uri)
        CfnOutput(
            self,
            "ModelDataS3Uri",
            value=artifacts.s3_uri,
            description="Prefix the endpoint mounts at /opt/ml/model; stage target/ and drafter/ here before deploying",
        )
