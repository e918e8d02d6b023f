"""The engine's token budget per step (peagle/planning/engine_budget.py): a full batch of P-EAGLE decodes plus one prefill
chunk of vLLM's default size, in every plan, `peagle plan`'s output, the synthesized container and local mode."""

from __future__ import annotations

import pytest

from peagle.catalog import load_catalog
from peagle.cli import main
from peagle.planning import engine_budget
from peagle.planning.planner import plan_deployment
from peagle.settings import load_deployment_config


@pytest.mark.parametrize(
    ("instance", "expected"),
    [
        ("ml.g6e.xlarge", 2048),  # L40S, 44-45 GiB: under 70 GiB
        ("ml.g5.xlarge", 2048),  # A10G
        ("ml.p4de.24xlarge", 2048),  # A100 80 GB: vLLM keeps 2048 for A100s by name
        ("ml.p5.48xlarge", 8192),  # H100: >= 70 GiB and not an A100
    ],
)
def test_the_prefill_chunk_is_vllms_own_default_for_the_gpu(instance, expected):
    row = load_catalog().instances[instance]
    assert engine_budget.default_batched_tokens(row.gpu, row.gpu_memory_gib) == expected


def test_from_160_gib_a_gpu_gets_vllms_largest_default():
    assert engine_budget.default_batched_tokens("B200", 178.4) == 16384


@pytest.mark.parametrize(
    ("k", "per_decode"),
    [(0, 1), (1, 2), (4, 8), (7, 14)],  # 1 verified + K drafts + K - 1 P-EAGLE slots
)
def test_a_decode_takes_its_drafts_and_p_eagles_slots_from_the_budget(k, per_decode):
    assert engine_budget.tokens_per_decode(k) == per_decode
    assert engine_budget.max_num_batched_tokens(max_num_seqs=32, speculative_tokens=k, prefill_chunk=2048) == (
        32 * per_decode + 2048
    )


def test_every_plan_sets_the_budget_from_its_own_k_and_max_num_seqs():
    plan = plan_deployment(load_deployment_config("deployments/default.yaml"))
    assert (plan.max_num_seqs, plan.speculative_tokens) == (32, 7)
    assert plan.max_num_batched_tokens == 32 * 14 + 2048
    off = plan_deployment(load_deployment_config("deployments/default.yaml", {"speculativeTokens": "0"}))
    assert off.max_num_batched_tokens == off.max_num_seqs * 1 + 2048


def test_the_synthesized_container_is_given_the_budget(default_synth):
    env = default_synth.container_environment()
    assert env["SM_VLLM_MAX_NUM_BATCHED_TOKENS"] == str(32 * 14 + 2048)


def test_peagle_plan_prints_the_budget_and_why(capsys):
    assert main(["plan", "--model", "gpt-oss-20b", "--instance", "ml.g6e.xlarge"]) == 0
    out = capsys.readouterr().out
    assert (
        "token budget    max_num_batched_tokens=2,496: 32 decodes x 14 tokens (1 + K=7 drafts + 6 P-EAGLE slots) "
        "+ a 2,048-token prefill chunk (vLLM's default for this GPU)"
    ) in out
