"""The simulator over every example deployment's real template, and over the scale-to-zero template as
it was before the fix (its idle alarm on Invocations alone, its wake-up step with a 60 s cooldown)."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import EXAMPLE_DEPLOYMENTS

from peagle.config import load_deployment_config
from peagle.planner import plan_deployment
from peagle.preflight.template import parse_template
from peagle.simulate.scenarios import run

WAKE = "wakes from zero within the cold-start budget"
PILE_UP = "asks for no more units than the load needs while waking"
BACK_TO_ZERO = "returns to zero within"
IDLE = "stays at zero while idle"
OUT = "scales out within"
IN = "scales back in when the load falls"
STEADY = "never oscillates"
# The properties each built-in trace must be checked for (the simulator picks them from the target's bounds).
EXPECTED = {
    "idle-burst": {WAKE, PILE_UP, BACK_TO_ZERO, IDLE, STEADY},
    "spike": {OUT, IN, STEADY},
    "daily": {STEADY},  # out and in too where the curve outgrows the deploy (test_copies_follow_...)
}


def _plan(synthesized):
    return plan_deployment(load_deployment_config(str(synthesized.deployment_file), {}))


def _template(path, edit=None):
    body = json.loads(path.read_text())
    if edit:
        body = copy.deepcopy(body)
        edit(body["Resources"])
    return parse_template(body, source=str(path))


def _names(result) -> set[str]:
    return {
        next((key for key in (WAKE, PILE_UP, BACK_TO_ZERO, IDLE, OUT, IN, STEADY) if v.name.startswith(key)), v.name)
        for v in result.verdicts
    }


@pytest.mark.parametrize("name", EXAMPLE_DEPLOYMENTS)
def test_every_example_deployment_scales_as_stated_under_every_assumption(synthesized, name):
    found = synthesized(name)
    default = run(_template(found.template), _plan(found))
    results = default + run(_template(found.template), _plan(found), shapes=["daily"])
    assert {r.timeline.trace.name for r in default} >= {"spike"}
    assert len({r.timeline.assumptions.label() for r in results}) == 4  # the deciding assumptions both ways
    for result in results:
        failed = [f"{v.name}: {v.detail}" for v in result.verdicts if not v.passed]
        where = f"{name} {result.timeline.setup.target.name} {result.timeline.trace.name} {result.timeline.assumptions.label()}"
        assert not failed, f"{where}: {failed}"
        target = result.timeline.setup.target
        expected = set(EXPECTED[result.timeline.trace.name])
        if target.max_capacity <= max(target.min_capacity, 1):
            expected -= {OUT, IN}  # nothing to scale out to
        assert _names(result) >= expected, where


def _pre_fix(resources: dict) -> None:
    """The idle alarm and wake-up step as synthesized before the fix."""
    for resource in resources.values():
        props = resource.get("Properties") or {}
        if resource["Type"] == "AWS::CloudWatch::Alarm" and "scale to zero copies" in props.get("AlarmDescription", ""):
            props.pop("Metrics")
            props.update(
                MetricName="Invocations",
                Namespace="AWS/SageMaker",
                Statistic="Sum",
                Period=60,
                Dimensions=[{"Name": "InferenceComponentName", "Value": "peagle-s2z-primary"}],
            )
        if resource["Type"] == "AWS::ApplicationAutoScaling::ScalingPolicy" and "ScaleOutFromZero" in props.get(
            "PolicyName", ""
        ):
            props["StepScalingPolicyConfiguration"]["Cooldown"] = 60


def _idle_burst(synthesized, edit=None):
    found = synthesized("scale-to-zero")
    return {
        r.timeline.assumptions.label(): r
        for r in run(_template(found.template, edit), _plan(found), shapes=["idle-burst"])
    }


def test_before_the_fix_refused_requests_that_are_not_invocations_hold_the_copy_count_at_zero(synthesized):
    results = _idle_burst(synthesized, _pre_fix)
    held = results["refused not counted, conflicts in-turn"]
    wake = next(v for v in held.verdicts if v.name.startswith(WAKE))
    assert not wake.passed and "never served" in wake.detail
    minutes = held.timeline.minutes[60:]
    assert max(m.serving for m in minutes) == 0
    assert sum(m.desired == 0 for m in minutes) > 0.8 * len(minutes)  # each +1 undone within the minute
    # Under AWS's largest-capacity rule the copy survives, but the 60 s cooldown adds a copy every minute.
    piled = results["refused not counted, conflicts largest"]
    assert not next(v for v in piled.verdicts if v.name.startswith(PILE_UP)).passed
    assert max(m.desired for m in piled.timeline.minutes) == piled.timeline.setup.target.max_capacity
    # Counted as invocations, the old alarm did let the copy start.
    assert next(v for v in results["refused counted, conflicts in-turn"].verdicts if v.name.startswith(WAKE)).passed


def test_after_the_fix_the_copy_wakes_within_its_budget_under_both_assumptions_and_stays_at_zero_while_idle(
    synthesized,
):
    results = _idle_burst(synthesized)
    for label, result in results.items():
        by_name = {
            key: v for v in result.verdicts for key in (WAKE, IDLE, BACK_TO_ZERO, PILE_UP) if v.name.startswith(key)
        }
        assert all(v.passed for v in by_name.values()), (label, by_name)
        assert set(by_name) == {WAKE, IDLE, BACK_TO_ZERO, PILE_UP}
        first_served = next(m.minute for m in result.timeline.minutes[60:] if m.serving)
        assert first_served - 60 <= result.timeline.setup.cold_start_budget_seconds / 60


def _light_load_at_30_percent(resources: dict) -> None:
    """The light-load scale-in as synthesized before the fix: under 30 % of the target per copy."""
    for resource in resources.values():
        for query in (resource.get("Properties") or {}).get("Metrics") or []:
            if query.get("Expression", "").startswith("IF(FILL(copies, 0) >= 2 AND FILL(load, 0) * FILL(copies, 0)"):
                query["Expression"] = "IF(FILL(copies, 0) >= 2 AND FILL(load, 0) < 7.2, 1, 0)"


@pytest.mark.parametrize(("edit", "kept_at_the_end"), [(_light_load_at_30_percent, 12), (None, 4)])
def test_copies_follow_a_falling_daily_curve_back_in(synthesized, edit, kept_at_the_end):
    found = synthesized("scale-to-zero")
    (result,) = run(_template(found.template, edit), _plan(found), shapes=["daily"], both_ways=False)
    scales_in = next(v for v in result.verdicts if v.name.startswith(IN))
    assert result.timeline.minutes[-1].desired == kept_at_the_end
    assert scales_in.passed is (edit is None), scales_in.detail
