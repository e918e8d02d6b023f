"""An endpoint whose instances host inference components: managed instance scaling on the one
production variant, each model a component with its own GPUs, CPU and memory, copies that
scale with load and to zero.

Facts behind it (botocore 1.44.5's SageMaker model and the CloudFormation resource schemas as
shipped with cfn-lint 1.58.0, unless a URL is given):

- The endpoint config's variant names no model ("required": ["VariantName"]); each
  AWS::SageMaker::InferenceComponent names its endpoint, variant and Model.
- ManagedInstanceScaling: Status "ENABLED" | "DISABLED"; MinInstanceCount "min 0";
  MaxInstanceCount "min 1". InitialInstanceCount stays "minimum": 1, so a deploy always starts
  an instance. An endpoint "can scale to and from zero instances only if it hosts inference
  components", with "MinInstanceCount parameter to 0" (SageMaker Developer Guide, "Scale an
  endpoint to zero instances",
  https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-zero-instances.html).
- ScaleInPolicy.Strategy: "IDLE_RELEASE Releases instances that have no hosted inference
  component copies. CONSOLIDATION Consolidates inference component copies onto fewer instances
  to release more instances."
- Specification.SchedulingConfig.PlacementStrategy: "SPREAD Distributes copies evenly across available
  instances for better resilience. BINPACK Packs copies onto fewer instances to optimize resource
  utilization"; the config "determines how inference component copies are placed across available
  instances when copies are added or removed". botocore states no default; the placement and the
  scale-in policy are therefore both stated, chosen together (the pool's settings: placement and scale_in_policy).
- ExecutionRoleArn on the endpoint config: AWS's own example passes it with inference
  components (the launch post of scale to zero) and a config without it is refused in practice;
  the API reference does not say so. We always set it.
- EnableNetworkIsolation and VpcConfig on the endpoint config: CreateEndpointConfig gained them,
  with ExecutionRoleArn, in the release that added CreateInferenceComponent (botocore 1.33.3, commit
  c7af083fb, botocore/data/sagemaker/2017-07-24/service-2.json; EnableNetworkIsolation: "Sets whether
  all model containers deployed to the endpoint are isolated. If they are, no inbound or outbound
  network calls can be made to or from the model containers."). AWS's Python SDK sets all three on the
  endpoint config for an inference-component endpoint only, from the model's own settings
  (aws/sagemaker-python-sdk a24812666d25, sagemaker-serve/src/sagemaker/serve/model_builder.py, the
  INFERENCE_COMPONENT_BASED branch: ``vpc_config=self.vpc_config,
  enable_network_isolation=self._enable_network_isolation, role=self.role_arn``; the single-model
  branch passes none of them). So the config carries the Models' isolation and VPC placement.
- ComputeResourceRequirements: NumberOfAcceleratorDevicesRequired "minimum": 1,
  NumberOfCpuCoresRequired "minimum": 0.25, MinMemoryRequiredInMb "minimum": 128 and required by
  the API (botocore: 'required': ['MinMemoryRequiredInMb']) though not by CloudFormation.
- RuntimeConfig.CopyCount is required by the API; a component is not created with 0 copies in
  practice, so the deploy starts ``initial_copies`` >= 1.
- RollingUpdatePolicy: the API requires MaximumBatchSize and WaitIntervalInSeconds; "The value
  must be between 5% to 50% of the copy count of the inference component."
  (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentRollingUpdatePolicy.html)
- Per-component metrics: AWS/SageMaker with dimension InferenceComponentName (Invocations,
  InvocationsPerCopy, ModelLatency, Invocation4XXErrors, Invocation5XXErrors);
  /aws/sagemaker/InferenceComponents for GPUUtilizationNormalized and GPUMemoryUtilizationNormalized,
  "reported by each copy", 0-100 over the copy's reservation ("Amazon SageMaker AI metrics in Amazon
  CloudWatch", https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html).
- NoCapacityInvocationFailures (AWS/SageMaker, dimension InferenceComponentName) is not on that
  page; the page that documents it is "Scale an endpoint to zero instances"
  (https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-zero-instances.html), whose
  scale-out alarm is on it: "your endpoint will automatically provision an instance soon after it
  receives an inference request that it can't respond to".
- Container logs: /aws/sagemaker/InferenceComponents/<component name>. No AWS page we found
  states it; public tooling that reads component logs uses that group. Unverified (docs/inference-components.md,
  "Not verified on AWS").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct, IDependable

from peagle_cdk.costed_unit import CostedUnit
from peagle_cdk.endpoint_logs import EndpointLogGroup, component_log_group_name
from peagle_cdk.endpoint_metrics_config import metrics_config
from peagle_cdk.endpoint_routing import routing_config
from peagle_cdk.endpoint_scaling import ScalableCopyCount, autoscaling_service_role
from peagle_cdk.peagle_model import PeagleModel
from peagle_cdk.planned_scaling import scale_copies
from peagle_cdk.rollout import RolloutPolicy
from peagle_cdk.serving_metrics import ServingMetrics
from peagle_cdk.serving_unit import INVOKE_ACTIONS, ServingUnits

if TYPE_CHECKING:
    from peagle.planning.planner import Plan
    from peagle.planning.unit_plan import ComponentPool

COMPONENT_INSTANCE_NAMESPACE = "/aws/sagemaker/InferenceComponents"
# The one production variant: the pool of instances the components are placed on.
POOL_VARIANT_NAME = "AllTraffic"
# SchedulingConfig.AvailabilityZoneBalance: CloudFormation requires it beside PlacementStrategy ("required":
# ["PlacementStrategy", "AvailabilityZoneBalance"] in the resource schema of AWS::SageMaker::InferenceComponent,
# cfn-lint 1.58.0's eddb9f584c0b6de8.json; aws-cdk-lib 2.275's InferenceComponentSchedulingConfigProperty takes both
# as required), although the API has it optional (botocore 1.44.5: "required": ["PlacementStrategy"]).
# EnforcementMode: "PERMISSIVE" is its only value ("The endpoint attempts to balance copies across Availability Zones
# but proceeds with scheduling even if balance can't be achieved"). MaxImbalance: "The maximum allowed difference in
# the number of inference component copies between any two Availability Zones. ... A copy placement is allowed if it
# reduces imbalance or the resulting imbalance is within this value. Default value: 0", range 0-100; and with a
# balance set, the placement strategy "applies to placement within each Availability Zone" (botocore, same model).
# At the default 0 a scale-in that empties an instance in one zone would be held back to keep the zones even, which
# keeps an instance per zone billed: the balance would overrule BINPACK. Stated at its maximum, so only an endpoint of
# more than 100 copies can meet it. Not verified on AWS.
AZ_BALANCE_ENFORCEMENT = "PERMISSIVE"
AZ_BALANCE_MAX_IMBALANCE = 100


def placement_config(strategy: str) -> sagemaker.CfnInferenceComponent.InferenceComponentSchedulingConfigProperty:
    """Where SageMaker puts a component's copies as they are added or removed: ``strategy`` (BINPACK or SPREAD), with
    the Availability Zone balance CloudFormation requires stated so that it never overrules it (AZ_BALANCE_*)."""
    return sagemaker.CfnInferenceComponent.InferenceComponentSchedulingConfigProperty(
        placement_strategy=strategy,
        availability_zone_balance=sagemaker.CfnInferenceComponent.InferenceComponentAvailabilityZoneBalanceProperty(
            enforcement_mode=AZ_BALANCE_ENFORCEMENT, max_imbalance=AZ_BALANCE_MAX_IMBALANCE
        ),
    )


def id_suffix(name: str) -> str:
    """A unit's name as a construct-id suffix: peagle-baseline -> PeagleBaseline."""
    return "".join(part.title() for part in name.replace("_", "-").split("-"))


@dataclass(frozen=True)
class ComponentSpec:
    """One inference component: its model, its plan and the plan's pool (the copy's compute, its copies and the
    component's settings as given: what acts only here is read from them). Keep ``name`` stable: scaling, alarms
    and clients key on it."""

    name: str
    model: PeagleModel
    plan: Plan
    pool: ComponentPool


class ComponentEndpoint(Construct, ServingMetrics):
    """The endpoint, its instance pool and its components; each component is a serving unit
    (peagle_cdk/serving_unit.py) that rolls out, scales and logs on its own, the first one primary
    (metrics default to it)."""

    # The execution role's statements that let the units write their logs (one per component).
    LOG_GRANT_SID = "WriteComponentLogs"

    @staticmethod
    def managed_of(units: list[str]) -> list[str]:
        """The units that roll out, scale and log on their own: every component."""
        return list(units)

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint_name: str,
        execution_role: iam.IRole,
        components: list[ComponentSpec],
        execution_role_policy: IDependable | None = None,
        subnet_ids: list[str] | None = None,
        security_group_ids: list[str] | None = None,
        volume_key: kms.IKey | None = None,
    ) -> None:
        """The instance pool (type, count, AMI, managed instance scaling, routing, network isolation,
        observability) is the primary component's plan's: the components share it.

        :param execution_role_policy: the policy that grants ``execution_role`` its permissions when it
            is not part of the role construct (a customer-managed policy); the endpoint waits for it.
            Default: the role alone, whose default (inline) policy it already covers.
        :param subnet_ids: private subnets the instances run in, with ``security_group_ids``
            (default: SageMaker's managed network). Give the components' Models the same placement.
        """
        super().__init__(scope, id)
        if not components:
            raise ValueError("ComponentEndpoint needs at least one component")
        self.units = [spec.name for spec in components]
        self.primary_unit = self.units[0]
        self.managed_units = self.managed_of(self.units)
        self._endpoint_name = endpoint_name
        self.specs = {spec.name: spec for spec in components}
        primary = components[0]
        retention = primary.plan.observability.log_retention_days
        self.log_groups = {spec.name: self._log_group(spec, retention) for spec in components}
        self.endpoint_config = self._endpoint_config(
            primary,
            execution_role=execution_role,
            subnet_ids=subnet_ids,
            security_group_ids=security_group_ids,
            volume_key=volume_key,
        )
        self.endpoint = sagemaker.CfnEndpoint(
            self,
            "Endpoint",
            endpoint_name=endpoint_name,
            endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
        )
        # The variant names no Model, so nothing else makes the endpoint wait for the role's permissions
        # (in variant mode the Model it names does); yet the endpoint is created with the config's role:
        # "For Amazon SageMaker inference component based endpoint, it will not pass Model names during
        # endpoint creation. Instead, ExecutionRoleArn will be needed in the endpoint config to create
        # Endpoint" (aws/sagemaker-python-sdk, sagemaker-core/src/sagemaker/core/helper/session_helper.py,
        # endpoint_from_production_variants). CDK's SageMaker Model waits on its role for that reason:
        # "the following line ensures that the role and its AWS::IAM::Policy resource are deployed prior
        # to model creation" (aws/aws-cdk, packages/@aws-cdk/aws-sagemaker-alpha/lib/model.ts).
        self.endpoint.node.add_dependency(execution_role)
        if execution_role_policy is not None:
            self.endpoint.node.add_dependency(execution_role_policy)
        self.inference_components = {spec.name: self._inference_component(spec) for spec in components}

    def _log_group(self, spec: ComponentSpec, retention_days: int) -> EndpointLogGroup:
        return EndpointLogGroup(
            self,
            "Logs" + self._id_suffix(spec.name),
            endpoint_name=self._endpoint_name,
            retention_days=retention_days,
            log_group_name=component_log_group_name(spec.name),
        )

    def _endpoint_config(
        self,
        primary: ComponentSpec,
        *,
        execution_role: iam.IRole,
        subnet_ids: list[str] | None,
        security_group_ids: list[str] | None,
        volume_key: kms.IKey | None,
    ) -> sagemaker.CfnEndpointConfig:
        plan, pool = primary.plan, primary.pool
        return sagemaker.CfnEndpointConfig(
            self,
            "EndpointConfig",
            execution_role_arn=execution_role.role_arn,
            enable_network_isolation=plan.network_isolation,
            vpc_config=(
                sagemaker.CfnEndpointConfig.VpcConfigProperty(
                    subnets=subnet_ids, security_group_ids=security_group_ids or []
                )
                if subnet_ids
                else None
            ),
            kms_key_id=volume_key.key_arn if volume_key else None,
            metrics_config=metrics_config(
                detailed_observability=plan.observability.detailed_observability,
                metric_publish_frequency_seconds=plan.observability.metric_publish_frequency_seconds,
            ),
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name=POOL_VARIANT_NAME,
                    instance_type=plan.instance_type,
                    initial_instance_count=plan.instance_count,
                    inference_ami_version=plan.inference_ami_version,
                    managed_instance_scaling=sagemaker.CfnEndpointConfig.ManagedInstanceScalingProperty(
                        status="ENABLED",
                        min_instance_count=pool.min_instances,
                        max_instance_count=pool.max_instances,
                        scale_in_policy=sagemaker.CfnEndpointConfig.ScaleInPolicyProperty(
                            strategy=pool.settings.scale_in_policy
                        ),
                    ),
                    routing_config=routing_config(plan.routing),
                )
            ],
        )

    def _inference_component(self, spec: ComponentSpec) -> sagemaker.CfnInferenceComponent:
        component = sagemaker.CfnInferenceComponent(
            self,
            "Component" + self._id_suffix(spec.name),
            endpoint_name=self._endpoint_name,
            variant_name=POOL_VARIANT_NAME,
            inference_component_name=spec.name,
            specification=sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty(
                model_name=spec.model.model_name,
                compute_resource_requirements=sagemaker.CfnInferenceComponent.InferenceComponentComputeResourceRequirementsProperty(
                    number_of_accelerator_devices_required=spec.pool.accelerators_per_copy,
                    number_of_cpu_cores_required=spec.pool.cpu_cores_per_copy,
                    min_memory_required_in_mb=spec.pool.memory_mb_per_copy,
                ),
                startup_parameters=sagemaker.CfnInferenceComponent.InferenceComponentStartupParametersProperty(
                    container_startup_health_check_timeout_in_seconds=spec.plan.container_startup_timeout_seconds,
                    model_data_download_timeout_in_seconds=spec.plan.model_download_timeout_seconds,
                ),
                # Always stated (on by default, peagle/settings/inference_components.py InferenceComponentSettings.data_cache): turning it
                # off must say EnableCaching false, not leave the property out of the update. "Update requires: No
                # interruption" (CloudFormation Template Reference, InferenceComponentDataCacheConfig).
                data_cache_config=sagemaker.CfnInferenceComponent.InferenceComponentDataCacheConfigProperty(
                    enable_caching=spec.pool.settings.data_cache
                ),
                scheduling_config=placement_config(spec.pool.placement),
            ),
            runtime_config=sagemaker.CfnInferenceComponent.InferenceComponentRuntimeConfigProperty(
                copy_count=spec.pool.initial_copies
            ),
        )
        component.node.add_dependency(self.endpoint)
        # The container logs from its first second; the group must exist (retention, key) first.
        component.node.add_dependency(self.log_groups[spec.name])
        return component

    @property
    def endpoint_name(self) -> str:
        return self._endpoint_name

    @staticmethod
    def log_group_name(endpoint_name: str, unit_name: str) -> str:
        """Where a unit's container logs go (known before the endpoint is built): the component's own group."""
        return component_log_group_name(unit_name)

    def log_group_of(self, unit_name: str | None = None) -> EndpointLogGroup:
        """Component ``unit_name``'s log group (default: the primary component's)."""
        return self.log_groups[unit_name or self.primary_unit]

    @property
    def endpoint_arn(self) -> str:
        return Stack.of(self).format_arn(service="sagemaker", resource="endpoint", resource_name=self.endpoint_name)

    def component_arn(self, name: str) -> str:
        return Stack.of(self).format_arn(service="sagemaker", resource="inference-component", resource_name=name)

    def _id_suffix(self, name: str) -> str:
        """Child ids by component name, not position: the primary's children keep the bare id (Logs,
        Component, CopyCount), another component's carry its name, so adding, removing or reordering
        components never renames another one's resources."""
        return "" if name == self.primary_unit else id_suffix(name)

    def configure_rollout(self, unit_name: str, policy: RolloutPolicy) -> None:
        """Component ``unit_name`` updates copy by copy, as ``policy`` says (rolling; ``none``: a plain update)."""
        if policy.strategy != "none":
            self.inference_components[unit_name].deployment_config = policy.component_deployment_config()

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Invoke this endpoint's components. The IAM service authorization reference lists both the
        endpoint and the inference-component resource types for InvokeEndpoint, so both ARNs are granted."""
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=list(INVOKE_ACTIONS[:2]),
            resource_arns=[self.endpoint_arn, *(self.component_arn(name) for name in self.units)],
        )

    def auto_scale(self, unit_name: str | None = None, *, min_capacity: int, max_capacity: int) -> ScalableCopyCount:
        """Register a component's copy count with Application Auto Scaling; add policies on the result."""
        name = unit_name or self.primary_unit
        suffix = self._id_suffix(name)
        scaling = ScalableCopyCount(
            self,
            "CopyCount" + suffix,
            component_name=name,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
            role=autoscaling_service_role(self, "AutoScalingRole" + (suffix or "0")),
        )
        scaling.node.add_dependency(self.inference_components[name])
        return scaling

    def scale_as_planned(self, unit_name: str, plan: Plan) -> ScalableCopyCount:
        """Component ``unit_name``'s copies as its pool plans them (peagle_cdk/planned_scaling.py)."""
        return scale_copies(self, unit_name, plan, self.specs[unit_name].pool)

    def costed_unit(self, unit_name: str, price_per_instance_hour_usd: float) -> CostedUnit:
        """Component ``unit_name``'s copies, priced as the instances its pool's placement and scale-in hold."""
        pool = self.specs[unit_name].pool
        return CostedUnit(
            unit_name,
            price_per_instance_hour_usd,
            pool.copies_per_instance,
            copies=True,
            placement=pool.placement,
            scale_in=pool.settings.scale_in_policy,
            max_instances=pool.max_instances,
        )

    # --- metrics, by component ------------------------------------------------------------

    GPU_NAMESPACE = COMPONENT_INSTANCE_NAMESPACE
    # 0-100 over the copy's reserved GPUs (already per GPU)
    GPU_UTILIZATION = "GPUUtilizationNormalized"
    GPU_MEMORY_UTILIZATION = "GPUMemoryUtilizationNormalized"

    def _dimensions(self, unit_name: str | None) -> dict[str, str]:
        return {"InferenceComponentName": unit_name or self.primary_unit}

    def metric_units_serving(self, *, period: Duration) -> cloudwatch.IMetric | None:
        """The primary component's InvocationsPerCopy: above zero while a copy serves (it scales to zero)."""
        return self.metric_invocations_per_copy(period=period)

    def metric_invocations_per_copy(self, **kwargs) -> cloudwatch.Metric:
        return self.metric("InvocationsPerCopy", statistic="Sum", **kwargs)

    def metric_concurrent_requests_per_copy(self, **kwargs) -> cloudwatch.Metric:
        """Valid statistics: Min, Max."""
        return self.metric("ConcurrentRequestsPerCopy", statistic="Maximum", **kwargs)

    def metric_no_capacity_invocation_failures(self, **kwargs) -> cloudwatch.Metric:
        """Requests refused for lack of a copy (documented on "Scale an endpoint to zero instances",
        https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-zero-instances.html)."""
        return self.metric("NoCapacityInvocationFailures", statistic="Sum", **kwargs)


# The type checker (`make lint`) verifies here that ComponentEndpoint has every member of ServingUnits, typed alike.
_IMPLEMENTS: type[ServingUnits] = ComponentEndpoint
