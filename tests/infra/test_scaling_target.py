"""The scaling target: measured by `peagle capacity` (its snippet applied to a deployment file), set by
hand, or the planner's stated guess; what `peagle plan` says of it, the fleet for a peak, and the target
the synthesized policy tracks."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Match
from cdk_synth import synthesize, write_deployment

from peagle.cli import main

SNIPPET = """autoscaling:
  target_concurrency_per_instance: 13.36
  max_rps_per_instance: 1.9
  headroom: 0.8
  measured_capacity:
    requests_per_second: 1.9
    concurrency: 16.7
    headroom: 0.8
    slo: "95% of requests: TTFT <= 1 s, TPOT <= 100 ms"
    source: "peagle capacity 2026-12-01, sagemaker:peagle-endpoint"
"""


def _tracked(result, metric: str) -> float:
    policies = result.resources("PeagleEndpoint", "AWS::ApplicationAutoScaling::ScalingPolicy").values()
    (target,) = [
        p["Properties"]["TargetTrackingScalingPolicyConfiguration"]["TargetValue"]
        for p in policies
        if p["Properties"]
        .get("TargetTrackingScalingPolicyConfiguration", {})
        .get("PredefinedMetricSpecification", {})
        .get("PredefinedMetricType")
        == metric
    ]
    return target


def test_the_measured_target_from_a_capacity_snippet_replaces_the_guess(tmp_path, capsys):
    path = write_deployment(tmp_path, "profile: chatbot\n" + SNIPPET)
    result = synthesize(tmp_path / "out", deployment=path)
    assert _tracked(result, "SageMakerVariantConcurrentRequestsPerModelHighResolution") == 13.36
    result.template().has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {"TargetTrackingScalingPolicyConfiguration": Match.object_like({"TargetValue": 13.36})},
    )
    assert main(["plan", "--deployment", path, "--peak-rps", "10"]) == 0
    out = capsys.readouterr().out
    assert "scaling target  13.36 requests in flight per instance (measured: 1.9 req/s with 16.7 in flight" in out
    assert "peak fleet      10 req/s at peak: 7 instances (1.52 req/s each" in out  # ceil(10 / (1.9 x 0.8))
    assert main(["plan", "--deployment", path, "--peak-rps", "10", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["peak"] == {"requests_per_second": 10, "instances": 7}
    assert document["scaling_target"]["source"].startswith("measured")


def test_without_a_measurement_the_plan_says_the_target_is_a_guess(default_synth, capsys):
    assert _tracked(default_synth, "SageMakerVariantConcurrentRequestsPerModelHighResolution") == 24  # 75 % of 32
    assert main(["plan", "--deployment", "deployments/default.yaml"]) == 0
    assert "(a guess: 75% of max_num_seqs 32; `peagle capacity` measures it)" in capsys.readouterr().out
    assert main(["plan", "--deployment", "deployments/default.yaml", "--peak-rps", "10"]) == 2
    assert "--peak-rps needs a measured capacity: run `peagle capacity`" in capsys.readouterr().err


def test_a_hand_set_target_says_so(tmp_path, capsys):
    path = write_deployment(tmp_path, "autoscaling: {target_concurrency: 10}\n")
    assert main(["plan", "--deployment", path]) == 0
    assert "10 requests in flight per instance (set, not measured)" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["headroom: 1.5", "requests_per_second: 0", "concurrency: -1"])
def test_a_bad_measured_capacity_fails_with_its_field(tmp_path, capsys, bad):
    key = bad.split(":")[0]
    text = SNIPPET.replace(next(line for line in SNIPPET.splitlines() if line.startswith(f"    {key}:")), f"    {bad}")
    assert main(["plan", "--deployment", write_deployment(tmp_path, text)]) == 2
    assert f"measured_capacity.{key}" in capsys.readouterr().err


def test_a_small_measured_target_rounded_by_the_snippet_is_still_measured(tmp_path, capsys):
    text = (
        SNIPPET.replace("target_concurrency_per_instance: 13.36", "target_concurrency_per_instance: 0.1").replace(
            "concurrency: 16.7", "concurrency: 0.12"
        )  # x 0.8 = 0.096, written to 2 decimals
    )
    assert main(["plan", "--deployment", write_deployment(tmp_path, text)]) == 0
    assert "0.1 requests in flight per instance (measured:" in capsys.readouterr().out
