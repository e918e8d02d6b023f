"""A template that says something the simulator has no model for is refused, never simulated under a reading of its
choosing: the instance pool's ScaleInPolicy Strategy and the component's PlacementStrategy are read from the template
(peagle/simulate/placement.py), and a value outside what it models stops `peagle simulate` with a message."""

from __future__ import annotations

import json

import pytest

from peagle.cli import main
from peagle.cloud_assembly import parse_template
from peagle.planning.plan_record import read_records
from peagle.simulate.scaling_template import SimulationInputError
from peagle.simulate.scenarios import setups


def _edited(synthesized, tmp_path, *, scale_in: str | None = None, placement: str | None = None):
    """scale-to-zero.yaml's synthesized template with its pool's ScaleInPolicy Strategy or its component's
    PlacementStrategy set to a value of the test's choosing, written beside the test."""
    found = synthesized("scale-to-zero")
    body = json.loads(found.template.read_text())
    for resource in body["Resources"].values():
        props = resource.get("Properties") or {}
        if resource["Type"] == "AWS::SageMaker::EndpointConfig" and scale_in is not None:
            props["ProductionVariants"][0]["ManagedInstanceScaling"]["ScaleInPolicy"]["Strategy"] = scale_in
        if resource["Type"] == "AWS::SageMaker::InferenceComponent" and placement is not None:
            props["Specification"]["SchedulingConfig"]["PlacementStrategy"] = placement
    edited = tmp_path / "edited.template.json"
    edited.write_text(json.dumps(body))
    return edited, body


def test_a_scale_in_strategy_the_simulator_does_not_model_stops_peagle_simulate(synthesized, tmp_path, capsys):
    edited, _ = _edited(synthesized, tmp_path, scale_in="RELEASE_WHEN_IDLE")
    out = ["--out", str(tmp_path / "out"), "--no-plots", "--traffic", "surge"]
    assert main(["simulate", "--template", str(edited), *out]) == 2
    error = capsys.readouterr().err
    assert "ScaleInPolicy.Strategy is 'RELEASE_WHEN_IDLE'" in error
    assert "does not model (it models IDLE_RELEASE, CONSOLIDATION)" in error


def test_an_unmodelled_placement_is_refused_too_and_a_modelled_one_is_read(synthesized, tmp_path):
    edited, body = _edited(synthesized, tmp_path, placement="ROUND_ROBIN")
    template = parse_template(body, source=str(edited))
    (record,) = read_records(body, source=str(edited))
    with pytest.raises(SimulationInputError, match=r"PlacementStrategy is 'ROUND_ROBIN'.*BINPACK, SPREAD"):
        setups(template, record.primary)
    _, consolidating = _edited(synthesized, tmp_path, scale_in="CONSOLIDATION")
    (setup,) = setups(parse_template(consolidating, source="s"), record.primary)
    assert setup.shape.placement.consolidates


def test_a_policy_on_a_metric_the_simulator_does_not_publish_stops_peagle_simulate(synthesized, tmp_path, capsys):
    """A target-tracking policy on a metric no simulated minute carries would read no data and do nothing: the
    endpoint would be simulated as if the policy were absent. A copy of the template's own policy, moved to
    CPUUtilization, is refused, naming the policy and the metric; the template as synthesized simulates."""
    found = synthesized("default")
    body = json.loads(found.template.read_text())
    policies = {lid: res for lid, res in body["Resources"].items() if res["Type"].endswith("::ScalingPolicy")}
    logical_id, policy = next(
        (lid, res) for lid, res in policies.items() if res["Properties"]["PolicyType"] == "TargetTrackingScaling"
    )
    moved = json.loads(json.dumps(policy))
    moved["Properties"]["TargetTrackingScalingPolicyConfiguration"] = {
        "CustomizedMetricSpecification": {
            "MetricName": "CPUUtilization",
            "Namespace": "/aws/sagemaker/Endpoints",
            "Statistic": "Average",
        },
        "TargetValue": 60,
    }
    moved["Properties"]["PolicyName"] = "cpu"
    body["Resources"]["CpuPolicy"] = moved
    edited = tmp_path / "edited.template.json"
    edited.write_text(json.dumps(body))
    out = ["--out", str(tmp_path / "out"), "--no-plots", "--traffic", "surge"]
    assert main(["simulate", "--template", str(found.template), *out]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["simulate", "--template", str(edited), *out]) == 2
    error = capsys.readouterr().err
    assert "CpuPolicy scales" in error and "'CPUUtilization', which the simulator does not model" in error
    assert logical_id not in error  # the template's own policy is modelled


def test_the_modelled_metrics_are_what_a_simulated_minute_publishes(synthesized):
    """The list the refusal above checks against is the simulated endpoint's own: every metric a minute carries, and
    ModelLatency, which is read from the minute's latencies."""
    from peagle.planning.planner import plan_deployment
    from peagle.settings.loading import load_deployment_config
    from peagle.simulate.engine import simulate
    from peagle.simulate.scenarios import base_assumptions
    from peagle.simulate.service import MODELLED_METRICS, unit_rpm
    from peagle.simulate.traffic import built_in

    found = synthesized("default")
    body = json.loads(found.template.read_text())
    plan = plan_deployment(load_deployment_config(str(found.deployment_file), {}))
    (setup,) = setups(parse_template(body, source=str(found.template)), plan)
    assumptions = base_assumptions(plan)
    target = setup.target
    trace = built_in(
        "surge",
        unit_rpm=unit_rpm(setup.shape, assumptions),
        min_units=target.min_capacity,
        max_units=target.max_capacity,
    )
    timeline = simulate(setup, trace, assumptions)
    published = {name for minute in timeline.minutes for name in minute.datapoints}
    assert published | {"ModelLatency"} == MODELLED_METRICS
