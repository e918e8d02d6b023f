"""The speculation section: K, the draft tokens per step, fixed or by batch size."""

from __future__ import annotations

from pydantic import Field, PositiveInt

from peagle.catalog import StrictModel
from peagle.settings.refs import spelled
from peagle_serve.contract import ScheduleBand


class SpeculationBand(StrictModel):
    """K for a range of batch sizes: how many requests the engine runs in one step (at most the
    plan's max_num_seqs), both ends inclusive."""

    min_batch: PositiveInt = Field(description="smallest batch size of the band")
    max_batch: PositiveInt = Field(description="largest batch size of the band (inclusive)")
    speculative_tokens: int = Field(ge=0, le=64, description="K at these batch sizes; 0: no drafts")

    def as_tuple(self) -> ScheduleBand:
        return (self.min_batch, self.max_batch, self.speculative_tokens)


class SpeculationSettings(StrictModel):
    speculative_tokens: int | None = Field(
        default=None,
        ge=0,
        le=64,
        json_schema_extra=spelled("Speculation.fixed(...)", flag="--speculative-tokens", **{"0": "Speculation.off()"}),
        description="K, draft tokens per step; 0 turns speculation off; unset = the planner's default: K by load "
        "where its roofline can tell (`peagle plan` prints the source), else the pair's recommended K for the profile "
        "(or, with a schedule, its largest K)",
    )
    schedule: list[SpeculationBand] | None = Field(
        default=None,
        json_schema_extra=spelled("Speculation.by_batch_size(bands)"),
        description="K by batch size (vLLM's num_speculative_tokens_per_batch_size): bands covering "
        "1..max_num_seqs without gaps or overlap (vLLM would silently fill a gap with the previous band's K), "
        "each K at most the drafter's trained K, K > 0 at batch size 1 (the start-up self-check's warm-up "
        "request runs alone). speculative_tokens is then the largest K (leave it unset or set it to that; vLLM "
        "caps every band at it); a schedule whose bands are all 0 is refused (set speculative_tokens: 0). "
        "The A/B baseline variant stays at its static K. Earn it by measurement: it can be slower than a static K",
    )
