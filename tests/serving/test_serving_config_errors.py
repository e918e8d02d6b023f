"""Launcher configuration errors: exit non-zero, say what to fix, start no engine.

Run as the container and `peagle local` run it (a subprocess with an environment),
so the exit code and the message a SageMaker log reader sees are what is tested.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from local_engine import REPO_ROOT, peagle_local_command

from peagle_serve.errors import EXIT_CONFIG_ERROR


def run_launcher(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SM_VLLM_", "PEAGLE_"))}
    return subprocess.run(
        [sys.executable, "-m", "peagle_serve", "serve", *args],
        env={**clean, **env},
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def spec_config(drafter, k: int = 4) -> str:
    return json.dumps(
        {"method": "eagle3", "model": str(drafter), "num_speculative_tokens": k, "parallel_drafting": True}
    )


def test_k_above_the_drafters_trained_count_is_rejected_by_peagle_local(tiny_pair):
    result = subprocess.run(
        peagle_local_command("--port", "1", "--speculative-tokens", "9", "--models-dir", str(tiny_pair.root)),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == EXIT_CONFIG_ERROR
    assert "num_speculative_tokens=9 is above the 8 tokens the drafter was trained for" in result.stderr
    assert "Use K <= 8" in result.stderr


def test_drafter_config_without_a_mask_token_is_rejected(tiny_pair, tmp_path):
    drafter = tmp_path / "drafter"
    shutil.copytree(tiny_pair.drafter_dir, drafter)
    config = json.loads((drafter / "config.json").read_text())
    del config["ptd_token_id"]
    (drafter / "config.json").write_text(json.dumps(config))
    result = run_launcher(
        {"SM_VLLM_MODEL": str(tiny_pair.target_dir), "SM_VLLM_SPECULATIVE_CONFIG": spec_config(drafter)}
    )
    assert result.returncode == EXIT_CONFIG_ERROR
    assert "names no mask token" in result.stderr and "ptd_token_id" in result.stderr


def test_missing_model_directories_are_named(tiny_pair, tmp_path):
    result = run_launcher(
        {"SM_VLLM_MODEL": str(tmp_path / "nope"), "SM_VLLM_SPECULATIVE_CONFIG": spec_config(tmp_path / "no-drafter")}
    )
    assert result.returncode == EXIT_CONFIG_ERROR
    assert f"target model (SM_VLLM_MODEL) '{tmp_path / 'nope'}' not found" in result.stderr
    assert f"drafter (speculative config \"model\") '{tmp_path / 'no-drafter'}' not found" in result.stderr


def test_empty_model_root_says_where_the_target_was_expected(tmp_path):
    result = run_launcher({"PEAGLE_MODEL_ROOT": str(tmp_path)})
    assert result.returncode == EXIT_CONFIG_ERROR
    assert f"neither {tmp_path}/target/config.json nor {tmp_path}/config.json exists" in result.stderr


def test_bad_launcher_settings_and_json_exit_before_any_engine(tiny_pair):
    result = run_launcher(
        {
            "SM_VLLM_MODEL": str(tiny_pair.target_dir),
            "SM_VLLM_SPECULATIVE_CONFIG": "{not json",
            "PEAGLE_SHUTDOWN_DRAIN_SECONDS": "45",
        }
    )
    assert result.returncode == EXIT_CONFIG_ERROR
    assert "PEAGLE_SHUTDOWN_DRAIN_SECONDS='45' must be 0-29" in result.stderr
    # Settings are checked first; fix them and the next problem shows.
    result = run_launcher({"SM_VLLM_MODEL": str(tiny_pair.target_dir), "SM_VLLM_SPECULATIVE_CONFIG": "{not json"})
    assert result.returncode == EXIT_CONFIG_ERROR
    assert "SM_VLLM_SPECULATIVE_CONFIG is not valid JSON" in result.stderr
    assert "starting vLLM" not in result.stderr


def test_k_zero_in_the_speculative_config_explains_how_to_turn_speculation_off(tiny_pair):
    result = run_launcher(
        {
            "SM_VLLM_MODEL": str(tiny_pair.target_dir),
            "SM_VLLM_SPECULATIVE_CONFIG": spec_config(tiny_pair.drafter_dir, k=0),
        }
    )
    assert result.returncode == EXIT_CONFIG_ERROR
    assert "leave SM_VLLM_SPECULATIVE_CONFIG unset" in result.stderr
