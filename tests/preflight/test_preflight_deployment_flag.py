"""`peagle preflight --deployment FILE` against an app of your own: the flag names a deployment file, so it is
refused, not silently ignored, when the app builds its endpoints from PeagleEndpoint props, and checked against the
endpoint a PeagleEndpoint.from_config app built from a file (issue 45)."""

from __future__ import annotations

from pathlib import Path

import yaml
from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3
from test_preflight_library_app import _synth
from test_preflight_transitions import preflight

from peagle.settings import load_deployment_config
from peagle_cdk import ModelWeights, PeagleEndpoint


def _deployment_file(directory: Path, name: str) -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "model": "gpt-oss-20b"}), encoding="utf-8")
    return path


def test_deployment_is_refused_for_an_app_made_from_props(tmp_path, capsys):
    cdk_out = _synth(tmp_path / "cdk.out", "ml.g6e.xlarge")
    deployment = _deployment_file(tmp_path, "mine")

    code, out, err = preflight(
        capsys, "--cdk-out", str(cdk_out), "--deployment", str(deployment), "--deployed-template", "unused.json"
    )

    assert code == 2, out + err
    assert f"--deployment {deployment} names a deployment file" in err
    assert "builds its endpoints (chat-endpoint) from PeagleEndpoint props" in err
    assert "drop --deployment" in err


def test_deployment_is_checked_against_an_app_made_from_that_file(tmp_path, capsys):
    made_from = _deployment_file(tmp_path, "chat")
    app = App(outdir=str(tmp_path / "cdk.out"))
    stack = Stack(app, "Service")
    PeagleEndpoint.from_config(
        stack,
        "Chat",
        config=load_deployment_config(str(made_from)),
        weights=ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/"),
    )
    app.synth()
    deployed = tmp_path / "cdk.out" / "Service.template.json"
    other = _deployment_file(tmp_path, "other")

    code, out, err = preflight(
        capsys, "--cdk-out", str(tmp_path / "cdk.out"), "--deployment", str(other), "--deployed-template", str(deployed)
    )
    assert code == 2, out + err
    assert f"--deployment {other} describes endpoint 'other-endpoint'" in err
    assert "made from a deployment file named chat-endpoint" in err

    code, out, err = preflight(
        capsys,
        "--cdk-out",
        str(tmp_path / "cdk.out"),
        "--deployment",
        str(made_from),
        "--deployed-template",
        str(deployed),
    )
    assert code == 0, out + err
    assert "no illegal transitions" in out
