"""Choosing K from measurements: which speculation setting delivered the most output tokens/s
at each concurrency level, and which one to deploy for a band of concurrency.

The inputs are `peagle bench` runs, one per candidate setting (K = 0, static K values, and
optionally a dynamic per-batch-size schedule), measured the same way. Published P-EAGLE
results shrink as concurrency grows and can turn into a slow-down, so the answer is per
level first; the deployable answer for a band is the static setting that loses least
against the best at every level of the band. A dynamic schedule is recommended only when it
delivered at least as much as every static candidate at every measured level of the band:
vLLM's dynamic speculation has a cost of its own and must be earned by measurement.

Acceptance, and so the best K, depends on the sampling: a drafter's guesses match the target's
greedy choice more often than a sample at the temperature users are served, so greedy decoding
overstates what drafting pays. The candidates are compared per temperature, and the deployment
is decided at the deployed (the profile's) temperature, never at greedy unless that is it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

TOKENS, GOODPUT = "tokens_per_s", "goodput_rps"


@dataclass(frozen=True)
class Candidate:
    """One measured speculation setting."""

    label: str  # "K=4", "off", "schedule 1-2:4,3-16:0"
    speculative_tokens: int  # K, or the largest K of a schedule; 0 = off
    schedule: tuple[tuple[int, int, int], ...] | None  # (lo, hi, K) bands, or None for a static K
    # level (a concurrency, or an open loop's request rate) -> output tokens/s (the median over repeated runs)
    tokens_per_s: dict[float, float]
    tpot_p50_s: dict[float, float | None]  # level -> median time per output token
    # level -> (lowest, highest) tokens/s over the repeated runs; empty for a single run
    tokens_per_s_range: dict[float, tuple[float, float]] = field(default_factory=dict)
    runs: int = 1
    # Open-loop runs: request rate -> goodput (requests/s meeting every SLO bound); then the levels of
    # tokens_per_s and tpot_p50_s are request rates too.
    goodput_rps: dict[float, float] = field(default_factory=dict)

    def measure(self, objective: str) -> dict:
        """level -> the value ``objective`` ("tokens_per_s" or "goodput_rps") ranks by."""
        return self.goodput_rps if objective == GOODPUT else self.tokens_per_s

    @property
    def is_dynamic(self) -> bool:
        return self.schedule is not None


@dataclass(frozen=True)
class LevelChoice:
    concurrency: int  # the level: clients (closed loop) or a request rate (open loop)
    best: str  # label of the candidate with the most of the objective (tokens/s, or goodput)
    tokens_per_s: float  # the objective's value for ``best``
    speedup_vs_off: float | None  # best / K=0 at this level
    # the runner-up, when the two overlapped over repeated runs: the order may be noise
    within_spread_of: str | None = None


@dataclass(frozen=True)
class Recommendation:
    levels: tuple[LevelChoice, ...]
    static: Candidate  # the static setting that loses least over the band
    worst_shortfall: float  # of the static choice against the best at any level (0.05 = 5 % less)
    dynamic: Candidate | None  # recommended instead of `static` only when it won everywhere
    dynamic_verdict: str  # why a measured schedule was or was not recommended

    @property
    def chosen(self) -> Candidate:
        return self.dynamic or self.static

    def deployment_snippet(self) -> str:
        """The deployment-file lines that apply the choice."""
        chosen = self.chosen
        if chosen.schedule:
            bands = "\n".join(
                f"    - {{min_batch: {lo}, max_batch: {hi}, speculative_tokens: {k}}}" for lo, hi, k in chosen.schedule
            )
            return f"speculation:\n  schedule:\n{bands}\n"
        return f"speculation:\n  speculative_tokens: {chosen.speculative_tokens}\n"


def _common_levels(candidates: Sequence[Candidate], objective: str = TOKENS) -> list:
    levels = set(candidates[0].measure(objective))
    for candidate in candidates[1:]:
        levels &= set(candidate.measure(objective))
    return sorted(levels)


def _ranges_overlap(first: Candidate, second: Candidate, level: int) -> bool:
    """Whether the lowest run of ``first`` was at or below the highest run of ``second``."""
    if level not in first.tokens_per_s_range or level not in second.tokens_per_s_range:
        return False
    return first.tokens_per_s_range[level][0] <= second.tokens_per_s_range[level][1]


def recommend(
    candidates: Sequence[Candidate], band: tuple[float, float] | None = None, *, objective: str = TOKENS
) -> Recommendation:
    """Per-level winners over ``band`` (inclusive range of levels; default all levels measured by
    every candidate), the static setting with the smallest worst-case shortfall against the per-level
    best (ties: the smaller K, which drafts less), and a dynamic schedule only if it never lost.
    ``objective``: output tokens/s (the default), or goodput, requests/s answered within the SLO."""
    if not candidates:
        raise ValueError("nothing was measured")
    value = {c.label: c.measure(objective) for c in candidates}
    levels = [c for c in _common_levels(candidates, objective) if band is None or band[0] <= c <= band[1]]
    if not levels:
        measured = "; ".join(f"{c.label}: {', '.join(map(str, sorted(c.tokens_per_s)))}" for c in candidates)
        raise ValueError(
            "no concurrency level was measured by every candidate"
            + (f" within the band {band[0]}-{band[1]}" if band else "")
            + f" (levels measured: {measured}); compare runs that share a level, or measure the missing ones"
        )
    off = next((c for c in candidates if c.speculative_tokens == 0 and not c.is_dynamic), None)
    choices = []
    best_at: dict[int, float] = {}
    for level in levels:
        ranked = sorted(candidates, key=lambda c: (value[c.label][level], -c.speculative_tokens), reverse=True)
        winner = ranked[0]
        best_at[level] = value[winner.label][level]
        speedup = value[winner.label][level] / value[off.label][level] if off and value[off.label][level] else None
        # Repeated rounds record the spread of tokens/s only.
        overlap = objective == TOKENS and len(ranked) > 1 and _ranges_overlap(winner, ranked[1], level)
        choices.append(
            LevelChoice(level, winner.label, value[winner.label][level], speedup, ranked[1].label if overlap else None)
        )

    def shortfall(candidate: Candidate) -> float:
        # No candidate met the SLO at a level (goodput 0 for all): that level decides nothing.
        return max(
            (1.0 - value[candidate.label][level] / best_at[level] for level in levels if best_at[level]), default=0.0
        )

    statics = [c for c in candidates if not c.is_dynamic]
    static = min(statics, key=lambda c: (round(shortfall(c), 6), c.speculative_tokens))
    dynamic, verdict = None, "no dynamic schedule was measured"
    schedules = [c for c in candidates if c.is_dynamic]
    if schedules:
        best_schedule = min(schedules, key=shortfall)
        lost = [
            level for level in levels if any(value[best_schedule.label][level] < value[s.label][level] for s in statics)
        ]
        if lost:
            verdict = (
                f"{best_schedule.label} lost to a static K at concurrency {', '.join(map(str, lost))}: not recommended"
            )
        else:
            dynamic = best_schedule
            verdict = f"{best_schedule.label} delivered at least as much as every static K at every level"
    return Recommendation(tuple(choices), static, shortfall(static), dynamic, verdict)


def slo_verdict(by_goodput: Recommendation, by_tokens: Recommendation, slo_text: str) -> str:
    """Whether ranking by goodput (requests answered within the SLO) and by output tokens/s pick the same
    setting, and, when not, which to deploy and why."""
    chosen, fastest = by_goodput.chosen, by_tokens.chosen
    if chosen.label == fastest.label:
        return f"Goodput and tokens/s agree: {chosen.label} answers the most requests within the SLO ({slo_text})."
    rates = [choice.concurrency for choice in by_goodput.levels]
    at = max(rates) if rates else None
    detail = (
        f" at {at:g} req/s: {chosen.goodput_rps[at]:.2f} vs {fastest.goodput_rps[at]:.2f} req/s within the SLO, "
        f"{chosen.tokens_per_s[at]:.1f} vs {fastest.tokens_per_s[at]:.1f} tokens/s"
        if at is not None and at in chosen.goodput_rps and at in fastest.goodput_rps
        else ""
    )
    return (
        f"Goodput and tokens/s disagree: {fastest.label} delivers the most output tokens/s, but {chosen.label} "
        f"answers more requests within the SLO ({slo_text}){detail}. Deploy {chosen.label}: requests answered in "
        "time are what users get; tokens/s also counts answers that came too late."
    )


def decision_temperature(measured: Collection[float | None], deployed: float) -> tuple[float | None, str]:
    """The measured temperature to decide the deployment at (None: runs that do not record their sampling),
    and why, as a phrase. Raises ValueError when only greedy was measured and the deployment samples."""
    if deployed in measured:
        return deployed, f"the deployed temperature {deployed:g}"
    sampled = sorted((t for t in measured if t), key=lambda t: abs(t - deployed))  # neither None nor 0
    if sampled:
        return sampled[0], (
            f"temperature {sampled[0]:g}, the sampled temperature measured nearest the deployed {deployed:g} "
            "(not measured)"
        )
    if None in measured:
        return None, f"the runs' sampling, which they do not record, taken to be the deployed temperature {deployed:g}"
    raise ValueError(
        f"only greedy decoding (temperature 0) was measured, and the deployment samples at temperature {deployed:g}: "
        "the recommendation is made at the deployed temperature, never at greedy (which overstates acceptance on a "
        f"real drafter); measure at it too, e.g. --temperatures 0,{deployed:g}"
    )


def greedy_versus_sampled(chosen: Mapping[float | None, str]) -> str | None:
    """A sentence comparing the setting chosen at greedy (temperature 0) with the ones chosen at the sampled
    temperatures (``chosen``: temperature -> label); None unless both were measured."""
    sampled = {temperature: label for temperature, label in chosen.items() if temperature}
    if 0 not in chosen or not sampled:
        return None
    greedy = chosen[0]
    differing = {temperature: label for temperature, label in sampled.items() if label != greedy}
    if not differing:
        temperatures = ", ".join(f"{temperature:g}" for temperature in sampled)
        return f"Greedy and sampled agree: {greedy} is the best setting at temperature 0 and at {temperatures}."
    at = ", ".join(f"{label} at temperature {temperature:g}" for temperature, label in differing.items())
    return (
        f"The best setting differs between greedy and sampled: {greedy} at temperature 0 (greedy), {at}. "
        "Greedy decoding accepts more drafts than sampling does, so it is not the one to deploy by."
    )
