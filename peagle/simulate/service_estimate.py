"""What one serving unit does at each load, estimated from the GPU's figures where nothing was measured.

A named estimate for deployments without a measured service curve (peagle/simulate/service_curve.py): a
memory-bandwidth roofline of vLLM's decode, calibrated to P-EAGLE's published figures, with bounds so a verdict
it decides can be run both ways. ``estimated_curve(plan)`` returns a ``ServiceCurve`` of the same shape
`peagle capacity` writes, or None where a figure it needs is missing (the simulator then keeps "not checked").

The model, one engine of ``tensor_parallel_size`` GPUs (a unit), is the roofline step of
peagle/planning/roofline_step.py, which the planner's default K by load uses too:

- a decode step reads the target's active weights once (a MoE: the non-expert weights and one token's routed
  experts, peagle/catalog/model_figures.yaml), the drafter's weights once when K > 0 (one parallel-drafting pass,
  pairs.yaml ``drafter.weight_bytes``), and each sequence's KV cache (the planner's KV bytes per token per GPU
  times the context), at the GPU's memory bandwidth (peagle/catalog/gpus.yaml), the weights split across the
  tensor-parallel GPUs; or, if longer, the step's matmuls (2 x active parameters per token, the tokens a
  decoding request takes from the engine's budget per sequence, engine_budget.tokens_per_decode) at the GPU's dense
  BF16 throughput; under a K-by-batch-size schedule the drafter runs at the schedule's largest K in every band
  (roofline_step.py quotes vLLM);
- a step yields the pair's acceptance length in tokens per sequence (K = 0: one), from the drafter card's figure
  at one K extended by a constant per-position acceptance (model_figures.yaml); TPOT = step / acceptance length;
- TTFT = the prompt's prefill (2 x active parameters per prompt token at dense BF16, at least one read of the
  weights) plus one decode step at the concurrency;
- the prompt is the profile's ``typical_context_tokens`` (an assumption: the profiles give no prompt length) and a
  request generates the profile's ``max_tokens`` (as the measured curves do), so the mean decode context is the
  prompt plus half of them.

Not modelled: several tokens of a batch routed to different experts (a real MoE step reads more experts as the
batch grows, so the estimate errs fast at high concurrency), tensor-parallel communication, chunked prefill
slowing the decode of the others, kernel and scheduling overheads. The last is large: the roofline's TPOT is 4 to
7 times faster than vLLM PR #32887's measurements (``PUBLISHED_OVER_ROOFLINE``), so every time is multiplied by
the published/roofline ratio: the geometric mean for ``bound="central"``, the slowest ratio for "low" and the
fastest for "high". That calibration is from one GPU (B200), one pair (gpt-oss-120b) and one GPU per engine;
on other GPUs it is not checked, and for a tensor-parallel engine the "low" bound also assumes the GPUs decode no
faster than one (nothing here measured how tensor parallelism scales).

Each level's p50 = p90 = mean (nothing here gives a spread), so its ``attainment`` is 1.0 when the level's TTFT,
TPOT and end-to-end time all meet the profile's SLO and 0.0 when one misses: what ``ServiceCurve.slo_share`` gives
for the curve's own SLO and, with p50 = p90, for any other (a point mass).
"""

from __future__ import annotations

import math
from dataclasses import replace

from peagle.catalog import Slo
from peagle.catalog.roofline import load_roofline_figures
from peagle.planning.planner import Plan
from peagle.planning.roofline_step import DecodeModel, decode_model, mean_decode_context
from peagle.simulate.service_curve import CurvePoint, ServiceCurve
from peagle_serve.contract import describe_schedule

ESTIMATE_NAME = "roofline estimate"
BOUNDS = ("low", "central", "high")

# vLLM PR #32887 "[Spec Decode] Unified Parallel Drafting" (https://github.com/vllm-project/vllm/pull/32887):
# "Benchmarks were conducted for AWS's 2-layer P-EAGLE on GPT-OSS 120B using Acceptance Lengths calculated by
# averaging AL over each of the MTBench categories, with 2048 max output tokens. ... All benchmarks on 1xB200.
# Best config for GPT-OSS at BS=1 is P-EAGLE with K=7, with ~560 output TPS, a speedup of 1.52x over baseline and
# 1.12x over EAGLE3 best config. At BS=8, P-EAGLE is optimal with K=3, a speedup of 1.34x over baseline and 1.07x
# over best EAGLE3." The BS=8 throughput, ~2389 output TPS, is quoted from the PR by sglang issue #23171 ("GPT-OSS
# 120B, BS=8: P-EAGLE K=3 -> ~2389 TPS, 1.34x over baseline"). "Baseline" is read as no speculation: the PR also
# says "The baseline is NVIDIA's EAGLE3 short-context", but it gives the speed-up over the best EAGLE-3 separately
# (1.12x, 1.07x), so that reading is not certain.
# (batch, K, output tokens/s of the whole batch, speed-up over K=0)
PUBLISHED_PR_32887 = ((1, 7, 560.0, 1.52), (8, 3, 2389.0, 1.34))
# What the published runs are assumed to be, where the PR does not say: the pair's drafter as catalogued (the PR ran
# a 2-layer P-EAGLE; the catalog's amazon/gpt-oss-120b-p-eagle has 4), the card's --kv-cache-dtype fp8, MT-Bench
# prompts of about 128 tokens, so a mean decode context of 128 + 2048 / 2 tokens.
PUBLISHED_PAIR, PUBLISHED_GPU, PUBLISHED_KV_BYTES = "gpt-oss-120b", "B200", 1
PUBLISHED_CONTEXT_TOKENS = 128 + 2048 // 2

# The estimate against PR #32887, recomputed by tests/simulate/test_service_estimate.py (which fails when the model
# moves them; update them with the model). Speed-up of speculation (TPOT at K=0 over TPOT at K), estimate /
# published - 1, at (batch, K):
SPEEDUP_ERROR = {(1, 7): 0.072, (8, 3): 0.053}
SPEEDUP_ERROR_BAND = 0.10  # the test's bound on |error|
# Published TPOT / roofline TPOT at (batch, K), K=0 being the PR's baseline (its throughput / its speed-up); as
# estimate / published - 1, the roofline's TPOT is 77% to 86% too fast:
PUBLISHED_OVER_ROOFLINE = {(1, 0): 4.38, (1, 7): 4.70, (8, 0): 6.79, (8, 3): 7.15}
TPOT_RATIO_TOLERANCE = 0.02  # the test's bound on how far the recomputed ratios may move from these
# Not compared: the P-EAGLE posts' B200 figures (the vLLM post, https://vllm.ai/blog/p-eagle, not opened here; the
# AWS post, "up to 1.69x speedup over vanilla EAGLE-3 on real workloads on NVIDIA B200",
# https://aws.amazon.com/blogs/machine-learning/p-eagle-faster-llm-inference-with-parallel-speculative-decoding-in-vllm/)
# are speed-ups over EAGLE-3, whose sequential drafter this model does not have, and for gpt-oss-20b, which has no
# acceptance figure here (peagle/catalog/model_figures.yaml).


def _calibration(bound: str) -> float:
    ratios = PUBLISHED_OVER_ROOFLINE.values()
    if bound == "low":
        return max(ratios)
    if bound == "high":
        return min(ratios)
    return math.exp(sum(math.log(ratio) for ratio in ratios) / len(ratios))


def _k_at(plan: Plan, batch: int) -> int:
    for low, high, k in plan.speculative_schedule:
        if low <= batch <= high:
            return k
    return plan.speculative_tokens


def _concurrencies(max_num_seqs: int) -> list[int]:
    levels = [2**power for power in range(max_num_seqs.bit_length()) if 2**power <= max_num_seqs]
    return levels + ([max_num_seqs] if levels[-1] != max_num_seqs else [])


def _meets(slo: Slo, ttft: float, tpot: float, e2e: float) -> float:
    checks = ((slo.ttft_seconds, ttft), (slo.tpot_seconds, tpot), (slo.e2e_seconds, e2e))
    return 1.0 if all(bound is None or value <= bound for bound, value in checks) else 0.0


def estimated_curve(plan: Plan, *, bound: str = "central") -> ServiceCurve | None:
    """The plan's unit (one engine) at concurrency 1, 2, 4, ... up to max_num_seqs, by the roofline calibrated to
    PR #32887 (``bound``: "central", or "low"/"high" for the slowest/fastest calibration). None when the GPU, the
    target or (with K > 0 at some concurrency) the pair's acceptance has no figures here."""
    if bound not in BOUNDS:
        raise ValueError(f"bound {bound!r}: one of {', '.join(BOUNDS)}")
    model: DecodeModel | None = decode_model(
        plan.pair_id,
        plan.pair,
        plan.instance.gpu,
        tensor_parallel=plan.tensor_parallel_size,
        kv_bytes_per_token_per_gpu=plan.memory.kv_bytes_per_token,
    )
    levels = _concurrencies(plan.max_num_seqs)
    if model is None or (model.acceptance is None and any(_k_at(plan, c) for c in levels)):
        return None
    if bound == "low" and plan.tensor_parallel_size > 1:
        # Nothing here measured a tensor-parallel engine: the low bound assumes it decodes no faster than one GPU
        # reading every byte (the KV cache of all the GPUs included), the central and high ones that it divides
        # the reads and the matmuls evenly. Communication between the GPUs is in neither.
        model = replace(
            model,
            tensor_parallel=1,
            kv_bytes_per_token_per_gpu=model.kv_bytes_per_token_per_gpu * plan.tensor_parallel_size,
        )
    scale = _calibration(bound)
    profile = plan.profile
    prompt, tokens = profile.typical_context_tokens, profile.sampling.max_tokens
    context = mean_decode_context(profile)
    points = []
    for batch in levels:
        k = _k_at(plan, batch)
        # The drafter runs at the plan's K (a schedule's largest) whatever the band's K (roofline_step.py).
        tpot = model.tpot_seconds(batch, k, context, drafter_k=plan.speculative_tokens) * scale
        step = model.step_seconds(batch, k, context, drafter_k=plan.speculative_tokens)
        ttft = (model.prefill_seconds(prompt) + step) * scale
        e2e = ttft + tpot * (tokens - 1)
        points.append(_point(batch, ttft, tpot, e2e, _meets(profile.slo, ttft, tpot, e2e)))
    return ServiceCurve(
        points=tuple(points),
        ttft_seconds=profile.slo.ttft_seconds,
        tpot_seconds=profile.slo.tpot_seconds,
        e2e_seconds=profile.slo.e2e_seconds,
        output_tokens=tokens,
        source=_source(plan, bound, scale),
        measured=False,
    )


def _point(batch: int, ttft: float, tpot: float, e2e: float, attainment: float) -> CurvePoint:
    return CurvePoint(
        rate=batch / e2e,
        completed=batch / e2e,
        in_flight=float(batch),
        e2e_mean=e2e,
        ttft_mean=ttft,
        ttft_p50=ttft,
        ttft_p90=ttft,
        tpot_mean=tpot,
        tpot_p50=tpot,
        tpot_p90=tpot,
        attainment=attainment,
        requests=0,
    )


def _source(plan: Plan, bound: str, scale: float) -> str:
    figures = load_roofline_figures()
    gpu = figures.gpus[plan.instance.gpu]
    acceptance = figures.acceptance.get(plan.pair_id)
    accepted = (
        f", acceptance length {acceptance.acceptance_length:g} at K={acceptance.k} ({acceptance.benchmark}, drafter "
        "card)"
        if acceptance
        else ""
    )
    return (
        f"{ESTIMATE_NAME}, {bound}: {plan.pair_id} on {plan.tensor_parallel_size} x {plan.instance.gpu} "
        f"({gpu.memory_bandwidth_gb_per_s:g} GB/s, {gpu.dense_tflops['bf16']:g} dense BF16 TFLOPS each), "
        f"K {describe_schedule(plan.speculative_schedule) if plan.speculative_schedule else plan.speculative_tokens}"
        f"{accepted}, prompt {plan.profile.typical_context_tokens} tokens, "
        f"{plan.profile.sampling.max_tokens} out; times x{scale:.2f} (vLLM PR #32887 on B200, gpt-oss-120b)"
    )
