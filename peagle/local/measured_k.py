"""`peagle local`'s default K (or K-by-batch-size schedule) per constructed pair: what was measured, and where.

One table, so a new measurement changes one value and its source. `peagle local --help` prints each pair's default
and source; `--speculative-tokens` or `--speculative-schedule` replaces it. The planner's defaults for GPU pairs are
peagle/planning/speculation_choice.py's (setting, K-by-load model, catalog).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from peagle_serve.contract import ScheduleBand, describe_schedule


@dataclass(frozen=True)
class MeasuredDefault:
    """A pair's default: a static K, or a schedule (``speculative_tokens`` then its largest K), and its source."""

    speculative_tokens: int
    source: str
    schedule: tuple[ScheduleBand, ...] = field(default=())

    def describe(self) -> str:
        chosen = (
            f"K by batch size {describe_schedule(self.schedule)}" if self.schedule else f"K={self.speculative_tokens}"
        )
        return f"{chosen} ({self.source})"


MEASURED_DEFAULTS: dict[str, MeasuredDefault] = {
    "tiny": MeasuredDefault(
        4, "not measured for a choice: the test pair accepts every draft; K=4 is peagle local's earlier default"
    ),
    "demo": MeasuredDefault(
        4,
        "docs/baselines/local-cpu-demo-pair-sampled: K=4 best at concurrency 1, 4 and 8 at the chatbot sampling, "
        "three rounds (at 8 within off's runs)",
    ),
    "partial": MeasuredDefault(
        4,
        "docs/baselines/k-by-load: K=4 against off and K by batch size 1-2:4,3-16:0, vLLM's own bench, 3 seeds, "
        "concurrency 1/4/8 and Poisson 1 req/s: no setting beats K=4 beyond the interval at any level, with the "
        "prefix cache on or off; with it off K=4 is the better static K at every level in the mean (1.93x off at "
        "concurrency 1) and the schedule only matches the static K its bands name",
    ),
}


def measured_default(pair_name: str) -> MeasuredDefault:
    return MEASURED_DEFAULTS[pair_name]
