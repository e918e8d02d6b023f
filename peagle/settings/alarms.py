"""The alarms section: the thresholds of the endpoint's alarms and who hears them."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator

from peagle.catalog import StrictModel
from peagle.settings.refs import spelled
from peagle.settings.renames import renamed

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class AlarmSettings(StrictModel):
    """Alarm thresholds; unset ones come from the profile."""

    PROP_TYPE: ClassVar[str] = "AlarmThresholds"  # EndpointMonitoring's thresholds (peagle_cdk/endpoint_monitoring.py)

    enabled: bool = Field(default=True, description="the alarms and their SNS topic")
    emails: list[str] = Field(
        default=[],
        description="subscribed to the alarm topic (one KMS-encrypted, SSL-only SNS topic; each must confirm)",
    )
    latency_sla_p90_seconds: float | None = Field(
        default=None,
        gt=0,
        json_schema_extra=spelled("latency_sla"),
        description="the p90 ModelLatency the latency alarm and step scaling act on (formerly latency_p90_seconds); "
        "unset: the profile's latency SLA",
    )
    error_5xx_rate_percent: float = Field(
        default=1.0, gt=0, le=100, description="5xx share of invocations that alarms (and rolls a deploy back)"
    )
    error_4xx_rate_percent: float = Field(
        default=10.0, gt=0, le=100, description="4xx share that alarms (client errors, e.g. prompts over max_model_len)"
    )
    gpu_memory_percent: float = Field(
        default=95.0,
        gt=0,
        le=100,
        description="per GPU",
        json_schema_extra=spelled("AlarmThresholds(gpu_memory_percent_per_gpu=...)"),
    )
    min_acceptance_rate: float = Field(
        default=0.2, gt=0, lt=1, description="below it speculation costs more than it saves (drafter mismatch or off)"
    )
    kpi_missing_minutes: int = Field(
        default=10, ge=2, le=60, description="no KPI line for this long: container not reporting"
    )
    max_cost_per_million_output_tokens_usd: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="a budget: the cost alarm fires when the fleet's cost per 1M generated tokens (on-demand "
        "instance price, see instance.price_per_hour_usd) stays above it for 3 hours in a row (idle hours do not "
        "count); null: no cost alarm. The dashboard shows the figure either way",
    )

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return renamed(data, "alarms", {"latency_p90_seconds": "latency_sla_p90_seconds"})

    @field_validator("emails")
    @classmethod
    def _emails(cls, value: list[str]) -> list[str]:
        bad = [address for address in value if not _EMAIL.match(address)]
        if bad:
            raise ValueError(f"not e-mail addresses: {bad}")
        return value
