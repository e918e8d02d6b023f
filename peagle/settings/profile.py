"""The profile's fields and its SLO, overridden for one deployment (profile_overrides, slo)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, PositiveInt

from peagle.catalog import StrictModel


class ProfileOverrides(StrictModel):
    """Any profile field, overridden for this deployment only."""

    PROP_TYPE: ClassVar[str] = "ProfileOverrides"  # a construct user passes it whole (peagle/settings/words.py)

    temperature: float | None = Field(
        default=None,
        ge=0.0,
        le=2.0,
        description="the server's default for requests that omit it (vLLM --override-generation-config)",
    )
    top_p: float | None = Field(
        default=None,
        gt=0.0,
        le=1.0,
        description="the server's default for requests that omit it (vLLM --override-generation-config)",
    )
    max_tokens: PositiveInt | None = Field(
        default=None,
        description="applied by `peagle invoke`, `bench` and `batch` (--profile), not by the server: vLLM 0.32 "
        "would turn a server-side default into a cap on every request",
    )
    max_model_len: PositiveInt | None = Field(
        default=None,
        description="prompt + answer, per request; the planner lowers it in 1024-token steps, not below "
        "min_model_len, if one full-length request would not fit the KV cache",
    )
    min_model_len: PositiveInt | None = Field(
        default=None, description="the floor the planner may lower max_model_len to"
    )
    max_num_seqs: PositiveInt | None = Field(
        default=None,
        le=1024,
        description="concurrent sequences per replica; the planner lowers it to what the KV cache holds at "
        "typical_context_tokens plus K speculative slots",
    )
    typical_context_tokens: PositiveInt | None = Field(
        default=None, description="the request length max_num_seqs is sized for"
    )
    latency_sla_p90_seconds: float | None = Field(
        default=None,
        gt=0,
        description="deprecated: the same as alarms.latency_sla_p90_seconds, the one key for the latency SLA",
    )
    ttft_target_seconds: float | None = Field(
        default=None, gt=0, description="the same as slo.ttft_seconds (older name)"
    )


class SloSettings(StrictModel):
    """The profile's SLO, overridden bound by bound for this deployment (`peagle plan` prints the result).
    Bounds are per request, as `vllm bench serve` measures them; null leaves the profile's value."""

    PROP_TYPE: ClassVar[str] = "SloSettings"

    ttft_seconds: float | None = Field(default=None, gt=0, description="time to first token")
    tpot_seconds: float | None = Field(default=None, gt=0, description="time per output token after the first")
    e2e_seconds: float | None = Field(default=None, gt=0, description="end-to-end latency of the request")
    attainment: float | None = Field(
        default=None, gt=0, le=1, description="share of requests that must meet every bound"
    )
