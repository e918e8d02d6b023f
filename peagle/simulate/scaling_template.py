"""The scaling of a synthesized template, by resource type: each scalable target with its step and
target-tracking policies and the alarms that invoke them.

Shapes read (CloudFormation resource reference, AWS::ApplicationAutoScaling::ScalableTarget,
AWS::ApplicationAutoScaling::ScalingPolicy and AWS::CloudWatch::Alarm,
https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-applicationautoscaling-scalingpolicy.html):
a policy names its target with ``ScalingTargetId`` (a ``Ref`` to the target) and has either a
``StepScalingPolicyConfiguration`` or a ``TargetTrackingScalingPolicyConfiguration``; an alarm
invokes a step policy by listing it (``Ref`` returns the policy's ARN) in ``AlarmActions``; its metric
is either ``MetricName``/``Namespace``/``Dimensions``/``Statistic`` (or ``ExtendedStatistic``)/``Period``
or a list of ``Metrics`` (metric data queries: ``Id``, ``Expression`` or ``MetricStat``, ``ReturnData``).
Alarms that invoke no scaling policy (the monitoring topic's) are not simulated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from peagle.cloud_assembly import StackTemplate
from peagle.settings.errors import PeagleError
from peagle.settings.schedules import ScheduledAction, ScheduleError
from peagle.simulate.schedules import action_from_template

SCALABLE_TARGET = "AWS::ApplicationAutoScaling::ScalableTarget"
SCALING_POLICY = "AWS::ApplicationAutoScaling::ScalingPolicy"
ALARM = "AWS::CloudWatch::Alarm"
ENDPOINT_CONFIG = "AWS::SageMaker::EndpointConfig"

# Application Auto Scaling API reference, PredefinedMetricSpecification, PredefinedMetricType (botocore
# application-autoscaling service-2.json MetricType enum) -> the AWS/SageMaker metric each one tracks
# ("Define a scaling policy", section "Use a predefined metric",
# https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-add-code-define.html), with
# whether it is the 10-second high-resolution kind.
PREDEFINED_METRICS: dict[str, tuple[str, str, bool]] = {
    "SageMakerVariantInvocationsPerInstance": ("InvocationsPerInstance", "Sum", False),
    "SageMakerVariantConcurrentRequestsPerModelHighResolution": ("ConcurrentRequestsPerModel", "Maximum", True),
    "SageMakerInferenceComponentInvocationsPerCopy": ("InvocationsPerCopy", "Sum", False),
    "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution": (
        "ConcurrentRequestsPerCopy",
        "Maximum",
        True,
    ),
}

_COMPARISONS = {
    "GreaterThanOrEqualToThreshold": lambda value, threshold: value >= threshold,
    "GreaterThanThreshold": lambda value, threshold: value > threshold,
    "LessThanThreshold": lambda value, threshold: value < threshold,
    "LessThanOrEqualToThreshold": lambda value, threshold: value <= threshold,
}


class SimulationInputError(PeagleError):
    """A template whose scaling the simulator cannot read."""


@dataclass(frozen=True)
class MetricStat:
    """One CloudWatch metric at a statistic and period."""

    name: str
    statistic: str  # Sum | Average | Maximum | Minimum | SampleCount | pNN
    period_seconds: int = 60


@dataclass(frozen=True)
class MetricQuery:
    """What an alarm evaluates: one metric, or a metric-math expression over named inputs."""

    stat: MetricStat | None = None
    expression: str | None = None
    inputs: Mapping[str, MetricQuery] = field(default_factory=dict)

    @property
    def period_seconds(self) -> int:
        if self.stat is not None:
            return self.stat.period_seconds
        periods = [query.period_seconds for query in self.inputs.values()]
        return max(periods, default=60)

    def metric_names(self) -> set[str]:
        if self.stat is not None:
            return {self.stat.name}
        return set().union(*(query.metric_names() for query in self.inputs.values())) if self.inputs else set()


@dataclass(frozen=True)
class Alarm:
    logical_id: str
    description: str
    query: MetricQuery
    comparison: str
    threshold: float
    evaluation_periods: int
    datapoints_to_alarm: int
    treat_missing_data: str  # breaching | notBreaching | ignore | missing (the default)
    policy_ids: tuple[str, ...]  # logical ids of the scaling policies in AlarmActions

    def breaches(self, value: float) -> bool:
        return _COMPARISONS[self.comparison](value, self.threshold)

    @property
    def upward(self) -> bool:
        return self.comparison.startswith("Greater")


@dataclass(frozen=True)
class StepAdjustment:
    lower: float | None  # MetricIntervalLowerBound, relative to the alarm threshold
    upper: float | None
    adjustment: int


@dataclass(frozen=True)
class StepPolicy:
    logical_id: str
    adjustment_type: str  # ChangeInCapacity | ExactCapacity | PercentChangeInCapacity
    steps: tuple[StepAdjustment, ...]
    cooldown_seconds: int | None  # None: the service's default
    aggregation: str  # MetricAggregationType: Average (the default) | Minimum | Maximum
    min_adjustment_magnitude: int | None


@dataclass(frozen=True)
class TargetTrackingPolicy:
    logical_id: str
    query: MetricQuery
    high_resolution: bool
    target_value: float
    scale_in_cooldown_seconds: int | None
    scale_out_cooldown_seconds: int | None
    disable_scale_in: bool


@dataclass(frozen=True)
class ScalableTarget:
    logical_id: str
    resource_id: str
    dimension: str
    min_capacity: int
    max_capacity: int
    step_policies: tuple[StepPolicy, ...]
    target_tracking: tuple[TargetTrackingPolicy, ...]
    alarms: tuple[Alarm, ...]  # the alarms invoking this target's step policies
    scheduled_actions: tuple[ScheduledAction, ...] = ()  # ScheduledActions, in the template's order

    @property
    def unit(self) -> str:
        return "copies" if self.dimension.endswith("DesiredCopyCount") else "instances"

    @property
    def name(self) -> str:
        """The component or variant name (the ResourceId's last part)."""
        return self.resource_id.rsplit("/", 1)[-1]


def scaling_of(template: StackTemplate) -> list[ScalableTarget]:
    """Every SageMaker scalable target of the template with what scales it."""
    policies = template.of_type(SCALING_POLICY)
    alarms = {lid: _alarm(lid, res.get("Properties") or {}, template) for lid, res in template.of_type(ALARM).items()}
    targets = []
    for logical_id, resource in template.of_type(SCALABLE_TARGET).items():
        props = resource.get("Properties") or {}
        if props.get("ServiceNamespace") != "sagemaker":
            continue
        mine = {lid: res.get("Properties") or {} for lid, res in policies.items() if _target_of(res) == logical_id}
        steps = tuple(_step_policy(lid, p) for lid, p in mine.items() if p.get("PolicyType") == "StepScaling")
        tracking = tuple(
            _target_tracking(lid, p) for lid, p in mine.items() if p.get("PolicyType") == "TargetTrackingScaling"
        )
        step_ids = {policy.logical_id for policy in steps}
        targets.append(
            ScalableTarget(
                logical_id=logical_id,
                resource_id=template.resolve(props.get("ResourceId")) or logical_id,
                dimension=str(props.get("ScalableDimension")),
                min_capacity=_integer(props.get("MinCapacity"), f"{logical_id}.MinCapacity"),
                max_capacity=_integer(props.get("MaxCapacity"), f"{logical_id}.MaxCapacity"),
                step_policies=steps,
                target_tracking=tracking,
                alarms=tuple(
                    alarm for alarm in alarms.values() if alarm is not None and set(alarm.policy_ids) & step_ids
                ),
                scheduled_actions=_scheduled_actions(logical_id, props.get("ScheduledActions") or []),
            )
        )
    return targets


def variant_weights(template: StackTemplate) -> dict[tuple[str, str], float]:
    """(endpoint name, variant name) -> the variant's share of its endpoint's traffic (InitialVariantWeight
    over the sum of that endpoint config's weights)."""
    weights: dict[tuple[str, str], float] = {}
    for resource in template.of_type("AWS::SageMaker::Endpoint").values():
        props = resource.get("Properties") or {}
        reference = props.get("EndpointConfigName")
        config_id = reference.get("Fn::GetAtt", [None])[0] if isinstance(reference, Mapping) else None
        variants = (template.properties(config_id) if config_id else {}).get("ProductionVariants") or []
        total = sum(float(variant.get("InitialVariantWeight", 1.0)) for variant in variants) or 1.0
        endpoint = str(template.resolve(props.get("EndpointName")))
        for variant in variants:
            weights[(endpoint, str(variant.get("VariantName")))] = (
                float(variant.get("InitialVariantWeight", 1.0)) / total
            )
    return weights


def _scheduled_actions(logical_id: str, entries: list[Mapping[str, Any]]) -> tuple[ScheduledAction, ...]:
    try:
        return tuple(
            action_from_template(entry, f"{logical_id}.ScheduledActions[{index}]")
            for index, entry in enumerate(entries)
        )
    except ScheduleError as error:
        raise SimulationInputError(f"{logical_id}: {error}") from None


def _target_of(resource: Mapping[str, Any]) -> str | None:
    target = (resource.get("Properties") or {}).get("ScalingTargetId")
    return target.get("Ref") if isinstance(target, Mapping) else None


def _step_policy(logical_id: str, props: Mapping[str, Any]) -> StepPolicy:
    config = props.get("StepScalingPolicyConfiguration") or {}
    steps = tuple(
        StepAdjustment(
            lower=_number(step.get("MetricIntervalLowerBound")),
            upper=_number(step.get("MetricIntervalUpperBound")),
            adjustment=_integer(step.get("ScalingAdjustment"), f"{logical_id} ScalingAdjustment"),
        )
        for step in config.get("StepAdjustments") or []
    )
    cooldown = config.get("Cooldown")
    return StepPolicy(
        logical_id=logical_id,
        adjustment_type=str(config.get("AdjustmentType", "ChangeInCapacity")),
        steps=steps,
        cooldown_seconds=None if cooldown is None else _integer(cooldown, f"{logical_id}.Cooldown"),
        aggregation=str(config.get("MetricAggregationType", "Average")),
        min_adjustment_magnitude=_optional_integer(config.get("MinAdjustmentMagnitude")),
    )


def _target_tracking(logical_id: str, props: Mapping[str, Any]) -> TargetTrackingPolicy:
    config = props.get("TargetTrackingScalingPolicyConfiguration") or {}
    predefined = (config.get("PredefinedMetricSpecification") or {}).get("PredefinedMetricType")
    if predefined:
        if predefined not in PREDEFINED_METRICS:
            raise SimulationInputError(
                f"{logical_id} tracks the predefined metric {predefined!r}, which the simulator does not model; "
                f"it models {', '.join(sorted(PREDEFINED_METRICS))}"
            )
        name, statistic, high_resolution = PREDEFINED_METRICS[predefined]
        query = MetricQuery(stat=MetricStat(name, statistic))
    else:
        custom = config.get("CustomizedMetricSpecification") or {}
        query = MetricQuery(stat=MetricStat(str(custom.get("MetricName")), str(custom.get("Statistic", "Average"))))
        high_resolution = False
    return TargetTrackingPolicy(
        logical_id=logical_id,
        query=query,
        high_resolution=high_resolution,
        target_value=_required_number(config.get("TargetValue"), f"{logical_id}.TargetValue"),
        scale_in_cooldown_seconds=_optional_integer(config.get("ScaleInCooldown")),
        scale_out_cooldown_seconds=_optional_integer(config.get("ScaleOutCooldown")),
        disable_scale_in=config.get("DisableScaleIn") in (True, "true", "True"),
    )


def _alarm(logical_id: str, props: Mapping[str, Any], template: StackTemplate) -> Alarm | None:
    actions = tuple(
        action["Ref"]
        for action in props.get("AlarmActions") or []
        if isinstance(action, Mapping) and action.get("Ref") in template.of_type(SCALING_POLICY)
    )
    if not actions:
        return None
    if props.get("Metrics"):
        query = _metrics_query(logical_id, props["Metrics"])
    else:
        statistic = props.get("ExtendedStatistic") or props.get("Statistic")
        query = MetricQuery(stat=MetricStat(str(props.get("MetricName")), str(statistic), int(props.get("Period", 60))))
    return Alarm(
        logical_id=logical_id,
        description=str(props.get("AlarmDescription", "")),
        query=query,
        comparison=str(props.get("ComparisonOperator")),
        threshold=_required_number(props.get("Threshold"), f"{logical_id}.Threshold"),
        evaluation_periods=_integer(props.get("EvaluationPeriods"), f"{logical_id}.EvaluationPeriods"),
        datapoints_to_alarm=_integer(
            props.get("DatapointsToAlarm", props.get("EvaluationPeriods")), f"{logical_id}.DatapointsToAlarm"
        ),
        treat_missing_data=str(props.get("TreatMissingData", "missing")),
        policy_ids=actions,
    )


def _metrics_query(logical_id: str, metrics: list[Mapping[str, Any]]) -> MetricQuery:
    by_id: dict[str, Mapping[str, Any]] = {str(query["Id"]): query for query in metrics}

    def build(query_id: str) -> MetricQuery:
        query = by_id[query_id]
        if "MetricStat" in query:
            stat = query["MetricStat"]
            return MetricQuery(
                stat=MetricStat(str(stat["Metric"]["MetricName"]), str(stat["Stat"]), int(stat.get("Period", 60)))
            )
        expression = str(query["Expression"])
        names = {other for other in by_id if other != query_id and _mentions(expression, other)}
        return MetricQuery(expression=expression, inputs={name: build(name) for name in names})

    returned = [query for query in metrics if query.get("ReturnData", True)]
    if len(returned) != 1:
        raise SimulationInputError(
            f"alarm {logical_id} returns {len(returned)} metrics; an alarm evaluates exactly one"
        )
    return build(str(returned[0]["Id"]))


def _mentions(expression: str, name: str) -> bool:
    import re

    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", expression) is not None


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _optional_integer(value: Any) -> int | None:
    return None if value is None else int(value)


def _required_number(value: Any, where: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise SimulationInputError(f"{where} is {value!r}, not a number the simulator can use") from None


def _integer(value: Any, where: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise SimulationInputError(f"{where} is {value!r}, not a number the simulator can use") from None
