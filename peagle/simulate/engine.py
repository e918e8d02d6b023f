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
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from peagle.catalog import Slo
from peagle.settings.props_values import whole_prop
from peagle.settings.refs import Door, duration, named_in_words, setting
from peagle.settings.words import field_words, in_words
from peagle.simulate.autoscaling import TRACKING_ALARMS, TargetScaling
from peagle.simulate.scaling_template import ScalableTarget
from peagle.simulate.service import (
    RETRY_MAX_ATTEMPTS,
    Assumptions,
    CancelledStart,
    Endpoint,
    Minute,
    UnitShape,
    unit_rpm,
)
from peagle.simulate.traffic import Trace

if TYPE_CHECKING:
    from peagle.planning.planner import Plan


def one_unit(unit: str) -> str:
    """The singular of a target's unit: "copies" -> "copy", "instances" -> "instance"."""
    return {"copies": "copy", "instances": "instance"}.get(unit, unit)


@dataclass(frozen=True)
class SettingKeys:
    """The deployment file's key paths of this target's settings, for the report's suggested changes; the door
    that made the endpoint (peagle/planning/plan_record.py) spells them from the settings model's metadata
    (peagle/settings/words.py): ``autoscaling.min_capacity: 1`` in the file; in the props, the whole prop with the
    app's recorded settings kept (``autoscaling=Autoscaling(min_capacity=1, max_capacity=4)``, peagle/settings/props_values.py),
    so a change pasted as printed drops nothing the app had."""

    min_units: str
    max_units: str
    target: str | None = None
    idle_minutes: str | None = None
    max_instances: str | None = None  # the instances a component's copies may use
    scale_in_cooldown: str | None = None
    # (key, props spelling, "..." for the value) where the file key's field spells another setting at the props door
    props: tuple[tuple[str, str], ...] = ()
    # The plan the app recorded (peagle/planning/plan_record.py): the settings a props suggestion keeps. None: spelled alone.
    recorded: Plan | None = field(default=None, compare=False, repr=False)

    def spell(self, key: str, door: Door, *value: Any) -> str:
        """The setting ``key`` (a field name above) as ``door`` writes it, in backticks where it is code to paste;
        with a value, set to it (``spell_changes``); without, named."""
        if value:
            return self.spell_changes(door, {key: value[0]})
        path = getattr(self, key)
        if door is not Door.PROPS:
            return f"`{in_words(setting(path), door)}`"
        spelled = dict(self.props).get(key) or in_words(setting(path), door)
        return named_in_words(spelled) if "..." in spelled else f"`{spelled}`"

    def spell_changes(self, door: Door, changes: Mapping[str, Any]) -> str:
        """Each setting of ``changes`` (key -> value) set, as ``door`` writes it: the file's key paths; the props'
        whole props, one per prop the changes touch, from the recorded settings; a keyword of one of
        PeagleEndpoint's methods (``add_async_endpoint``) as that keyword, in words saying where it goes."""
        paths = {getattr(self, key): (value, dict(self.props).get(key)) for key, value in changes.items()}
        paths |= self._count_within(paths)
        if door is not Door.PROPS:
            return " and ".join(f"`{in_words(setting(path, value), door)}`" for path, (value, _) in paths.items())
        by_prop: dict[str, dict[str, Any]] = {}
        said = []
        for path, (value, own) in paths.items():
            method = _METHOD_KEYWORD.match(own or field_words(path)["prop"] or "")
            if method:
                unit = field_words(path)["unit"]
                shown = duration(value, unit) if unit else repr(value)
                said.append(f"`{method[2]}={shown}` in the `{method[1]}` call (its other arguments kept)")
            elif self.recorded is not None and whole_prop({path: value}, self.recorded) is not None:
                by_prop.setdefault(path.rsplit(".", 1)[0], {})[path] = value
            else:
                said.append(f"`{in_words(setting(path, value), door)}`")
        wholes = [f"`{whole_prop(group, self.recorded)}`" for group in by_prop.values() if self.recorded is not None]
        return " and ".join([*wholes, *said])

    def _count_within(self, paths: Mapping[str, tuple[Any, str | None]]) -> dict[str, tuple[Any, None]]:
        """A variant's instance count raised to a floor raised above it: the settings model refuses bounds that do not
        hold the count the deploy starts (peagle/settings/, "min_capacity <= instance.count <= max_capacity"), so a
        higher floor alone would not synthesize."""
        floor = paths.get("autoscaling.min_capacity", (None, None))[0]
        recorded = self.recorded
        if (
            floor is None
            or recorded is None
            or floor <= recorded.instance_count
            or not recorded.units.floor_is_instances
        ):
            return {}
        return {"instance.count": (floor, None)}


# A props spelling that is a keyword of one of PeagleEndpoint's methods, not a value: (method, keyword).
_METHOD_KEYWORD = re.compile(r"^([a-z_]+)\((\w+)=\.\.\.\)$")


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
    slo: Slo | None = None  # the profile's SLO, each request judged against it where a service curve is given

    def spell(self, key: str, *value: Any) -> str:
        """One of ``keys`` as this target's door writes it (``SettingKeys.spell``)."""
        return self.keys.spell(key, self.door, *value)

    def unit_rpm(self, assumptions: Assumptions) -> float:
        """Requests per minute one unit carries at most (service.unit_rpm)."""
        return unit_rpm(self.shape, assumptions)

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
    endpoint = Endpoint(setup.shape, assumptions, setup.initial_units, setup.slo)
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
