"""`peagle simulate` titles each endpoint's units by the name the user gave the endpoint (the one `--endpoint`
takes), never by the inference component's generated name (issue 45: `llmplatform-nig-a9787d3d-primary` where
`--endpoint` wants `night-endpoint`)."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3

from peagle.cli import main
from peagle_cdk import Autoscaling, EndpointMode, ModelWeights, PeagleEndpoint

PINNED = ["--refused-counted", "no", "--conflicts", "largest", "--cooldown", "counted", "--updates", "at-once"]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """A night endpoint on inference components with an endpoint name but no ``name`` (so its component's name is
    generated), beside a day endpoint on production variants: (cdk.out, the component's generated name)."""
    root = tmp_path_factory.mktemp("titles")
    app = App(outdir=str(root / "cdk.out"))
    stack = Stack(app, "LlmPlatform")
    bucket = s3.Bucket(stack, "Weights")
    PeagleEndpoint(
        stack,
        "Night",
        endpoint_name="night-endpoint",
        model="qwen3-8b",
        instance_type="ml.g6.12xlarge",
        weights=ModelWeights.from_bucket(bucket, "models/qwen3-8b/"),
        mode=EndpointMode.inference_components(min_instances=0, max_instances=1),
        autoscaling=Autoscaling(min_capacity=0, max_capacity=1),
    )
    PeagleEndpoint(
        stack,
        "Day",
        name="day",
        model="gpt-oss-20b",
        instance_type="ml.g6e.xlarge",
        weights=ModelWeights.from_bucket(bucket, "models/gpt-oss-20b/"),
    )
    app.synth()
    template = json.loads((root / "cdk.out" / "LlmPlatform.template.json").read_text())
    (component,) = [
        resource["Properties"]["InferenceComponentName"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::SageMaker::InferenceComponent"
    ]
    return root, component


def _simulate(capsys, root, *extra: str) -> str:
    code = main(["simulate", "--cdk-out", str(root / "cdk.out"), "--traffic", "surge", "--no-plots", *PINNED, *extra])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    return out


def test_units_are_titled_by_the_endpoint_name_the_user_gave(app, capsys):
    root, component = app
    assert component != "night-endpoint" and not component.startswith("night")  # the case: a generated name

    out = _simulate(capsys, root, "--out", str(root / "all"))
    summary = (root / "all" / "simulation.md").read_text()

    scenario_rows = [line.split("  ")[0] for line in out.splitlines() if " surge " in line]
    assert "night-endpoint/Primary" in scenario_rows and "day-endpoint/Primary" in scenario_rows, out
    assert "| night-endpoint/Primary | surge |" in summary
    assert component not in out.split("assumptions")[0]  # the tables and the failing verdicts
    assert f"**{component}," not in summary and f"#### {component} " not in summary


def test_the_title_is_the_name_endpoint_takes(app, capsys):
    root, component = app

    out = _simulate(capsys, root, "--out", str(root / "night"), "--endpoint", "night-endpoint")

    assert "night-endpoint/Primary" in out and "day-endpoint" not in out.split("assumptions")[0]
