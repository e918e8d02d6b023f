"""`peagle smoke --cdk-out`: an app of your own, no deployment file. The plan its PeagleEndpoint records in the
template gives the endpoint, the stack, each variant's K and sampling, the component and the KPI interval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_s3 as s3

from peagle.cli import build_parser, main
from peagle.planning.plan_record import METADATA_KEY
from peagle.smoke.cli import KPI_INTERVALS_TO_WAIT, resolve_options
from peagle_cdk import AbBaseline, Autoscaling, EndpointMode, ModelWeights, PeagleEndpoint, Speculation


@pytest.fixture(scope="module")
def cdk_out(tmp_path_factory) -> Path:
    """A components-mode endpoint with an A/B baseline at K=0, in a stack named after nothing peagle knows."""
    out = tmp_path_factory.mktemp("app") / "cdk.out"
    app = App(outdir=str(out))
    stack = Stack(app, "Service", stack_name="chat-service")
    PeagleEndpoint(
        stack,
        "Chat",
        name="chat",
        model="gpt-oss-20b",
        instance_type="ml.g6e.12xlarge",
        weights=ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/"),
        mode=EndpointMode.inference_components(max_instances=2),
        autoscaling=Autoscaling(min_capacity=1, max_capacity=2),
        speculation=Speculation.fixed(3),
        ab_baseline=AbBaseline(speculative_tokens=0),
        kpi_interval=Duration.seconds(30),
        profile="batch",
    )
    app.synth()
    return out


def options(*argv: str):
    return resolve_options(build_parser().parse_args(["smoke", *argv]))


def test_the_recorded_plan_names_endpoint_stack_component_and_kpi_interval(cdk_out):
    primary = options("--cdk-out", str(cdk_out))

    assert primary.endpoint_name == "chat-endpoint"
    assert primary.stack_name == "chat-service"
    assert primary.inference_component == "chat-primary"
    assert primary.kpi_wait_seconds == KPI_INTERVALS_TO_WAIT * 30
    assert primary.expect_speculation
    assert primary.speculation_source == f"{cdk_out / 'Service.template.json'}: K=3 for variant Primary"
    assert (primary.sampling.temperature, primary.sampling.top_p) == (0.3, 0.9)  # the batch profile's


def test_the_baseline_variant_is_its_own_component_with_its_own_k(cdk_out):
    baseline = options("--cdk-out", str(cdk_out), "--variant", "Baseline")

    assert baseline.inference_component == "chat-baseline"
    assert not baseline.expect_speculation
    assert baseline.speculation_source.endswith("K=0 for variant Baseline")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--variant", "Canary"], "--variant 'Canary' is not served by chat-endpoint"),
        (["--variant", "Canary"], "(its variants: Primary, Baseline)"),
        (["--endpoint", "other-endpoint"], "--endpoint 'other-endpoint' is not in"),
        (["--stack", "nope"], "no stack is 'nope' in the cloud assembly"),
        (["--deployment", "deployments/default.yaml"], "give --deployment FILE (the YAML app) or --cdk-out DIR"),
    ],
    ids=["unknown variant", "its variants", "unknown endpoint", "unknown stack", "both doors"],
)
def test_bad_arguments_exit_2_with_what_to_do(cdk_out, capsys, argv, message):
    assert main(["smoke", "--cdk-out", str(cdk_out), *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_template_without_a_recorded_plan_is_refused_not_given_defaults(cdk_out, tmp_path, capsys):
    """An earlier peagle's cdk.out: smoke says what to do instead of assuming the default deployment."""
    bare = tmp_path / "cdk.out"
    bare.mkdir()
    for path in cdk_out.iterdir():
        if path.is_file():
            text = path.read_text()
            if path.name.endswith(".template.json"):
                body = json.loads(text)
                for resource in body["Resources"].values():
                    (resource.get("Metadata") or {}).pop(METADATA_KEY, None)
                text = json.dumps(body)
            (bare / path.name).write_text(text)

    assert main(["smoke", "--cdk-out", str(bare)]) == 2
    error = capsys.readouterr().err
    assert "no stack records a P-EAGLE plan" in error and "pass --deployment FILE" in error
