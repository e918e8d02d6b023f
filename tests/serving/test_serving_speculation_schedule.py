"""K by batch size in the container: what the launcher accepts, and `peagle local --speculative-schedule`.

No engine here: the launcher's checks and command line only (tests/serving/test_serving_cdk_contract.py
feeds the example deployment's schedule through vLLM's own schedule lookup).
"""

from __future__ import annotations

import json

import pytest

from peagle.cli import build_parser
from peagle.local.cli import local_environment
from peagle_serve.errors import ConfigError
from peagle_serve.launch_plan import build_launch_plan
from peagle_serve.settings import load_settings


def _local(tiny_pair, *argv: str) -> tuple[dict[str, str], list[str]]:
    """The environment `peagle local <argv>` gives the launcher, and the launcher's vLLM command."""
    args = build_parser().parse_args(["local", "--models-dir", str(tiny_pair.root), *argv])
    env = local_environment(args, tiny_pair, {})
    return env, build_launch_plan(load_settings(env), env, []).argv


def _schedule_env(tiny_pair, schedule, k: int, **extra: str) -> dict[str, str]:
    speculative = {
        "method": "eagle3",
        "model": str(tiny_pair.drafter_dir),
        "num_speculative_tokens": k,
        "parallel_drafting": True,
        "num_speculative_tokens_per_batch_size": schedule,
    }
    return {
        "SM_VLLM_MODEL": str(tiny_pair.target_dir),
        "SM_VLLM_MAX_NUM_SEQS": "16",
        "SM_VLLM_SPECULATIVE_CONFIG": json.dumps(speculative),
        "PEAGLE_DRAFTER_TRAINED_K": "8",
        **extra,
    }


def _launcher_problems(env: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as error:
        build_launch_plan(load_settings(env), env, [])
    return "\n".join(error.value.problems)


def test_peagle_local_passes_a_schedule_with_its_largest_k_to_vllm(tiny_pair):
    env, argv = _local(tiny_pair, "--speculative-schedule", "1-2:4,3-16:0")
    speculative = json.loads(argv[argv.index("--speculative-config") + 1])
    assert speculative["num_speculative_tokens"] == 4
    assert speculative["num_speculative_tokens_per_batch_size"] == [[1, 2, 4], [3, 16, 0]]
    assert env["SM_VLLM_MAX_NUM_SEQS"] == "16"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["-k", "2", "--speculative-schedule", "1-16:4"], "not allowed with argument"),
        (["--speculative-schedule", "1-2:4;3-16:0"], "is not a band LO-HI:K"),
        (["--speculative-schedule", "1-16:0"], "use --speculative-tokens 0 to turn speculation off"),
    ],
)
def test_peagle_local_refuses_a_schedule_it_cannot_pass(tiny_pair, capsys, argv, expected):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["local", *argv])
    assert exit_info.value.code == 2
    assert expected in capsys.readouterr().err


def test_the_launcher_checks_the_schedule_before_starting_vllm(tiny_pair):
    # K above the tiny drafter's trained 8 (reported with num_speculative_tokens's own check).
    message = _launcher_problems(_schedule_env(tiny_pair, [[1, 2, 9], [3, 8, 0]], k=9))
    assert "num_speculative_tokens_per_batch_size: band 1 (1-2: K=9): K=9 is above the 8 tokens" in message
    message = _launcher_problems(_schedule_env(tiny_pair, [[1, 2, 4], [3, 8, 0]], k=4))
    assert "the bands end at batch size 8, but the server runs up to max_num_seqs=16" in message
    # num_speculative_tokens must be the largest K: vLLM would cut K=6 to 4.
    message = _launcher_problems(_schedule_env(tiny_pair, [[1, 2, 6], [3, 16, 0]], k=4))
    assert "its largest K is 6, but num_speculative_tokens=4; set num_speculative_tokens=6" in message
    message = _launcher_problems(_schedule_env(tiny_pair, [[1, 2, 4], [2, 16, "0"]], k=4))
    assert "band 2 [2, 16, '0'] is not [min_batch, max_batch, K] (three integers)" in message


def test_k_zero_at_batch_size_1_is_refused_only_while_the_self_check_runs(tiny_pair):
    schedule = [[1, 1, 0], [2, 16, 4]]
    message = _launcher_problems(_schedule_env(tiny_pair, schedule, k=4))
    assert "band 1 (1-1: K=0) drafts nothing at batch size 1, but the start-up self-check" in message
    env = _schedule_env(tiny_pair, schedule, k=4, PEAGLE_SPECULATION_SELF_CHECK="false")
    plan = build_launch_plan(load_settings(env), env, [])
    assert plan.speculation.schedule == ((1, 1, 0), (2, 16, 4)) and plan.speculative_tokens == 4
