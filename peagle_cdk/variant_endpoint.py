"""EndpointConfig + Endpoint of production variants for PeagleModels, with rollout guardrails and
grant, metric and autoscaling helpers that fill the EndpointName/VariantName dimensions in one place.
PeagleEndpoint (the L3) builds it in variants mode; ComponentEndpoint is the other mode. Both are
ServingUnits (peagle_cdk/serving_unit.py): each variant is a unit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from peagle_cdk.costed_unit import CostedUnit
from peagle_cdk.endpoint_logs import EndpointLogGroup, endpoint_log_group_name
from peagle_cdk.endpoint_metrics_config import metrics_config
from peagle_cdk.endpoint_routing import routing_config
from peagle_cdk.endpoint_scaling import ScalableInstanceCount, autoscaling_service_role
from peagle_cdk.peagle_model import PeagleModel
from peagle_cdk.planned_scaling import scale_instances
from peagle_cdk.rollout import RolloutPolicy
from peagle_cdk.serving_metrics import SAGEMAKER_NAMESPACE, ServingMetrics
from peagle_cdk.serving_unit import INVOKE_ACTIONS, ServingUnits

if TYPE_CHECKING:
    from peagle.planning.planner import Plan


@dataclass(frozen=True)
class VariantSpec:
    """One production variant: its model and its plan whole (instance type and count, timeouts, the GPU host image,
    routing: the plan says them once), and its share of the endpoint's requests. Keep ``name`` stable across updates:
    autoscaling and rollouts key on it."""

    name: str
    model: PeagleModel
    plan: Plan
    weight: float
    # The instances it starts with, where it is not the plan's count (an async endpoint starts with one).
    initial_instances: int | None = None

    @property
    def instance_count(self) -> int:
        return self.plan.instance_count if self.initial_instances is None else self.initial_instances


class VariantEndpoint(Construct, ServingMetrics):
    """A real-time endpoint; the first variant is the primary unit (metrics default to it). The variants
    share the endpoint's update and log group, and the primary one scales: it is the one managed unit."""

    # The execution role's statement that lets the units write their logs.
    LOG_GRANT_SID = "WriteEndpointLogs"

    @staticmethod
    def managed_of(units: list[str]) -> list[str]:
        """The units that roll out, scale and log on their own: the primary variant (the endpoint's)."""
        return units[:1]

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint_name: str,
        variants: list[VariantSpec],
        volume_key: kms.IKey | None = None,
        log_retention_days: int,
        detailed_observability: bool,
        metric_publish_frequency_seconds: int,
        async_inference: sagemaker.CfnEndpointConfig.AsyncInferenceConfigProperty | None = None,
        data_capture: sagemaker.CfnEndpointConfig.DataCaptureConfigProperty | None = None,
    ) -> None:
        """
        :param endpoint_name: a physical name, so the log group (and with it the KPI metric filters)
            can exist before the endpoint starts logging. Changing it replaces the endpoint.
        :param volume_key: KMS key for the ML storage volume (default: none; on instance types with
            local NVMe storage a key does not encrypt that storage, and older API texts say the call
            fails: peagle.planning.deployment_rules.volume_key_allowed).
        :param log_retention_days: retention of the endpoint's log group.
        :param detailed_observability: SageMaker scrapes the container's Prometheus /metrics and publishes per-GPU
            and per-instance host metrics; stated in the endpoint config's MetricsConfig with
            ``metric_publish_frequency_seconds``, on real-time and asynchronous endpoints alike
            (peagle_cdk/endpoint_metrics_config.py: left out, SageMaker turns it on).
        :param async_inference: makes this an asynchronous endpoint (default: real-time).
        :param data_capture: SageMaker Data Capture of the variants' requests (default: none; DataCaptureDestination
            in peagle_cdk/data_capture.py makes one, and grants the Models' role its writes).
        """
        super().__init__(scope, id)
        if not variants:
            raise ValueError("VariantEndpoint needs at least one variant")
        self.variants = variants
        self.units = [variant.name for variant in variants]
        self.primary_unit = self.units[0]
        self.managed_units = self.managed_of(self.units)
        self._endpoint_name = endpoint_name
        self.log_group = EndpointLogGroup(self, "Logs", endpoint_name=endpoint_name, retention_days=log_retention_days)
        self.endpoint_config = self._endpoint_config(
            variants, volume_key, detailed_observability, metric_publish_frequency_seconds, async_inference
        )
        # "The data capture configuration applies to all production variants hosted at the endpoint" (CloudFormation
        # resource schema, AWS::SageMaker::EndpointConfig DataCaptureConfig): the A/B baseline is captured too.
        self.endpoint_config.data_capture_config = data_capture
        self.endpoint = sagemaker.CfnEndpoint(
            self,
            "Endpoint",
            endpoint_name=endpoint_name,
            endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
        )
        # The container logs from its first second; the group must exist (with our retention and key) first.
        self.endpoint.node.add_dependency(self.log_group)

    def _endpoint_config(
        self,
        variants: list[VariantSpec],
        volume_key: kms.IKey | None,
        detailed_observability: bool,
        metric_publish_frequency_seconds: int,
        async_inference: sagemaker.CfnEndpointConfig.AsyncInferenceConfigProperty | None,
    ) -> sagemaker.CfnEndpointConfig:
        return sagemaker.CfnEndpointConfig(
            self,
            "EndpointConfig",
            kms_key_id=volume_key.key_arn if volume_key else None,
            metrics_config=metrics_config(
                detailed_observability=detailed_observability,
                metric_publish_frequency_seconds=metric_publish_frequency_seconds,
                real_time=async_inference is None,
            ),
            async_inference_config=async_inference,
            production_variants=[
                _production_variant(variant, real_time=async_inference is None) for variant in variants
            ],
        )

    @property
    def endpoint_name(self) -> str:
        return self._endpoint_name

    @staticmethod
    def log_group_name(endpoint_name: str, unit_name: str) -> str:
        """Where a unit's container logs go (known before the endpoint is built): the endpoint's one group."""
        return endpoint_log_group_name(endpoint_name)

    def log_group_of(self, unit_name: str | None = None) -> EndpointLogGroup:
        """The endpoint's one log group: every variant logs there."""
        return self.log_group

    @property
    def endpoint_arn(self) -> str:
        return Stack.of(self).format_arn(service="sagemaker", resource="endpoint", resource_name=self.endpoint_name)

    def configure_rollout(self, unit_name: str, policy: RolloutPolicy) -> None:
        """Updates go blue/green or rolling as ``policy`` says, rolled back on its alarms (it renders when the
        template does, so alarms added later count); a policy of strategy ``none`` sets no DeploymentConfig.
        The variants roll out as the endpoint's one update: ``unit_name`` is the primary unit.

        Scaled instance counts survive deploys (only the weights of the new config apply), so a
        deploy never shrinks an endpoint that autoscaling has grown.
        """
        _check_managed(self, unit_name, "roll out on its own")
        if policy.strategy == "none":
            # The plain update also takes variants added or removed; instance counts then come
            # from the new config (nothing is retained for variants that may not exist any more).
            return
        self.endpoint.deployment_config = policy.endpoint_deployment_config()
        self.endpoint.retain_all_variant_properties = True
        self.endpoint.exclude_retained_variant_properties = [
            sagemaker.CfnEndpoint.VariantPropertyProperty(variant_property_type="DesiredWeight")
        ]

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow real-time, streaming and async invocation of this endpoint only."""
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=list(INVOKE_ACTIONS), resource_arns=[self.endpoint_arn]
        )

    def auto_scale(
        self, unit_name: str | None = None, *, min_capacity: int, max_capacity: int
    ) -> ScalableInstanceCount:
        """Register the primary variant's instance count with Application Auto Scaling; add policies on the
        result."""
        variant = unit_name or self.primary_unit
        _check_managed(self, variant, "scale")
        role = autoscaling_service_role(self, f"AutoScalingRole{variant}")
        scaling = ScalableInstanceCount(
            self,
            "InstanceCount",
            endpoint_name=self.endpoint_name,
            variant_name=variant,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
            role=role,
        )
        scaling.node.add_dependency(self.endpoint)
        return scaling

    def scale_as_planned(self, unit_name: str, plan: Plan) -> ScalableInstanceCount:
        """The primary variant's instances as ``plan`` scales them (peagle_cdk/planned_scaling.py)."""
        return scale_instances(self, unit_name, plan)

    def costed_unit(self, unit_name: str, price_per_instance_hour_usd: float) -> CostedUnit:
        """A variant's units are its instances, each billed at the instance price."""
        return CostedUnit(unit_name, price_per_instance_hour_usd)

    def _dimensions(self, unit_name: str | None) -> dict[str, str]:
        return {"EndpointName": self.endpoint_name, "VariantName": unit_name or self.primary_unit}

    def metric_units_serving(self, *, period: Duration) -> cloudwatch.IMetric | None:
        """None: a variant always keeps an instance serving."""
        return None

    def metric_backlog_per_instance(self, **kwargs) -> cloudwatch.Metric:
        """Async endpoints only: queued requests per instance (EndpointName dimension only)."""
        return cloudwatch.Metric(
            namespace=SAGEMAKER_NAMESPACE,
            metric_name="ApproximateBacklogSizePerInstance",
            dimensions_map={"EndpointName": self.endpoint_name},
            statistic="Average",
            **kwargs,
        )

    def metric_has_backlog_without_capacity(self, **kwargs) -> cloudwatch.Metric:
        """Async endpoints only: 1 while requests wait and no instance runs (scale out from zero)."""
        return cloudwatch.Metric(
            namespace=SAGEMAKER_NAMESPACE,
            metric_name="HasBacklogWithoutCapacity",
            dimensions_map={"EndpointName": self.endpoint_name},
            statistic="Average",
            **kwargs,
        )


def _production_variant(
    variant: VariantSpec, *, real_time: bool
) -> sagemaker.CfnEndpointConfig.ProductionVariantProperty:
    plan = variant.plan
    return sagemaker.CfnEndpointConfig.ProductionVariantProperty(
        variant_name=variant.name,
        model_name=variant.model.model_name,
        # A pool: "you replace the InstanceType parameter in your production variant with an InstancePools list"
        # ("Deploy to multiple instance types with instance pools", SageMaker developer guide).
        instance_type=None if plan.fallbacks else plan.instance_type,
        instance_pools=_instance_pools(variant) or None,
        # Stated with a pool (peagle/planning/pool_plans.py picks the default); unset otherwise, unless given.
        variant_instance_provision_timeout_in_seconds=plan.provision_timeout_seconds,
        capacity_reservation_config=_capacity_reservation(plan.ml_reservation_arn),
        initial_instance_count=variant.instance_count,
        initial_variant_weight=variant.weight,
        container_startup_health_check_timeout_in_seconds=variant.plan.container_startup_timeout_seconds,
        model_data_download_timeout_in_seconds=variant.plan.model_download_timeout_seconds,
        # The GPU host image (NVIDIA driver). SageMaker boots each family's default driver without it, which is too
        # old for a CUDA 13 serving image; peagle/planning/deployment_rules.py picks and checks it.
        inference_ami_version=variant.plan.inference_ami_version,
        # Real-time only: an async endpoint's queue hands out work itself.
        routing_config=routing_config(variant.plan.routing) if real_time else None,
    )


def _instance_pools(variant: VariantSpec) -> list[sagemaker.CfnEndpointConfig.InstancePoolProperty]:
    """The variant's types by priority, "1 to 5, where 1 is the highest" (SageMaker API Reference, InstancePool);
    a fallback whose plan's container differs from the variant's runs its own Model (ModelNameOverride)."""
    plan, models = variant.plan, variant.model.pool_models
    if not plan.fallbacks:
        return []
    if len(models) != len(plan.fallbacks):
        raise ValueError(f"variant {variant.name!r}: {len(plan.fallbacks)} fallback types, {len(models)} pool models")
    primary = sagemaker.CfnEndpointConfig.InstancePoolProperty(instance_type=plan.instance_type, priority=1)
    return [primary] + [
        sagemaker.CfnEndpointConfig.InstancePoolProperty(
            instance_type=fallback.instance_type,
            priority=priority,
            model_name_override=model.model_name if model is not None else None,
        )
        for priority, (fallback, model) in enumerate(zip(plan.fallbacks, models, strict=True), start=2)
    ]


def _capacity_reservation(arn: str | None) -> sagemaker.CfnEndpointConfig.CapacityReservationConfigProperty | None:
    # "capacity-reservations-only: SageMaker AI launches instances only into an ML capacity reservation. If no
    # capacity is available, the instances fail to launch" (SageMaker API Reference,
    # ProductionVariantCapacityReservationConfig): the one preference the API takes.
    if arn is None:
        return None
    return sagemaker.CfnEndpointConfig.CapacityReservationConfigProperty(
        capacity_reservation_preference="capacity-reservations-only", ml_reservation_arn=arn
    )


def _check_managed(endpoint: VariantEndpoint, unit_name: str, what: str) -> None:
    if unit_name not in endpoint.managed_units:
        raise ValueError(
            f"{endpoint.node.path}: variant {unit_name!r} does not {what}; the variants' one managed unit is "
            f"{endpoint.primary_unit!r}"
        )


# The type checker (`make lint`) verifies here that VariantEndpoint has every member of ServingUnits, typed alike.
_IMPLEMENTS: type[ServingUnits] = VariantEndpoint
