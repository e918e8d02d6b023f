"""K by load from a stated model: the roofline of a decode step (peagle/planning/roofline_step.py) at every batch size
an engine runs, for every K its drafter was trained for, and the schedule or static K it favours.

The model: output tokens/s at batch size b and K is ``b x AL(K) / step(b, K)``, AL being the pair's acceptance length
(the drafter card's figure extended per position, peagle/catalog/model_figures.yaml). A static K runs its drafter at
K; inside a schedule every band pays the drafter at the schedule's largest K (vLLM sizes the parallel-drafting pass
once and runs it at a band of K=0 too; roofline_step.py quotes vllm/v1/spec_decode/llm_base_proposer.py). Chosen:

- the best static K: the K (1..trained K) whose worst ratio to the best static K at any batch size is highest;
- a schedule only when it beats that static K by ``MARGIN`` at some batch size and loses to it at none. Any schedule
  makes vLLM capture PIECEWISE instead of full CUDA graphs: "Dynamic speculative decoding changes the target
  verification length at runtime. Overriding cudagraph_mode from %s to PIECEWISE for reliability. Use
  VLLM_USE_V2_MODEL_RUNNER=1 if you want to use full CUDA graphs." (vllm/config/vllm.py,
  _maybe_override_dynamic_sd_cudagraph_mode). The roofline has no term for that cost, so a small modelled gain
  does not earn a schedule. Batch size 1 always drafts (the start-up self-check's warm-up runs alone,
  inference_image/peagle_serve/contract.py, schedule_problems).

Not modelled (as in peagle/simulate/service_estimate.py): several tokens of a batch routed to different experts,
tensor-parallel communication, kernel and scheduling overheads, CUDA graph capture.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from peagle.planning.roofline_step import DecodeModel
from peagle_serve.contract import ScheduleBand, describe_schedule, schedule_coverage_problems, schedule_problems

# A schedule's modelled gain over the best static K must reach this share at some batch size: our margin for the
# PIECEWISE CUDA graphs the roofline does not model (module docstring), not a measured figure.
MARGIN = 0.05
# Where the model's figures were compared with a published measurement, so its choice is used there only: vLLM PR
# #32887 (https://github.com/vllm-project/vllm/pull/32887), "All benchmarks on 1xB200", gpt-oss-120b, against which
# tests/simulate/test_service_estimate.py and tests/infra/test_k_by_load.py hold the model's speed-ups to
# SPEEDUP_ERROR_BAND (peagle/simulate/service_estimate.py's PUBLISHED_GPU). On another GPU its choice is not checked.
CHECKED_GPUS = ("B200",)
_TIE = 1e-9  # float noise: a schedule level with its static K does not lose to it


@dataclass(frozen=True)
class LoadChoice:
    """What the model favours over batch sizes 1..max_num_seqs."""

    static_k: int  # the best static K
    static_worst: float  # its worst ratio to the best static K at any batch size (1.0: best everywhere)
    schedule: tuple[ScheduleBand, ...]  # empty: the static K; else the schedule that earned its margin
    gain: float  # the best schedule's largest gain over static_k (0.0: no schedule loses nowhere)
    gain_at: int  # the batch size of that gain
    margin: float = MARGIN  # the gain a schedule had to reach

    @property
    def speculative_tokens(self) -> int:
        return max(band[2] for band in self.schedule) if self.schedule else self.static_k

    def describe(self, max_num_seqs: int) -> str:
        graphs = f"the {self.margin:.0%} margin for the PIECEWISE CUDA graphs vLLM runs a schedule with (not modelled)"
        if self.schedule:
            return (
                f"{describe_schedule(self.schedule)}: +{self.gain:.0%} over the best static K={self.static_k} at "
                f"batch size {self.gain_at} and no loss at any, above {graphs}"
            )
        static = (
            f"K={self.static_k} at every batch size 1-{max_num_seqs} (at most {1 - self.static_worst:.0%} below the "
            "best K at any)"
        )
        if self.gain > 0:
            return (
                f"{static}; the best schedule that loses nowhere gains +{self.gain:.0%} (batch size {self.gain_at}), "
                f"under {graphs}"
            )
        return f"{static}; every schedule loses to it at some batch size"


def choose(
    model: DecodeModel, *, trained_k: int, max_num_seqs: int, context_tokens: float, margin: float = MARGIN
) -> LoadChoice:
    """The static K or schedule the roofline favours (module docstring); raises if a schedule it made breaks
    the launcher's rules (a defect here, not the user's)."""

    def rate(batch: int, k: int, drafter_k: int) -> float:
        return tokens_per_second(model, batch, k, context_tokens, drafter_k=drafter_k)

    batches = range(1, max_num_seqs + 1)
    static = {k: [rate(b, k, k) for b in batches] for k in range(1, trained_k + 1)}
    best = [max(rates[i] for rates in static.values()) for i in range(len(batches))]
    worst = {k: min(r / top for r, top in zip(rates, best, strict=True)) for k, rates in static.items()}
    static_k = max(worst, key=lambda k: (worst[k], k))
    chosen: tuple[ScheduleBand, ...] = ()
    gain, gain_at = 0.0, 1
    for largest in range(1, trained_k + 1):
        ks = [max(range(1 if b == 1 else 0, largest + 1), key=lambda k, b=b: rate(b, k, largest)) for b in batches]
        if max(ks) != largest or len(set(ks)) == 1:
            continue  # a smaller largest K serves the same bands for less; one band is a static K
        ratios = [rate(b, k, largest) / static[static_k][b - 1] for b, k in zip(batches, ks, strict=True)]
        if min(ratios) < 1 - _TIE or max(ratios) - 1 <= gain:
            continue
        gain, gain_at = max(ratios) - 1, ratios.index(max(ratios)) + 1
        chosen = _bands(ks)
    schedule = chosen if gain >= margin else ()
    _check(schedule, trained_k, max_num_seqs)
    return LoadChoice(static_k, worst[static_k], schedule, gain, gain_at, margin)


def tokens_per_second(
    model: DecodeModel, batch: int, k: int, context_tokens: float, *, drafter_k: int | None = None
) -> float:
    """Output tokens/s of the engine at ``batch`` sequences verifying ``k`` drafts each, its drafter at ``drafter_k``
    (default ``k``: a static K), by the uncalibrated roofline: b x AL(K) / step."""
    return batch * model.acceptance_length(k) / model.step_seconds(batch, k, context_tokens, drafter_k=drafter_k)


def _bands(ks: Sequence[int]) -> tuple[ScheduleBand, ...]:
    """K per batch size 1, 2, ... merged into (min_batch, max_batch, K) bands."""
    bands: list[ScheduleBand] = []
    for batch, k in enumerate(ks, start=1):
        if bands and bands[-1][2] == k:
            bands[-1] = (bands[-1][0], batch, k)
        else:
            bands.append((batch, batch, k))
    return tuple(bands)


def _check(schedule: tuple[ScheduleBand, ...], trained_k: int, max_num_seqs: int) -> None:
    if not schedule:
        return
    problems = schedule_problems(list(schedule), trained_k=trained_k) or schedule_coverage_problems(
        schedule, max_num_seqs
    )
    if problems:
        raise RuntimeError(f"the K-by-load model made a schedule vLLM's rules refuse: {'; '.join(problems)}")


def fitted(schedule: tuple[ScheduleBand, ...], max_num_seqs: int) -> tuple[ScheduleBand, ...]:
    """The schedule cut or stretched to end at ``max_num_seqs`` (the plan may hold a few sequences fewer or more once
    its memory is sized for the schedule's largest K): bands past it dropped, the last one ended at it."""
    kept = [band for band in schedule if band[0] <= max_num_seqs]
    if not kept:
        return ()
    low, _, k = kept[-1]
    return (*kept[:-1], (low, max_num_seqs, k))
