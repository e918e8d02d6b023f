"""The documented AWS behaviours the simulator encodes, each on a small hand-made case."""

from __future__ import annotations

import pytest

from peagle.simulate import metric_math
from peagle.simulate.autoscaling import TargetScaling
from peagle.simulate.cloudwatch import ALARM, INSUFFICIENT, OK, AlarmState
from peagle.simulate.scaling_template import (
    Alarm,
    MetricQuery,
    MetricStat,
    ScalableTarget,
    StepAdjustment,
    StepPolicy,
    TargetTrackingPolicy,
)
from peagle.simulate.service import Minute


def _alarm(treat: str, *, periods: int = 3, needed: int = 3, policy: str = "Step") -> Alarm:
    return Alarm(
        "A",
        "",
        MetricQuery(stat=MetricStat("Invocations", "Sum")),
        "LessThanThreshold",
        1,
        periods,
        needed,
        treat,
        (policy,),
    )


def _history(values):
    return [Minute(minute=i, offered=0, datapoints={"Invocations": v}) for i, v in enumerate(values)]


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
    alarm = AlarmState(_alarm(treat))
    history = _history(values)
    for minute in range(len(values)):
        alarm.evaluate(history, minute)
    assert alarm.state == state


def test_periods_before_the_start_are_not_breaching_data():
    alarm = AlarmState(_alarm("breaching", periods=30, needed=30))
    history = _history([None] * 30)
    assert [alarm.evaluate(history, minute) for minute in range(30)][-2:] == [OK, ALARM]


def test_metric_math_fill_if_and_missing():
    values = {"a": None, "b": 2.0}
    assert metric_math.evaluate("FILL(a, 0) + FILL(b, 0)", values) == 2.0
    assert metric_math.evaluate("a + b", values) is None
    assert metric_math.evaluate("IF(FILL(a, 0) >= 2 AND b < 3, 1, 0)", values) == 0.0
    assert metric_math.evaluate("IF(b > 0, 10 / b, 0)", values) == 5.0
    with pytest.raises(metric_math.MetricMathError):
        metric_math.evaluate("RATE(b)", values)


def _step_target(cooldown: int) -> ScalableTarget:
    step = StepPolicy("Step", "ChangeInCapacity", (StepAdjustment(0, None, 1),), cooldown, "Maximum", None)
    alarm = Alarm(
        "A",
        "",
        MetricQuery(stat=MetricStat("NoCapacityInvocationFailures", "Sum")),
        "GreaterThanOrEqualToThreshold",
        1,
        1,
        1,
        "notBreaching",
        ("Step",),
    )
    return ScalableTarget(
        "T", "inference-component/c", "sagemaker:inference-component:DesiredCopyCount", 0, 16, (step,), (), (alarm,)
    )


@pytest.mark.parametrize(("cooldown", "after_ten_minutes"), [(60, 10), (1800, 1)])
def test_a_step_in_alarm_acts_every_minute_and_its_cooldown_counts_what_it_added(cooldown, after_ten_minutes):
    scaling = TargetScaling(_step_target(cooldown), "largest")
    history, capacity = [], 0
    for minute in range(10):
        history.append(Minute(minute=minute, offered=1, datapoints={"NoCapacityInvocationFailures": 1.0}))
        for state in scaling.alarm_states():
            state.evaluate(history, minute)
        capacity, _ = scaling.act(capacity, 0, minute)
    assert capacity == after_ten_minutes


def test_target_tracking_scales_in_only_when_every_policy_is_ready_to():
    def tracking(name, metric, target):
        return TargetTrackingPolicy(name, MetricQuery(stat=MetricStat(metric, "Average")), False, target, 0, 0, False)

    target = ScalableTarget(
        "T",
        "endpoint/e/variant/v",
        "sagemaker:variant:DesiredInstanceCount",
        1,
        4,
        (),
        (tracking("Load", "ConcurrentRequestsPerModel", 24), tracking("Gpu", "GPUUtilization", 80)),
        (),
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
