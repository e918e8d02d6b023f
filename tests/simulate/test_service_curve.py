"""The simulator's unit served by a measured service curve (peagle/simulate/service_curve.py): each minute at the
rate it brings each unit, with that rate's time per request and share within the SLO, judged per request; and,
without a curve, the SLO's bounds reported not checked rather than passed. The curve here is made from the levels
`peagle capacity` measured on the local partial pair at K=4 (docs/baselines/capacity-partial/K4/capacity.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peagle.capacity.replay import send_offsets
from peagle.catalog import Slo
from peagle.cloud_assembly import parse_template
from peagle.planning.planner import plan_deployment
from peagle.settings import load_deployment_config
from peagle.simulate.scenarios import base_assumptions, run
from peagle.simulate.service import Assumptions, Endpoint, UnitShape
from peagle.simulate.service_curve import ServiceCurveError, curve_from_levels, load_curve
from peagle.simulate.traffic import Trace

REPO = Path(__file__).resolve().parents[2]
LEVELS = json.loads((REPO / "docs/baselines/capacity-partial/K4/capacity.json").read_text())["points"]
CHATBOT = Slo(ttft_seconds=1.0, tpot_seconds=0.1, attainment=0.95)
CURVE = curve_from_levels(LEVELS, slo=CHATBOT, output_tokens=128, source="capacity-partial K4")


def _unit() -> UnitShape:
    return UnitShape(
        kind="instances", max_num_seqs=64, units_per_instance=1, max_instances=1, min_instances=1, gpus_per_unit=1
    )


def test_the_curve_holds_the_measured_levels_and_interpolates_between_them():
    assert CURVE is not None
    rates = [point.rate for point in CURVE.points]
    assert rates == sorted(rates) and len(rates) == 3
    low, high = CURVE.points[0], CURVE.points[1]
    middle = CURVE.at((low.rate + high.rate) / 2)
    assert middle.ttft_p90 == pytest.approx((low.ttft_p90 + high.ttft_p90) / 2)
    assert CURVE.at(0.0) == low  # a lighter load than measured is no slower than the lightest level
    assert CURVE.at(10.0) == CURVE.points[-1]
    # Little's law as measured: in flight = rate x time per request.
    assert high.in_flight == pytest.approx(high.rate * high.e2e_mean)


def test_a_busier_minute_takes_longer_per_request_and_fewer_meet_the_slo():
    """The issue's first finding: a unit is not a fixed slot count with a fixed request time."""
    endpoint = Endpoint(_unit(), Assumptions(service=CURVE, clients="once"), initial=1, slo=CHATBOT)
    light = endpoint.run_minute(0, CURVE.points[0].rate * 60)
    busy = endpoint.run_minute(1, CURVE.points[-1].rate * 60)
    assert busy.request_seconds > light.request_seconds
    assert busy.within_slo / busy.offered < light.within_slo / light.offered
    assert busy.in_flight_per_unit == pytest.approx(busy.served * busy.request_seconds / 60)


def test_the_slo_share_is_the_measured_one_for_the_curves_slo_and_a_fitted_one_for_another():
    point = CURVE.points[-1]
    assert CURVE.slo_share(CHATBOT, point.rate) == pytest.approx(point.attainment)
    loose = Slo(ttft_seconds=60.0, tpot_seconds=10.0, attainment=0.95)
    tight = Slo(ttft_seconds=0.01, tpot_seconds=0.001, attainment=0.95)
    assert CURVE.slo_share(loose, point.rate) > 0.99
    assert CURVE.slo_share(tight, point.rate) < 0.01
    at_median = Slo(ttft_seconds=point.ttft_p50, attainment=0.95)
    assert CURVE.slo_share(at_median, point.rate) == pytest.approx(0.5)


@pytest.fixture(scope="module")
def default_app(synthesized):
    found = synthesized("default")
    plan = plan_deployment(load_deployment_config(str(found.deployment_file), {}))
    return parse_template(json.loads(found.template.read_text()), source=str(found.template)), plan


def test_a_load_answered_in_time_but_mostly_outside_the_slo_fails_the_slo_verdict(default_app):
    """Without a curve the minute passes (every request answered within the timeout); with the curve the same
    requests are judged per request against the SLO's TTFT and TPOT, and it fails, saying both figures."""
    template, plan = default_app
    rpm = CURVE.points[-1].rate * 60 * plan.instance_count
    trace = [Trace("steady", (rpm,) * 30)]
    (fixed,) = run(template, plan, traces=trace, readings=[{}])
    (measured,) = run(template, plan, traces=trace, readings=[{}], assumptions=base_assumptions(plan, service=CURVE))
    assert fixed.verdicts[0].passed and fixed.outcome.slo_share is None
    unchecked = next(verdict for verdict in fixed.verdicts if not verdict.checked)
    assert unchecked.detail.startswith("not checked") and "--service-curve" in unchecked.detail
    assert measured.outcome.slo_share is not None and measured.outcome.slo_share < plan.profile.slo.attainment
    slo_verdict = measured.verdicts[0]
    assert not slo_verdict.passed and "meets the SLO" in slo_verdict.name
    assert "within the SLO's bounds" in slo_verdict.detail and "answered" in slo_verdict.detail
    assert all(verdict.checked for verdict in measured.verdicts)


def test_the_report_states_the_unit_model_it_used():
    assert "not checked" in Assumptions().unit_model()
    assert "measured service curve (capacity-partial K4" in Assumptions(service=CURVE).unit_model()


def test_a_curve_round_trips_through_its_file_and_a_wrong_file_is_refused_with_what_to_do(tmp_path):
    path = tmp_path / "service-curve.json"
    path.write_text(CURVE.to_json())
    assert load_curve(path) == CURVE
    wrong = tmp_path / "capacity.json"
    wrong.write_text(json.dumps({"schema": "peagle-capacity/1"}))
    with pytest.raises(ServiceCurveError, match="peagle capacity --pair PAIR --out DIR"):
        load_curve(wrong)
    with pytest.raises(ServiceCurveError, match="cannot be read"):
        load_curve(tmp_path / "missing.json")


def test_a_replay_sends_each_minutes_requests_within_that_minute():
    trace = Trace("ramp", (3.0, 0.0, 7.4, 12.0))
    offsets = send_offsets(trace, seed=3)
    per_minute = [sum(1 for offset in offsets if minute * 60 <= offset < (minute + 1) * 60) for minute in range(4)]
    assert per_minute == [3, 0, 7, 12]
    assert offsets == send_offsets(trace, seed=3) != send_offsets(trace, seed=4)


def test_simulate_serves_units_by_the_given_curve_and_every_report_says_what_served_them(synthesized, tmp_path):
    """`peagle simulate --service-curve`: the verdict is SLO attainment, the endpoint's row names the curve, and the
    report opens with the simulator's measured error; without it the same report says the bounds are not checked."""
    from peagle.cli import main

    found = synthesized("default")
    curve = tmp_path / "service-curve.json"
    curve.write_text(CURVE.to_json())
    base = ["simulate", "--deployment", str(found.deployment_file), "--cdk-out", str(found.cdk_out)]
    base += ["--traffic", "surge", "--no-plots", "--conflicts", "largest", "--cooldown", "counted"]
    main([*base, "--out", str(tmp_path / "with"), "--service-curve", str(curve)])
    main([*base, "--out", str(tmp_path / "without")])
    measured = (tmp_path / "with" / "simulation.md").read_text()
    fixed = (tmp_path / "without" / "simulation.md").read_text()
    assert "meets the SLO for at least 95% of requests (TTFT <= 1 s, TPOT <= 100 ms)" in measured
    assert "capacity-partial K4" in measured and "not checked" not in measured
    assert "fixed slots (SLO bounds not checked)" in fixed and "- not checked: meets the SLO's bounds" in fixed
    for text in (measured, fixed):
        assert "Measured error of the simulator's unit against a real server" in text


def _flat(attainment: float):
    """CURVE with every level's share within the SLO set to ``attainment`` (a bound of an estimate)."""
    from dataclasses import replace

    return replace(CURVE, points=tuple(replace(point, attainment=attainment) for point in CURVE.points))


@pytest.mark.parametrize(
    ("low", "high", "word"),
    [(1.0, 1.0, "pass"), (0.0, 0.0, "FAIL"), (0.0, 1.0, "not checked")],
    ids=["both bounds meet it", "neither does", "they disagree"],
)
def test_without_a_curve_the_estimates_bounds_judge_the_slo_only_where_they_agree(default_app, low, high, word):
    """Run both ways: a pass or a fail only where the low and the high bound agree; else not checked, never a
    guess either way."""
    template, plan = default_app
    assumptions = base_assumptions(plan).but(estimates=(_flat(low), _flat(high)))
    trace = [Trace("steady", (CURVE.points[0].rate * 60,) * 20)]
    (result,) = run(template, plan, traces=trace, readings=[{}], assumptions=assumptions)
    (verdict,) = [verdict for verdict in result.verdicts if verdict.name.startswith("meets the SLO's bounds")]
    expected = {"pass": (True, True), "FAIL": (True, False), "not checked": (False, True)}[word]
    assert (verdict.checked, verdict.passed) == expected
    assert f"{low:.1%} (the estimate's low bound) to {high:.1%} (its high bound)" in verdict.detail


def test_the_estimate_is_used_only_where_it_has_figures_and_a_measured_curve_replaces_it():
    from peagle.planning.planner import plan_deployment
    from peagle.settings import load_deployment_config

    default = plan_deployment(load_deployment_config("deployments/default.yaml", {}))
    large = plan_deployment(
        load_deployment_config("deployments/default.yaml", {"model": "gpt-oss-120b", "instanceType": "ml.g6e.12xlarge"})
    )
    assert base_assumptions(default).estimates == ()  # gpt-oss-20b: no acceptance figure for its drafter
    low, high = base_assumptions(large).estimates
    assert "roofline estimate, low" in low.source and "roofline estimate, high" in high.source
    assert "roofline estimate, low" in base_assumptions(large).unit_model()
    assert base_assumptions(large, service=CURVE).estimates == ()
