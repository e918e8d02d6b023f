"""The token budget's rule against the pinned vLLM itself (peagle/planning/engine_budget.py reads its source), and local
mode giving the engine the budget by the same rule as a GPU plan."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from peagle.cli import build_parser
from peagle.local.cli import LOCAL_MAX_NUM_SEQS, local_environment
from peagle.planning import engine_budget


def test_vllms_cpu_default_is_the_local_prefill_chunk():
    from vllm.engine.arg_utils import EngineArgs
    from vllm.usage.usage_lib import UsageContext

    batched, _ = EngineArgs.get_batch_defaults(world_size=1)
    assert batched[UsageContext.OPENAI_API_SERVER] == engine_budget.CPU_DEFAULT_BATCHED_TOKENS


@pytest.mark.parametrize("k", [1, 4, 7])
def test_vllm_gives_parallel_eagle3_k_minus_one_drafting_slots(k):
    """vLLM's own property, on a speculative config as the contract writes it (eagle3, parallel_drafting)."""
    from vllm.config.speculative import SpeculativeConfig

    config = SimpleNamespace(
        num_speculative_tokens=k,
        parallel_drafting=True,
        use_dflash=lambda: False,
        uses_draft_model=lambda: False,
    )
    assert SpeculativeConfig.max_num_new_slots_for_drafting.fget(config) == engine_budget.draft_slots(k)


def test_local_mode_sets_the_budget_by_the_plans_rule(tiny_pair):
    args = build_parser().parse_args(["local", "--models-dir", str(tiny_pair.root), "-k", "4"])
    env = local_environment(args, tiny_pair, {})
    assert env["SM_VLLM_MAX_NUM_BATCHED_TOKENS"] == str(LOCAL_MAX_NUM_SEQS * 8 + 2048)
    off = build_parser().parse_args(["local", "--models-dir", str(tiny_pair.root), "-k", "0"])
    assert local_environment(off, tiny_pair, {})["SM_VLLM_MAX_NUM_BATCHED_TOKENS"] == str(LOCAL_MAX_NUM_SEQS + 2048)


def test_the_launcher_passes_the_budget_to_vllm(tiny_pair):
    from peagle_serve.launch_plan import build_launch_plan
    from peagle_serve.settings import load_settings

    args = build_parser().parse_args(["local", "--models-dir", str(tiny_pair.root), "-k", "4"])
    env = local_environment(args, tiny_pair, {})
    argv = build_launch_plan(load_settings(env), env, []).argv
    assert argv[argv.index("--max-num-batched-tokens") + 1] == str(LOCAL_MAX_NUM_SEQS * 8 + 2048)
