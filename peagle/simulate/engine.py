"""The minute loop: the endpoint carries the minute's load, every scaling alarm evaluates the minute's
datapoints, the policies act, and the new capacity applies from the next minute."""

from __future__ import annotations

from dataclasses import dataclass

from peagle.simulate.autoscaling import TRACKING_ALARMS, TargetScaling
from peagle.simulate.scaling_template import ScalableTarget
from peagle.simulate.service import Assumptions, Endpoint, Minute, UnitShape
from peagle.simulate.traffic import Trace


@dataclass(frozen=True)
class Setup:
    """One scalable target and what the plan says about its units."""

    target: ScalableTarget
    shape: UnitShape
    initial_units: int
    traffic_share: float  # of the endpoint's traffic, by variant weight
    cold_start_budget_seconds: float  # the longest wake from zero a client waits for
    idle_minutes: int | None  # with a floor of zero: the idle time before the last unit goes

    def unit_rpm(self, assumptions: Assumptions) -> float:
        """Requests per minute one unit carries with every vLLM slot busy."""
        return self.shape.max_num_seqs * 60 / assumptions.request_seconds

    @property
    def reaction_minutes(self) -> int:
        """How long scale-out may take to start once load outgrows capacity: the slowest tracking alarm
        plus a minute for its action."""
        slowest = max((TRACKING_ALARMS[policy.high_resolution][0] for policy in self.target.target_tracking), default=3)
        return slowest + 2


@dataclass
class Timeline:
    setup: Setup
    trace: Trace
    assumptions: Assumptions
    minutes: list[Minute]
    alarm_names: dict[str, str]  # logical id -> short name used in the table


def simulate(setup: Setup, trace: Trace, assumptions: Assumptions) -> Timeline:
    endpoint = Endpoint(setup.shape, assumptions, setup.initial_units)
    scaling = TargetScaling(setup.target, assumptions.conflicts)
    states = scaling.alarm_states()
    history: list[Minute] = []
    for minute, offered in enumerate(trace.requests_per_minute):
        record = endpoint.run_minute(minute, offered * setup.traffic_share)
        history.append(record)
        for state in states:
            record.alarms[state.alarm.logical_id] = state.evaluate(history, minute)
        capacity, said = scaling.act(endpoint.desired, record.serving, minute)
        record.actions = said
        if capacity != endpoint.desired:
            endpoint.set_desired(capacity, minute + 1)
    return Timeline(
        setup=setup,
        trace=trace,
        assumptions=assumptions,
        minutes=history,
        alarm_names={state.alarm.logical_id: _short(state.alarm.logical_id, setup.target) for state in states},
    )


def _short(logical_id: str, target: ScalableTarget) -> str:
    """A policy or alarm's logical id without the target's construct path and CDK's hash."""
    name = logical_id
    prefix = target.logical_id[:-8] if len(target.logical_id) > 8 else ""
    for candidate in (prefix, prefix.removesuffix("Target")):
        if candidate and name.startswith(candidate):
            name = name[len(candidate) :]
            break
    head, _, tail = name.partition("-")
    if len(head) > 8 and head[-8:].isalnum() and head[-8:].upper() == head[-8:]:
        head = head[:-8]
    return f"{head}-{tail}" if tail else head
