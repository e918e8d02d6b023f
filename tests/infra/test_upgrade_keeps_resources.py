"""A stack deployed from 0.1.0 (the YAML app before the construct library) updates in place.

templates_v0_1_0/ holds each example deployment's endpoint-stack template as 0.1.0 synthesized it
(commit b59b196). Today's template must keep the logical id of every stateful or named resource in it
(a changed logical id is a new resource and a deleted old one: a new endpoint, log group or key), and
`peagle preflight` between the two must refuse nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cdk_synth import REPO_ROOT

from peagle.cli import main as peagle_main

V0_1_0 = Path(__file__).resolve().parent / "templates_v0_1_0"
# Examples added after 0.1.0 have no deployed 0.1.0 stack to update: prefix-aware (Blackwell, routing; issue 36).
ADDED_AFTER_0_1_0 = {"prefix-aware", "instance-pool"}
DEPLOYMENTS = sorted(
    path.stem for path in (REPO_ROOT / "deployments").glob("*.yaml") if path.stem not in ADDED_AFTER_0_1_0
)
# Resources whose replacement loses state or a name clients use.
KEPT_TYPES = {
    "AWS::SageMaker::Endpoint",
    "AWS::SageMaker::InferenceComponent",
    "AWS::Logs::LogGroup",
    "AWS::S3::Bucket",
    "AWS::KMS::Key",
    "AWS::SNS::Topic",
}


def _ids(template: dict, types: set[str] | None = None) -> dict[str, str]:
    return {
        logical_id: resource["Type"]
        for logical_id, resource in template["Resources"].items()
        if types is None or resource["Type"] in types
    }


def test_every_example_deployment_has_a_0_1_0_template():
    """Every example but those added later, which must still exist (a stale entry would hide a missing template)."""
    assert sorted(path.stem for path in V0_1_0.glob("*.json")) == DEPLOYMENTS
    assert all((REPO_ROOT / "deployments" / f"{name}.yaml").exists() for name in ADDED_AFTER_0_1_0)


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_stateful_and_named_resources_keep_their_logical_ids(synth, deployment):
    old = json.loads((V0_1_0 / f"{deployment}.json").read_text())
    new = synth(deployment=str(REPO_ROOT / "deployments" / f"{deployment}.yaml")).templates["PeagleEndpoint"]
    kept = _ids(old, KEPT_TYPES)
    assert kept, "the 0.1.0 template has no endpoint?"
    assert {logical_id: _ids(new).get(logical_id) for logical_id in kept} == kept


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_preflight_refuses_nothing_from_0_1_0(synth, deployment, capsys):
    deployment_file = REPO_ROOT / "deployments" / f"{deployment}.yaml"
    cdk_out = synth(deployment=str(deployment_file)).outdir
    code = peagle_main(
        [
            "preflight",
            "--deployment",
            str(deployment_file),
            "--cdk-out",
            str(cdk_out),
            "--deployed-template",
            str(V0_1_0 / f"{deployment}.json"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out  # 0: safe; 1: refused (docs/preflight.md)
