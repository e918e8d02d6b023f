"""The roofline of one decode step of a P-EAGLE engine, uncalibrated: what a step reads and computes, and how many
tokens it yields per sequence.

Shared by the planner's default K by load (peagle/planning/k_by_load.py) and the simulator's service-curve estimate
(peagle/simulate/service_estimate.py, which calibrates its times to vLLM PR #32887 and says what is not modelled).
A step of ``batch`` sequences of ``context_tokens`` each:

- reads the target's active weights once (model_figures.yaml), the drafter's once when it drafts (pairs.yaml
  ``drafter.weight_bytes``), and every sequence's KV cache, at the GPU's memory bandwidth (gpus.yaml), the weights
  split across the tensor-parallel GPUs;
- or, if longer, runs the matmuls of the tokens the step schedules (2 x the target's active parameters per token)
  at the GPU's dense BF16 throughput. A decoding request's tokens are its share of the engine's budget,
  peagle/planning/engine_budget.py ``tokens_per_decode``: the verified token, K drafts, K - 1 P-EAGLE slots (the
  drafter's slots counted at the target's parameters, as the budget counts them: an over-estimate of their cost);
- yields the pair's acceptance length at the K it verifies (1 at K = 0).

Inside a K-by-batch-size schedule the drafter does not shrink with the band. vLLM sizes the parallel-drafting pass
once, from the configured (largest) K: ``extra_slots_per_request = (1 if not self.parallel_drafting else
self.num_speculative_tokens)`` (vllm/v1/spec_decode/llm_base_proposer.py, set at start-up), and a band of K = 0
still runs it: "No draft tokens requested (e.g. Dynamic SD decided K=0). The prefill forward pass above already
ran to keep the drafter KV cache in sync, so just return an empty tensor." (same file, ``propose``). So a step
verifies the band's K (``k``) but reads the drafter and schedules its slots at the schedule's largest K
(``drafter_k``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from peagle.catalog import ModelPair, Profile
from peagle.catalog.roofline import AcceptanceFigure, GpuFigures, load_roofline_figures
from peagle.planning.engine_budget import draft_slots, tokens_per_decode


@dataclass(frozen=True)
class DecodeModel:
    """The roofline of one engine: what a step reads and computes, and what it yields (uncalibrated)."""

    gpu: GpuFigures
    tensor_parallel: int
    target_bytes: float  # the target's active weights, whole model
    drafter_bytes: float
    kv_bytes_per_token_per_gpu: float
    active_parameters: float
    acceptance: AcceptanceFigure | None

    def acceptance_length(self, k: int) -> float:
        """Tokens a step yields per sequence at K (1 without speculation)."""
        if k == 0:
            return 1.0
        if self.acceptance is None:
            raise ValueError("no acceptance figure for this pair")
        rate = _per_position_acceptance(self.acceptance.k, self.acceptance.acceptance_length)
        return sum(rate**position for position in range(k + 1))

    def step_seconds(self, batch: int, k: int, context_tokens: float, *, drafter_k: int | None = None) -> float:
        """One step verifying ``k`` drafts per sequence; ``drafter_k``: the width the drafter runs at (a schedule's
        largest K; default ``k``, a static K)."""
        drafting = k if drafter_k is None else drafter_k
        weights = self.target_bytes + (self.drafter_bytes if drafting else 0.0)
        read = weights / self.tensor_parallel + batch * context_tokens * self.kv_bytes_per_token_per_gpu
        flops = 2.0 * self.active_parameters * batch * _tokens_per_sequence(k, drafting) / self.tensor_parallel
        return max(read / self.gpu.bytes_per_second, flops / self.gpu.bf16_flops)

    def tpot_seconds(self, batch: int, k: int, context_tokens: float, *, drafter_k: int | None = None) -> float:
        return self.step_seconds(batch, k, context_tokens, drafter_k=drafter_k) / self.acceptance_length(k)

    def prefill_seconds(self, prompt_tokens: int) -> float:
        flops = 2.0 * self.active_parameters * prompt_tokens / self.tensor_parallel
        read = self.target_bytes / self.tensor_parallel
        return max(flops / self.gpu.bf16_flops, read / self.gpu.bytes_per_second)


def _tokens_per_sequence(k: int, drafter_k: int) -> int:
    """tokens_per_decode(K) for a static K; under a schedule the band's K drafts are verified and the drafter keeps
    its largest-K slots."""
    if k == drafter_k:
        return tokens_per_decode(k)
    return 1 + k + draft_slots(drafter_k)


@lru_cache(maxsize=64)  # the model asks for the same figure at every batch size and K
def _per_position_acceptance(k: int, acceptance_length: float) -> float:
    """The a with 1 + a + ... + a^k = acceptance_length (bisection; the sum grows with a)."""
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        if sum(middle**position for position in range(k + 1)) < acceptance_length:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def decode_model(
    pair_id: str, pair: ModelPair, gpu: str, *, tensor_parallel: int, kv_bytes_per_token_per_gpu: float
) -> DecodeModel | None:
    """The roofline for a pair on a GPU; None when the GPU or the target has no figures."""
    figures = load_roofline_figures()
    gpu_figures = figures.gpus.get(gpu)
    target = figures.targets.get(pair.target.hf_id)
    if gpu_figures is None or target is None:
        return None
    return DecodeModel(
        gpu=gpu_figures,
        tensor_parallel=tensor_parallel,
        target_bytes=target.active_weight_bytes,
        drafter_bytes=pair.drafter.weight_bytes,
        kv_bytes_per_token_per_gpu=kv_bytes_per_token_per_gpu,
        active_parameters=target.active_parameters,
        acceptance=figures.acceptance.get(pair_id),
    )


def mean_decode_context(profile: Profile) -> float:
    """A request's mean context while it decodes: the profile's typical prompt (an assumption: the profiles give no
    prompt length) plus half of its ``max_tokens`` (a request is taken to generate all of them)."""
    return profile.typical_context_tokens + profile.sampling.max_tokens / 2
