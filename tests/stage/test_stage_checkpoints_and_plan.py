"""Staging checks and layout on the tiny pair's real checkpoints (copied into tmp_path):
what goes where under the prefix, what is refused, and the dry-run output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from peagle.aws import S3Location
from peagle.cli import main
from peagle.stage.checkpoints import (
    drafter_problems,
    drafter_warnings,
    list_local_checkpoint,
    read_local_config,
    target_problems,
)
from peagle.stage.plan import StagePlan

PREFIX = "s3://my-models-bucket/models/tiny-pair/"


@pytest.fixture
def pair_dir(tiny_pair, tmp_path) -> Path:
    """DIR/target and DIR/drafter: copies of the tiny pair, free to break."""
    root = tmp_path / "pair"
    shutil.copytree(tiny_pair.target_dir, root / "target")
    shutil.copytree(tiny_pair.drafter_dir, root / "drafter")
    return root


def _check(root: Path, drafter_format: str = "eagle3") -> list[str]:
    target = list_local_checkpoint(root / "target", "target")
    drafter = list_local_checkpoint(root / "drafter", "drafter")
    return target_problems(target, read_local_config(target)) + drafter_problems(
        drafter, read_local_config(drafter), drafter_format=drafter_format
    )


def _edit_drafter_config(root: Path, change) -> None:
    path = root / "drafter" / "config.json"
    config = json.loads(path.read_text())
    change(config)
    path.write_text(json.dumps(config))


def test_the_tiny_pair_is_stageable_and_lays_out_target_and_drafter_side_by_side(pair_dir):
    assert _check(pair_dir) == []
    # What a Hub download leaves behind and vLLM never reads stays out of S3.
    (pair_dir / "target" / ".cache" / "huggingface").mkdir(parents=True)
    (pair_dir / "target" / ".cache" / "huggingface" / "download.lock").write_text("x")
    (pair_dir / "target" / "original").mkdir()
    (pair_dir / "target" / "original" / "model.safetensors").write_bytes(b"duplicate weights")

    target = list_local_checkpoint(pair_dir / "target", "target")
    drafter = list_local_checkpoint(pair_dir / "drafter", "drafter")
    plan = StagePlan.build("tiny-pair", S3Location.parse(PREFIX), target, drafter)

    keys = {file.relative_key for file in plan.files}
    assert {
        "target/config.json",
        "target/model.safetensors",
        "target/tokenizer.json",
        "drafter/config.json",
        "drafter/model.safetensors",
    } <= keys
    assert not any(".cache" in key or "original" in key for key in keys)
    assert set(plan.skipped_local) == {"target/.cache/huggingface/download.lock", "target/original/model.safetensors"}
    assert plan.model_data_s3_uri == PREFIX  # what the Model mounts at /opt/ml/model
    assert plan.total_bytes == sum((pair_dir / key).stat().st_size for key in keys)
    assert plan.destination.child("drafter/config.json").uri == PREFIX + "drafter/config.json"


def test_a_drafter_without_a_mask_token_is_refused_naming_the_keys(pair_dir):
    _edit_drafter_config(pair_dir, lambda config: config.pop("ptd_token_id"))

    problems = _check(pair_dir)

    assert len(problems) == 1
    assert problems[0].startswith("drafter: ") and "names no mask token" in problems[0]
    for key in ("dflash_config.mask_token_id", "mask_token_id", "dspark_noise_token_id", "pard_token", "ptd_token_id"):
        assert key in problems[0]
    # Any of vLLM's keys will do, the nested dflash one included.
    _edit_drafter_config(pair_dir, lambda config: config.update(dflash_config={"mask_token_id": 7}))
    assert _check(pair_dir) == []


def test_a_speculators_checkpoint_needs_no_mask_token(pair_dir):
    _edit_drafter_config(pair_dir, lambda config: config.pop("ptd_token_id"))
    assert _check(pair_dir, drafter_format="speculators") == []
    _edit_drafter_config(pair_dir, lambda config: config.update(speculators_config={"algorithm": "peagle"}))
    assert _check(pair_dir) == []


def test_every_problem_is_reported_at_once(pair_dir):
    (pair_dir / "target" / "model.safetensors").unlink()
    (pair_dir / "target" / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"a": "model-00001-of-00002.safetensors"}})
    )
    _edit_drafter_config(pair_dir, lambda config: config.pop("ptd_token_id"))
    (pair_dir / "drafter" / "model.safetensors").unlink()

    problems = _check(pair_dir)

    assert any("target: no *.safetensors weights" in problem for problem in problems)
    assert any("names shards that are not there: model-00001-of-00002.safetensors" in problem for problem in problems)
    assert any("drafter: " in problem and "mask token" in problem for problem in problems)
    assert any("drafter: no weights" in problem for problem in problems)


def test_a_drafter_whose_weights_lack_mask_hidden_gets_a_warning(pair_dir, tiny_pair):
    import numpy as np
    from safetensors.numpy import save_file

    drafter = list_local_checkpoint(pair_dir / "drafter", "drafter")
    assert drafter_warnings(drafter, read_local_config(drafter), drafter_format="eagle3") == []

    save_file({"fc.weight": np.zeros((2, 2), dtype=np.float32)}, str(pair_dir / "drafter" / "model.safetensors"))
    drafter = list_local_checkpoint(pair_dir / "drafter", "drafter")
    assert "mask_hidden" in drafter_warnings(drafter, read_local_config(drafter), drafter_format="eagle3")[0]


def test_dry_run_prints_files_bytes_and_keys_and_calls_no_aws(pair_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)

    exit_code = main(["stage", "--from-dir", str(pair_dir), "--s3-uri", PREFIX.rstrip("/"), "--dry-run"])

    out = capsys.readouterr().out
    assert exit_code == 0
    size = (pair_dir / "target" / "model.safetensors").stat().st_size
    assert f"{size:,}  {PREFIX}target/model.safetensors" in out
    assert f"{PREFIX}drafter/config.json" in out
    files = sum(1 for path in pair_dir.rglob("*") if path.is_file())
    assert f"files           {files} (" in out
    assert f"ModelDataS3Uri {PREFIX}" in out and "nothing uploaded" in out


def test_cli_refuses_a_broken_pair_before_any_upload(pair_dir, capsys):
    _edit_drafter_config(pair_dir, lambda config: config.pop("ptd_token_id"))
    (pair_dir / "target" / "config.json").unlink()

    exit_code = main(["stage", "--from-dir", str(pair_dir), "--s3-uri", PREFIX, "--dry-run"])

    err = capsys.readouterr().err
    assert exit_code == 2
    assert "the pair cannot be staged" in err and "target: no config.json" in err and "mask token" in err
