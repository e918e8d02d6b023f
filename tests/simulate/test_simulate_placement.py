"""Where a component's copies sit, and so what its endpoint bills, as the template states it: the component's
SchedulingConfig.PlacementStrategy and the instance pool's ScaleInPolicy (peagle/simulate/placement.py). An instance
hosting one copy is billed whole, so the simulator must read both, never assume them."""

from __future__ import annotations

import copy
import json

from test_simulate_deployments import _plan

from peagle.cloud_assembly import parse_template
from peagle.simulate.placement import Placement, placement_of
from peagle.simulate.report import summary
from peagle.simulate.scenarios import run, setups
from peagle.simulate.service import Assumptions, Endpoint, UnitShape

ONE_READING = [{}]


def _s2z(synthesized, strategy: str | None = "keep", scale_in: dict | None = None):
    """scale-to-zero.yaml's template (8 copies to an ml.g6e.48xlarge, 2 instances at most), its component's placement
    set to ``strategy`` (None: left out, as a template written before it was stated) and its pool's ScaleInPolicy to
    ``scale_in``."""
    found = synthesized("scale-to-zero")
    body = copy.deepcopy(json.loads(found.template.read_text()))
    for resource in body["Resources"].values():
        props = resource.get("Properties") or {}
        if resource["Type"] == "AWS::SageMaker::InferenceComponent" and strategy != "keep":
            if strategy is None:
                props["Specification"].pop("SchedulingConfig")
            else:
                props["Specification"]["SchedulingConfig"]["PlacementStrategy"] = strategy
        if resource["Type"] == "AWS::SageMaker::EndpointConfig" and scale_in is not None:
            props["ProductionVariants"][0]["ManagedInstanceScaling"]["ScaleInPolicy"] = scale_in
    return parse_template(body, source=str(found.template)), _plan(found)


def _daily(template, plan):
    (result,) = run(template, plan, shapes=["daily"], readings=ONE_READING)
    return result


def test_the_synthesized_component_states_binpack_and_its_pool_idle_release(synthesized):
    template, plan = _s2z(synthesized)
    (setup,) = setups(template, plan)
    assert setup.shape.placement == Placement(strategy="BINPACK", scale_in="IDLE_RELEASE")


def test_binpack_and_spread_bill_different_instance_hours_on_the_same_trace(synthesized):
    """daily: the copies climb past one instance's 8 and fall back to 4. BINPACK takes them off the emptier instance,
    which IDLE_RELEASE then releases; SPREAD takes them off the fuller one, so both instances keep copies and both are
    billed to the end."""
    binpack = _daily(*_s2z(synthesized, "BINPACK"))
    spread = _daily(*_s2z(synthesized, "SPREAD"))
    assert binpack.timeline.trace == spread.timeline.trace
    last_binpack, last_spread = binpack.timeline.minutes[-1], spread.timeline.minutes[-1]
    assert last_binpack.desired == last_spread.desired == 4
    assert (last_binpack.instances, last_spread.instances) == (1, 2)
    assert spread.outcome.instance_minutes > binpack.outcome.instance_minutes + 5 * 60
    assert spread.outcome.cost_usd > binpack.outcome.cost_usd


def test_a_template_that_states_no_placement_is_billed_as_spread_and_the_report_says_so(synthesized):
    """AWS documents no default placement: an older template without SchedulingConfig is simulated with the reading
    that bills the most, and the report names it as an assumption."""
    template, plan = _s2z(synthesized, None)
    unstated = _daily(template, plan)
    assert unstated.timeline.setup.shape.placement.strategy is None
    spread = _daily(*_s2z(synthesized, "SPREAD"))
    assert unstated.outcome.instance_minutes == spread.outcome.instance_minutes
    assert "no placement strategy in the template (AWS documents no default)" in summary([unstated], "old")


def test_the_scale_in_policy_is_read_too_and_consolidation_releases_what_spread_keeps(synthesized):
    """ScaleInPolicy CONSOLIDATION "Consolidates inference component copies onto fewer instances to release more
    instances", CooldownInMinutes after the last endpoint operation: SPREAD's second instance goes once it has passed."""
    policy = {"Strategy": "CONSOLIDATION", "CooldownInMinutes": 10, "MaximumStepSize": 1}
    template, plan = _s2z(synthesized, "SPREAD", scale_in=policy)
    assert placement_of(template, plan_component(template)) == Placement("SPREAD", "CONSOLIDATION", 10, 1)
    consolidated = _daily(template, plan)
    kept = _daily(*_s2z(synthesized, "SPREAD"))
    assert consolidated.timeline.minutes[-1].instances == 1
    assert consolidated.outcome.instance_minutes < kept.outcome.instance_minutes
    assert "consolidation: 10 min after the last change" in summary([consolidated], "s")


def plan_component(template) -> str:
    (component,) = template.components()
    return component.name


# --- the endpoint model on a hand-made case ----------------------------------------------------------------


def _copies(placement: Placement) -> Endpoint:
    """Two instances of 4 copies' room, 8 copies serving."""
    shape = UnitShape("copies", 32, 4, 2, 0, 1, placement=placement)
    endpoint = Endpoint(shape, Assumptions(startup_seconds=60, instance_launch_seconds=60), 8)
    assert [host.copies for host in endpoint.hosts] == [4, 4]
    return endpoint


def test_binpack_empties_an_instance_on_scale_in_and_spread_keeps_both():
    binpack, spread = _copies(Placement("BINPACK")), _copies(Placement("SPREAD"))
    for endpoint in (binpack, spread):
        endpoint.set_desired(2, 10)
    assert [host.copies for host in binpack.hosts] == [2]
    assert sorted(host.copies for host in spread.hosts) == [1, 1]
    assert (binpack.run_minute(11, 0).instances, spread.run_minute(11, 0).instances) == (1, 2)


def test_a_new_copy_goes_where_the_placement_says():
    """BINPACK fills the fuller instance with room, then launches one; SPREAD fills the emptier."""
    for placement, expected in ((Placement("BINPACK"), [4, 1]), (Placement("SPREAD"), [3, 2])):
        endpoint = _copies(placement)
        endpoint.set_desired(3, 10)  # BINPACK [3] (the emptied instance released); SPREAD [2, 1]
        endpoint.set_desired(5, 11)
        assert sorted((host.copies for host in endpoint.hosts), reverse=True) == expected


def test_consolidation_waits_its_cooldown_and_moves_copies_without_dropping_one():
    endpoint = _copies(Placement("SPREAD", "CONSOLIDATION", cooldown_minutes=20, max_step=1))
    endpoint.set_desired(2, 10)
    assert endpoint.run_minute(29, 0).instances == 2  # 19 minutes after the scale-in
    record = endpoint.run_minute(30, 0)
    assert (record.instances, record.serving) == (1, 2)
