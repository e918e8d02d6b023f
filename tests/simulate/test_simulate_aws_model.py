"""The documented AWS behaviours the simulator encodes, each on a small hand-made case; the faults an
earlier model had are named in the test that caught them."""

from __future__ import annotations

import pytest

from peagle.simulate import metric_math
from peagle.simulate.autoscaling import TargetScaling, step_for
from peagle.simulate.cloudwatch import ALARM, INSUFFICIENT, OK, AlarmState
from peagle.simulate.engine import SettingKeys, Setup, simulate
from peagle.simulate.scaling_template import (
    Alarm,
    MetricQuery,
    MetricStat,
    ScalableTarget,
    StepAdjustment,
    StepPolicy,
    TargetTrackingPolicy,
)
from peagle.simulate.service import Assumptions, Endpoint, Minute, UnitShape, aggregate
from peagle.simulate.traffic import Trace


def _alarm(treat: str, *, periods: int = 3, needed: int = 3, comparison: str = "LessThanThreshold") -> Alarm:
    return Alarm(
        "A", "", MetricQuery(stat=MetricStat("Invocations", "Sum")), comparison, 1, periods, needed, treat, ("Step",)
    )


def _history(values):
    return [Minute(minute=i, offered=0, datapoints={"Invocations": v}) for i, v in enumerate(values)]


def _states(alarm: Alarm, values) -> list[str]:
    state, history = AlarmState(alarm), _history(values)
    return [state.evaluate(history, minute) for minute in range(len(values))]


@pytest.mark.parametrize(
    ("treat", "values", "state"),
    [
        ("breaching", [None, None, None], ALARM),
        ("notBreaching", [None, None, None], OK),
        ("missing", [None, None, None], INSUFFICIENT),
        ("breaching", [None, 5.0, None], OK),  # 2 of 3 breaching: not enough
        ("notBreaching", [0.0, 0.0, 0.0], ALARM),
    ],
)
def test_m_of_n_and_missing_data(treat, values, state):
    assert _states(_alarm(treat), values)[-1] == state


def test_periods_before_the_start_are_not_breaching_data():
    assert _states(_alarm("breaching", periods=30, needed=30), [None] * 30)[-2:] == [OK, ALARM]


def test_with_recent_datapoints_missing_the_alarm_evaluates_older_real_ones():
    """ "Configuring how CloudWatch alarms treat missing data": with Evaluation Periods real datapoints in the
    (wider) evaluation range, CloudWatch evaluates the most recent real ones, missing-data treatment aside.
    The first model looked only at the last three periods: one real datapoint among them, not ALARM."""
    above = _alarm("missing", comparison="GreaterThanThreshold")
    assert _states(above, [5.0, 5.0, None, 5.0, None])[-1] == ALARM
    assert _states(_alarm("notBreaching", comparison="GreaterThanThreshold"), [5.0, 5.0, None, 5.0, None])[-1] == ALARM


def test_one_breaching_datapoint_among_missing_ones_alarms_with_the_default_treatment():
    """The page's example `- - X - -`: with fewer real datapoints than Evaluation Periods and missing data
    treated as missing, the real ones decide."""
    above = _alarm("missing", comparison="GreaterThanThreshold")
    assert _states(above, [None, None, 5.0, None, None])[-1] == ALARM
    assert _states(above, [None, None, 0.0, None, None])[-1] == OK


def test_metric_math_fill_if_and_missing():
    values = {"a": None, "b": 2.0}
    assert metric_math.evaluate("FILL(a, 0) + FILL(b, 0)", values) == 2.0
    assert metric_math.evaluate("a + b", values) is None
    assert metric_math.evaluate("IF(FILL(a, 0) >= 2 AND b < 3, 1, 0)", values) == 0.0
    assert metric_math.evaluate("IF(b > 0, 10 / b, 0)", values) == 5.0
    assert metric_math.evaluate("IF(b >= 2, IF(b * (1 - 1 / 4) > b - 1, b - 1, b * (1 - 1 / 4)), 0)", values) == 1.0
    with pytest.raises(metric_math.MetricMathError):
        metric_math.evaluate("RATE(b)", values)


def _target(*steps: StepPolicy, alarms: tuple[Alarm, ...], tracking=(), unit: str = "copies", bounds=(0, 16)):
    dimension = (
        "sagemaker:inference-component:DesiredCopyCount"
        if unit == "copies"
        else "sagemaker:variant:DesiredInstanceCount"
    )
    return ScalableTarget("T", "inference-component/c", dimension, *bounds, tuple(steps), tuple(tracking), alarms)


def _refused_alarm(policy: str = "Step") -> Alarm:
    return Alarm(
        "A",
        "",
        MetricQuery(stat=MetricStat("NoCapacityInvocationFailures", "Sum")),
        "GreaterThanOrEqualToThreshold",
        1,
        1,
        1,
        "notBreaching",
        (policy,),
    )


def _drive(scaling: TargetScaling, refused: list[float], capacity: int = 0) -> list[int]:
    """Each minute's refused requests through the alarms and policies; the capacity after each minute."""
    history, seen = [], []
    for minute, value in enumerate(refused):
        history.append(Minute(minute=minute, offered=1, datapoints={"NoCapacityInvocationFailures": value or None}))
        for state in scaling.alarm_states():
            state.evaluate(history, minute)
        capacity, _ = scaling.act(capacity, 0, minute)
        seen.append(capacity)
    return seen


@pytest.mark.parametrize(("cooldown", "after_ten_minutes"), [(60, 10), (1800, 1)])
def test_a_step_in_alarm_acts_every_minute_and_its_cooldown_counts_what_it_added(cooldown, after_ten_minutes):
    step = StepPolicy("Step", "ChangeInCapacity", (StepAdjustment(0, None, 1),), cooldown, "Maximum", None)
    assert (
        _drive(TargetScaling(_target(step, alarms=(_refused_alarm(),)), "largest"), [1.0] * 10)[-1] == after_ten_minutes
    )


def test_a_larger_scale_out_inside_a_cooldown_starts_a_new_cooldown():
    """ "After Application Auto Scaling successfully scales out ... it starts to calculate the cooldown time":
    after every scale-out, a larger one inside a running cooldown included. The first model started none,
    so a +1 followed as soon as the first cooldown ended."""
    steps = (StepAdjustment(0, 4, 1), StepAdjustment(4, None, 2))
    step = StepPolicy("Step", "ChangeInCapacity", steps, 600, "Maximum", None)
    # +1 at minute 0 (cooldown to 10), a larger +2 at minute 3 (cooldown to 13), +1 breaches after.
    capacities = _drive(TargetScaling(_target(step, alarms=(_refused_alarm(),)), "largest"), [1, 0, 0, 6] + [1] * 9)
    assert capacities[3] == 2  # the larger step adds only what the first did not
    assert capacities[11] == 2  # minute 11: the second cooldown still runs
    assert (
        capacities[12] == 2
        and _drive(TargetScaling(_target(step, alarms=(_refused_alarm(),)), "largest"), [1, 0, 0, 6] + [1] * 11)[-1]
        == 3
    )  # minute 13: it has ended


def test_a_step_policy_without_a_cooldown_waits_300_seconds():
    """StepScalingPolicyConfiguration.Cooldown: "If not specified, the default value is 300" (botocore
    application-autoscaling service-2.json). The first model gave components 0: a copy every minute."""
    step = StepPolicy("Step", "ChangeInCapacity", (StepAdjustment(0, None, 1),), None, "Maximum", None)
    capacities = _drive(TargetScaling(_target(step, alarms=(_refused_alarm(),)), "largest"), [1.0] * 8)
    assert capacities[:5] == [1, 1, 1, 1, 1] and capacities[5] == 2


def test_a_step_interval_below_the_threshold_includes_its_upper_bound_not_its_lower():
    """StepAdjustment: with a threshold of 50, "greater than 40 and less than or equal to 50, specify a lower
    bound of -10 and an upper bound of 0"; at or above it the lower bound is inclusive."""
    policy = StepPolicy(
        "Step",
        "ChangeInCapacity",
        (StepAdjustment(None, -10, -2), StepAdjustment(-10, 0, -1)),
        None,
        "Average",
        None,
    )
    alarm = Alarm(
        "A",
        "",
        MetricQuery(stat=MetricStat("M", "Average")),
        "LessThanOrEqualToThreshold",
        50,
        1,
        1,
        "missing",
        ("Step",),
    )
    assert step_for(policy, alarm, 50).adjustment == -1
    assert step_for(policy, alarm, 40).adjustment == -2
    above = StepPolicy(
        "Step", "ChangeInCapacity", (StepAdjustment(0, 10, 1), StepAdjustment(10, None, 2)), None, "Average", None
    )
    assert step_for(above, _alarm("missing", comparison="GreaterThanOrEqualToThreshold"), 11).adjustment == 2
    assert step_for(above, _alarm("missing", comparison="GreaterThanOrEqualToThreshold"), 1).adjustment == 1


@pytest.mark.parametrize("reading", ["counted", "blocked"])
def test_capacity_lowered_inside_a_scale_out_cooldown_is_re_added_or_waits_by_the_reading(reading):
    """The cooldown rule read both ways: "capacity added by the initiating scale-out activity is calculated as
    part of the desired capacity" (re-added at once) or "won't increase the desired capacity again unless
    either a larger scale out is triggered or the cooldown period ends" (held until then)."""
    wake = StepPolicy("Wake", "ChangeInCapacity", (StepAdjustment(0, None, 1),), 1800, "Maximum", None)
    scaling = TargetScaling(_target(wake, alarms=(_refused_alarm("Wake"),)), "largest", reading)
    capacities = _drive(scaling, [1.0])
    assert capacities == [1]
    # Another policy set the count to 0 (an idle alarm, say); a request is refused again.
    again = _drive(scaling, [1.0], capacity=0)
    assert again == ([1] if reading == "counted" else [0])
    assert "cooldown_after_lowered" in scaling.consulted


def test_target_tracking_scales_in_only_when_every_policy_is_ready_to():
    def tracking(name, metric, target):
        return TargetTrackingPolicy(name, MetricQuery(stat=MetricStat(metric, "Average")), False, target, 0, 0, False)

    target = _target(
        alarms=(),
        tracking=(tracking("Load", "ConcurrentRequestsPerModel", 24), tracking("Gpu", "GPUUtilization", 80)),
        unit="instances",
        bounds=(1, 4),
    )
    scaling = TargetScaling(target, "largest")
    history = []
    for minute in range(16):  # GPU at 40 % wants 1 instance; the load, 20 per instance, still needs 2
        history.append(
            Minute(minute=minute, offered=1, datapoints={"ConcurrentRequestsPerModel": 20.0, "GPUUtilization": 40.0})
        )
        for state in scaling.alarm_states():
            state.evaluate(history, minute)
    assert scaling.act(2, 2, 15)[0] == 2


def _shape(kind: str = "instances", **changes) -> UnitShape:
    values = {
        "kind": kind,
        "max_num_seqs": 32,
        "units_per_instance": 1,
        "max_instances": 4,
        "min_instances": 0,
        "gpus_per_unit": 1,
    }
    return UnitShape(**(values | changes))


def test_p90_latency_moves_only_when_more_than_a_tenth_of_the_requests_are_slow():
    """A percentile of ModelLatency is the latency below which that share of requests fall. The first model
    reported 60 s as soon as one request timed out, so 2.4 % timed out put the latency alarm in ALARM."""
    assumptions = Assumptions(request_seconds=5.0, clients="once")
    endpoint = Endpoint(_shape(), assumptions, 1)
    capacity = 32 * 60 / 5  # 384 a minute
    history = [endpoint.run_minute(0, capacity * 1.05), endpoint.run_minute(1, capacity * 1.2)]
    p90 = MetricStat("ModelLatency", "p90")
    assert history[0].timed_out == pytest.approx(capacity * 0.05)
    assert aggregate(history, p90, 0) == 5.0 * 1_000_000  # 4.8 % slow
    assert aggregate(history, p90, 1) == 60.0 * 1_000_000  # 16.7 % slow
    assert aggregate(history, MetricStat("ModelLatency", "Average"), 0) == pytest.approx(
        (capacity * 5 + capacity * 0.05 * 60) / (capacity * 1.05) * 1_000_000
    )


def test_a_variants_instances_column_counts_every_instance_requested():
    """The first model counted one instance while two served on a variant."""
    endpoint = Endpoint(_shape(), Assumptions(startup_seconds=60, instance_launch_seconds=60), 1)
    endpoint.set_desired(2, 1)
    assert endpoint.run_minute(1, 0).instances == 2 and endpoint.run_minute(4, 0).serving == 2


def _setup(target: ScalableTarget, shape: UnitShape, initial: int = 1) -> Setup:
    return Setup(
        target=target,
        name="e/v",
        shape=shape,
        initial_units=initial,
        traffic_share=1.0,
        cold_start_budget_seconds=1800,
        idle_minutes=None,
        price_per_instance_hour=10.0,
        start_budget_seconds=1800,
        slo_attainment=0.95,
        keys=SettingKeys("autoscaling.min_capacity", "autoscaling.max_capacity"),
    )


@pytest.mark.parametrize("reading", ["at-once", "after-update"])
def test_a_change_while_units_start_waits_for_them_or_not_by_the_reading(reading):
    """UpdateEndpointWeightsAndCapacities "sets the endpoint status to Updating" until done; whether a change
    during it applies is read both ways. The first model always applied it: a crowd's instance was scaled in
    while it launched."""
    tracking = TargetTrackingPolicy(
        "Load", MetricQuery(stat=MetricStat("ConcurrentRequestsPerModel", "Maximum")), True, 24, 0, 0, False
    )
    target = ScalableTarget(
        "T", "endpoint/e/variant/v", "sagemaker:variant:DesiredInstanceCount", 1, 8, (), (tracking,), ()
    )
    trace = Trace("steps", (100.0,) * 5 + (420.0,) * 3 + (1500.0,) * 30)
    assumptions = Assumptions(
        startup_seconds=420, instance_launch_seconds=300, updates_while_updating=reading, clients="once"
    )
    timeline = simulate(_setup(target, _shape(max_instances=8)), trace, assumptions)
    # A change effective at minute n while units asked for before it still start then.
    changed_while_starting = [
        n.minute
        for m, n in zip(timeline.minutes, timeline.minutes[1:], strict=False)
        if n.desired != m.desired and n.starting - max(0, n.desired - m.desired) > 0
    ]
    assert bool(changed_while_starting) is (reading == "at-once")
    assert "updates_while_updating" in timeline.consulted


def _cache_case(reading: str, *, data_cache: bool = True, min_instances: int = 0) -> Endpoint:
    """One instance of 4 copies' room hosting the deploy's copy; a copy starts in 7 min, 2 without the download."""
    shape = _shape("copies", units_per_instance=4, max_instances=2, min_instances=min_instances, data_cache=data_cache)
    assumptions = Assumptions(
        startup_seconds=420, cached_startup_seconds=120, instance_launch_seconds=300, data_cache=reading
    )
    return Endpoint(shape, assumptions, 1)


@pytest.mark.parametrize(
    ("reading", "data_cache", "serves_at"),
    [
        ("on-instance", True, 12),  # asked for at 10, the download skipped: 2 min
        ("no-gain", True, 17),  # the whole start: 7 min
        ("on-instance", False, 17),  # the component caches nothing: the reading does not arise
    ],
)
def test_a_scale_out_copy_on_an_instance_that_hosted_one_serves_sooner_only_with_the_cache_on_instance(
    reading, data_cache, serves_at
):
    """InferenceComponentDataCacheConfig: "the inference component deploys faster during the auto scaling process";
    AWS gives no figure, so the on-instance reading skips the model download and no-gain skips nothing."""
    endpoint = _cache_case(reading, data_cache=data_cache)
    endpoint.set_desired(2, 10)
    assert endpoint.instances == 1  # the second copy shares the deploy's instance
    assert endpoint.serving(serves_at - 1) == 1 and endpoint.serving(serves_at) == 2
    assert ("data_cache" in endpoint.consulted) is data_cache


@pytest.mark.parametrize("data_cache", [True, False])
def test_a_wake_from_zero_downloads_again_when_the_cache_is_lost_with_the_instance(data_cache):
    """IDLE_RELEASE releases the instance that hosted no copy; a new instance is "the scenario where our previous
    instance-store-based caching couldn't help" (AWS ML Blog): the woken copy takes the launch and the whole start,
    cache on or off, under the on-instance reading."""
    endpoint = _cache_case("on-instance", data_cache=data_cache)
    endpoint.set_desired(0, 30)
    assert endpoint.instances == 0
    endpoint.set_desired(1, 60)
    assert endpoint.instances == 1
    assert endpoint.serving(71) == 0 and endpoint.serving(72) == 1  # 60 + 5 min launch + 7 min start
    assert "data_cache" not in endpoint.consulted
    # A copy added next to the woken one, once it served, finds its data cached on the new instance.
    endpoint.set_desired(2, 80)
    assert endpoint.serving(82) == (2 if data_cache else 1)


def test_an_instance_kept_by_the_minimum_keeps_the_cache_for_the_next_wake():
    """The cache goes with the instance, not with the copies: min_instances 1 keeps the instance, and a copy woken
    on it under the on-instance reading skips the download."""
    endpoint = _cache_case("on-instance", min_instances=1)
    endpoint.set_desired(0, 30)
    assert endpoint.instances == 1
    endpoint.set_desired(1, 60)
    assert endpoint.serving(61) == 0 and endpoint.serving(62) == 1
