"""Alarms, the alarm topic and the dashboard for one endpoint variant, or one inference component
(ComponentEndpoint offers the same metric helpers, by component).

What each signal means and how to tune it is in the README ("Reading the dashboard").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from peagle_cdk.endpoint_alarms import AlarmFactory, AlarmTopic, rate_percent
from peagle_cdk.endpoint_scaling import MICROSECONDS_PER_SECOND
from peagle_cdk.kpi_metrics import KPI_REPORTS_METRIC, KpiMetrics
from peagle_cdk.peagle_endpoint import PeagleEndpoint

if TYPE_CHECKING:
    from peagle_cdk.component_endpoint import ComponentEndpoint


@dataclass(frozen=True)
class AlarmThresholds:
    latency_p90_seconds: float
    error_5xx_rate_percent: float
    error_4xx_rate_percent: float
    gpu_memory_percent_per_gpu: float
    min_acceptance_rate: float
    kpi_missing_minutes: int


class EndpointMonitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint: PeagleEndpoint | ComponentEndpoint,
        kpi: KpiMetrics,
        thresholds: AlarmThresholds,
        gpu_count: int,
        speculation_enabled: bool,
        summary_markdown: str,
        alarm_emails: list[str] = (),
        kpi_interval_seconds: int = 60,
        kpi_expected_while: cloudwatch.IMetric | None = None,
    ) -> None:
        """
        :param gpu_count: GPUs per instance; GPU metrics are 0-100 x this (1 for a component's normalized ones).
        :param speculation_enabled: adds the acceptance-rate alarm (K > 0).
        :param summary_markdown: the plan, shown at the top of the dashboard.
        :param kpi_expected_while: KPI lines are missed only while this metric is above zero (a component that
            scales to zero reports nothing on purpose); None: always expected.
        """
        super().__init__(scope, id)
        variant = endpoint.variant_name
        self.topic = AlarmTopic(self, "AlarmTopic", emails=list(alarm_emails))
        factory = AlarmFactory(self, action=self.topic.action, name_prefix=f"P-EAGLE {endpoint.endpoint_name}")
        self._factory, self._thresholds = factory, thresholds
        minute = Duration.minutes(1)

        latency, errors_5xx = self.rollback_alarms_for(endpoint)
        factory.alarm(
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
        factory.alarm(
            "GpuMemoryHigh",
            metric=endpoint.metric_gpu_memory_utilization_percent(period=minute),
            threshold=thresholds.gpu_memory_percent_per_gpu * gpu_count,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            description=f"GPU memory over {thresholds.gpu_memory_percent_per_gpu:g}% per GPU (metric is 0-100 x "
            f"{gpu_count} GPUs)",
        )
        if speculation_enabled:
            factory.alarm(
                "SpecAcceptanceRateLow",
                metric=kpi.metric("SpecAcceptanceRate", variant_name=variant, period=Duration.minutes(5)),
                threshold=thresholds.min_acceptance_rate,
                comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                evaluation_periods=3,
                datapoints_to_alarm=3,
                description=f"draft acceptance under {thresholds.min_acceptance_rate:g} for 15 minutes: the "
                "drafter does not match the target or speculation is not running; drafts then cost compute",
            )
        reports = kpi.metric(
            KPI_REPORTS_METRIC,
            variant_name=variant,
            statistic="SampleCount",
            period=Duration.minutes(thresholds.kpi_missing_minutes),
        )
        if kpi_expected_while is None:
            kpi_missing = factory.alarm(
                "KpiReportsMissing",
                metric=reports,
                threshold=1,
                comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                evaluation_periods=1,
                datapoints_to_alarm=1,
                missing_data=cloudwatch.TreatMissingData.BREACHING,
                description=f"no KPI line for {thresholds.kpi_missing_minutes} minutes: the container is not reporting",
            )
        else:
            kpi_missing = factory.alarm(
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
        self.unhealthy = factory.composite(
            "EndpointUnhealthy",
            alarms=[errors_5xx, kpi_missing, latency],
            description="5xx errors, latency over SLA, or the container stopped reporting",
        )
        self.alarms = factory.alarms
        self.dashboard = self._dashboard(endpoint, kpi, gpu_count, summary_markdown, kpi_interval_seconds)

    def rollback_alarms_for(
        self, endpoint: PeagleEndpoint | ComponentEndpoint, variant_name: str | None = None
    ) -> tuple[cloudwatch.Alarm, cloudwatch.Alarm]:
        """The p90-latency and 5xx-rate alarms of one variant or component (default: the primary one), which
        an update rolls back on. Other units than the primary get their name in the alarm id."""
        thresholds, minute = self._thresholds, Duration.minutes(1)
        suffix = "" if variant_name in (None, endpoint.variant_name) else variant_name.title().replace("-", "")
        unit = {"variant_name": variant_name} if suffix else {}
        latency_us = thresholds.latency_p90_seconds * MICROSECONDS_PER_SECOND
        latency = self._factory.alarm(
            f"ModelLatencyP90High{suffix}",
            metric=endpoint.metric_model_latency_microseconds("p90", period=minute, **unit),
            threshold=latency_us,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            description=f"{variant_name + ': ' if suffix else ''}p90 ModelLatency over "
            f"{thresholds.latency_p90_seconds:g} s ({latency_us:.0f} us) in 3 of 5 minutes",
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
            description=f"{variant_name + ': ' if suffix else ''}more than {thresholds.error_5xx_rate_percent:g}% "
            "of invocations fail with 5xx",
        )
        return latency, errors_5xx

    def _dashboard(
        self,
        endpoint: PeagleEndpoint | ComponentEndpoint,
        kpi: KpiMetrics,
        gpu_count: int,
        summary: str,
        kpi_interval_seconds: int,
    ) -> cloudwatch.Dashboard:
        variant = endpoint.variant_name
        minute = Duration.minutes(1)

        def kpi_metric(name: str, label: str, statistic: str = "Average") -> cloudwatch.Metric:
            return kpi.metric(name, variant_name=variant, statistic=statistic, period=minute, label=label)

        def latency_ms(statistic: str) -> cloudwatch.MathExpression:
            metric_id = "latency_" + statistic.lower()  # ids must differ between lines of one graph
            return cloudwatch.MathExpression(
                expression=f"{metric_id} / 1000",
                using_metrics={metric_id: endpoint.metric_model_latency_microseconds(statistic, period=minute)},
                label=f"ModelLatency {statistic} (ms)",
                period=minute,
            )

        dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.hours(3))
        dashboard.add_widgets(
            cloudwatch.TextWidget(markdown=summary, width=16, height=6),
            cloudwatch.AlarmStatusWidget(
                title="Alarms", alarms=[*self.alarms.values(), self.unhealthy], width=8, height=6
            ),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Latency per request: ModelLatency (ms)",
                left=[latency_ms(s) for s in ("Average", "p50", "p90", "p99")],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Streaming latency (s): time to first token, time per output token",
                left=[
                    kpi_metric("TimeToFirstTokenSeconds", "TTFT mean"),
                    kpi_metric("EndToEndLatencySeconds", "end-to-end mean"),
                ],
                right=[kpi_metric("TimePerOutputTokenSeconds", "TPOT mean")],
                width=12,
            ),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Tokens per second (all instances)",
                left=[
                    kpi_metric("GenerationTokensPerSecond", "generated tokens/s", "Sum"),
                    kpi_metric("PromptTokensPerSecond", "prompt tokens/s", "Sum"),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Speculation: is P-EAGLE paying?",
                left=[kpi_metric("SpecAcceptanceRate", "acceptance rate (0-1)")],
                right=[kpi_metric("SpecMeanAcceptanceLength", "mean acceptance length (tokens/step)")],
                width=12,
            ),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
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
            ),
            cloudwatch.GraphWidget(
                title="Load: instances, requests in flight, KV cache",
                left=[
                    kpi.metric(
                        KPI_REPORTS_METRIC,
                        variant_name=variant,
                        statistic="SampleCount",
                        period=Duration.seconds(kpi_interval_seconds),
                        label="reporting instances",
                    ),
                    kpi_metric("RequestsRunning", "requests running", "Sum"),
                    kpi_metric("RequestsWaiting", "requests waiting", "Sum"),
                ],
                right=[kpi_metric("KvCacheUsageRatio", "KV cache usage (0-1)", "Maximum")],
                width=12,
            ),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Invocations per minute",
                left=[endpoint.metric_invocations(period=minute, label="invocations")],
                width=12,
            ),
            cloudwatch.GraphWidget(
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
            ),
        )
        return dashboard

    def add_variant_comparison(
        self, endpoint: PeagleEndpoint | ComponentEndpoint, kpi: KpiMetrics, *, baseline_variant: str
    ) -> None:
        """A/B widgets: the same target with and without (or with another K of) speculation.

        The speedup line is baseline TPOT / speculative TPOT on live traffic: above 1, P-EAGLE
        generates faster per request; compare tokens/s too, since gains shrink under load.
        """
        primary = endpoint.variant_name
        minute = Duration.minutes(5)
        split = (
            "traffic split by variant weight"
            if isinstance(endpoint, PeagleEndpoint)
            else "each request names its inference component"
        )

        def per_variant(name: str, statistic: str = "Average") -> list[cloudwatch.Metric]:
            return [
                kpi.metric(name, variant_name=variant, statistic=statistic, period=minute, label=f"{variant}")
                for variant in (primary, baseline_variant)
            ]

        speedup = cloudwatch.MathExpression(
            expression="baseline / speculative",
            using_metrics={
                "baseline": kpi.metric("TimePerOutputTokenSeconds", variant_name=baseline_variant, period=minute),
                "speculative": kpi.metric("TimePerOutputTokenSeconds", variant_name=primary, period=minute),
            },
            label=f"measured speedup ({baseline_variant} TPOT / {primary} TPOT)",
            period=minute,
        )
        latency = [
            endpoint.metric_model_latency_microseconds(
                "p50", period=minute, variant_name=variant, label=f"{variant} p50 (us)"
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
                title="Generated tokens/s", left=per_variant("GenerationTokensPerSecond", "Sum"), width=8
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="ModelLatency p50 by variant", left=latency, width=12),
            cloudwatch.GraphWidget(
                title="Time to first token (s)", left=per_variant("TimeToFirstTokenSeconds"), width=12
            ),
        )
