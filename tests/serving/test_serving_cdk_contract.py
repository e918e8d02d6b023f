"""The container environment the CDK app writes is one the launcher accepts.

The launcher refuses unknown PEAGLE_* variables and launcher-owned vLLM options, so a
name drift between peagle.planning.container_env (CDK side) and peagle_serve (container side)
would only show on a GPU at deploy time. Here the real environment of each example
deployment goes through the launcher's own validation and command-line builder, with
the SageMaker mount (/opt/ml/model) pointed at the tiny pair, which has the same
target/ + drafter/ layout. No engine is started.
"""

import json

import pytest
from local_engine import REPO_ROOT

from peagle.planning.container_env import container_environment
from peagle.planning.deployment_rules import plan_checked_deployment
from peagle.settings import load_deployment_config
from peagle_serve.contract import MODEL_MOUNT
from peagle_serve.launch_plan import build_launch_plan
from peagle_serve.settings import load_settings


def _as_mounted_on(env: dict[str, str], root) -> dict[str, str]:
    local = {key: value.replace(MODEL_MOUNT, str(root)) for key, value in env.items()}
    return {**local, "PEAGLE_MODEL_ROOT": str(root)}


EXAMPLES = sorted(path.name for path in (REPO_ROOT / "deployments").glob("*.yaml"))


def test_the_examples_include_both_endpoint_modes():
    assert {"default.yaml", "scale-to-zero.yaml"} <= set(EXAMPLES)


@pytest.mark.parametrize("deployment", EXAMPLES)
def test_every_example_deployments_environment_passes_the_launchers_checks(tiny_pair, deployment):
    config = load_deployment_config(REPO_ROOT / "deployments" / deployment)
    # Every production variant, or every inference component, the stack creates (the async endpoint too).
    for endpoint, unit, plan in plan_checked_deployment(config).variant_plans():
        environment = container_environment(plan, variant_name=unit, endpoint_name=endpoint)
        env = _as_mounted_on(environment, tiny_pair.root)
        settings = load_settings(env)  # raises on any unknown or invalid PEAGLE_* variable
        assert (settings.endpoint_name, settings.variant_name) == (endpoint, unit)
        assert settings.drafter_trained_k == plan.pair.drafter.trained_k
        launch = build_launch_plan(settings, env, [])
        argv = launch.argv
        assert argv[3:5] == ["serve", str(tiny_pair.target_dir)]  # `vllm serve <model>`
        assert argv[argv.index("--port") + 1] == "8080"
        assert int(argv[argv.index("--shutdown-timeout") + 1]) < 30
        assert argv[argv.index("--max-model-len") + 1] == str(plan.max_model_len)
        assert argv[argv.index("--tensor-parallel-size") + 1] == str(plan.tensor_parallel_size)
        generation = json.loads(argv[argv.index("--override-generation-config") + 1])
        assert generation == {"temperature": plan.profile.sampling.temperature, "top_p": plan.profile.sampling.top_p}
        if plan.speculation_enabled:
            speculative = json.loads(argv[argv.index("--speculative-config") + 1])
            assert set(speculative) <= _vllm_speculative_config_fields()  # vLLM's parser only json.loads it
            schedule = speculative.pop("num_speculative_tokens_per_batch_size", None)
            assert speculative == {
                "method": "eagle3",
                "model": str(tiny_pair.drafter_dir),
                "num_speculative_tokens": plan.speculative_tokens,
                "parallel_drafting": True,
            }
            assert schedule == ([list(band) for band in plan.speculative_schedule] or None)
            if schedule:
                # vLLM's own expansion of the schedule (what its scheduler looks K up in, and where it
                # refuses a bad one at engine start) gives each batch size the K of its band.
                lookup = _vllm_schedule_lookup(schedule, plan.max_num_seqs, plan.speculative_tokens)
                expected = [0] + [k for low, high, k in plan.speculative_schedule for _ in range(low, high + 1)]
                assert lookup == expected[: plan.max_num_seqs + 1]
        else:
            assert "--speculative-config" not in argv
        if plan.pair.vllm_flags.get("enable-prefix-caching") is False:
            assert "--no-enable-prefix-caching" in argv
        # vLLM's own parser accepts the whole command line: a misspelt flag in pairs.yaml,
        # container_env or a deployment's vllm_args fails here, not on a GPU.
        parsed = _vllm_parser().parse_args(argv[3:])  # `serve <model> ...`, after `python -m <module>`
        assert parsed.model_tag == str(tiny_pair.target_dir)
        assert parsed.max_model_len == plan.max_model_len
        assert parsed.tensor_parallel_size == plan.tensor_parallel_size
        # Acceptance in every answer exactly when speculation is on: vLLM refuses the option without it.
        assert parsed.per_request_spec_decode_metrics == ("summary" if plan.speculation_enabled else "none")


def _vllm_speculative_config_fields() -> set[str]:
    """The keys vLLM 0.32's SpeculativeConfig (a pydantic dataclass) takes."""
    import dataclasses

    from vllm.config import SpeculativeConfig

    return {field.name for field in dataclasses.fields(SpeculativeConfig)}


def _vllm_schedule_lookup(schedule, max_num_seqs: int, num_speculative_tokens: int) -> list[int]:
    """vLLM 0.32's batch size -> K table for a schedule (vllm/v1/core/sched/scheduler.py builds it at start)."""
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

    return build_dynamic_sd_schedule_lookup(
        schedule, vllm_max_batch_size=max_num_seqs, vllm_num_speculative_tokens=num_speculative_tokens
    )


def _vllm_parser():
    """`vllm`'s parser with its `serve` subcommand, as vllm/entrypoints/cli/main.py builds it."""
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="vllm")
    ServeSubcommand().subparser_init(parser.add_subparsers(dest="subparser"))
    return parser
