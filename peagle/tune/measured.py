"""Stored bench runs as tune's candidates: one per setting, sampling and loop (closed: concurrency levels; open:
request rates), each level's figures kept per round, so the choice can pair settings by round (each round
measured on its own prompt-and-arrival seed) and state every figure as a mean with its interval."""

from __future__ import annotations

import re
from statistics import mean

from peagle.tune.choose import Candidate

# A run label: the setting, then an optional temperature " T=0.7" and round " #2".
_SUFFIX = re.compile(r"( T=[0-9.]+)?( #(\d+))?$")


def noisy_levels(runs) -> list[str]:
    """ "<run> <load>: why" for every level measured on a busy machine."""
    return [
        f"{run.label} {level.load_label}: {'; '.join(level.host.busy)}"
        for run in runs
        for level in run.levels
        if level.noisy
    ]


def is_open_loop(run) -> bool:
    return any(level.open_loop for level in run.levels)


def candidates_by_sampling(runs) -> dict:
    """``{Sampling.key (None: not recorded): (Sampling, closed-loop [Candidate], open-loop [Candidate])}``, in the
    order first measured: a setting measured both ways is two candidates, its levels a concurrency or a rate."""
    groups: dict = {}
    for run in runs:
        groups.setdefault(run.sampling.key if run.sampling else None, []).append(run)
    return {
        key: (
            group[0].sampling,
            candidates_from_runs([run for run in group if not is_open_loop(run)]),
            candidates_from_runs([run for run in group if is_open_loop(run)]),
        )
        for key, group in groups.items()
    }


def _round_of(label: str) -> int:
    match = _SUFFIX.search(label)
    return int(match.group(3)) if match and match.group(3) else 1


def _speculative_tokens(label: str, schedule, group) -> int:
    from statistics import median

    if schedule:
        return max(band[2] for band in schedule)
    if label == "off":
        return 0
    if label.startswith("K="):
        return int(label[2:])
    # a deployed endpoint: what its counters or responses saw
    return round(median(run.speculative_tokens or 0 for run in group))


def _by_round(group) -> tuple[dict, dict, dict]:
    """level -> round -> (output tokens/s, TPOT p50, goodput); noisy levels are left out (never chosen from)."""
    tokens: dict[float, dict[int, float]] = {}
    tpots: dict[float, dict[int, float]] = {}
    goodput: dict[float, dict[int, float]] = {}
    for run in group:
        round_ = _round_of(run.label)
        for level in run.levels:
            if level.noisy:  # measured on a busy machine: noisy_levels lists it
                continue
            at = level.open_loop.offered_request_rate if level.open_loop else level.concurrency
            tokens.setdefault(at, {})[round_] = level.output_tokens_per_s
            if level.tpot_s:
                tpots.setdefault(at, {})[round_] = level.tpot_s.p50
            if level.open_loop and level.slo:
                goodput.setdefault(at, {})[round_] = level.slo.goodput_requests_per_s
    return tokens, tpots, goodput


def candidates_from_runs(runs) -> list[Candidate]:
    """One Candidate per setting, its K from the run label ("off", "K=4", "schedule ...") and its figures per
    level kept per round (the label's " #N", 1 without), summarised by their mean."""
    by_label: dict[str, list] = {}
    for run in runs:
        by_label.setdefault(_SUFFIX.sub("", run.label), []).append(run)
    candidates = []
    for label, group in by_label.items():
        schedule = schedule_from_label(label)
        tokens, tpots, goodput = _by_round(group)
        candidates.append(
            Candidate(
                label=label,
                speculative_tokens=_speculative_tokens(label, schedule, group),
                schedule=schedule,
                tokens_per_s={at: mean(values.values()) for at, values in tokens.items()},
                tpot_p50_s={at: mean(tpots[at].values()) if at in tpots else None for at in tokens},
                runs=len({_round_of(run.label) for run in group}),
                goodput_rps={at: mean(values.values()) for at, values in goodput.items()},
                tokens_by_round=tokens,
                tpot_by_round=tpots,
                goodput_by_round=goodput,
            )
        )
    return candidates


def schedule_from_label(label: str) -> tuple[tuple[int, int, int], ...] | None:
    """ "schedule 1-2:4,3-16:0" -> ((1, 2, 4), (3, 16, 0)); None for any other label."""
    if not label.startswith("schedule "):
        return None
    bands = []
    for part in label.removeprefix("schedule ").split(","):
        span, _, k = part.partition(":")
        low, _, high = span.partition("-")
        bands.append((int(low), int(high), int(k)))
    return tuple(bands)
