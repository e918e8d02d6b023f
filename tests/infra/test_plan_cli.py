"""`peagle plan` / `peagle catalog` and the real `cdk synth` through the pinned CDK CLI."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cdk_synth import REPO_ROOT

from peagle.cli import main

VENV_BIN = Path(sys.executable).parent


def test_plan_prints_the_resolved_plan(capsys):
    assert main(["plan", "--model", "gpt-oss-20b", "--instance", "ml.g6e.xlarge"]) == 0
    out = capsys.readouterr().out
    assert "P-EAGLE parallel drafting, K=7 (drafter trained for 10)" in out
    assert "tensor_parallel_size=1 max_model_len=8192" in out
    assert "$2.34/hour" in out


def test_plan_json_includes_the_container_environment(capsys):
    assert (
        main(
            [
                "plan",
                "--model",
                "qwen3-8b",
                "--instance",
                "ml.g6e.xlarge",
                "--profile",
                "codegen",
                "--speculative-tokens",
                "4",
                "--json",
            ]
        )
        == 0
    )
    document = json.loads(capsys.readouterr().out)
    assert document["speculative_tokens"] == 4 and document["profile"] == "codegen"
    assert json.loads(document["environment"]["SM_VLLM_SPECULATIVE_CONFIG"])["num_speculative_tokens"] == 4


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--model", "gpt-oss-120b", "--instance", "ml.g5.xlarge"], "Smallest that fits: ml.g6.12xlarge"),
        (["--model", "gpt-oss-20b", "--instance", "ml.p3.8xlarge"], "current vLLM needs compute capability >= 7.5"),
        (
            ["--model", "gpt-oss-20b", "--instance", "ml.g6e.xlarge", "--speculative-tokens", "11"],
            "was trained for (K <= 10)",
        ),
        (["--model", "gpt-oss-20b"], "give --model and --instance, or --deployment FILE"),
        (["--model", "nope", "--instance", "ml.g6e.xlarge"], "model 'nope' is not a known pair"),
    ],
)
def test_plan_errors_exit_2_with_an_actionable_message(capsys, argv, expected):
    assert main(["plan", *argv]) == 2
    captured = capsys.readouterr()
    assert expected in captured.err and captured.out == ""


def test_plan_reads_a_deployment_file_with_overrides(capsys):
    deployment = str(REPO_ROOT / "deployments" / "default.yaml")
    assert main(["plan", "--deployment", deployment, "--instance-count", "2", "--env"]) == 0
    out = capsys.readouterr().out
    assert "2 x ml.g6e.xlarge" in out and "SM_VLLM_SPECULATIVE_CONFIG=" in out


def test_plan_says_where_the_price_comes_from(capsys, tmp_path):
    deployment = tmp_path / "deployment.yaml"
    deployment.write_text("instance: {type: ml.g6e.xlarge, price_per_hour_usd: 1.25}\n")
    assert main(["plan", "--deployment", str(deployment)]) == 0
    assert "$1.25/hour on demand (instance.price_per_hour_usd)" in capsys.readouterr().out
    assert main(["plan", "--deployment", str(deployment), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["price_per_hour_usd"], document["price_source"]) == (1.25, "instance.price_per_hour_usd")


def test_catalog_lists_pairs_instances_and_profiles(capsys):
    assert main(["catalog"]) == 0
    out = capsys.readouterr().out
    for name in ("gpt-oss-20b", "qwen3-coder-30b-a3b", "ml.p5en.48xlarge", "chatbot", "batch"):
        assert name in out
    # Columns line up whatever the length of the longest pair id or Hugging Face name.
    pair_rows = out.split("\n\n")[0].splitlines()[2:]
    assert len({row.index(" openai/") if " openai/" in row else row.index(" Qwen/") for row in pair_rows}) == 1
    # the host, for inference components (column widths follow the data: tests/cli/test_catalog_columns.py)
    assert re.search(r"ml\.g6e\.48xlarge +8 L40S +45 +8\.9 +192 +1536 ", out)
    assert main(["catalog", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["pairs"]) >= {"gpt-oss-120b", "qwen3-8b"}


def test_console_script_is_installed_and_exits_2_on_a_bad_combination():
    result = subprocess.run(
        [str(VENV_BIN / "peagle"), "plan", "--model", "gpt-oss-120b", "--instance", "ml.g5.xlarge"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "gpt-oss-120b needs ~64 GiB" in result.stderr and "Traceback" not in result.stderr


def _cdk(*args: str, outdir: Path) -> subprocess.CompletedProcess:
    cdk = REPO_ROOT / "node_modules" / ".bin" / "cdk"
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", "CDK_DISABLE_VERSION_CHECK": "1"}
    return subprocess.run(
        [str(cdk), "synth", "--quiet", "--no-notices", "--output", str(outdir), *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_cdk_synth_with_a_combination_that_does_not_fit_fails_with_the_planner_message(tmp_path):
    result = _cdk("-c", "model=gpt-oss-120b", "-c", "instanceType=ml.g5.xlarge", outdir=tmp_path)
    assert result.returncode != 0
    assert "error: gpt-oss-120b needs ~64 GiB of weights" in result.stderr
    assert "Smallest that fits: ml.g6.12xlarge" in result.stderr
    assert "Traceback" not in result.stderr


def test_cdk_synth_of_the_default_deployment_writes_both_stacks(tmp_path):
    result = _cdk(outdir=tmp_path)
    assert result.returncode == 0, result.stderr
    assert {p.name for p in tmp_path.glob("*.template.json")} == {
        "PeagleArtifacts.template.json",
        "PeagleEndpoint.template.json",
    }


def test_plan_says_how_deploy_gets_the_serving_image(capsys, tmp_path):
    """`make deploy` runs `make synth`, which prints the plan: the image path in use, whether Docker is needed."""
    assert main(["plan", "--deployment", "deployments/default.yaml"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("serving image"))
    assert "built in your account by CodeBuild during `cdk deploy` (no Docker needed" in line
    assert "anonymously from Docker Hub" in line
    local = tmp_path / "local.yaml"
    local.write_text("image:\n  build: local_docker\n")
    assert main(["plan", "--deployment", str(local), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["serving_image"]["build"] == "local_docker"
