"""Alarms and a dashboard segment for a PeagleEndpoint, in either endpoint mode: the construct takes
your alarm action (e.g. your SNS topic) and your dashboard, or makes its own of each, exposes each alarm
as an attribute, and sets the endpoint's update to roll back on the latency and 5xx alarms.

What each signal means and how to tune it is in docs/observability.md ("Reading the dashboard").
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from peagle.planning.pool_plans import pool_pricing_note
from peagle_cdk.component_endpoint import id_suffix
from peagle_cdk.endpoint_alarms import AlarmFactory, AlarmTopic, rate_percent
from peagle_cdk.endpoint_scaling import MICROSECONDS_PER_SECOND
from peagle_cdk.fleet_metrics import FleetMetrics
from peagle_cdk.kpi_metrics import KPI_REPORTS_METRIC
from peagle_cdk.prop_types import check_duration
from peagle_cdk.settings_model import DEFAULTS, AlarmSettings, DeploymentConfig, build

if TYPE_CHECKING:
    from peagle.planning.planner import Plan
    from peagle_cdk.peagle_endpoint import PeagleEndpoint

# The deployment file's defaults (its alarms section) are the construct's: one set of numbers.
_DEFAULTS = DEFAULTS.alarms


# The cost alarm's period: cost per token is noisy over minutes (a few requests on an instance paid by the
# hour), and a budget is about sustained spend; 3600 s also holds a whole number of KPI intervals for every
# interval that divides it. Three such hours in a row above the budget alarm (the deployment file's
# alarms.max_cost_per_million_output_tokens_usd says "3 hours" in its description).
COST_ALARM_PERIOD = Duration.hours(1)
COST_ALARM_HOURS = 3
# The cost widgets' period: steadier than a minute, and 900 s holds a whole number of the usual KPI intervals.
COST_WIDGET_PERIOD = Duration.minutes(15)


@dataclass(frozen=True)
class AlarmThresholds:
    """``latency_sla`` (the p90 ModelLatency the latency alarm fires over) None: the endpoint plan's latency SLA
    (its profile's, or PeagleEndpoint's ``latency_sla``). ``max_cost_per_million_output_tokens_usd`` None: no
    cost alarm. Bounds and messages are the deployment file's alarms section's (peagle.settings.AlarmSettings)."""

    latency_sla: Duration | None = None
    error_5xx_rate_percent: float = field(default=_DEFAULTS.error_5xx_rate_percent)
    error_4xx_rate_percent: float = field(default=_DEFAULTS.error_4xx_rate_percent)
    gpu_memory_percent_per_gpu: float = field(default=_DEFAULTS.gpu_memory_percent)
    min_acceptance_rate: float = field(default=_DEFAULTS.min_acceptance_rate)
    kpi_missing_minutes: int = field(default=_DEFAULTS.kpi_missing_minutes)
    max_cost_per_million_output_tokens_usd: float | None = field(
        default=_DEFAULTS.max_cost_per_million_output_tokens_usd
    )
    latency_p90_seconds: float | None = None  # deprecated: the old name of latency_sla, in seconds

    def __post_init__(self) -> None:
        check_duration("AlarmThresholds", "latency_sla", self.latency_sla, "Duration.seconds(10)")
        if self.latency_p90_seconds is None:
            self.settings()  # validated when made, as every value type (peagle_cdk/endpoint_props.py)
            return
        if self.latency_sla is not None:
            raise ValueError(
                "AlarmThresholds: latency_p90_seconds is the old name of latency_sla; give only latency_sla"
            )
        warnings.warn(
            "AlarmThresholds(latency_p90_seconds=...) is deprecated: it is now AlarmThresholds(latency_sla=Duration...), "
            "the same name as PeagleEndpoint's latency_sla",
            FutureWarning,
            stacklevel=3,
        )
        object.__setattr__(self, "latency_sla", Duration.millis(round(self.latency_p90_seconds * 1000)))
        object.__setattr__(self, "latency_p90_seconds", None)
        self.settings()

    @property
    def latency_sla_seconds(self) -> float | None:
        return None if self.latency_sla is None else self.latency_sla.to_milliseconds() / 1000

    def settings(self, owner: str = "AlarmThresholds") -> AlarmSettings:
        """The settings model's ``alarms`` section, built from these thresholds (its bounds, in their words)."""
        return build(
            AlarmSettings,
            owner=owner,
            path="alarms",
            latency_sla_p90_seconds=self.latency_sla_seconds,
            error_5xx_rate_percent=self.error_5xx_rate_percent,
            error_4xx_rate_percent=self.error_4xx_rate_percent,
            gpu_memory_percent=self.gpu_memory_percent_per_gpu,
            min_acceptance_rate=self.min_acceptance_rate,
            kpi_missing_minutes=self.kpi_missing_minutes,
            max_cost_per_million_output_tokens_usd=self.max_cost_per_million_output_tokens_usd,
        )


class EndpointMonitoring(Construct):
    """Typed alarms: ``latency_alarm``, ``error_5xx_alarm``, ``error_4xx_alarm``, ``gpu_memory_alarm``,
    ``acceptance_alarm`` (None without speculation), ``kpi_missing_alarm``, ``cost_alarm`` (None without
    a cost budget), ``unhealthy`` (composite); ``alarms`` lists them all. ``dashboard`` is the dashboard the
    widgets went to."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint: PeagleEndpoint,
        alarm_action: cloudwatch.IAlarmAction | None = None,
        alarm_emails: Sequence[str] = (),
        dashboard: cloudwatch.Dashboard | None = None,
        thresholds: AlarmThresholds | None = None,
        summary_markdown: str | None = None,
        roll_back_updates: bool = True,
    ) -> None:
        """
        :param alarm_action: where every alarm notifies on ALARM and OK (e.g. ``cw_actions.SnsAction(topic)``);
            default: a new KMS-encrypted SNS topic (``topic``), with ``alarm_emails`` subscribed.
        :param dashboard: your dashboard, which gets this endpoint's widgets as a segment; default: a new one.
        :param thresholds: the alarms' thresholds; default: the endpoint's plan's (the deployment file's alarms
            section for the YAML app, the defaults for the construct's props).
        :param summary_markdown: the text atop the segment; default: the endpoint's plan.
        :param roll_back_updates: the endpoint's updates roll back on the latency and 5xx alarms (default).
        """
        super().__init__(scope, id)
        plan = endpoint.plan
        # The settings model's alarms section: the thresholds given, checked in their words, or the plan's.
        self._thresholds = _checked(thresholds, endpoint, self.node.path) if thresholds is not None else plan.alarms
        self._latency_sla_seconds = self._thresholds.latency_sla_p90_seconds or plan.latency_sla_p90_seconds
        self._fleet = FleetMetrics(endpoint)
        self.topic: AlarmTopic | None = None
        if alarm_action is None:
            self.topic = AlarmTopic(self, "AlarmTopic", emails=list(alarm_emails))
            alarm_action = self.topic.action
        factory = AlarmFactory(self, action=alarm_action, name_prefix=f"P-EAGLE {endpoint.endpoint_name}")
        self._factory = factory
        self.latency_alarm, self.error_5xx_alarm = self.rollback_alarms_for(endpoint)
        self.error_4xx_alarm = self._error_4xx_alarm(endpoint)
        self.gpu_memory_alarm = self._gpu_memory_alarm(endpoint)
        self.acceptance_alarm = self._acceptance_alarm(endpoint) if plan.speculation_enabled else None
        self.kpi_missing_alarm = self._kpi_missing_alarm(endpoint)
        self.cost_alarm = self._cost_alarm(self._thresholds.max_cost_per_million_output_tokens_usd, plan)
        self.unhealthy = factory.composite(
            "EndpointUnhealthy",
            alarms=[self.error_5xx_alarm, self.kpi_missing_alarm, self.latency_alarm],
            description="5xx errors, latency over SLA, or the container stopped reporting",
        )
        self._primary_alarms = list(factory.alarms.values())
        self.dashboard = self._dashboard(endpoint, dashboard, summary_markdown or _plan_summary(endpoint))
        if roll_back_updates:
            self._roll_back_on_alarms(endpoint)
        self.alarms: list[cloudwatch.Alarm] = list(factory.alarms.values())
        if endpoint.baseline_unit is not None:
            self.add_variant_comparison(endpoint, baseline_variant=endpoint.baseline_unit)

    def _error_4xx_alarm(self, endpoint: PeagleEndpoint) -> cloudwatch.Alarm:
        thresholds, minute = self._thresholds, Duration.minutes(1)
        return self._factory.alarm(
            "Invocation4xxRateHigh",
            metric=rate_percent(
                endpoint.metric_invocation_4xx_errors(period=minute),
                endpoint.metric_invocations(period=minute),
                "4xx %",
            ),
            threshold=thresholds.error_4xx_rate_percent,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            description=f"more than {thresholds.error_4xx_rate_percent:g}% of invocations are rejected (4xx): "
            "a client sends bad requests or exceeds max_model_len",
        )

    def _gpu_memory_alarm(self, endpoint: PeagleEndpoint) -> cloudwatch.Alarm:
        thresholds, gpu_count = self._thresholds, endpoint.plan.gpus_per_metric
        return self._factory.alarm(
            "GpuMemoryHigh",
            metric=endpoint.metric_gpu_memory_utilization_percent(period=Duration.minutes(1)),
            threshold=thresholds.gpu_memory_percent * gpu_count,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            description=f"GPU memory over {thresholds.gpu_memory_percent:g}% per GPU (metric is 0-100 x "
            f"{gpu_count} GPUs)",
        )

    def _acceptance_alarm(self, endpoint: PeagleEndpoint) -> cloudwatch.Alarm:
        thresholds = self._thresholds
        return self._factory.alarm(
            "SpecAcceptanceRateLow",
            metric=endpoint.metric_kpi("SpecAcceptanceRate", period=Duration.minutes(5)),
            threshold=thresholds.min_acceptance_rate,
            comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            evaluation_periods=3,
            datapoints_to_alarm=3,
            description=f"draft acceptance under {thresholds.min_acceptance_rate:g} for 15 minutes: the "
            "drafter does not match the target or speculation is not running; drafts then cost compute",
        )

    def _kpi_missing_alarm(self, endpoint: PeagleEndpoint) -> cloudwatch.Alarm:
        """No KPI line for kpi_missing_minutes: always, where a unit always serves (variants), else only while
        copies serve (a component scaled to zero reports nothing)."""
        thresholds, factory = self._thresholds, self._factory
        reports = endpoint.metric_kpi(
            KPI_REPORTS_METRIC, statistic="SampleCount", period=Duration.minutes(thresholds.kpi_missing_minutes)
        )
        kpi_expected_while = endpoint.metric_units_serving(period=Duration.minutes(thresholds.kpi_missing_minutes))
        if kpi_expected_while is None:
            return factory.alarm(
                "KpiReportsMissing",
                metric=reports,
                threshold=1,
                comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                evaluation_periods=1,
                datapoints_to_alarm=1,
                missing_data=cloudwatch.TreatMissingData.BREACHING,
                description=f"no KPI line for {thresholds.kpi_missing_minutes} minutes: the container is not reporting",
            )
        return factory.alarm(
            "KpiReportsMissing",
            metric=cloudwatch.MathExpression(
                expression="IF(FILL(serving, 0) > 0 AND FILL(reports, 0) < 1, 1, 0)",
                using_metrics={"serving": kpi_expected_while, "reports": reports},
                label="serving without KPI lines",
                period=Duration.minutes(thresholds.kpi_missing_minutes),
            ),
            threshold=1,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=1,
            datapoints_to_alarm=1,
            description=f"copies served requests for {thresholds.kpi_missing_minutes} minutes without a KPI "
            "line: the container is not reporting (no alarm while scaled to zero)",
        )

    def _cost_alarm(self, budget_usd: float | None, plan: Plan) -> cloudwatch.Alarm | None:
        """The whole fleet's cost per 1M output tokens (every unit's, the A/B baseline's too) above the
        budget for COST_ALARM_HOURS hours in a row. Idle hours have no datapoint (no tokens: metric math
        drops a division by zero) and do not breach. Not a rollback alarm: spending is no failed deploy."""
        if budget_usd is None:
            return None
        fleet = self._fleet
        return self._factory.alarm(
            "CostPerMillionOutputTokensHigh",
            metric=fleet.cost_per_million_output_tokens(
                fleet.units, period=COST_ALARM_PERIOD, label="cost per 1M output tokens (USD)"
            ),
            threshold=budget_usd,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=COST_ALARM_HOURS,
            datapoints_to_alarm=COST_ALARM_HOURS,
            missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            description=f"cost per 1M output tokens over ${budget_usd:g} for {COST_ALARM_HOURS} hours in a row "
            "(on-demand instance price, idle hours not counted): serve the load with fewer or cheaper instances, raise "
            "their utilisation (a higher scaling target, a lower autoscaling minimum), or turn speculation off if "
            "its acceptance rate is low" + pool_pricing_note(plan),
        )

    def _roll_back_on_alarms(self, endpoint: PeagleEndpoint) -> None:
        """Updates roll back on each unit's p90 latency and 5xx alarms. The lists keep the order the 0.1.0
        templates had (variants: 5xx first; components: latency first): a reordered list is a changed
        DeploymentConfig, which would update deployed endpoints for nothing."""
        if not endpoint.inference_component_names:
            endpoint.add_rollback_alarms([self.error_5xx_alarm, self.latency_alarm])
            return
        if endpoint.rollout_strategy == "none":
            return
        endpoint.add_rollback_alarms([self.latency_alarm, self.error_5xx_alarm])
        for unit in endpoint.managed_units[1:]:
            endpoint.add_rollback_alarms(list(self.rollback_alarms_for(endpoint, unit)), unit_name=unit)

    def rollback_alarms_for(
        self, endpoint: PeagleEndpoint, unit_name: str | None = None
    ) -> tuple[cloudwatch.Alarm, cloudwatch.Alarm]:
        """The p90-latency and 5xx-rate alarms of one unit, variant or component (default: the primary one),
        which an update rolls back on. Other units than the primary get their name in the alarm id."""
        thresholds, minute = self._thresholds, Duration.minutes(1)
        suffix = "" if unit_name in (None, endpoint.primary_unit) else id_suffix(unit_name)
        unit = {"unit_name": unit_name} if suffix else {}
        named = f"{unit_name}: " if suffix else ""
        latency_sla_seconds = self._latency_sla_seconds
        latency_us = latency_sla_seconds * MICROSECONDS_PER_SECOND
        latency = self._factory.alarm(
            f"ModelLatencyP90High{suffix}",
            metric=endpoint.metric_model_latency_microseconds("p90", period=minute, **unit),
            threshold=latency_us,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            description=f"{named}p90 ModelLatency over "
            f"{latency_sla_seconds:g} s ({latency_us:.0f} us) in 3 of 5 minutes",
        )
        errors_5xx = self._factory.alarm(
            f"Invocation5xxRateHigh{suffix}",
            metric=rate_percent(
                endpoint.metric_invocation_5xx_errors(period=minute, **unit),
                endpoint.metric_invocations(period=minute, **unit),
                "5xx %",
            ),
            threshold=thresholds.error_5xx_rate_percent,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            description=f"{named}more than {thresholds.error_5xx_rate_percent:g}% of invocations fail with 5xx",
        )
        return latency, errors_5xx

    def _dashboard(
        self,
        endpoint: PeagleEndpoint,
        dashboard: cloudwatch.Dashboard | None,
        summary: str,
    ) -> cloudwatch.Dashboard:
        """The endpoint's rows: plan and alarms, latency, tokens and speculation, GPUs and load, invocations
        and errors, then cost."""
        widgets = _EndpointWidgets(endpoint, self._fleet)
        dashboard = dashboard or cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.hours(3))
        dashboard.add_widgets(
            cloudwatch.TextWidget(markdown=summary, width=16, height=6),
            cloudwatch.AlarmStatusWidget(
                title="Alarms", alarms=[*self._primary_alarms, self.unhealthy], width=8, height=6
            ),
        )
        dashboard.add_widgets(widgets.model_latency(), widgets.streaming_latency())
        dashboard.add_widgets(widgets.tokens_per_second(), widgets.speculation())
        dashboard.add_widgets(widgets.gpu_use(), widgets.load())
        dashboard.add_widgets(widgets.invocations(), widgets.error_rates())
        self._cost_widgets(dashboard, endpoint.plan)
        return dashboard

    def _cost_widgets(self, dashboard: cloudwatch.Dashboard, plan: Plan) -> None:
        """Cost per hour and per 1M output tokens of the fleet (with an A/B baseline: of both units, and of
        each), from the units' KPI lines and the plan's on-demand price (peagle_cdk/fleet_metrics.py)."""
        fleet = self._fleet
        # The placement and scale-in the template states decide how many instances copies hold (fleet_metrics.py).
        share = fleet.units[0].pricing_note() + pool_pricing_note(plan)
        dashboard.add_widgets(
            cloudwatch.TextWidget(
                markdown=f"## Cost (on-demand price, ${plan.price_per_hour_usd:,g}/instance-hour, "
                f"{plan.price_source})\nUnits are counted from their KPI lines, so an instance still starting is "
                f"billed but not counted{share}. Instance price only (no storage, data transfer or requests). "
                "Periods without generated tokens show no cost per token. What each line means: "
                "docs/observability.md, 'Reading the dashboard'.",
                width=24,
                height=2,
            )
        )
        groups = [fleet.units]
        if len(fleet.units) > 1:
            groups += [[unit] for unit in fleet.units]

        def lines(figure: Callable[..., cloudwatch.MathExpression]) -> list[cloudwatch.IMetric]:
            return [
                figure(
                    group,
                    period=COST_WIDGET_PERIOD,
                    label=f"{group[0].name}: {group[0].describe()}" if len(group) == 1 else "all units",
                )
                for group in groups
            ]

        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Cost per hour of the fleet (USD): units reporting x price per unit",
                left=lines(fleet.cost_per_hour),
                left_y_axis=cloudwatch.YAxisProps(min=0),
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Cost per 1M output tokens (USD; none while no tokens are generated)",
                left=lines(fleet.cost_per_million_output_tokens),
                left_y_axis=cloudwatch.YAxisProps(min=0),
                width=12,
            ),
        )

    def add_variant_comparison(self, endpoint: PeagleEndpoint, *, baseline_variant: str) -> None:
        """A/B widgets: the same target with and without (or with another K of) speculation.

        The speedup line is baseline TPOT / speculative TPOT on live traffic: above 1, P-EAGLE
        generates faster per request; compare tokens/s too, since gains shrink under load.
        """
        primary = endpoint.primary_unit
        minute = Duration.minutes(5)
        split = (
            "each request names its inference component"
            if endpoint.inference_component_names
            else "traffic split by variant weight"
        )

        def per_variant(name: str, statistic: str = "Average") -> list[cloudwatch.Metric]:
            return [
                endpoint.metric_kpi(name, unit_name=variant, statistic=statistic, period=minute, label=f"{variant}")
                for variant in (primary, baseline_variant)
            ]

        speedup = cloudwatch.MathExpression(
            expression="baseline / speculative",
            using_metrics={
                "baseline": endpoint.metric_kpi("TimePerOutputTokenSeconds", unit_name=baseline_variant, period=minute),
                "speculative": endpoint.metric_kpi("TimePerOutputTokenSeconds", unit_name=primary, period=minute),
            },
            label=f"measured speedup ({baseline_variant} TPOT / {primary} TPOT)",
            period=minute,
        )
        latency = [
            endpoint.metric_model_latency_microseconds(
                "p50", period=minute, unit_name=variant, label=f"{variant} p50 (us)"
            )
            for variant in (primary, baseline_variant)
        ]
        self.dashboard.add_widgets(
            cloudwatch.TextWidget(
                markdown=f"## A/B: `{primary}` (P-EAGLE) vs `{baseline_variant}` (baseline)\n"
                f"Same target and instance type; {split}. The speedup is measured on live "
                "traffic; judge it together with tokens/s and error rates.",
                width=24,
                height=2,
            )
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Measured speedup (x)", left=[speedup], width=8),
            cloudwatch.GraphWidget(
                title="Time per output token (s)", left=per_variant("TimePerOutputTokenSeconds"), width=8
            ),
            cloudwatch.GraphWidget(
                title="Generated tokens/s",
                left=[
                    self._fleet.fleet_total(
                        "GenerationTokensPerSecond", unit, period=self._fleet.period(minute), label=unit.name
                    )
                    for unit in self._fleet.units
                ],
                width=8,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="ModelLatency p50 by variant", left=latency, width=12),
            cloudwatch.GraphWidget(
                title="Time to first token (s)", left=per_variant("TimeToFirstTokenSeconds"), width=12
            ),
        )


def _checked(thresholds: AlarmThresholds, endpoint: PeagleEndpoint, path: str) -> AlarmSettings:
    """The thresholds as the settings model's alarms section, through its rules (bounds, and kpi_missing_minutes
    against the endpoint's KPI interval), in AlarmThresholds' words."""
    owner = f"EndpointMonitoring {path}"
    alarms = thresholds.settings(owner)
    # The endpoint's own observability, validated when it was built.
    build(DeploymentConfig, owner=owner, alarms=alarms, observability=endpoint.plan.observability)
    return alarms


class _EndpointWidgets:
    """The graphs of EndpointMonitoring's dashboard segment, on the primary unit's metrics at a minute's period;
    fleet totals add up each unit's samples over a period that holds at least one KPI interval."""

    def __init__(self, endpoint: PeagleEndpoint, fleet: FleetMetrics) -> None:
        self._endpoint, self._fleet = endpoint, fleet
        self._gpu_count = endpoint.plan.gpus_per_metric
        self._minute = Duration.minutes(1)
        self._primary = fleet.units[0]
        self._fleet_period = fleet.period(self._minute)

    def _kpi(self, name: str, label: str, statistic: str = "Average") -> cloudwatch.Metric:
        return self._endpoint.metric_kpi(name, statistic=statistic, period=self._minute, label=label)

    def _fleet_total(self, name: str, label: str) -> cloudwatch.MathExpression:
        return self._fleet.fleet_total(name, self._primary, period=self._fleet_period, label=label)

    def _latency_ms(self, statistic: str) -> cloudwatch.MathExpression:
        metric_id = "latency_" + statistic.lower()  # ids must differ between lines of one graph
        return cloudwatch.MathExpression(
            expression=f"{metric_id} / 1000",
            using_metrics={metric_id: self._endpoint.metric_model_latency_microseconds(statistic, period=self._minute)},
            label=f"ModelLatency {statistic} (ms)",
            period=self._minute,
        )

    def model_latency(self) -> cloudwatch.GraphWidget:
        return cloudwatch.GraphWidget(
            title="Latency per request: ModelLatency (ms)",
            left=[self._latency_ms(s) for s in ("Average", "p50", "p90", "p99")],
            width=12,
        )

    def streaming_latency(self) -> cloudwatch.GraphWidget:
        return cloudwatch.GraphWidget(
            title="Streaming latency (s): time to first token, time per output token",
            left=[
                self._kpi("TimeToFirstTokenSeconds", "TTFT mean"),
                self._kpi("EndToEndLatencySeconds", "end-to-end mean"),
            ],
            right=[self._kpi("TimePerOutputTokenSeconds", "TPOT mean")],
            width=12,
        )

    def tokens_per_second(self) -> cloudwatch.GraphWidget:
        return cloudwatch.GraphWidget(
            title="Tokens per second (all instances)",
            left=[
                self._fleet_total("GenerationTokensPerSecond", "generated tokens/s"),
                self._fleet_total("PromptTokensPerSecond", "prompt tokens/s"),
            ],
            width=12,
        )

    def speculation(self) -> cloudwatch.GraphWidget:
        return cloudwatch.GraphWidget(
            title="Speculation: is P-EAGLE paying?",
            left=[self._kpi("SpecAcceptanceRate", "acceptance rate (0-1)")],
            right=[self._kpi("SpecMeanAcceptanceLength", "mean acceptance length (tokens/step)")],
            width=12,
        )

    def gpu_use(self) -> cloudwatch.GraphWidget:
        endpoint, gpu_count, minute = self._endpoint, self._gpu_count, self._minute
        return cloudwatch.GraphWidget(
            title=f"GPU utilization and memory (% of {gpu_count} GPU(s), averaged per GPU)",
            left=[
                cloudwatch.MathExpression(
                    expression=f"gpu / {gpu_count}",
                    using_metrics={"gpu": endpoint.metric_gpu_utilization_percent(period=minute)},
                    label="GPU utilization % per GPU",
                    period=minute,
                ),
                cloudwatch.MathExpression(
                    expression=f"mem / {gpu_count}",
                    using_metrics={"mem": endpoint.metric_gpu_memory_utilization_percent(period=minute)},
                    label="GPU memory % per GPU",
                    period=minute,
                ),
            ],
            left_y_axis=cloudwatch.YAxisProps(min=0, max=100),
            width=12,
        )

    def load(self) -> cloudwatch.GraphWidget:
        return cloudwatch.GraphWidget(
            title="Load: instances, requests in flight, KV cache",
            left=[
                self._fleet.units_reporting(
                    self._primary,
                    period=self._fleet_period,
                    label="reporting copies" if self._endpoint.inference_component_names else "reporting instances",
                ),
                self._fleet_total("RequestsRunning", "requests running"),
                self._fleet_total("RequestsWaiting", "requests waiting"),
            ],
            right=[self._kpi("KvCacheUsageRatio", "KV cache usage (0-1)", "Maximum")],
            width=12,
        )

    def invocations(self) -> cloudwatch.GraphWidget:
        return cloudwatch.GraphWidget(
            title="Invocations per minute",
            left=[self._endpoint.metric_invocations(period=self._minute, label="invocations")],
            width=12,
        )

    def error_rates(self) -> cloudwatch.GraphWidget:
        endpoint, minute = self._endpoint, self._minute
        return cloudwatch.GraphWidget(
            title="Error rates (%)",
            left=[
                rate_percent(
                    endpoint.metric_invocation_4xx_errors(period=minute),
                    endpoint.metric_invocations(period=minute),
                    "4xx %",
                    "e4xx",
                ),
                rate_percent(
                    endpoint.metric_invocation_5xx_errors(period=minute),
                    endpoint.metric_invocations(period=minute),
                    "5xx %",
                    "e5xx",
                ),
            ],
            width=12,
        )


def _plan_summary(endpoint: PeagleEndpoint) -> str:
    lines = "\n".join(f"    {line}" for line in endpoint.plan.summary_lines())
    return (
        f"# P-EAGLE endpoint `{endpoint.endpoint_name}`\n"
        "Latency and errors come from SageMaker (AWS/SageMaker, /aws/sagemaker/Endpoints); tokens/s, TTFT, "
        "TPOT and acceptance from the launcher's KPI lines (PEagle/Endpoints). What each one means: "
        "docs/observability.md, 'Reading the dashboard'.\n\n" + lines
    )
