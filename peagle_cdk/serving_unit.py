"""The serving unit: what PeagleEndpoint, EndpointMonitoring and KpiMetrics need of an endpoint, the
same in both endpoint modes.

A unit is what serves one model and scales on its own: a production variant (VariantEndpoint: instances,
each holding one replica) or an inference component (ComponentEndpoint: copies packed on a pool of
instances). Both classes implement ServingUnits; nothing above them asks which mode it has.

Units differ in what they manage on their own. Each inference component rolls out, scales and logs on
its own. Production variants share their endpoint's one update (UpdateEndpoint's DeploymentConfig) and
one log group, and only the primary variant scales (an A/B baseline keeps its instance count), so a
variant endpoint manages its primary unit only: ``managed_units``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker

from peagle_cdk.endpoint_logs import EndpointLogGroup
from peagle_cdk.endpoint_scaling import ScalableCopyCount, ScalableInstanceCount
from peagle_cdk.rollout import RolloutPolicy

if TYPE_CHECKING:
    from peagle.planning.planner import Plan
    from peagle_cdk.costed_unit import CostedUnit

# The actions that invoke an endpoint (IAM service authorization reference for SageMaker; the async one
# applies to variant endpoints only).
INVOKE_ACTIONS = (
    "sagemaker:InvokeEndpoint",
    "sagemaker:InvokeEndpointWithResponseStream",
    "sagemaker:InvokeEndpointAsync",
)

ScalableUnitCapacity = ScalableInstanceCount | ScalableCopyCount


class ServingUnits(Protocol):
    """An endpoint and its serving units, primary first (metrics default to the primary unit)."""

    endpoint: sagemaker.CfnEndpoint
    endpoint_config: sagemaker.CfnEndpointConfig

    @property
    def endpoint_name(self) -> str: ...

    @property
    def endpoint_arn(self) -> str: ...

    @property
    def units(self) -> list[str]:
        """Every unit that serves, primary first."""
        ...

    @property
    def primary_unit(self) -> str: ...

    @property
    def managed_units(self) -> list[str]:
        """The units that roll out, scale and log on their own (the module docstring says which)."""
        ...

    def log_group_of(self, unit_name: str | None = None) -> EndpointLogGroup: ...

    def configure_rollout(self, unit_name: str, policy: RolloutPolicy) -> None: ...

    def auto_scale(self, unit_name: str | None = None, *, min_capacity: int, max_capacity: int) -> ScalableUnitCapacity:
        """Register a managed unit's capacity (instances or copies) with Application Auto Scaling."""
        ...

    def scale_as_planned(self, unit_name: str, plan: Plan) -> ScalableUnitCapacity:
        """A managed unit's capacity with the policies ``plan`` calls for (``plan.autoscaling`` set): each kind
        scales its own units (peagle_cdk/planned_scaling.py holds both)."""
        ...

    def costed_unit(self, unit_name: str, price_per_instance_hour_usd: float) -> CostedUnit:
        """What one of the unit's units costs, as the fleet's cost figures count it (peagle_cdk/fleet_metrics.py)."""
        ...

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant: ...

    # CloudWatch metrics of a unit (ServingMetrics); ``unit_name`` picks it, default the primary one.
    def metric(self, metric_name: str, *, unit_name: str | None = None, **options) -> cloudwatch.Metric: ...

    def metric_model_latency_microseconds(self, statistic: str = "p90", **kwargs) -> cloudwatch.Metric: ...

    def metric_invocations(self, **kwargs) -> cloudwatch.Metric: ...

    def metric_invocation_5xx_errors(self, **kwargs) -> cloudwatch.Metric: ...

    def metric_invocation_4xx_errors(self, **kwargs) -> cloudwatch.Metric: ...

    def metric_gpu_utilization_percent(self, **kwargs) -> cloudwatch.Metric: ...

    def metric_gpu_memory_utilization_percent(self, **kwargs) -> cloudwatch.Metric: ...

    def metric_units_serving(self, *, period: Duration) -> cloudwatch.IMetric | None:
        """Above zero while the primary unit serves; None where it always does (a variant keeps an instance)."""
        ...
