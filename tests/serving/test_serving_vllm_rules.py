"""The vLLM 0.32 behaviours the launcher is built on, checked against the installed vLLM.

No engine starts: these build vLLM's command line and engine configuration only, so
a vLLM upgrade that changes one of them fails here, next to the rule, rather than as
a puzzling engine test.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from local_engine import REPO_ROOT


def _python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)


def test_vllm_serve_starts_through_vllm_cli_without_deprecation_warnings():
    """The launcher's command is vLLM's own `vllm serve` parser (launch_plan.VLLM_SERVE_COMMAND)."""
    result = _python("-m", "peagle_serve.vllm_cli", "serve", "--help=all")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage: vllm serve [model_tag] [options]" in result.stdout
    # The options the launcher passes are all still `vllm serve` options.
    for option in (
        "--middleware MIDDLEWARE",
        "--shutdown-timeout SHUTDOWN_TIMEOUT",
        "--host HOST",
        "--port PORT",
        "--speculative-config SPECULATIVE_CONFIG",
    ):
        assert option in result.stdout
    assert "deprecated" not in result.stderr.lower()


def test_vllms_own_cli_module_needs_the_vllm_distribution_that_the_cpu_build_lacks():
    """Why vllm_cli exists: vllm/entrypoints/cli/main.py reads importlib.metadata.version("vllm")
    before parsing anything. When this starts passing, vllm_cli's metadata alias can go."""
    result = _python("-m", "vllm.entrypoints.cli.main", "--version")
    assert result.returncode != 0
    assert "PackageNotFoundError" in result.stderr and "vllm" in result.stderr


def test_parallel_drafting_keeps_the_drafters_own_context_as_its_drafting_limit(tiny_pair, tmp_path):
    """Why model_layout.drafter_context_warning stays for parallel drafting: vLLM raises the
    drafter's max_position_embeddings (its rotary cache) to the target's length, but the
    drafter's max_model_len, which the V1 model runner's _input_fits_in_drafter compares
    against, keeps the checkpoint's value; and P-EAGLE always runs on the V1 runner."""
    from vllm.engine.arg_utils import EngineArgs

    drafter = tmp_path / "short-context-drafter"
    shutil.copytree(tiny_pair.drafter_dir, drafter)
    config = json.loads((drafter / "config.json").read_text())
    (drafter / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 64}))

    engine_config = EngineArgs(
        model=str(tiny_pair.target_dir),
        max_model_len=1024,
        dtype="float32",
        enforce_eager=True,
        speculative_config={
            "method": "eagle3",
            "model": str(drafter),
            "num_speculative_tokens": 4,
            "parallel_drafting": True,
        },
    ).create_engine_config()
    draft = engine_config.speculative_config.draft_model_config
    assert draft.hf_config.max_position_embeddings == 1024  # vLLM's override ran
    assert draft.max_model_len == 64  # ... and drafting still stops beyond 64 - K tokens
    assert engine_config.use_v2_model_runner is False
    assert "parallel drafting for EAGLE speculative decoding" in (
        engine_config._get_v2_model_runner_unsupported_features()
    )
