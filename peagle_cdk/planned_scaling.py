"""The scaling policies a plan calls for, on either endpoint mode's scalable capacity: what
PeagleEndpoint's autoscaling prop builds. The mechanics and the AWS rules behind each policy are in
peagle_cdk/endpoint_scaling.py; the numbers (targets, the latency SLA, the light-load share, the start
budgets the step cooldowns wait) come from the planner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypedDict

from aws_cdk import Duration, TimeZone
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch

from peagle.planning.planner import Plan, ScalingTarget
from peagle.planning.queue_target import queue_target
from peagle_cdk.endpoint_scaling import ScalableCopyCount, ScalableInstanceCount
from peagle_cdk.serving_unit import ScalableUnitCapacity, ServingUnits
from peagle_serve.contract import ENDPOINT_NAME_DIMENSION, KPI_METRIC_NAMES, KPI_NAMESPACE, VARIANT_NAME_DIMENSION

if TYPE_CHECKING:
    from peagle.planning.unit_plan import ComponentPool


class InstanceUnits(ServingUnits, Protocol):
    """What instance scaling needs of a variants' endpoint (VariantEndpoint)."""

    def auto_scale(
        self, unit_name: str | None = None, *, min_capacity: int, max_capacity: int
    ) -> ScalableInstanceCount: ...


class CopyUnits(ServingUnits, Protocol):
    """What copy scaling needs of a components' endpoint (ComponentEndpoint): its per-copy metrics too."""

    def auto_scale(
        self, unit_name: str | None = None, *, min_capacity: int, max_capacity: int
    ) -> ScalableCopyCount: ...

    def metric_invocations_per_copy(self, **kwargs) -> cloudwatch.Metric: ...

    def metric_concurrent_requests_per_copy(self, **kwargs) -> cloudwatch.Metric: ...

    def metric_no_capacity_invocation_failures(self, **kwargs) -> cloudwatch.Metric: ...


def scale_unit(units: ServingUnits, unit_name: str, plan: Plan) -> ScalableUnitCapacity:
    """The scaling ``plan`` calls for on one managed unit (``plan.autoscaling`` set): each kind of unit scales its
    own (ServingUnits.scale_as_planned: a component's copies, or the primary variant's instances)."""
    return units.scale_as_planned(unit_name, plan)


def _target(name: str, plan: Plan) -> ScalingTarget:
    if plan.scaling is None:
        raise ValueError(f"unit {name!r}: its plan has no scaling target")
    return plan.scaling


class _Cooldowns(TypedDict):
    scale_in_cooldown: Duration
    scale_out_cooldown: Duration


def _autoscaling(plan: Plan):  # -> the plan's AutoscalingSettings (peagle.settings: only the seam names its types)
    if plan.autoscaling is None:
        raise ValueError("the plan calls for no autoscaling")
    return plan.autoscaling


def _cooldowns(plan: Plan) -> _Cooldowns:
    autoscaling = _autoscaling(plan)
    return {
        "scale_in_cooldown": Duration.seconds(autoscaling.scale_in_cooldown_seconds),
        "scale_out_cooldown": Duration.seconds(autoscaling.scale_out_cooldown_seconds),
    }


def _scale_on_latency(
    endpoint: ServingUnits,
    scaling: ScalableUnitCapacity,
    plan: Plan,
    unit: dict[str, str],
) -> None:
    if _autoscaling(plan).latency_step_scaling:
        scaling.scale_on_model_latency(
            "ModelLatencyOverSla",
            metric=endpoint.metric_model_latency_microseconds("p90", period=Duration.minutes(1), **unit),
            threshold_seconds=plan.latency_sla_p90_seconds,
            # Wait for the unit it added to serve (ScalableCopyCount's docstring; `peagle simulate`).
            cooldown=Duration.seconds(plan.unit_start_budget_seconds),
        )


def _queue_target(plan: Plan) -> float:
    """The queue policy's target (peagle/planning/queue_target.py); only called where the plan scales on the queue."""
    target = queue_target(plan)
    if target is None:
        raise ValueError("the plan's autoscaling does not scale on the queue")
    return target


def requests_waiting_metric(endpoint_name: str, unit_name: str) -> cloudwatch.Metric:
    """vLLM's requests waiting (vllm:num_requests_waiting) per unit, from the KPI lines' metric filter
    (peagle_cdk/kpi_metrics.py): each serving unit writes one line per KPI interval with the gauge at that moment,
    so a minute's Average over the unit's dimensions is the mean queue of a serving unit. Not the metric SageMaker's
    detailed observability publishes from the same gauge: that one is an OpenTelemetry metric read with PromQL, and
    Application Auto Scaling's CustomizedMetricSpecification names a CloudWatch metric by namespace, name and
    dimensions (botocore 1.44.5, TargetTrackingMetric), which it has not (docs/observability.md)."""
    return cloudwatch.Metric(
        namespace=KPI_NAMESPACE,
        metric_name=KPI_METRIC_NAMES["requests_waiting"],
        dimensions_map={ENDPOINT_NAME_DIMENSION: endpoint_name, VARIANT_NAME_DIMENSION: unit_name},
        statistic="Average",
        period=Duration.minutes(1),
    )


def _scale_on_queue(
    endpoint: ServingUnits, scaling: ScalableUnitCapacity, plan: Plan, unit_name: str, *, disable_scale_in: bool
) -> None:
    """The queue policy (``autoscaling.scale_on_queue``); ``disable_scale_in`` where no other target-tracking policy
    scales in (peagle_cdk/endpoint_scaling.py, scale_on_requests_waiting, says why)."""
    if _autoscaling(plan).scale_on_queue:
        scaling.scale_on_requests_waiting(
            "RequestsWaitingPerUnit",
            metric=requests_waiting_metric(endpoint.endpoint_name, unit_name),
            target_per_unit=_queue_target(plan),
            disable_scale_in=disable_scale_in,
            **_cooldowns(plan),
        )


def scale_instances(endpoint: InstanceUnits, name: str, plan: Plan) -> ScalableInstanceCount:
    """The primary variant's instance count: on requests in flight (or invocations), GPU use, latency over
    the SLA and schedules."""
    target = _target(name, plan)
    autoscaling = _autoscaling(plan)
    low, high = autoscaling.min_capacity, autoscaling.max_capacity
    if (
        low is None or high is None
    ):  # the planner resolves both for the mode (peagle/planning/planner.py _resolved_scaling)
        raise ValueError("the plan's autoscaling bounds are unresolved")
    scaling = endpoint.auto_scale(name, min_capacity=low, max_capacity=high)
    cooldowns = _cooldowns(plan)
    if autoscaling.target == "invocations":
        if autoscaling.max_requests_per_second is None:  # the settings model's validation refuses it first
            raise ValueError("autoscaling.target 'invocations' needs autoscaling.max_requests_per_second")
        scaling.scale_on_invocations(
            "InvocationsPerInstance",
            max_requests_per_second=autoscaling.max_requests_per_second,
            headroom=autoscaling.headroom,
            **cooldowns,
        )
    else:
        # The planner's target: measured by `peagle capacity`, given, or its stated guess.
        scaling.scale_on_concurrency("ConcurrencyPerInstance", target_requests_per_unit=target.concurrency, **cooldowns)
    if autoscaling.gpu_utilization_target_percent is not None:
        scaling.scale_on_gpu_utilization(
            "GpuUtilization",
            metric=endpoint.metric_gpu_utilization_percent(period=Duration.minutes(1)),
            target_percent_per_gpu=autoscaling.gpu_utilization_target_percent,
            gpu_count=plan.gpus_per_metric,
            **cooldowns,
        )
    _scale_on_queue(endpoint, scaling, plan, name, disable_scale_in=False)
    _scale_on_latency(endpoint, scaling, plan, {})
    for schedule in autoscaling.schedules:
        scaling.scale_on_schedule(
            schedule.name,
            schedule=appscaling.Schedule.expression(schedule.schedule),
            min_capacity=schedule.min_capacity,
            max_capacity=schedule.max_capacity,
            time_zone=_time_zone(schedule.time_zone),
        )
    return scaling


def scale_copies(endpoint: CopyUnits, name: str, plan: Plan, components: ComponentPool) -> ScalableCopyCount:
    """Copy count with load, to zero after the idle time and back on the first refused request
    (peagle_cdk/endpoint_scaling.py, ScalableCopyCount, says how and why); ``components``: the unit's pool."""
    target = _target(name, plan)
    autoscaling = _autoscaling(plan)
    scaling = endpoint.auto_scale(name, min_capacity=components.min_copies, max_capacity=components.max_copies)
    unit = {"unit_name": name}
    to_zero = components.scales_to_zero
    cooldowns = _cooldowns(plan)
    scaling.scale_on_concurrency(
        "ConcurrencyPerCopy",
        target_requests_per_unit=target.concurrency,
        disable_scale_in=to_zero,
        **cooldowns,
    )
    if autoscaling.gpu_utilization_target_percent is not None:
        scaling.scale_on_gpu_utilization(
            "GpuUtilization",
            metric=endpoint.metric_gpu_utilization_percent(period=Duration.minutes(1), **unit),
            target_percent_per_gpu=autoscaling.gpu_utilization_target_percent,
            gpu_count=plan.gpus_per_metric,
            disable_scale_in=True,  # scale-in is the step policies' (ScalableCopyCount's docstring)
            **cooldowns,
        )
    _scale_on_queue(endpoint, scaling, plan, name, disable_scale_in=to_zero)
    _scale_on_latency(endpoint, scaling, plan, unit)
    if to_zero:
        minute = Duration.minutes(1)
        scaling.scale_out_on_refused_requests(
            "ScaleOutFromZero",
            no_capacity_failures=endpoint.metric_no_capacity_invocation_failures(period=minute, **unit),
            cooldown=Duration.seconds(plan.unit_start_budget_seconds),
            # One copy per the requests a minute that, arriving through a typical start, make a copy's minute
            # of work (both the planner's estimates); at most the copies one instance holds (the instance is
            # paid for whole), target tracking adds the rest once they serve.
            refused_per_copy=max(1, round(plan.unit_requests_per_minute * 60 / plan.typical_unit_start_seconds)),
            most_copies=min(components.copies_per_instance, components.max_copies),
        )
        # InvocationsPerCopy is Invocations normalized by the copies, so their ratio counts the copies
        # serving ("Amazon SageMaker AI metrics in Amazon CloudWatch", InferenceComponentName metrics).
        scaling.scale_in_on_light_load(
            "ScaleInOnLightLoad",
            load=endpoint.metric_concurrent_requests_per_copy(period=minute, **unit),
            copies=cloudwatch.MathExpression(
                expression="IF(perCopy > 0, invocations / perCopy, 0)",
                using_metrics={
                    "invocations": endpoint.metric_invocations(period=minute, **unit),
                    "perCopy": endpoint.metric_invocations_per_copy(period=minute, **unit),
                },
                label="copies serving",
                period=minute,
            ),
            below=target.light_load_below,
            minutes=components.light_load_minutes,
            cooldown=Duration.seconds(autoscaling.scale_in_cooldown_seconds),
            most_copies=components.max_copies,
        )
        scaling.scale_in_when_idle(
            "ScaleInToZero",
            invocations=endpoint.metric_invocations(period=minute, **unit),
            no_capacity_failures=endpoint.metric_no_capacity_invocation_failures(period=minute, **unit),
            idle_minutes=components.scale_to_zero_after_idle_minutes,
        )
    return scaling


def _time_zone(name: str | None) -> TimeZone | None:
    return TimeZone.of(name) if name else None
