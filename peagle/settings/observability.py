"""The observability section: log retention, KPI lines and SageMaker's metrics."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from peagle.catalog import StrictModel
from peagle.settings.refs import setting, spelled

# CloudWatch Logs accepts only these retention periods.
LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)


class ObservabilitySettings(StrictModel):
    log_retention_days: int = Field(
        default=365,
        json_schema_extra=spelled("log_retention_days"),
        description="retention of the endpoint's log group (created by the stack, KMS-encrypted)",
    )
    kpi_interval_seconds: int = Field(
        default=60,
        ge=10,
        le=300,
        description="how often the launcher logs a KPI line",
        json_schema_extra=spelled("kpi_interval"),
    )
    metric_publish_frequency_seconds: Literal[10, 30, 60] = Field(
        default=60,
        json_schema_extra=spelled("metric_publish_frequency"),
        description="EndpointConfig.MetricsConfig.MetricPublishFrequencyInSeconds: how often SageMaker publishes the "
        "endpoint's invocation and utilization metrics. At most 60: the alarms and scaling policies read them in "
        "one-minute periods (SageMaker also takes 120-300, which they could not read)",
    )
    detailed_observability: bool = Field(
        default=True,
        json_schema_extra=spelled("detailed_observability"),
        description="SageMaker's detailed observability (EndpointConfig.MetricsConfig.EnableDetailedObservability, "
        "stated on every endpoint config: real-time, inference components and asynchronous): the container's /metrics, "
        "per-GPU and per-instance host metrics, published to CloudWatch as OpenTelemetry metrics (PromQL) and billed "
        "as such (docs/observability.md). A config that does not state it gets it on: false is the way to turn it off",
    )

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        if value not in LOG_RETENTION_DAYS:
            raise ValueError(
                f"{value} is not a CloudWatch Logs retention period; use one of {list(LOG_RETENTION_DAYS)}"
            )
        return value

    @field_validator("metric_publish_frequency_seconds", mode="before")
    @classmethod
    def _publish_frequency(cls, value: Any) -> Any:
        """SageMaker takes "Valid values: 10, 30, 60, 120, 180, 240, 300", and with EnableEnhancedMetrics True (set
        on every real-time endpoint config here) "this interval applies to both utilization and invocation
        metrics" (SageMaker API Reference, MetricsConfig,
        https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_MetricsConfig.html). The alarms and step
        scaling (peagle_cdk/endpoint_monitoring.py, peagle_cdk/endpoint_alarms.py, peagle_cdk/endpoint_scaling.py)
        evaluate those metrics in 60-second periods: "Period is the length of time to evaluate the metric ... If
        you choose one minute as the period, there is one datapoint every minute" (CloudWatch User Guide, "Using
        Amazon CloudWatch alarms", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html),
        and a period shorter than the data's interval "does not receive data for the attempts that do not
        correspond" to it (CloudWatch API Reference, PutMetricAlarm, Period). 10 and 30 s fill each minute; 120 s
        or more leave minutes empty, so "3 of 5 minutes" over the SLA cannot happen and the wake-up from zero
        copies waits. Refused here rather than followed: those periods are tuned and simulated in minutes."""
        if isinstance(value, int) and not isinstance(value, bool) and value in (120, 180, 240, 300):
            raise ValueError(
                f"{value} s is longer than the one-minute period of the alarms and scaling policies that read "
                "SageMaker's endpoint metrics (latency and error alarms, latency step scaling, the wake-up from and "
                f"the scale-in to zero copies): they would get a datapoint in one minute of every {value // 60} and "
                "fire late or not at all; set "
                + ", ".join(setting("observability.metric_publish_frequency_seconds", every) for every in (10, 30))
                + f" or {setting('observability.metric_publish_frequency_seconds', 60)} (the default)"
            )
        return value
