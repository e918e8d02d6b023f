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
