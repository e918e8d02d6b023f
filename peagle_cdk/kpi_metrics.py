"""The launcher's KPI log lines as CloudWatch metrics, via metric filters on the
endpoint's log group. Under network isolation the container cannot call
PutMetricData; stdout (CloudWatch Logs) is its only way out.

Each KPI line is one JSON object with "event": KPI_EVENT (inference_image/README.md); its
keys, the metric names and the dimensions are the container contract's
(peagle_serve.contract). A filter matches only numeric values, so a null (e.g. no drafts
in the interval) publishes nothing rather than a zero that would trip alarms.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs
from constructs import Construct

from peagle_cdk.endpoint_logs import EndpointLogGroup
from peagle_serve.contract import (
    ENDPOINT_NAME_DIMENSION,
    KPI_DIMENSION_KEYS,
    KPI_EVENT,
    KPI_METRIC_NAMES,
    KPI_NAMESPACE,
    KPI_REPORTS_METRIC,
    VARIANT_NAME_DIMENSION,
)


@dataclass(frozen=True)
class KpiField:
    json_field: str  # key in the KPI line
    metric_name: str  # CloudWatch metric name; the unit is in the name where it has one
    unit: cloudwatch.Unit


# The names are the container contract's (the CLI's `peagle smoke` reads the same metrics); the
# units are CloudWatch's, so they live here.
_UNITS: dict[str, cloudwatch.Unit] = {
    "requests_per_second": cloudwatch.Unit.COUNT_PER_SECOND,
    "generation_tokens_per_second": cloudwatch.Unit.COUNT_PER_SECOND,
    "prompt_tokens_per_second": cloudwatch.Unit.COUNT_PER_SECOND,
    "ttft_mean_seconds": cloudwatch.Unit.SECONDS,
    "tpot_mean_seconds": cloudwatch.Unit.SECONDS,
    "e2e_latency_mean_seconds": cloudwatch.Unit.SECONDS,
    "queue_time_mean_seconds": cloudwatch.Unit.SECONDS,
    "spec_acceptance_rate": cloudwatch.Unit.NONE,
    "spec_mean_acceptance_length": cloudwatch.Unit.NONE,
    "spec_drafts_per_second": cloudwatch.Unit.COUNT_PER_SECOND,
    "requests_running": cloudwatch.Unit.COUNT,
    "requests_waiting": cloudwatch.Unit.COUNT,
    "kv_cache_usage_ratio": cloudwatch.Unit.NONE,
    "requests_finished_total_in_interval": cloudwatch.Unit.COUNT,
    "requests_finished.length": cloudwatch.Unit.COUNT,
    "requests_finished.abort": cloudwatch.Unit.COUNT,
}
assert set(_UNITS) == set(KPI_METRIC_NAMES), "every KPI metric needs a unit (peagle_serve.contract.KPI_METRIC_NAMES)"
KPI_FIELDS: tuple[KpiField, ...] = tuple(
    KpiField(json_field, KPI_METRIC_NAMES[json_field], unit) for json_field, unit in _UNITS.items()
)


class KpiMetrics(Construct):
    """Metric filters turning KPI lines in ``log_group`` into metrics in KPI_NAMESPACE.

    Dimensions EndpointName and VariantName come from the line itself (the launcher
    reads them from PEAGLE_ENDPOINT_NAME / PEAGLE_VARIANT_NAME), so every variant of
    the endpoint gets its own series from the one log group.
    """

    def __init__(self, scope: Construct, id: str, *, log_group: EndpointLogGroup, endpoint_name: str) -> None:
        super().__init__(scope, id)
        # Metric filters need the group to exist; it is created before the endpoint.
        self.node.add_dependency(log_group.resource)
        self.endpoint_name = endpoint_name
        dimensions = {dimension: f"$.{key}" for dimension, key in KPI_DIMENSION_KEYS.items()}
        self.filters: dict[str, logs.MetricFilter] = {}
        for kpi in KPI_FIELDS:
            self.filters[kpi.metric_name] = logs.MetricFilter(
                self,
                kpi.metric_name,
                log_group=log_group.log_group,
                metric_namespace=KPI_NAMESPACE,
                metric_name=kpi.metric_name,
                # numeric comparison: lines where the field is null or absent do not match
                filter_pattern=logs.FilterPattern.all(
                    logs.FilterPattern.string_value("$.event", "=", KPI_EVENT),
                    logs.FilterPattern.number_value(f"$.{kpi.json_field}", ">=", 0),
                ),
                metric_value=f"$.{kpi.json_field}",
                dimensions=dimensions,
                unit=kpi.unit,
            )
        self.filters[KPI_REPORTS_METRIC] = logs.MetricFilter(
            self,
            KPI_REPORTS_METRIC,
            log_group=log_group.log_group,
            metric_namespace=KPI_NAMESPACE,
            metric_name=KPI_REPORTS_METRIC,
            filter_pattern=logs.FilterPattern.string_value("$.event", "=", KPI_EVENT),
            metric_value="1",
            dimensions=dimensions,
            unit=cloudwatch.Unit.COUNT,
        )

    def metric(
        self,
        metric_name: str,
        *,
        unit_name: str,
        statistic: str = "Average",
        period: Duration = Duration.minutes(1),
        label: str | None = None,
    ) -> cloudwatch.Metric:
        """One unit's KPI (the launcher writes the unit's name, variant or component, as its variant_name)."""
        if metric_name not in self.filters:
            raise KeyError(f"{metric_name} is not a KPI metric; known: {sorted(self.filters)}")
        return cloudwatch.Metric(
            namespace=KPI_NAMESPACE,
            metric_name=metric_name,
            dimensions_map={ENDPOINT_NAME_DIMENSION: self.endpoint_name, VARIANT_NAME_DIMENSION: unit_name},
            statistic=statistic,
            period=period,
            label=label,
        )
