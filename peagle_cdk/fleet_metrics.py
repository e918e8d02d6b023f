"""The fleet's figures from the launcher's KPI lines, as CloudWatch metric math: units reporting, fleet
totals of per-unit rates and gauges, cost per hour and cost per 1M output tokens.

A serving unit (an instance of a production variant, or a copy of an inference component) logs one KPI
line every kpi_interval_seconds (I), and every line is one sample of each KPI metric
(peagle_cdk/kpi_metrics.py). Over a period of P seconds each unit contributes P / I samples, so

    units reporting        = SampleCount(KpiReports) x I / P
    fleet total of a rate  = Sum(samples) x I / P         (each sample is one unit's rate or gauge)

What is billed is instances, whole, while they exist. Variants: a unit is an instance, so

    cost per hour          = instances reporting x price per instance-hour
    cost per 1M out tokens = cost per hour / (fleet GenerationTokensPerSecond x 3600) x 1e6
                           = price x SampleCount x I/P / (Sum x I/P x 3600) x 1e6
                           = price x SampleCount / (Sum x 3600) x 1e6        (I and P cancel)

Inference components: a unit is a copy, and N copies fit an instance (the plan's copies_per_instance). An
instance is billed whole while it hosts any copy: managed instance scaling's IDLE_RELEASE "Releases instances
that have no hosted inference component copies" (SageMaker API Reference,
ProductionVariantManagedInstanceScalingScaleInPolicy,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantManagedInstanceScalingScaleInPolicy.html),
the endpoint saves only by having fewer in-service instances ("reduce the number of in-service instances to zero.
By doing so, you save costs", SageMaker Developer Guide, "Scale an endpoint to zero instances",
https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-zero-instances.html), and the price is per
instance type and hour (AWS SageMaker AI pricing, real-time inference, https://aws.amazon.com/sagemaker/ai/pricing/,
peagle/catalog/instances.yaml). So

    copies                 = FLOOR(SampleCount(KpiReports) x I / P + 0.5)   (to the nearest whole copy)
    instances              = CEIL(copies / N)
    cost per hour          = price x instances      (summed over the components)
    cost per 1M out tokens = cost per hour / (Sum(GenerationTokensPerSecond) x I / P x 3600) x 1e6

(I and P no longer cancel: CEIL is not linear.) Rounding to the nearest copy first keeps a line more or fewer in
a period (a copy whose lines drift logs 61 in one hour) from adding a whole instance: 4.02 copies are the one
instance that holds 4.

How many instances hold the copies is the component's placement strategy's and its pool's scale-in policy's doing,
read from the same settings the template states (InferenceComponentSettings.placement and scale_in_policy, carried
whole by the plan's pool and written by peagle_cdk/component_endpoint.py), never assumed apart from them:

- BINPACK ("Packs copies onto fewer instances to optimize resource utilization", applied "when copies are added or
  removed", SageMaker API Reference, InferenceComponentSchedulingConfig,
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentSchedulingConfig.html): CEIL(copies
  / N) as above, the fewest instances that hold them; a scale-in empties instances and IDLE_RELEASE releases them.
- SPREAD ("Distributes copies evenly across available instances"): after a scale-in each instance that still holds a
  copy stays, and IDLE_RELEASE releases only the empty ones, so the copies may hold up to one instance each, at most
  max_instances: instances = IF(copies > M, M, copies) (IF: "IF(condition, trueValue, falseValue)", same page as
  below). Which of those instances are still held depends on the scaling history, which metric math cannot see: the
  figure is the most SPREAD can keep, so the cost alarm does not under-count it.
- CONSOLIDATION, whatever the placement ("CONSOLIDATION Consolidates inference component copies onto fewer instances
  to release more instances. Consolidation honors the scheduling configuration of each inference component", SageMaker
  API Reference, ProductionVariantManagedInstanceScalingScaleInPolicy, link above; botocore 1.44.5's SageMaker model,
  ManagedInstanceScalingScaleInStrategy, the same words): CEIL(copies / N), the instances the copies need once
  consolidated. Between a scale-in and the consolidation (CooldownInMinutes, "Default value: 20", same page) an
  instance may hold fewer copies than it could: the figure is then below the bill for up to that long.

Assumed, and not verified on AWS: each component (the primary and an A/B baseline) on instances of its own, which
prices two components sharing an instance as two (conservative). Over a period in which the copy count changes the
average count is rounded. SageMaker publishes an instance count only as a detailed-observability
OpenTelemetry metric (InstanceCountPerEndpoint, "Instance count serving traffic", queried with PromQL after OTel
enrichment is turned on account-wide: CloudWatch User Guide, "SageMaker AI Insights OpenTelemetry metrics reference",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/SageMaker-AI-Insights-Metrics.html), which a metric
math expression, and so an alarm made here, cannot read; it also needs detailed_observability on.

Every KPI line carries generation_tokens_per_second (a number, 0 while idle), so SampleCount(KpiReports)
and Sum(GenerationTokensPerSecond) count the same lines. P is written as PERIOD(metric) in the
expressions, so a graph whose period is changed in the console stays right; it must be at least I
(a shorter period holds a line in some periods and none in others), hence ``period()``.

Metric math (CloudWatch User Guide, "Using metric math", Basic arithmetic functions,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html): "Missing values
in a time series are treated as 0. If the value of a data point causes a function to attempt to divide
by zero, the data point is dropped." So a period without generated tokens (idle units report 0 tokens/s)
has no cost per token, rather than an infinite one; PERIOD "Returns the period of the metric in
seconds. Valid input is metrics, not the results of other expressions."; CEIL "Returns the ceiling of each
metric. The ceiling is the smallest integer greater than or equal to each value."; FLOOR "Returns the floor of
each metric. The floor is the largest integer less than or equal to each value." (same page, Functions
supported for metric math).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

from peagle.planning.pool_plans import most_expensive
from peagle_cdk.costed_unit import CostedUnit
from peagle_cdk.kpi_metrics import KPI_REPORTS_METRIC

if TYPE_CHECKING:
    from peagle_cdk.peagle_endpoint import PeagleEndpoint

GENERATION_TOKENS_METRIC = "GenerationTokensPerSecond"
SECONDS_PER_HOUR = 3600
TOKENS_PER_COST_FIGURE = 1_000_000


class FleetMetrics:
    """The figures of one PeagleEndpoint's units (the primary one and, with an A/B baseline, the baseline),
    from their KPI lines. Expressions of one graph or alarm may share metrics: the ids are per metric
    and unit (``reports0``, ``tokens1``), so the same metric always has the same id."""

    def __init__(self, endpoint: PeagleEndpoint) -> None:
        self._endpoint = endpoint
        self.interval_seconds = endpoint.kpi_interval_seconds
        plans = [endpoint.plan, endpoint.baseline_plan]
        # Each serving unit prices itself (its strategy knows what one unit holds: peagle_cdk/unit_strategy.py); an
        # instance pool at its most expensive type, where CloudWatch cannot tell which types run (pool_pricing_note).
        self.units = [
            endpoint.endpoint.costed_unit(name, most_expensive(plan).price_per_hour_usd)
            for name, plan in zip(endpoint.unit_names, plans, strict=False)
            if plan is not None
        ]

    def period(self, at_least: Duration) -> Duration:
        """``at_least``, or the whole minutes that hold one KPI interval if that is longer (KPI metrics come
        from metric filters, at one-minute resolution)."""
        return Duration.minutes(max(int(at_least.to_minutes()), math.ceil(self.interval_seconds / 60)))

    def units_reporting(self, unit: CostedUnit, *, period: Duration, label: str) -> cloudwatch.MathExpression:
        """The unit's instances or copies that report: SampleCount(KpiReports) x I / P."""
        return self._per_period(KPI_REPORTS_METRIC, "SampleCount", unit, period=period, label=label)

    def fleet_total(
        self, kpi_name: str, unit: CostedUnit, *, period: Duration, label: str
    ) -> cloudwatch.MathExpression:
        """The sum over the unit's instances or copies of a per-unit rate or gauge (tokens/s, requests
        running): Sum(samples) x I / P. A plain Sum counts P / I samples per unit."""
        return self._per_period(kpi_name, "Sum", unit, period=period, label=label)

    def _per_period(
        self, kpi_name: str, statistic: str, unit: CostedUnit, *, period: Duration, label: str
    ) -> cloudwatch.MathExpression:
        metric_id = self._id(kpi_name, unit)
        return cloudwatch.MathExpression(
            expression=f"{metric_id} * {self.interval_seconds} / PERIOD({metric_id})",
            using_metrics={metric_id: self._metric(kpi_name, unit, statistic, period)},
            label=label,
            period=period,
        )

    def cost_per_hour(self, units: Sequence[CostedUnit], *, period: Duration, label: str) -> cloudwatch.MathExpression:
        """USD per hour of ``units`` together: the instances they are billed for x the price per instance-hour."""
        return cloudwatch.MathExpression(
            expression=self._cost_per_hour(units),
            using_metrics=self._reports(units, period),
            label=label,
            period=period,
        )

    def cost_per_million_output_tokens(
        self, units: Sequence[CostedUnit], *, period: Duration, label: str
    ) -> cloudwatch.MathExpression:
        """USD per 1M generated tokens of ``units`` together: their cost per hour over their tokens per hour
        (the module docstring derives it; for instances of variants it reduces to price x SampleCount(reports)
        / (Sum(tokens/s) x 3600) x 1e6). No datapoint where no token was generated (division by zero)."""
        tokens = " + ".join(self._id(GENERATION_TOKENS_METRIC, unit) for unit in units)
        if any(unit.copies for unit in units):
            first = self._id(GENERATION_TOKENS_METRIC, units[0])
            fleet_tokens = f"({tokens}) * {self.interval_seconds} / PERIOD({first})"
            expression = f"({self._cost_per_hour(units)}) / ({fleet_tokens} * {SECONDS_PER_HOUR})"
        else:
            costs = " + ".join(f"{unit.price} * {self._id(KPI_REPORTS_METRIC, unit)}" for unit in units)
            expression = f"({costs}) / (({tokens}) * {SECONDS_PER_HOUR})"
        return cloudwatch.MathExpression(
            expression=f"{expression} * {TOKENS_PER_COST_FIGURE}",
            using_metrics={
                **self._reports(units, period),
                **{
                    self._id(GENERATION_TOKENS_METRIC, unit): self._metric(
                        GENERATION_TOKENS_METRIC, unit, "Sum", period
                    )
                    for unit in units
                },
            },
            label=label,
            period=period,
        )

    def _cost_per_hour(self, units: Sequence[CostedUnit]) -> str:
        """Cost per hour as metric math: instances reporting x price (variants), or each component's copies
        priced as whole instances (the module docstring)."""
        if any(unit.copies for unit in units):
            return " + ".join(
                f"{unit.price} * {unit.instances_expression(self._id(KPI_REPORTS_METRIC, unit), self.interval_seconds)}"
                for unit in units
            )
        terms = [f"{unit.price} * {self._id(KPI_REPORTS_METRIC, unit)}" for unit in units]
        first = self._id(KPI_REPORTS_METRIC, units[0])
        return f"({' + '.join(terms)}) * {self.interval_seconds} / PERIOD({first})"

    def _reports(self, units: Sequence[CostedUnit], period: Duration) -> dict[str, cloudwatch.IMetric]:
        return {
            self._id(KPI_REPORTS_METRIC, unit): self._metric(KPI_REPORTS_METRIC, unit, "SampleCount", period)
            for unit in units
        }

    def _metric(self, kpi_name: str, unit: CostedUnit, statistic: str, period: Duration) -> cloudwatch.Metric:
        # The expression's period would override a different one in the template anyway, but CDK then warns
        # on every synth ("Periods of metrics in 'usingMetrics' ... have been overridden"): give it the same.
        return self._endpoint.metric_kpi(kpi_name, unit_name=unit.name, statistic=statistic, period=period)

    def _id(self, kpi_name: str, unit: CostedUnit) -> str:
        """Metric ids start with a lower-case letter and are unique per graph (CloudWatch, "Using metric math")."""
        short = {KPI_REPORTS_METRIC: "reports", GENERATION_TOKENS_METRIC: "tokens"}.get(kpi_name)
        name = short or (kpi_name[0].lower() + kpi_name[1:])
        return f"{name}{self.units.index(unit)}"
