"""The endpoint's inference-components section: the instance pool, the copies and where they are placed."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveInt

from peagle.catalog import StrictModel
from peagle.settings.refs import spelled


class InferenceComponentSettings(StrictModel):
    """Inference-component mode: the endpoint keeps managed instance scaling and each model runs as
    a component with its own GPUs, CPU and memory; copies and instances may scale to zero.

    Copies per instance, GPUs, CPU and memory per copy come from the plan (`peagle plan`)."""

    min_instances: int = Field(
        default=0,
        ge=0,
        le=100,
        description="managed instance scaling floor; 0: scale to zero",
        json_schema_extra=spelled("EndpointMode.inference_components(min_instances=...)"),
    )
    max_instances: PositiveInt = Field(
        default=2,
        le=100,
        description="managed instance scaling ceiling",
        json_schema_extra=spelled("EndpointMode.inference_components(max_instances=...)"),
    )
    initial_copies: PositiveInt = Field(
        default=1,
        description="copies started by the deploy",
        json_schema_extra=spelled("EndpointMode.inference_components(initial_copies=...)"),
    )
    accelerators_per_copy: PositiveInt | None = Field(
        default=None,
        json_schema_extra=spelled("EndpointMode.inference_components(accelerators_per_copy=...)"),
        description="GPUs per copy (vLLM tensor_parallel_size); unset: the fewest on which the profile's full "
        "context fits, else the fewest on which the model fits at all",
    )
    # On by default: nothing AWS publishes argues against it, and a scale-out copy may start sooner.
    # - What it does: EnableCaching "Sets whether the endpoint that hosts the inference component caches the model
    #   artifacts and container image. With caching enabled, the endpoint caches this data in each instance that it
    #   provisions for the inference component. That way, the inference component deploys faster during the auto
    #   scaling process. If caching isn't enabled, the inference component takes longer to deploy because of the
    #   time it spends downloading the data" (SageMaker API Reference, InferenceComponentDataCacheConfig,
    #   https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentDataCacheConfig.html).
    #   DescribeInferenceComponent reports it back: "Indicates whether the inference component caches model
    #   artifacts as part of the auto scaling process" (InferenceComponentDataCacheConfigSummary).
    # - Where it helps: "This approach reduced the cold start latency for scaling inference component operations
    #   that reuse existing instances"; a new instance is "the scenario where our previous instance-store-based
    #   caching couldn't help" ("Introducing container caching in Amazon SageMaker AI for faster model scaling",
    #   AWS Machine Learning Blog, 2026-06-16, https://aws.amazon.com/blogs/machine-learning/introducing-container-
    #   caching-in-amazon-sagemaker-ai-for-faster-model-scaling/; read in copies of the post, not on the AWS page).
    #   So a wake from zero, whose instances managed instance scaling released, gains nothing; `peagle simulate`
    #   runs the saving both ways (its data_cache reading): AWS gives no figure.
    # - What it costs: no charge, storage requirement (volume size, instance storage) or restriction (ModelName
    #   or container specification, scale to zero, managed instance scaling) is stated in the API reference pages
    #   above, InferenceComponentSpecification, or the CloudFormation reference; not verified against a pricing
    #   page, which this search did not reach. The cache is the instance's own storage, already paid for.
    # - Changing it: "Update requires: No interruption" (CloudFormation Template Reference, AWS::SageMaker::
    #   InferenceComponent InferenceComponentDataCacheConfig, https://docs.aws.amazon.com/AWSCloudFormation/latest/
    #   TemplateReference/aws-properties-sagemaker-inferencecomponent-inferencecomponentdatacacheconfig.html).
    data_cache: bool = Field(
        default=True,
        description="cache the model artifacts and the container image on each instance SageMaker provisions for "
        "the component, so a copy added on an instance that already hosts one starts without downloading them "
        "again (InferenceComponentDataCacheConfig.EnableCaching; changing it updates the component without "
        "interruption). On by default: AWS documents no charge or restriction for it. It does not help a copy "
        "that needs a new instance, such as a wake from zero after the instances were released",
        json_schema_extra=spelled("EndpointMode.inference_components(data_cache=...)"),
    )
    # Stated in every component's template (peagle_cdk/component_endpoint.py): AWS documents no default.
    # - The choice: InferenceComponentSchedulingConfig.PlacementStrategy "SPREAD Distributes copies evenly across
    #   available instances for better resilience. BINPACK Packs copies onto fewer instances to optimize resource
    #   utilization"; it decides "how inference component copies are placed across available instances when copies
    #   are added or removed" (botocore 1.44.5, SageMaker service-2.json; SageMaker API Reference,
    #   https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentSchedulingConfig.html). No
    #   default is stated there, in the CloudFormation schema or in the CDK's CfnInferenceComponent.
    # - Why BINPACK: the endpoint's managed instance scaling releases instances with IDLE_RELEASE, "Releases instances
    #   that have no hosted inference component copies" (API_ProductionVariantManagedInstanceScalingScaleInPolicy):
    #   only an emptied instance stops being billed, and BINPACK is the strategy that empties them. SPREAD can leave one
    #   copy on each instance after a scale-in, and every such instance billed (docs/inference-components.md).
    # - Changing it: AWS::SageMaker::InferenceComponent has no createOnlyProperties (CloudFormation resource schema),
    #   so the component is updated in place (UpdateInferenceComponent).
    placement: Literal["BINPACK", "SPREAD"] = Field(
        default="BINPACK",
        description="how SageMaker places the component's copies on the instances (SchedulingConfig.PlacementStrategy"
        "). BINPACK (the default): as few instances as hold them, so a scale-in empties instances and managed instance "
        "scaling (IDLE_RELEASE) releases them. SPREAD: evenly over the instances, for resilience; after a scale-in an "
        "instance that still holds one copy is kept and billed whole (`peagle simulate` and the cost alarm count it)",
        json_schema_extra=spelled("EndpointMode.inference_components(placement=...)"),
    )
    # The instance pool's ManagedInstanceScaling.ScaleInPolicy.Strategy, stated in every template
    # (peagle_cdk/component_endpoint.py), read back by `peagle simulate` and priced by the cost figures.
    # - The values: "IDLE_RELEASE Releases instances that have no hosted inference component copies. CONSOLIDATION
    #   Consolidates inference component copies onto fewer instances to release more instances. Consolidation honors
    #   the scheduling configuration of each inference component" (SageMaker API Reference,
    #   https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantManagedInstanceScalingScaleInPolicy.html;
    #   botocore 1.44.5's SageMaker model, ManagedInstanceScalingScaleInStrategy "enum": ["IDLE_RELEASE",
    #   "CONSOLIDATION"], Strategy required). The CloudFormation schema of AWS::SageMaker::EndpointConfig (cfn-lint
    #   1.58.0, 3529e18613d41f86.json, ScaleInPolicy) allows the same: "enum": ["CONSOLIDATION", "IDLE_RELEASE"].
    #   Neither states a default, so the template always states one.
    # - Why IDLE_RELEASE by default: with BINPACK a scale-in already empties instances, without moving live copies
    #   (each move loads the model on another instance); and every template stated it before this setting existed.
    # - Changing it: ProductionVariants is a createOnlyProperty of AWS::SageMaker::EndpointConfig (same schema), so
    #   CloudFormation makes a new endpoint config and updates the endpoint to it.
    scale_in_policy: Literal["IDLE_RELEASE", "CONSOLIDATION"] = Field(
        default="IDLE_RELEASE",
        description="how managed instance scaling releases the pool's instances (ManagedInstanceScaling.ScaleInPolicy."
        "Strategy). IDLE_RELEASE (the default): the instances that host no copy. CONSOLIDATION: also moves copies onto "
        "fewer instances to release more, 20 min after the last change by default (`peagle simulate` and the cost "
        "alarm count it)",
        json_schema_extra=spelled("EndpointMode.inference_components(scale_in_policy=...)"),
    )
    scale_to_zero_after_idle_minutes: int | None = Field(
        default=None,
        ge=5,
        le=1440,
        json_schema_extra=spelled("EndpointMode.inference_components(scale_to_zero_after=...)"),
        description="with autoscaling.min_capacity 0 (copies): no request (served or refused) for this long removes the last copy; unset: "
        "the copy's start budget + 2 min (`peagle plan` prints it), the shortest window that never removes a copy "
        "before it serves; longer keeps a copy warm longer (cost) and saves cold starts (waits)",
    )
