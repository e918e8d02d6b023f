"""The minute loop: the endpoint carries the minute's load, every scaling alarm evaluates the minute's
datapoints, the policies act, and the new capacity applies from the next minute.

A trace may end while requests are still outstanding (clients retrying through a cold start, an
asynchronous queue): the loop then runs on without new requests until each of them is answered or given
up, at most the clients' cold-start wait and retries (real time) or the time-to-live (asynchronous), so a
request sent in a trace's last minutes is judged by what happens to it, not by where the trace stops.
Those minutes are part of the timeline and its cost: the instances run to answer them."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from peagle.setting_refs import Door, duration, field_words, in_words, setting
from peagle.simulate.autoscaling import TRACKING_ALARMS, TargetScaling
from peagle.simulate.scaling_template import ScalableTarget
from peagle.simulate.service import RETRY_MAX_ATTEMPTS, Assumptions, CancelledStart, Endpoint, Minute, UnitShape
from peagle.simulate.traffic import Trace


def one_unit(unit: str) -> str:
    """The singular of a target's unit: "copies" -> "copy", "instances" -> "instance"."""
    return {"copies": "copy", "instances": "instance"}.get(unit, unit)


@dataclass(frozen=True)
class SettingKeys:
    """The deployment file's key paths of this target's settings, for the report's suggested changes; the door
    that made the endpoint (peagle/plan_record.py) spells them from the settings model's metadata
    (peagle/setting_refs.py): ``autoscaling.min_capacity: 1`` in the file, ``Autoscaling(min_capacity=1)`` in
    the props."""

    min_units: str
    max_units: str
    target: str | None = None
    idle_minutes: str | None = None
    max_instances: str | None = None  # the instances a component's copies may use
    scale_in_cooldown: str | None = None
    # (key, props spelling, "..." for the value) where the file key's field spells another setting at the props door
    props: tuple[tuple[str, str], ...] = ()

    def spell(self, key: str, door: Door, *value: Any) -> str:
        """The setting ``key`` (a field name above) as ``door`` writes it; with a value, set to it."""
        path = getattr(self, key)
        prop = dict(self.props).get(key)
        if door is not Door.PROPS or prop is None:
            return in_words(setting(path, *value), door)
        if not value:
            return prop
        unit = field_words(path)["unit"]
        return prop.replace("...", duration(value[0], unit) if unit else repr(value[0]))


@dataclass(frozen=True)
class Setup:
    """One scalable target and what the plan says about its units."""

    target: ScalableTarget
    name: str  # unique within the template: the endpoint and variant, or the component
    shape: UnitShape
    initial_units: int
    traffic_share: float  # of the endpoint's traffic, by variant weight
    cold_start_budget_seconds: float  # the longest wake from zero a client waits for
    idle_minutes: int | None  # with a floor of zero: the idle time before the last unit goes
    price_per_instance_hour: float
    start_budget_seconds: float  # the plan's longest start of a new unit (instance launch included)
    slo_attainment: float  # the profile's share of requests that must be answered
    keys: SettingKeys
    door: Door = Door.FILE  # the words of the suggested changes: the deployment file's, or the construct's props

    def spell(self, key: str, *value: Any) -> str:
        """One of ``keys`` as this target's door writes it (``SettingKeys.spell``)."""
        return self.keys.spell(key, self.door, *value)

    def unit_rpm(self, assumptions: Assumptions) -> float:
        """Requests per minute one unit carries with every vLLM slot busy."""
        return self.shape.max_num_seqs * 60 / assumptions.request_seconds

    @property
    def max_units(self) -> int:
        return self.target.max_capacity

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
    alarm_upward: dict[str, bool]  # logical id -> whether it asks for capacity (else it gives capacity back)
    cancelled: list[CancelledStart]
    left_waiting: float  # real-time requests still retrying at the end
    left_queued: list[tuple[int, float]]  # asynchronous (first-sent minute, requests) still queued at the end
    # The open readings (Assumptions fields) that made a difference at least once; another value of any
    # other reading gives this same timeline.
    consulted: frozenset[str] = frozenset()

    @property
    def drain_minutes(self) -> int:
        """Minutes simulated after the trace, without new requests, for the requests it left outstanding."""
        return len(self.minutes) - len(self.trace.requests_per_minute)


def drain_limit_minutes(shape: UnitShape, assumptions: Assumptions) -> int:
    """The longest a request left outstanding at the end of a trace can still take to be answered or given
    up: an asynchronous one's time-to-live; a real-time client's cold-start wait and its resends after
    timeouts (one a minute); a minute for each end."""
    if shape.asynchronous:
        return math.ceil(assumptions.async_ttl_seconds / 60) + 2
    return math.ceil(assumptions.cold_start_wait_seconds / 60) + RETRY_MAX_ATTEMPTS + 2


def simulate(setup: Setup, trace: Trace, assumptions: Assumptions) -> Timeline:
    endpoint = Endpoint(setup.shape, assumptions, setup.initial_units)
    scaling = TargetScaling(setup.target, assumptions.conflicts, assumptions.cooldown_after_lowered)
    states = scaling.alarm_states()
    history: list[Minute] = []
    wait_for_updates = assumptions.updates_while_updating == "after-update"
    drain = itertools.repeat(0.0, drain_limit_minutes(setup.shape, assumptions))
    for minute, offered in enumerate(itertools.chain(trace.requests_per_minute, drain)):
        if minute >= len(trace.requests_per_minute) and not endpoint.outstanding:
            break
        scheduled = _scheduled(scaling, endpoint, trace.start + timedelta(minutes=minute), trace.start, minute)
        record = endpoint.run_minute(minute, offered * setup.traffic_share)
        record.actions, record.floor, record.ceiling = scheduled, scaling.min_capacity, scaling.max_capacity
        history.append(record)
        for state in states:
            record.alarms[state.alarm.logical_id] = state.evaluate(history, minute)
        capacity, said = scaling.act(
            endpoint.desired,
            record.serving,
            minute,
            updating=endpoint.updating(minute + 1),
            wait_for_updates=wait_for_updates,
        )
        if record.refused_sends:
            scaling.consulted.add("refused_count_as_invocations")
        record.actions = scheduled + said
        if capacity != endpoint.desired:
            endpoint.set_desired(capacity, minute + 1, by="; ".join(said))
    return Timeline(
        setup=setup,
        trace=trace,
        assumptions=assumptions,
        minutes=history,
        alarm_names={state.alarm.logical_id: _short(state.alarm.logical_id, setup.target) for state in states},
        alarm_upward={state.alarm.logical_id: state.alarm.upward for state in states},
        cancelled=list(endpoint.cancelled),
        left_waiting=sum(cohort.count for cohort in endpoint.waiting),
        left_queued=[(cohort.sent, cohort.count) for cohort in endpoint.queue if cohort.count > 1e-9],
        consulted=frozenset(scaling.consulted | endpoint.consulted),
    )


def _scheduled(scaling: TargetScaling, endpoint: Endpoint, when: datetime, start: datetime, minute: int) -> list[str]:
    """The target's scheduled actions that run in this minute, in the template's order (the service documents no
    order between actions due at once): new bounds now, new units asked for now (they serve after a start)."""
    said = []
    for action in scaling.target.scheduled_actions:
        if action.runs_at(when, start):
            capacity, words = scaling.schedule(action, endpoint.desired)
            said.append(words)
            if capacity != endpoint.desired:
                endpoint.set_desired(capacity, minute, by=words)
    return said


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
