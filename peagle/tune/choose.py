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

Every figure is a mean over the rounds (each round measured on its own prompt-and-arrival seed) with
its 95% interval (peagle/bench/intervals.py), and two settings are told apart only beyond the interval
of their difference, paired by round: a level whose winner does not beat the runner-up beyond it says
"cannot tell", and lists the settings it cannot tell apart.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from peagle.bench.intervals import Interval, Verdict, compare, mean_interval, ratio_interval

TOKENS, GOODPUT = "tokens_per_s", "goodput_rps"


@dataclass(frozen=True)
class Candidate:
    """One measured speculation setting."""

    label: str  # "K=4", "off", "schedule 1-2:4,3-16:0"
    speculative_tokens: int  # K, or the largest K of a schedule; 0 = off
    schedule: tuple[tuple[int, int, int], ...] | None  # (lo, hi, K) bands, or None for a static K
    # level (a concurrency, or an open loop's request rate) -> output tokens/s (the mean over the rounds)
    tokens_per_s: dict[float, float]
    tpot_p50_s: dict[float, float | None]  # level -> mean over the rounds of the time per output token (p50)
    runs: int = 1
    # Open-loop runs: request rate -> goodput (requests/s meeting every SLO bound); then the levels of
    # tokens_per_s and tpot_p50_s are request rates too.
    goodput_rps: dict[float, float] = field(default_factory=dict)
    # level -> round -> the figure of that round's run (its seed); empty: one run, the value above
    tokens_by_round: dict[float, dict[int, float]] = field(default_factory=dict)
    tpot_by_round: dict[float, dict[int, float]] = field(default_factory=dict)
    goodput_by_round: dict[float, dict[int, float]] = field(default_factory=dict)

    def measure(self, objective: str) -> dict:
        """level -> the value ``objective`` ("tokens_per_s" or "goodput_rps") ranks by."""
        return self.goodput_rps if objective == GOODPUT else self.tokens_per_s

    def samples(self, objective: str, level: float) -> dict[int, float]:
        """round -> the ``objective`` measured at ``level`` in that round (one run: round 1)."""
        by_round = self.goodput_by_round if objective == GOODPUT else self.tokens_by_round
        return by_round.get(level) or {1: self.measure(objective)[level]}

    def interval(self, objective: str, level: float) -> Interval:
        return mean_interval(list(self.samples(objective, level).values()))

    def tpot_interval(self, level: float) -> Interval | None:
        by_round = self.tpot_by_round.get(level)
        if by_round:
            return mean_interval(list(by_round.values()))
        tpot = self.tpot_p50_s.get(level)
        return mean_interval([tpot]) if tpot else None

    @property
    def is_dynamic(self) -> bool:
        return self.schedule is not None


@dataclass(frozen=True)
class LevelChoice:
    concurrency: int  # the level: clients (closed loop) or a request rate (open loop)
    best: str  # label of the candidate with the most of the objective (tokens/s, or goodput)
    tokens_per_s: float  # the objective's value for ``best``
    speedup_vs_off: float | None  # best / K=0 at this level (the means)
    # the settings the best does not beat beyond the paired interval, the best first; empty: the best is clear
    cannot_tell: tuple[str, ...] = ()
    speedup: Interval | None = None  # best / K=0, the per-round ratios' mean and interval (paired by round)


@dataclass(frozen=True)
class Recommendation:
    levels: tuple[LevelChoice, ...]
    static: Candidate  # the static setting that loses least over the band
    worst_shortfall: float  # of the static choice against the best at any level (0.05 = 5 % less)
    dynamic: Candidate | None  # recommended instead of `static` only when it held up at every level
    dynamic_verdict: str  # why a measured schedule was or was not recommended

    @property
    def chosen(self) -> Candidate:
        return self.dynamic or self.static

    @property
    def undecided(self) -> tuple[LevelChoice, ...]:
        """The levels whose best could not be told apart from another setting."""
        return tuple(choice for choice in self.levels if choice.cannot_tell)

    def deployment_snippet(self) -> str:
        """The deployment-file lines that apply the choice."""
        from peagle.tune.doors import deployment_snippet

        return deployment_snippet(self.chosen.speculative_tokens, self.chosen.schedule)


def _common_levels(candidates: Sequence[Candidate], objective: str = TOKENS) -> list:
    levels = set(candidates[0].measure(objective))
    for candidate in candidates[1:]:
        levels &= set(candidate.measure(objective))
    return sorted(levels)


def paired(first: Candidate, second: Candidate, objective: str, level: float) -> tuple[list[float], list[float]]:
    """The two candidates' figures at ``level`` in the rounds both were measured in (same seeds), in round order."""
    a, b = first.samples(objective, level), second.samples(objective, level)
    rounds = sorted(set(a) & set(b))
    return [a[r] for r in rounds], [b[r] for r in rounds]


def verdict(first: Candidate, second: Candidate, objective: str, level: float) -> Verdict:
    """``first`` against ``second`` at ``level`` beyond the paired interval (no shared round: cannot tell)."""
    a, b = paired(first, second, objective, level)
    return compare(a, b) if a else Verdict.CANNOT_TELL


def ratio(first: Candidate, second: Candidate, objective: str, level: float) -> Interval | None:
    """first / second at ``level``, paired by round; None when no round has both, or ``second`` measured 0."""
    a, b = paired(first, second, objective, level)
    return ratio_interval(a, b) if a and all(b) else None


def _level_choice(candidates: Sequence[Candidate], off: Candidate | None, objective: str, level) -> LevelChoice:
    value = {c.label: c.measure(objective)[level] for c in candidates}
    ranked = sorted(candidates, key=lambda c: (value[c.label], -c.speculative_tokens), reverse=True)
    winner = ranked[0]
    close = [c.label for c in ranked[1:] if verdict(winner, c, objective, level) is not Verdict.FIRST]
    speedup = value[winner.label] / value[off.label] if off and value[off.label] else None
    return LevelChoice(
        level,
        winner.label,
        value[winner.label],
        speedup,
        (winner.label, *close) if close else (),
        ratio(winner, off, objective, level) if off and off is not winner else None,
    )


def band_k(schedule: Sequence[tuple[int, int, int]], batch_size: float) -> int | None:
    """The K a schedule's band names for ``batch_size`` (None: no band covers it)."""
    return next((k for low, high, k in schedule if low <= batch_size <= high), None)


def schedule_falls_below(schedule: Candidate, static: Candidate, objective: str, level: float) -> bool:
    """Whether the schedule delivered less than ``static`` at ``level``: beyond the paired interval when the rounds
    give one; from a single run (no interval), by its value, so a schedule is never chosen on no evidence."""
    a, b = paired(schedule, static, objective, level)
    if len(a) < 2:
        return schedule.measure(objective)[level] < static.measure(objective)[level]
    return compare(a, b) is Verdict.SECOND


def _schedule_references(schedule: Candidate, static: Candidate, statics, objective: str, level) -> list[Candidate]:
    """What a schedule must not fall below at ``level``: the static choice, and (closed loop, where the level is a
    batch size) the static K its band names, when measured."""
    references = [static]
    k = band_k(schedule.schedule or (), level) if objective == TOKENS else None
    references += [s for s in statics if s.speculative_tokens == k and s is not static]
    return references


def _dynamic_choice(schedules, static, statics, levels, objective: str) -> tuple[Candidate | None, str]:
    """The first schedule (smallest shortfall first) that fell below no reference at any level, and why."""
    if not schedules:
        return None, "no dynamic schedule was measured"
    lost = {
        schedule.label: [
            level
            for level in levels
            if any(
                schedule_falls_below(schedule, reference, objective, level)
                for reference in _schedule_references(schedule, static, statics, objective, level)
            )
        ]
        for schedule in schedules
    }
    for schedule in schedules:
        if not lost[schedule.label]:
            return schedule, (
                f"{schedule.label} fell below neither the static choice nor the static K its band names at any level"
            )
    where = "concurrency" if objective == TOKENS else "request rates"
    best = schedules[0]
    return None, (
        f"{best.label} lost to a static K at {where} {', '.join(f'{level:g}' for level in lost[best.label])} (below "
        "the static choice or the static K its band names): not recommended"
    )


def recommend(
    candidates: Sequence[Candidate], band: tuple[float, float] | None = None, *, objective: str = TOKENS
) -> Recommendation:
    """Per-level winners over ``band`` (inclusive range of levels; default all levels measured by
    every candidate), each with the settings it cannot be told from; the static setting with the smallest
    worst-case shortfall of its mean against the per-level best (ties: the smaller K, which drafts less); and a
    dynamic schedule only if it fell below neither that static setting nor its bands' static K at any level.
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
    choices = [_level_choice(candidates, off, objective, level) for level in levels]
    best_at = {choice.concurrency: choice.tokens_per_s for choice in choices}

    def shortfall(candidate: Candidate) -> float:
        # No candidate met the SLO at a level (goodput 0 for all): that level decides nothing.
        return max(
            (1.0 - value[candidate.label][level] / best_at[level] for level in levels if best_at[level]), default=0.0
        )

    statics = [c for c in candidates if not c.is_dynamic]
    static = min(statics, key=lambda c: (round(shortfall(c), 6), c.speculative_tokens))
    schedules = sorted((c for c in candidates if c.is_dynamic), key=shortfall)
    dynamic, dynamic_verdict = _dynamic_choice(schedules, static, statics, levels, objective)
    return Recommendation(tuple(choices), static, shortfall(static), dynamic, dynamic_verdict)


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
