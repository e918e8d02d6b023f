"""preflight on an app of your own: no deployment file, a stack of any id; the template's recorded plan says which
door made it, and the safe sequences speak that door's words."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3
from test_preflight_transitions import preflight

from peagle_cdk import Autoscaling, ModelWeights, PeagleEndpoint


def _synth(out: Path, instance_type: str) -> Path:
    app = App(outdir=str(out))
    stack = Stack(app, "Service")
    PeagleEndpoint(
        stack,
        "Chat",
        name="chat",
        model="gpt-oss-20b",
        instance_type=instance_type,
        weights=ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/"),
        autoscaling=Autoscaling(min_capacity=1, max_capacity=2),
    )
    app.synth()
    return out


def test_a_library_apps_cdk_out_is_checked_and_advised_in_its_props(tmp_path, capsys):
    deployed = _synth(tmp_path / "deployed", "ml.g6e.xlarge") / "Service.template.json"
    new = _synth(tmp_path / "new", "ml.g6e.12xlarge")

    code, out, err = preflight(capsys, "--cdk-out", str(new), "--deployed-template", str(deployed))

    assert code == 1, out + err
    assert f"preflight: {new / 'Service.template.json'} against {deployed}" in out
    assert "REFUSED [autoscaled-instance-type]" in out
    assert (
        "1. set `autoscaling=None` in your app's PeagleEndpoint props, keep `instance_type='ml.g6e.xlarge'`, and deploy"
    ) in out
    assert "2. set `instance_type='ml.g6e.12xlarge'` and deploy" in out
    assert "3. set `autoscaling=Autoscaling(min_capacity=1, max_capacity=2)` and deploy" in out  # the app's, whole
    assert "deployments/" not in out and "instance.type" not in out and "autoscaling.enabled" not in out


def test_a_cdk_out_without_a_recorded_plan_is_refused_with_what_to_do(tmp_path, capsys):
    app = App(outdir=str(tmp_path / "cdk.out"))
    s3.Bucket(Stack(app, "Other"), "Bucket")
    app.synth()

    code, _, err = preflight(capsys, "--cdk-out", str(tmp_path / "cdk.out"), "--deployed-template", "unused.json")

    assert code == 2
    assert "has no PeagleEndpoint stack and no stack whose template records a P-EAGLE plan" in err
    assert "or your own app's `cdk synth`, first, or pass --new" in err
