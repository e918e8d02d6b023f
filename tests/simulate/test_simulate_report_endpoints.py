"""`simulation.md` of an app with three endpoints of different profiles and instances states each endpoint's own
SLO, price and fixed assumptions, in its own section and side by side in the summary: never one endpoint's figures
as every endpoint's (issue 44: "a multi-endpoint report describes one endpoint")."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3

from peagle.cli import main
from peagle.planning.plan_record import read_records
from peagle.planning.planner import describe_slo
from peagle.simulate.report import ENDPOINTS_HEADER
from peagle.simulate.scenarios import base_assumptions
from peagle_cdk import Autoscaling, EndpointMode, ModelWeights, PeagleEndpoint

# (construct id and name, pair, instance type, profile, mode): a chatbot on variants, a batch endpoint on a large
# instance (99% attainment), a code endpoint on inference components that scales to zero.
ENDPOINTS = (
    ("chat", "gpt-oss-20b", "ml.g6e.xlarge", "chatbot", None),
    ("big", "gpt-oss-120b", "ml.g6e.12xlarge", "batch", None),
    ("code", "qwen3-8b", "ml.g6.12xlarge", "codegen", "components"),
)
# One reading of each open rule: the report's figures, not the readings, are the subject here.
PINNED = ["--refused-counted", "no", "--conflicts", "largest", "--cooldown", "counted", "--updates", "at-once"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The app synthesized and simulated under a surge: (simulation.md, endpoint name -> the plan it records)."""
    root = tmp_path_factory.mktemp("three-endpoints")
    app = App(outdir=str(root / "cdk.out"))
    stack = Stack(app, "Service")
    bucket = s3.Bucket(stack, "Weights")
    for name, model, instance, profile, mode in ENDPOINTS:
        components = mode == "components"
        PeagleEndpoint(
            stack,
            name.capitalize(),
            name=name,
            model=model,
            instance_type=instance,
            profile=profile,
            weights=ModelWeights.from_bucket(bucket, f"models/{model}/"),
            mode=EndpointMode.inference_components(min_instances=0, max_instances=1) if components else None,
            autoscaling=Autoscaling(min_capacity=0, max_capacity=1) if components else Autoscaling(),
        )
    app.synth()
    out = root / "report"
    main(
        ["simulate", "--cdk-out", str(root / "cdk.out"), "--traffic", "surge", "--out", str(out), "--no-plots", *PINNED]
    )
    template = json.loads((root / "cdk.out" / "Service.template.json").read_text())
    plans = {record.endpoint_name: record.primary for record in read_records(template, source="Service")}
    return (out / "simulation.md").read_text(), plans


def _section(summary: str, endpoint: str) -> str:
    return summary.split(f"## Endpoint {endpoint}\n")[1].split("\n## Endpoint ")[0]


def _figures(plan) -> dict[str, set[str]]:
    """What a report must state of this plan's endpoint: its SLO, its price, its fixed assumptions."""
    return {
        "slo": {f"SLO: {describe_slo(plan.profile.slo)}."},
        "price": {f"on-demand, ${plan.price_per_hour_usd:,.2f} per instance-hour"},
        "fixed": {f"- {line}" for line in base_assumptions(plan).fixed()},
    }


def test_the_endpoints_differ_in_what_the_report_states(report):
    """The case is one where a single header would be wrong: SLOs, prices and starts all differ."""
    _, plans = report
    assert len({describe_slo(plan.profile.slo) for plan in plans.values()}) == 3
    assert len({plan.price_per_hour_usd for plan in plans.values()}) == 3
    assert len({round(plan.typical_model_start_seconds) for plan in plans.values()}) == 3


def test_each_endpoints_section_states_its_own_slo_price_and_assumptions_and_no_other(report):
    summary, plans = report
    for endpoint, plan in plans.items():
        section = _section(summary, endpoint)
        for kind, texts in _figures(plan).items():
            assert all(text in section for text in texts), (endpoint, kind)
        for other, other_plan in plans.items():
            if other == endpoint:
                continue
            foreign = _figures(other_plan)
            for kind in ("slo", "price"):
                assert not [text for text in foreign[kind] if text in section], (endpoint, other, kind)
            # The lines that differ between the two endpoints (start, request time, cold-start wait) are not here.
            differing = foreign["fixed"] - _figures(plan)["fixed"]
            assert differing and not [line for line in differing if line in section], (endpoint, other)


def test_the_summary_lists_the_endpoints_side_by_side(report):
    summary, plans = report
    table = summary.split("## Endpoints\n")[1].split("\n## ")[0]
    assert "| " + " | ".join(ENDPOINTS_HEADER) + " |" in table
    rows = {row.split(" | ")[0].removeprefix("| "): row for row in table.splitlines() if row.startswith("| ")}
    for endpoint, plan in plans.items():
        row = rows[endpoint]
        assert f" | {describe_slo(plan.profile.slo)} | ${plan.price_per_hour_usd:,.2f} | " in row
        assert f" | {round(plan.typical_model_start_seconds)} s (+" in row
        assert " PASS, " in row and " FAIL | $" in row
    assert "copies 0-1" in rows["code-endpoint"] and "instances" in rows["big-endpoint"]
