"""The ab_test section: a Baseline production variant with another K beside the Primary."""

from __future__ import annotations

from pydantic import Field, PositiveInt

from peagle.catalog import StrictModel
from peagle.settings.refs import spelled


class AbTestSettings(StrictModel):
    """A second production variant serving the same target with another K (0 = no speculation)."""

    enabled: bool = Field(
        default=False,
        json_schema_extra=spelled("ab_baseline", true="ab_baseline=AbBaseline(...)", false="ab_baseline=None"),
        description="adds a Baseline production variant and an A/B dashboard row (the measured speedup, Baseline "
        "TPOT / Primary TPOT); turning it on or off adds or removes a variant: deploy that change with "
        "rollout.strategy none",
    )
    baseline_speculative_tokens: int = Field(
        default=0,
        ge=0,
        le=64,
        description="the Baseline variant's K; 0: no speculation",
        json_schema_extra=spelled("AbBaseline(speculative_tokens=...)"),
    )
    baseline_traffic_percent: float = Field(
        default=50.0,
        gt=0,
        lt=100,
        description="share of traffic the Baseline gets",
        json_schema_extra=spelled("AbBaseline(traffic_percent=...)"),
    )
    baseline_instance_count: PositiveInt = Field(
        default=1,
        json_schema_extra=spelled("AbBaseline(instance_count=...)"),
        description="the Baseline's fixed instance count; autoscaling and alarms follow the Primary variant",
    )
