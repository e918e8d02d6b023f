"""The engine's token budget per step (vLLM's ``--max-num-batched-tokens``), planned from K and max_num_seqs so
that speculation does not crowd out prefill.

What vLLM 0.32 does with it (the source this rule reads; re-check it when the pin moves):

- Each step, the scheduler serves the running requests first and gives what is left to waiting prompts (chunked
  prefill). A running request with drafts is scheduled its verified token plus its K drafts ("num_tokens_with_spec =
  len(prompt_token_ids) + len(output_token_ids) + len(spec_token_ids)", vllm/v1/core/sched/scheduler.py,
  ``Scheduler.schedule``), and every scheduled request also takes its drafting slots from the input budget
  ("input_budget -= num_new_tokens + draft_slots", same function), the input budget being max_num_batched_tokens.
- P-EAGLE's drafting slots: "P-EAGLE  eagle3  Yes  K - 1" ("The existing query is reused; only masked queries need
  new slots", vllm/config/speculative.py, ``SpeculativeConfig.max_num_new_slots_for_drafting``).
- Left unset, max_num_batched_tokens is the platform's default for the OpenAI server: 2048 on GPUs under 70 GiB
  and on A100s, 8192 on larger ones (H100, H200), 16384 from 160 GiB (B200, B300), 2048 per CPU worker
  (vllm/engine/arg_utils.py, ``EngineArgs.get_batch_defaults``). With speculation, vLLM then warns
  "max_num_scheduled_tokens is set to 2048 based on the speculative decoding settings. This may lead to
  suboptimal performance. Consider increasing max_num_batched_tokens to accommodate the additional draft token
  slots" (vllm/config/vllm.py, ``VllmConfig._set_max_num_scheduled_tokens``, below 8192).

So at the default a full batch of P-EAGLE decodes takes max_num_seqs x 2K tokens of the budget (K=5, 256
sequences: 2,560 > 2,048: not even every decode fits one step), and a new prompt's prefill gets what is left, or
nothing: its first token waits. The plan sets the budget to a full batch of decodes plus one prefill chunk of the
platform's default size, so a prompt arriving while every slot decodes still prefills as fast as vLLM's default
lets it. vLLM sizes its KV cache after a profiling pass at this budget ("self._dummy_run(self.max_num_tokens,
is_profile=True ...)" with "self.max_num_tokens = scheduler_config.max_num_batched_tokens",
vllm/v1/worker/gpu_model_runner.py, ``GPUModelRunner.profile_run``, which ``Worker.determine_available_memory``
runs), so a larger budget takes activation memory from the KV cache rather than failing to start.
"""

from __future__ import annotations

# vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults: UsageContext.OPENAI_API_SERVER's max_num_batched_tokens.
# "for GPUs like B200/B300 with >= 160GB memory, use the largest defaults": 16384; "For GPUs like H100 and H200"
# (device_memory >= 70 GiB and "a100" not in the device name): 8192; else 2048; on CPU 2048 * world_size.
_LARGEST_GPU_GIB, _LARGE_GPU_GIB = 160, 70
_GPU_DEFAULTS = (16384, 8192, 2048)
CPU_DEFAULT_BATCHED_TOKENS = 2048


def default_batched_tokens(gpu: str, gpu_memory_gib: float) -> int:
    """vLLM's own max_num_batched_tokens for its OpenAI server on one GPU of this kind (module docstring)."""
    if gpu_memory_gib >= _LARGEST_GPU_GIB:
        return _GPU_DEFAULTS[0]
    if gpu_memory_gib >= _LARGE_GPU_GIB and "a100" not in gpu.lower():
        return _GPU_DEFAULTS[1]
    return _GPU_DEFAULTS[2]


def draft_slots(speculative_tokens: int) -> int:
    """The input slots a P-EAGLE request takes per step beyond its scheduled tokens: K - 1 (parallel drafting)."""
    return max(0, speculative_tokens - 1)


def tokens_per_decode(speculative_tokens: int) -> int:
    """A decoding request's share of the input budget in one step: its verified token, K drafts, K - 1 slots."""
    return 1 + speculative_tokens + draft_slots(speculative_tokens)


def max_num_batched_tokens(*, max_num_seqs: int, speculative_tokens: int, prefill_chunk: int) -> int:
    """A full batch of decodes plus one prefill chunk (``prefill_chunk``: the platform's default budget)."""
    return max_num_seqs * tokens_per_decode(speculative_tokens) + prefill_chunk


def describe(*, max_num_seqs: int, speculative_tokens: int, prefill_chunk: int) -> str:
    """How the budget was made, for `peagle plan`."""
    per = tokens_per_decode(speculative_tokens)
    total = max_num_batched_tokens(
        max_num_seqs=max_num_seqs, speculative_tokens=speculative_tokens, prefill_chunk=prefill_chunk
    )
    return (
        f"max_num_batched_tokens={total:,}: {max_num_seqs} decodes x {per} tokens (1 + K={speculative_tokens} drafts"
        f" + {draft_slots(speculative_tokens)} P-EAGLE slots) + a {prefill_chunk:,}-token prefill chunk (vLLM's "
        "default for this GPU), so prompts still prefill while every slot decodes"
    )
