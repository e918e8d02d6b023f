"""A K-by-batch-size schedule proposed from the closed-loop levels `peagle tune` measured, and whether it held up
when it was served itself.

Level c_i of the closed loop (c_1 < c_2 < ...) stands for the batch sizes (c_(i-1), c_i] (the first from 1; the
last to the server's max_num_seqs): with c requests in flight the engine runs at most c in a step. Each band takes
the static K with the highest mean output tokens/s at its level, then the launcher's rules: batch size 1 drafts
(the start-up self-check's warm-up request runs alone), every K within the drafter's trained K, the bands cover
1..max_num_seqs, not every band 0 (peagle_serve/contract.py, schedule_problems and schedule_coverage_problems, the
checks `peagle local --speculative-schedule` runs). Equal neighbours merge. A band whose K falls below K=0 beyond
the interval gets K=0. When every band names the same K the proposal is that static K: a schedule has costs of its
own, even where a band says K=0 (vLLM 0.32 still runs the drafter's pass every step, "No draft tokens requested
(e.g. Dynamic SD decided K=0). The prefill forward pass above already ran to keep the drafter KV cache in sync",
vllm/v1/spec_decode/llm_base_proposer.py; and on a GPU its V1 model runner overrides cudagraph_mode to PIECEWISE
for any schedule, "Dynamic speculative decoding changes the target verification length at runtime. Overriding
cudagraph_mode from %s to PIECEWISE for reliability.", vllm/config/vllm.py), so a schedule is recommended only
after it was measured and did not fall below the static K its bands name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from peagle.bench.intervals import Interval, Verdict
from peagle.tune.choose import TOKENS, Candidate, band_k, ratio, schedule_falls_below, verdict

Band = tuple[int, int, int]


@dataclass(frozen=True)
class Proposal:
    """A schedule (bands) or, when every band would name the same K, that static K (bands None)."""

    speculative_tokens: int  # the static K, or the schedule's largest K
    bands: tuple[Band, ...] | None
    reasons: tuple[str, ...]  # per band (or rule), why, in words

    @property
    def text(self) -> str:
        """``1-2:4,3-16:0`` (`peagle local --speculative-schedule`), or ``K=4`` / ``off``."""
        if self.bands:
            return ",".join(f"{low}-{high}:{k}" for low, high, k in self.bands)
        return f"K={self.speculative_tokens}" if self.speculative_tokens else "off"

    @property
    def label(self) -> str:
        """The label its measured runs carry (tune's candidate labels)."""
        return f"schedule {self.text}" if self.bands else self.text


def _best_static(statics: Sequence[Candidate], level: int, drafting: bool = False) -> Candidate | None:
    ranked = [c for c in statics if c.speculative_tokens > 0 or not drafting]
    if not ranked:
        return None
    return max(ranked, key=lambda c: (c.tokens_per_s[level], -c.speculative_tokens))


def _loses_to_off(candidate: Candidate, off: Candidate | None, level: int) -> bool:
    return off is not None and candidate is not off and verdict(candidate, off, TOKENS, level) is Verdict.SECOND


def _merged(bands: list[Band]) -> tuple[Band, ...]:
    merged: list[Band] = []
    for low, high, k in bands:
        if merged and merged[-1][2] == k:
            merged[-1] = (merged[-1][0], high, k)
        else:
            merged.append((low, high, k))
    return tuple(merged)


def _level_bands(levels: Sequence[int], max_num_seqs: int) -> list[tuple[int, int, int]]:
    """(level, low, high) per closed-loop level: (previous level, level], the last to max_num_seqs."""
    spans, low = [], 1
    for index, level in enumerate(levels):
        if low > max_num_seqs:
            break
        high = max_num_seqs if index == len(levels) - 1 else min(level, max_num_seqs)
        spans.append((level, low, high))
        low = high + 1
    return spans


def _band_choice(statics, off: Candidate | None, level: int, first: bool) -> tuple[Candidate | None, str]:
    """The static setting a band takes at ``level``, and why; None when the first band cannot draft."""
    best = _best_static(statics, level)
    assert best is not None
    if first and best.speculative_tokens == 0:  # batch size 1 drafts: the best K > 0, unless it lost to off
        drafting = _best_static(statics, level, drafting=True)
        if drafting is None:
            return None, "no K > 0 was measured, and batch size 1 must draft: speculation off"
        if _loses_to_off(drafting, off, level):
            return None, (
                f"at concurrency {level} the best K > 0 ({drafting.label}) fell below off beyond the interval, and "
                "batch size 1 must draft: speculation off"
            )
        return drafting, (
            f"the best K > 0 at concurrency {level} (batch size 1 drafts; off's lead is within the interval)"
        )
    if _loses_to_off(best, off, level):  # never for the highest mean; kept as the rule it is
        return off, f"off: {best.label} fell below it beyond the interval at concurrency {level}"
    return best, f"the most tokens/s at concurrency {level}"


def propose(candidates: Sequence[Candidate], max_num_seqs: int, trained_k: int) -> Proposal:
    """The schedule (or static K) for batch sizes 1..``max_num_seqs`` from closed-loop ``candidates``."""
    from peagle_serve.contract import schedule_coverage_problems, schedule_problems

    statics = [c for c in candidates if not c.is_dynamic and c.speculative_tokens <= trained_k]
    levels = sorted(set.intersection(*(set(c.tokens_per_s) for c in statics))) if statics else []
    if not levels:
        raise ValueError("no closed-loop level was measured by every static K: nothing to propose a schedule from")
    off = next((c for c in statics if c.speculative_tokens == 0), None)
    bands: list[Band] = []
    reasons: list[str] = []
    for index, (level, low, high) in enumerate(_level_bands([int(level) for level in levels], max_num_seqs)):
        chosen, why = _band_choice(statics, off, level, first=index == 0)
        if chosen is None:
            return Proposal(0, None, (why,))
        bands.append((low, high, chosen.speculative_tokens))
        reasons.append(f"{low}-{high}: {chosen.label}, {why}")
    merged = _merged(bands)
    if len(merged) == 1:
        return Proposal(merged[0][2], None, (f"every band names K={merged[0][2]}: no schedule, the static K",))
    problems = schedule_problems(merged, trained_k=trained_k) or schedule_coverage_problems(merged, max_num_seqs)
    if problems:  # the rules above make one impossible; a proposal never asks the launcher for what it refuses
        raise ValueError(f"proposed schedule {merged}: " + "; ".join(problems))
    return Proposal(max(k for _, _, k in merged), merged, tuple(reasons))


@dataclass(frozen=True)
class ScheduleCheck:
    """The measured schedule at one closed-loop level, against the static K its band names there."""

    level: int
    band_k: int
    versus_band_k: Interval | None  # schedule / that static K, paired by round (None: not measured)
    verdict: Verdict

    @property
    def below(self) -> bool:
        return self.verdict is Verdict.SECOND


def check_schedule(schedule: Candidate, statics: Sequence[Candidate]) -> list[ScheduleCheck]:
    """Per closed-loop level the schedule was measured at: schedule / its band's static K and the verdict."""
    checks = []
    for level in sorted(schedule.tokens_per_s):
        k = band_k(schedule.schedule or (), level)
        static = next((c for c in statics if c.speculative_tokens == k and not c.is_dynamic), None)
        if k is None or static is None or level not in static.tokens_per_s:
            continue
        below = schedule_falls_below(schedule, static, TOKENS, level)
        told = verdict(schedule, static, TOKENS, level)
        checks.append(
            ScheduleCheck(int(level), k, ratio(schedule, static, TOKENS, level), Verdict.SECOND if below else told)
        )
    return checks
