"""The properties a timeline must have, each a pass or a fail with what was seen and, for a failure, the
setting to change with the value the simulation suggests (checked by simulating the change).

From the users' seat first: the share of requests answered (on time or after a cold start) must reach
the SLO's attainment, whatever the capacity did; a request woken for must be answered within the
cold-start budget; a unit started for waiting requests must not be removed before it serves. Then the
machinery: wake from zero without piling units up, return to zero and stay there while idle, scale out
soon after the load outgrows capacity, give back what the load no longer needs, never oscillate.
Thresholds that are our choice, not AWS figures, are named constants.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from peagle.props_values import whole_prop
from peagle.setting_refs import Door
from peagle.simulate.autoscaling import STEP_DEFAULT_COOLDOWN_SECONDS, VARIANT_DEFAULT_COOLDOWN_SECONDS
from peagle.simulate.engine import Setup, Timeline, one_unit, simulate
from peagle.simulate.outcomes import Outcome, instances_for, outcome
from peagle.simulate.scaling_template import Alarm, ScalableTarget
from peagle.simulate.schedules import ScheduledAction, daily_cron

if TYPE_CHECKING:
    from peagle.planner import Plan

# Allowance past the idle time for the last unit to go (cooldowns, alarm windows): our choice.
RETURN_TO_ZERO_SLACK_MINUTES = 20
# The starts that reversals of capacity throw away (``reversals``) may cost up to this share of the trace's bill
# before "never oscillates" fails: our choice. A reversal or two are the price of following a load that turns (one
# instance's start thrown away is ~0.5 % of a working day's bill on deployments/default.yaml); past 2 % they are a
# pattern a setting should stop: noise around a capacity boundary, or a scale-in that lands where the next rise
# needs the unit again.
REVERSAL_COST_SHARE = 0.02
# Longer scale-in cooldowns tried, in turn, to stop reversals: our choice, within the deployment file's bound
# (AutoscalingSettings.scale_in_cooldown_seconds, at most 3600).
SCALE_IN_COOLDOWN_STEPS_SECONDS = (1800, 3600)
# Minutes past the scale-in window and its cooldown that unneeded capacity may stay: our choice.
GIVE_BACK_SLACK_MINUTES = 5
# Target tracking's managed low alarm waits this long before it scales in (autoscaling.TRACKING_ALARMS).
TRACKING_SCALE_IN_MINUTES = 15
# A start the idle window must outlast: the wake-up alarm's minute and its action come before it.
IDLE_WINDOW_MARGIN_MINUTES = 2


@dataclass
class Verdict:
    name: str
    passed: bool
    detail: str
    # For a failure: what to change, to what, and what the simulation then shows. Finding it simulates the
    # change, so it is worked out when first read (a report reads it once per scenario, not per run).
    suggest: Callable[[], str] | None = field(default=None, repr=False, compare=False)
    # False: nothing here can tell (the detail says what would); a report prints "not checked", never a pass.
    checked: bool = True
    _fix: str | None = field(default=None, repr=False, compare=False)

    @property
    def fix(self) -> str | None:
        if self._fix is None and self.suggest is not None:
            self._fix = self.suggest()
        return self._fix


def verdicts(timeline: Timeline, seen: Outcome | None = None) -> list[Verdict]:
    seen = seen or outcome(timeline)
    target = timeline.setup.target
    found = [_answers(timeline, seen), _slo_not_checked(timeline, seen)]
    if target.min_capacity == 0:
        found += [
            _wait_within_budget(timeline),
            _starts_not_cancelled(timeline),
            _no_pile_up(timeline),
            _returns_to_zero(timeline),
            _stays_at_zero(timeline),
        ]
    if target.max_capacity > max(target.min_capacity, 1) and _load_outgrows(timeline):
        found.append(_scales_out(timeline))
    found += [_gives_back(timeline), _no_oscillation(timeline, seen)]
    return [verdict for verdict in found if verdict is not None]


def needed_units(timeline: Timeline, offered: float) -> int:
    """Units that carry ``offered`` requests a minute with every slot busy (not capped at the maximum)."""
    return math.ceil(round(offered / timeline.setup.unit_rpm(timeline.assumptions), 9))


def _capped(timeline: Timeline, offered: float) -> int:
    return min(timeline.setup.target.max_capacity, needed_units(timeline, offered))


def _load_outgrows(timeline: Timeline) -> bool:
    return any(_capped(timeline, minute.offered) > minute.desired for minute in timeline.minutes)


# --- what users got ---------------------------------------------------------------------------------


def _answers(timeline: Timeline, seen: Outcome) -> Verdict:
    """SLO attainment where each request could be judged against the SLO's bounds (a measured service curve);
    else the share answered within the invocation timeout, with the bounds reported not checked."""
    setup = timeline.setup
    attainment = setup.slo_attainment
    detail = describe_losses(seen)
    if seen.slo_share is not None:
        name = f"meets the SLO for at least {attainment:.0%} of requests ({_bounds(setup)})"
        detail = (
            f"{seen.slo_share:.1%} of {seen.slo_judged:,.0f} requests within the SLO's bounds (those that waited for a "
            f"cold start are judged by the cold-start verdicts); {detail}"
        )
    else:
        name = f"answers at least {attainment:.0%} of requests within the 60 s invocation timeout"
    if seen.meets(attainment):
        return Verdict(name, True, detail)
    return Verdict(name, False, detail, suggest=lambda: _fix_for_losses(timeline, seen))


def _bounds(setup: Setup) -> str:
    slo = setup.slo
    if slo is None:
        return "no bounds"
    parts = [
        f"{label} <= {value * scale:g} {unit}"
        for label, value, scale, unit in (
            ("TTFT", slo.ttft_seconds, 1, "s"),
            ("TPOT", slo.tpot_seconds, 1000, "ms"),
            ("E2EL", slo.e2e_seconds, 1, "s"),
        )
        if value is not None
    ]
    return ", ".join(parts)


MEASURE_IT = "measure the unit with `peagle capacity --out DIR` and give --service-curve DIR/service-curve.json"


def _slo_not_checked(timeline: Timeline, seen: Outcome) -> Verdict | None:
    """Without a measured service curve: the SLO's TTFT and TPOT judged by the roofline estimate's low and high
    bounds where it has figures (pass or fail only where both agree), else not checked: said, never guessed."""
    setup = timeline.setup
    if seen.slo_share is not None or setup.shape.asynchronous or setup.slo is None:
        return None
    name = f"meets the SLO's bounds ({_bounds(setup)}) for at least {setup.slo_attainment:.0%} of requests"
    estimates = timeline.assumptions.estimates
    if not estimates:
        return Verdict(
            name,
            True,
            "not checked: no measured service curve and no roofline estimate for this GPU and pair, so how fast each "
            f"request was answered is not known (the unit holds each request a fixed time); {MEASURE_IT}",
            checked=False,
        )
    low, high = (_estimated_share(timeline, seen, curve) for curve in estimates)
    shares = f"{low:.1%} (the estimate's low bound) to {high:.1%} (its high bound) within the SLO's bounds"
    met = [share >= setup.slo_attainment - 1e-9 for share in (low, high)]
    if all(met):
        return Verdict(name, True, f"by the roofline estimate, not measured: {shares}")
    if not any(met):
        return Verdict(name, False, f"by the roofline estimate, not measured: {shares}", _fix=MEASURE_IT + " first")
    return Verdict(
        name, True, f"not checked: the roofline estimate's bounds disagree: {shares}; {MEASURE_IT}", checked=False
    )


def _estimated_share(timeline: Timeline, seen: Outcome, curve) -> float:
    """Share of the judged requests within the SLO had each unit served as ``curve`` says at its minute's rate;
    a rate past the curve's highest serves only that much within it."""
    slo = timeline.setup.slo
    assert slo is not None
    within = 0.0
    for minute in timeline.minutes:
        if minute.on_time <= 0:
            continue
        rate = minute.unit_rate
        served = min(1.0, curve.max_rps / rate) if rate > 0 else 1.0
        within += minute.on_time * served * curve.slo_share(slo, min(rate, curve.max_rps))
    return within / seen.slo_judged if seen.slo_judged > 1e-9 else 1.0


def describe_losses(seen: Outcome) -> str:
    parts = [f"answered {seen.answered_share:.1%} of {seen.requests:,.0f}"]
    if seen.after_wait > 1e-9:
        parts[0] += f" ({seen.share(seen.after_wait):.1%} after waiting for capacity)"
    for label, amount in (
        ("answered only after a timeout", seen.late),
        ("timed out", seen.timed_out),
        ("refused", seen.refused),
        ("expired in the queue", seen.expired),
        ("still unanswered at the end", seen.unresolved),
    ):
        if amount > 1e-9:
            parts.append(f"{label} {seen.share(amount):.1%}")
    if seen.queued_in_time > 1e-9:
        parts.append(f"{seen.queued_in_time:,.0f} still queued (answerable within their time-to-live)")
    if seen.lost_minutes:
        first, last = seen.lost_minutes
        parts.append(f"losses in minutes {first}-{last}")
    if seen.drain_minutes:
        parts.append(f"the requests outstanding when the trace ended followed for {seen.drain_minutes} more minute(s)")
    if seen.minutes_over_max:
        parts.append(
            f"the load needed more than the maximum {seen.max_units} in {seen.minutes_over_max} minute(s) "
            f"(peak {seen.peak_need_units})"
        )
    return "; ".join(parts)


def _fix_for_losses(timeline: Timeline, seen: Outcome) -> str:
    """The smallest change to the bounds that answers the requests lost, found by simulating it: a higher
    maximum where the load outgrew it, then headroom (a higher floor) where new units could not start in
    time."""
    setup = timeline.setup
    unit, target = setup.target.unit, setup.target
    if timeline.cancelled:
        return _idle_window_fix(timeline, seen)
    refused = seen.refused + (0 if setup.shape.asynchronous else seen.unresolved)
    if refused >= seen.lost / 2 and target.min_capacity == 0 and not setup.shape.asynchronous:
        why = (
            "clients that send once lose every request sent while no copy runs; use a retrying client "
            "(peagle.client waits for the cold start)"
            if timeline.assumptions.clients == "once"
            else "requests waited out the client's cold-start wait "
            f"({timeline.assumptions.cold_start_wait_seconds / 60:.0f} min) for a unit"
        )
        warm = setup.spell("min_units", 1)
        return f"{why}, or keep one {one_unit(unit)} warm: set {warm}; {_tried(timeline, seen, min_units=1)}"
    # Units enough that the load sits at the policies' target, not at full slots (a fleet at full slots never
    # drains the resends of what timed out).
    share = _tracked_share(timeline) or 1.0
    lost = [m for m in timeline.minutes if m.lost > 1e-9] or timeline.minutes
    wanted = min(100, max(math.ceil(round(needed_units(timeline, m.offered) / share, 9)) for m in lost))
    maximum = max(wanted, target.max_capacity)
    # Headroom within today's maximum first, then a higher maximum, then both.
    tries = [{"min_units": floor} for floor in range(target.min_capacity + 1, target.max_capacity + 1)]
    tries += [{"max_units": higher} for higher in range(target.max_capacity + 1, maximum + 1)]
    tries += [{"min_units": floor, "max_units": maximum} for floor in range(target.min_capacity + 1, maximum + 1)]
    best, change = None, {}
    for change in tries:
        best = _outcome_with(timeline, **change)
        if _meets(best, setup):
            break
    if best is None:
        return "no change to the bounds helps; lower the load or the scaling target"
    said = []
    # At the props door a snippet is the whole prop, so a floor and a maximum are one snippet (two would undo each
    # other); the file's keys are set one by one.
    joint = setup.door is Door.PROPS and "min_units" in change
    maximum_change = {key: change[key] for key in ("max_units",) if key in change}
    if "max_units" in change:
        carried = target.max_capacity * setup.unit_rpm(timeline.assumptions) * share
        peak_rpm = max(m.offered for m in timeline.minutes)
        instances = math.ceil(change["max_units"] / setup.shape.units_per_instance)
        if setup.shape.kind == "copies" and instances > setup.shape.max_instances:
            maximum_change["max_instances"] = instances
        said.append(
            f"at the scaling target ({share:.0%} of a unit's slots) the maximum {target.max_capacity} {unit} carry "
            f"{carried:,.0f} requests/min, the peak asks for {peak_rpm:,.0f}: "
            + (
                f"raise the maximum to {change['max_units']}"
                if joint
                else f"set {setup.keys.spell_changes(setup.door, maximum_change)}"
            )
        )
    floor_change = {"min_units": change.get("min_units"), **(maximum_change if joint else {})}
    copy_start = timeline.assumptions.startup_seconds / 60
    start = copy_start + timeline.assumptions.instance_launch_seconds / 60
    if "min_units" in change:
        took = (
            f"~{copy_start:.0f} min, ~{start:.0f} with a new instance"
            if setup.shape.kind == "copies"
            else f"~{start:.0f} min"
        )
        said.append(
            f"new {unit} serve {took} after they are asked for, and the load outgrew the ones serving sooner: keep "
            f"headroom: set {setup.keys.spell_changes(setup.door, floor_change)}"
        )
    first, last = seen.lost_minutes or (0, 0)
    if "min_units" in change and last - first + 1 <= start:
        lever = (
            f"; the losses lasted {last - first + 1} min, no longer than a start: only capacity kept ahead carries "
            "a crowd this short, or accept the loss"
        )
    else:
        lever = (
            f"; or lower {setup.spell('target')} so scale-out starts earlier"
            if setup.keys.target and "min_units" in change
            else ""
        )
    found = f"{'; and '.join(said)}; {_describe_try(best, seen)}{lever}"
    if "min_units" not in change:
        return found
    maximum = change.get("max_units")
    options: list[tuple[str, Outcome, str]] = []  # (what, what it gives, how to apply it when chosen)
    if maximum:
        options.append((f"the maximum {maximum} alone", _outcome_with(timeline, max_units=maximum), ""))
    headroom = _more_headroom(timeline, maximum)
    if headroom is not None:
        value, then = headroom
        setting = setup.keys.spell_changes(setup.door, {"target": value, **({"max_units": maximum} if maximum else {})})
        options.append((f"more headroom, {setting}", then, f"set {setting}"))
    options.append((f"the floor {change['min_units']} all day{_and_max(change)}", best, "the change above"))
    scheduled = scheduled_floor(timeline, change["min_units"], maximum)
    if scheduled is not None:
        options.append(
            (
                scheduled.describe(timeline),
                scheduled.outcome,
                f"(it assumes the load comes at the same time every day) "
                f"{scheduled.snippet(Door.FILE, setup.keys.recorded)}; {scheduled.snippet(Door.PROPS, setup.keys.recorded)}",
            )
        )
    if len(options) == 1:
        return found
    passing = [option for option in options if _meets(option[1], setup)]
    side_by_side = "; ".join(f"{words}: {_priced(then, seen)}" for words, then, _ in options)
    if not passing:
        return f"{found}. Side by side, each simulated on this trace: {side_by_side}. None meets the SLO"
    what, _, apply = min(passing, key=lambda option: option[1].cost_usd)
    return f"{found}. Side by side, each simulated on this trace: {side_by_side}. Cheapest that meets the SLO: {what}: {apply}"


def _more_headroom(timeline: Timeline, maximum: int | None) -> tuple[float, Outcome] | None:
    """The highest concurrency target, in steps below today's, that meets the SLO on this trace (with ``maximum``
    as the maximum), or the lowest step tried when none does; None without a concurrency target to lower."""
    setup = timeline.setup
    tracked = [
        policy
        for policy in setup.target.target_tracking
        if policy.query.stat is not None and policy.query.stat.name.startswith("ConcurrentRequests")
    ]
    if not tracked or not setup.keys.target:
        return None
    tried = None
    for share in HEADROOM_STEPS:
        value = round(tracked[0].target_value * share, 1)
        if value <= 0:
            break
        then = _outcome_with(timeline, max_units=maximum, target_concurrency=value)
        tried = (value, then)
        if _meets(then, setup):
            break
    return tried


# More headroom: the concurrency target at these shares of today's, tried in turn (our choice).
HEADROOM_STEPS = (0.75, 0.5, 0.35, 0.25)


def _priced(then: Outcome, seen: Outcome) -> str:
    return f"answered {then.answered_share:.1%}, ${then.cost_usd:,.2f} ({then.cost_usd - seen.cost_usd:+,.2f})"


def _and_max(change: dict) -> str:
    return f" with the maximum {change['max_units']}" if "max_units" in change else ""


@dataclass(frozen=True)
class ScheduledFloor:
    """A floor raised on a schedule ahead of the windows the load outgrew the scaling, and put back after."""

    floor: int
    max_units: int | None  # the maximum all day, when it changes too
    windows: tuple[tuple[int, int], ...]  # (raise, restore) as minutes of the day, UTC
    actions: tuple[ScheduledAction, ...]
    outcome: Outcome

    def describe(self, timeline: Timeline) -> str:
        unit = timeline.setup.target.unit
        spans = ", ".join(f"{_clock(up)}-{_clock(down)}" for up, down in self.windows)
        raised = f" with the maximum {self.max_units}" if self.max_units else ""
        return f"a floor of {self.floor} {unit} from {spans} UTC every day (a schedule){raised}"

    def snippet(self, door: Door, recorded: Plan | None = None) -> str:
        """The change as ``door`` writes it, the schedules the app has (``recorded``: its plan) kept before the new
        ones: the deployment file's keys, or the whole autoscaling prop with the app's other settings kept
        (peagle/props_values.py); a props snippet needs the record, which every props-made app carries."""
        kept = list(recorded.autoscaling.schedules) if recorded is not None and recorded.autoscaling else []
        schedules = [action.model_dump(exclude_none=True) for action in kept] + [
            {"name": a.name, "schedule": a.schedule, "min_capacity": a.min_capacity, "max_capacity": a.max_capacity}
            for a in self.actions
        ]
        if door is Door.PROPS:
            if recorded is None:
                return "in the props: these schedules as ScheduledCapacity values beside Autoscaling's own"
            changes: dict[str, object] = {"autoscaling.schedules": schedules}
            if self.max_units:
                changes["autoscaling.max_capacity"] = self.max_units
            return f"in the props `{whole_prop(changes, recorded)}`"
        items = ", ".join(
            "{" + ", ".join(f"{k}: '{v}'" if k == "schedule" else f"{k}: {v}" for k, v in item.items()) + "}"
            for item in schedules
        )
        maximum = f"max_capacity: {self.max_units}, " if self.max_units else ""
        return f"in the deployment file `autoscaling: {{{maximum}schedules: [{items}]}}`"


# A schedule's raise comes this much earlier than the losses began, beyond a unit's start and the scaling's
# reaction, tried in turn until the trace passes (a load that grows for an hour outgrows the capacity before
# the first request is lost): our choice. Restoring waits SCHEDULE_RESTORE_MINUTES past the last loss.
SCHEDULE_EXTRA_LEADS_MINUTES = (0, 15, 30, 60, 90, 120, 180)
SCHEDULE_RESTORE_MINUTES = 15
# Loss windows closer than this are covered by one raise: our choice.
SCHEDULE_MERGE_MINUTES = 60


def scheduled_floor(timeline: Timeline, all_day_floor: int, max_units: int | None = None) -> ScheduledFloor | None:
    """The cheapest floor, raised on a daily schedule around the minutes requests were lost, that meets the SLO
    on this trace (with ``max_units`` as the maximum all day); None when none does. A schedule fits a load
    that comes at the same time every day."""
    setup = with_changes(timeline.setup, max_units=max_units) if max_units else timeline.setup
    target = setup.target
    if setup.door is Door.CLI or target.unit != "instances" or setup.shape.asynchronous:
        # Schedules are a real-time variant's instance bounds: config.py refuses them for components, and
        # autoscaling.schedules (Autoscaling's) scale the variant only (peagle_cdk/planned_scaling.py), not the
        # asynchronous endpoint, whose scaling add_async_endpoint sets.
        return None
    losses = loss_windows(timeline)
    if not losses:
        return None
    lead = math.ceil(setup.start_budget_seconds / 60) + setup.reaction_minutes
    day_of = timeline.trace.start.hour * 60 + timeline.trace.start.minute
    found: ScheduledFloor | None = None
    for floor in range(target.min_capacity + 1, all_day_floor + 1):
        for extra in SCHEDULE_EXTRA_LEADS_MINUTES:
            windows = tuple(
                ((day_of + max(0, first - lead - extra)) % 1440, (day_of + last + SCHEDULE_RESTORE_MINUTES) % 1440)
                for first, last in losses
            )
            actions = _schedule_actions(target, floor, windows)
            then = outcome(simulate(with_changes(setup, schedules=actions), timeline.trace, timeline.assumptions))
            if _meets(then, setup):
                candidate = ScheduledFloor(floor, max_units, windows, actions, then)
                if found is None or then.cost_usd < found.outcome.cost_usd:
                    found = candidate
                break
    return found


def loss_windows(timeline: Timeline) -> list[tuple[int, int]]:
    """(first, last) trace minutes with requests lost, windows closer than SCHEDULE_MERGE_MINUTES merged."""
    windows: list[tuple[int, int]] = []
    for m in timeline.minutes[: len(timeline.trace)]:
        if m.lost <= 1e-9:
            continue
        if windows and m.minute - windows[-1][1] <= SCHEDULE_MERGE_MINUTES:
            windows[-1] = (windows[-1][0], m.minute)
        else:
            windows.append((m.minute, m.minute))
    return windows


def _schedule_actions(target: ScalableTarget, floor: int, windows) -> tuple[ScheduledAction, ...]:
    ceiling = max(floor, target.max_capacity)
    actions = []
    for up, down in windows:
        actions.append(ScheduledAction(f"RaiseFloor{_clock(up, '')}", daily_cron(up), floor, ceiling))
        actions.append(
            ScheduledAction(
                f"RestoreFloor{_clock(down, '')}", daily_cron(down), target.min_capacity, target.max_capacity
            )
        )
    return tuple(actions)


def _clock(minute_of_day: int, separator: str = ":") -> str:
    hours, minutes = divmod(minute_of_day % 1440, 60)
    return f"{hours:02d}{separator}{minutes:02d}"


def _meets(then: Outcome | None, setup: Setup) -> bool:
    return then is not None and then.meets(setup.slo_attainment)


def _idle_window_fix(timeline: Timeline, seen: Outcome) -> str:
    setup = timeline.setup
    minutes = math.ceil(setup.start_budget_seconds / 60) + IDLE_WINDOW_MARGIN_MINUTES
    first = timeline.cancelled[0]
    # A target whose idle window no setting holds (the asynchronous endpoint's) is told the length alone.
    lengthen = (
        f"set {setup.spell('idle_minutes', minutes)} or longer" if setup.keys.idle_minutes else f"to {minutes} min"
    )
    return (
        f"idle window {setup.idle_minutes} min < the {one_unit(setup.target.unit)}'s start budget "
        f"{setup.start_budget_seconds / 60:.0f} min: the one started at minute {first.requested} was removed at "
        f"minute {first.minute} before it served ({first.by or 'a scale-in'}): lengthen it, {lengthen}; "
        f"{_tried(timeline, seen, idle_minutes=minutes)}"
    )


def _tried(
    timeline: Timeline,
    seen: Outcome,
    *,
    min_units: int | None = None,
    max_units: int | None = None,
    idle_minutes: int | None = None,
) -> str:
    """The same trace and assumptions with the change: what users then get and what it costs."""
    then = _outcome_with(timeline, min_units=min_units, max_units=max_units, idle_minutes=idle_minutes)
    return _describe_try(then, seen)


def _outcome_with(timeline: Timeline, **changes) -> Outcome:
    return outcome(_timeline_with(timeline, **changes))


def _timeline_with(timeline: Timeline, **changes) -> Timeline:
    """The same trace and assumptions, simulated with ``changes`` (``with_changes``)."""
    return simulate(with_changes(timeline.setup, **changes), timeline.trace, timeline.assumptions)


def _describe_try(then: Outcome, seen: Outcome) -> str:
    return (
        f"simulated with it: answered {then.answered_share:.1%}, ${then.cost_usd:,.2f} for this trace "
        f"({then.cost_usd - seen.cost_usd:+,.2f})"
    )


def with_changes(
    setup: Setup,
    *,
    min_units: int | None = None,
    max_units: int | None = None,
    idle_minutes: int | None = None,
    schedules: tuple[ScheduledAction, ...] = (),
    target_concurrency: float | None = None,
    scale_in_cooldown_seconds: int | None = None,
) -> Setup:
    """``setup`` as if the deployment file set other bounds, another idle window or more scheduled actions."""
    target, shape = setup.target, setup.shape
    if scale_in_cooldown_seconds is not None:
        target = _with_scale_in_cooldown(target, scale_in_cooldown_seconds)
    if target_concurrency is not None:
        tracking = tuple(
            replace(policy, target_value=target_concurrency)
            if policy.query.stat is not None and policy.query.stat.name.startswith("ConcurrentRequests")
            else policy
            for policy in target.target_tracking
        )
        target = replace(target, target_tracking=tracking)
    if schedules:
        target = replace(target, scheduled_actions=target.scheduled_actions + schedules)
        shape = replace(shape, max_instances=max([shape.max_instances] + [a.max_capacity or 0 for a in schedules]))
    if max_units is not None:
        target = replace(target, max_capacity=max(max_units, target.min_capacity))
        if shape.kind == "copies":
            shape = replace(
                shape, max_instances=max(shape.max_instances, math.ceil(max_units / shape.units_per_instance))
            )
        else:
            shape = replace(shape, max_instances=max(shape.max_instances, max_units))
    if min_units is not None:
        target = replace(target, min_capacity=min_units, max_capacity=max(target.max_capacity, min_units))
    if idle_minutes is not None:
        target = _with_idle_minutes(target, idle_minutes)
    initial = min(max(setup.initial_units, target.min_capacity), target.max_capacity)
    return replace(
        setup, target=target, shape=shape, initial_units=initial, idle_minutes=idle_minutes or setup.idle_minutes
    )


def _with_idle_minutes(target: ScalableTarget, minutes: int) -> ScalableTarget:
    """The target with its scale-to-zero alarm (the one invoking an ExactCapacity 0 step) over ``minutes``."""
    to_zero = {
        policy.logical_id
        for policy in target.step_policies
        if policy.adjustment_type == "ExactCapacity" and all(step.adjustment == 0 for step in policy.steps)
    }
    alarms: list[Alarm] = [
        replace(alarm, evaluation_periods=minutes, datapoints_to_alarm=minutes)
        if set(alarm.policy_ids) & to_zero
        else alarm
        for alarm in target.alarms
    ]
    return replace(target, alarms=tuple(alarms))


def _with_scale_in_cooldown(target: ScalableTarget, seconds: int) -> ScalableTarget:
    """The target with ``seconds`` as the cooldown of every policy that scales in: what
    autoscaling.scale_in_cooldown_seconds sets (target tracking's ScaleInCooldown, and the Cooldown of the
    components' light-load step policy, peagle_cdk/planned_scaling.py)."""
    tracking = tuple(
        policy if policy.disable_scale_in else replace(policy, scale_in_cooldown_seconds=seconds)
        for policy in target.target_tracking
    )
    steps = tuple(
        replace(policy, cooldown_seconds=seconds) if _scales_in(policy) else policy for policy in target.step_policies
    )
    return replace(target, target_tracking=tracking, step_policies=steps)


def _scales_in(policy) -> bool:
    """A step policy that removes units (the light-load one); the scale-to-zero policy sets an exact 0 instead."""
    return policy.adjustment_type != "ExactCapacity" and any(step.adjustment < 0 for step in policy.steps)


# --- waking from zero -------------------------------------------------------------------------------


def _wake_episodes(timeline: Timeline) -> list[tuple[int, int | None]]:
    """(first minute a request found no unit serving, first minute served after it, or None)."""
    episodes, start = [], None
    for minute in timeline.minutes:
        if start is None and minute.serving == 0 and minute.offered > 0:
            start = minute.minute
        elif start is not None and minute.serving > 0:
            episodes.append((start, minute.minute))
            start = None
    if start is not None:
        episodes.append((start, None))
    return episodes


def _wait_within_budget(timeline: Timeline) -> Verdict | None:
    episodes = _wake_episodes(timeline)
    if not episodes:
        return None
    budget = timeline.setup.cold_start_budget_seconds
    name = f"answers a request that woke it within the cold-start budget ({budget / 60:.0f} min)"
    waits = [seconds for m in timeline.minutes for seconds, requests in m.waits if requests > 1e-9]
    worst = max(waits, default=0.0)
    never = [start for start, served in episodes if served is None]
    woken = ", ".join(f"minute {start}: {served - start} min" for start, served in episodes if served is not None)
    if never:
        return Verdict(
            name,
            False,
            f"requests from minute {never[0]} found no unit before the trace ended"
            + (f"; woken: {woken}" if woken else ""),
        )
    detail = f"longest wait {worst / 60:.1f} min from first send to answer; capacity served after {woken}"
    lost = sum(m.refused for m in timeline.minutes)
    if worst > budget or lost > 1e-9:
        more = f"; {lost:,.1f} request(s) refused" if lost > 1e-9 else ""
        return Verdict(name, False, detail + more)
    return Verdict(name, True, detail)


def _starts_not_cancelled(timeline: Timeline) -> Verdict:
    name = f"never removes a starting {one_unit(timeline.setup.target.unit)} while none serves"
    if not timeline.cancelled:
        return Verdict(name, True, "every start woken for was allowed to finish")
    first = timeline.cancelled[0]
    seen = outcome(timeline)
    return Verdict(
        name,
        False,
        f"{len(timeline.cancelled)} start(s) cancelled, the first asked for at minute {first.requested} and removed "
        f"at minute {first.minute} by {first.by or 'a scale-in'}",
        suggest=lambda: _idle_window_fix(timeline, seen),
    )


def _no_pile_up(timeline: Timeline) -> Verdict | None:
    """While nothing serves, ask for no more instances than the requests waiting when the first unit served
    needed (copies on an instance that runs anyway cost nothing more)."""
    episodes = _wake_episodes(timeline)
    if not episodes:
        return None
    setup = timeline.setup
    worst = None
    for start, served in episodes:
        first = timeline.minutes[served] if served is not None else None
        demand = (first.served + first.timeouts) if first is not None else 0.0
        allowed = max(1, instances_for(setup, needed_units(timeline, demand)))
        for minute in timeline.minutes[start : served if served is not None else None]:
            asked = instances_for(setup, minute.desired) if setup.shape.kind == "copies" else minute.desired
            if asked > allowed and (worst is None or asked - allowed > worst[0]):
                worst = (asked - allowed, minute.minute, minute.desired, asked, allowed)
    name = "asks for no more instances than the waiting requests need while waking"
    if worst:
        _, at, units, asked, allowed = worst
        return Verdict(
            name,
            False,
            f"{units} {setup.target.unit} ({asked} instance(s)) requested at minute {at}, where the requests waiting "
            f"when the first one served needed {allowed}",
        )
    return Verdict(name, True, "one wake-up's worth")


def _idle_stretches(timeline: Timeline) -> list[tuple[int, int]]:
    """[first idle minute, end) of each stretch without traffic or waiting requests."""
    stretches, start = [], None
    for minute in timeline.minutes:
        idle = minute.offered == 0 and minute.waiting <= 1e-9
        if idle and start is None:
            start = minute.minute
        elif not idle and start is not None:
            stretches.append((start, minute.minute))
            start = None
    if start is not None:
        stretches.append((start, len(timeline.minutes)))
    return stretches


def _returns_to_zero(timeline: Timeline) -> Verdict | None:
    idle = timeline.setup.idle_minutes or 15
    bound = idle + RETURN_TO_ZERO_SLACK_MINUTES
    name = f"returns to zero within {bound} min of the last request (idle time {idle} min)"
    checked = [(start, end) for start, end in _idle_stretches(timeline) if end - start >= bound]
    if not checked:
        return None  # no idle stretch lasts long enough to judge (the trace may end first)
    for start, end in checked:
        zero = next((m.minute for m in timeline.minutes[start:end] if m.desired == 0), None)
        if zero is None or zero - start > bound:
            seen = "never" if zero is None else f"after {zero - start} min"
            return Verdict(name, False, f"idle from minute {start}: back to zero {seen}")
    return Verdict(name, True, ", ".join(f"idle from minute {s}" for s, _ in checked))


def _stays_at_zero(timeline: Timeline) -> Verdict | None:
    if not any(m.desired == 0 for m in timeline.minutes):
        return None
    started = [
        m.minute
        for previous, m in zip(timeline.minutes, timeline.minutes[1:], strict=False)
        if previous.desired == 0
        and m.desired > 0
        and previous.offered == 0
        and m.offered == 0
        and previous.waiting <= 1e-9  # a queued (asynchronous) request is a reason to start
    ]
    name = "stays at zero while idle"
    if started:
        return Verdict(name, False, f"units requested without a request at minute(s) {started[:5]}")
    return Verdict(name, True, "no unit requested without a request")


# --- following the load -----------------------------------------------------------------------------


def _scales_out(timeline: Timeline) -> Verdict:
    budget = timeline.setup.reaction_minutes
    name = f"scales out within {budget} min of the load outgrowing capacity"
    worst = 0
    short_since = None
    for minute in timeline.minutes:
        if _capped(timeline, minute.offered) > minute.desired:
            short_since = minute.minute if short_since is None else short_since
            worst = max(worst, minute.minute - short_since)
        else:
            short_since = None
    peak = max(timeline.minutes, key=lambda m: m.offered)
    reached = max(m.desired for m in timeline.minutes)
    detail = (
        f"longest wait for the capacity the load needs: {worst} min; peak load needs "
        f"{needed_units(timeline, peak.offered)} {timeline.setup.target.unit}, most requested {reached} "
        f"(maximum {timeline.setup.target.max_capacity})"
    )
    return Verdict(name, worst <= budget, detail)


def _tracked_share(timeline: Timeline) -> float | None:
    """The concurrency target of the target's tracking policy as a share of a unit's slots, or None."""
    targets = [
        policy.target_value
        for policy in timeline.setup.target.target_tracking
        if policy.query.stat is not None and policy.query.stat.name.startswith("ConcurrentRequests")
    ]
    return min(targets) / timeline.setup.shape.max_num_seqs if targets else None


@dataclass(frozen=True)
class Load:
    """A minute's load as the tracked metrics see it."""

    offered: float  # requests a minute, new and waiting
    in_flight: float  # as the concurrency metric counts them: queued and timed-out requests included
    backlog: float  # an asynchronous endpoint's queue, in flight included


def load_of(timeline: Timeline, minute) -> Load:
    demand = minute.offered + minute.waiting
    running = minute.served * timeline.assumptions.request_seconds / 60
    return Load(
        offered=demand,
        in_flight=max(minute.in_flight_per_unit * minute.serving, demand * timeline.assumptions.request_seconds / 60),
        backlog=minute.waiting + running,
    )


def kept_for(timeline: Timeline, load: Load, floor: int | None = None, ceiling: int | None = None) -> int:
    """The units the policies mean to keep for ``load``: each target-tracking policy on a metric the model
    knows keeps the units that bring it under 90 % of its target (where it scales in), the largest of them
    counts; without one, full units. Never below the floor (``floor``: the one a schedule set for the minute),
    nor below one unit while requests come."""
    target = timeline.setup.target
    wanted = []
    for policy in target.target_tracking:
        metric = policy.query.stat.name if policy.query.stat is not None else ""
        amount = (
            load.in_flight
            if metric.startswith("ConcurrentRequests")
            else load.backlog
            if metric.startswith("ApproximateBacklogSize")
            else None
        )
        if amount is not None:
            wanted.append(math.ceil(round(amount / (0.9 * policy.target_value), 9)))
    units = max(wanted) if wanted else needed_units(timeline, load.offered)
    floor = target.min_capacity if floor is None else floor
    ceiling = target.max_capacity if ceiling is None else ceiling
    return min(ceiling, max(floor, 1 if load.offered > 0 else 0, units))


def settle_minutes(target: ScalableTarget) -> int:
    """How long the target's scale-in policies may take to give back a unit: the longest scale-in
    window (target tracking's, or a step alarm's), its cooldown, and our slack."""
    windows = [TRACKING_SCALE_IN_MINUTES] if any(not p.disable_scale_in for p in target.target_tracking) else []
    cooldowns = [(p.scale_in_cooldown_seconds or 0) / 60 for p in target.target_tracking if not p.disable_scale_in]
    for policy in target.step_policies:
        if any(step.adjustment < 0 for step in policy.steps) and policy.adjustment_type == "ChangeInCapacity":
            windows += [alarm.evaluation_periods for alarm in target.alarms if policy.logical_id in alarm.policy_ids]
            cooldowns.append((policy.cooldown_seconds or 0) / 60)
    return (
        math.ceil(max(windows, default=TRACKING_SCALE_IN_MINUTES) + max(cooldowns, default=0)) + GIVE_BACK_SLACK_MINUTES
    )


def _gives_back(timeline: Timeline) -> Verdict | None:
    """Units serving beyond what the policies keep for the load's recent peak (its busiest minute within
    the settle time, in flight as the concurrency metric counts) must not stay: capacity that arrives after
    a crowd has gone is given back in one go, not unit by unit."""
    target = timeline.setup.target
    limit = settle_minutes(target)
    name = f"gives back capacity the load no longer needs within {limit} min"
    loads = [load_of(timeline, m) for m in timeline.minutes]
    beyond = []
    for m in timeline.minutes:
        if target.min_capacity == 0 and m.offered == 0:
            continue  # idle: the idle policy's (returns to zero)
        recent = loads[max(0, m.minute - limit) : m.minute + 1]
        busiest = Load(*(max(getattr(load, field) for load in recent) for field in ("offered", "in_flight", "backlog")))
        kept = kept_for(timeline, busiest, m.floor, m.ceiling)  # a floor a schedule raised is kept on purpose
        if m.serving - kept >= 1:
            beyond.append((m.minute, m.serving - kept))
    if not beyond:
        return Verdict(
            name, True, f"no {one_unit(target.unit)} served beyond what the load of the last {limit} min needed"
        )
    (first, excess), last = beyond[0], beyond[-1][0]
    total = sum(excess for _, excess in beyond)
    return Verdict(
        name,
        False,
        f"{excess} {target.unit} beyond the need of the last {limit} min's load at minute {first}; "
        f"{total:,.0f} unit-minutes of them by minute {last}",
        _fix="the scale-in removes capacity more slowly than it arrives: scale in to what the load needs in one "
        f"step rather than one {one_unit(target.unit)} per cooldown"
        + (
            f", or lower {timeline.setup.spell('scale_in_cooldown')}"
            if target.step_policies and timeline.setup.keys.scale_in_cooldown
            else ""
        ),
    )


# --- oscillation ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reversal:
    """A start thrown away: units given back and asked for again within a start (``came_back``), or launched and
    given back before they had served a scale-in cooldown (not ``came_back``)."""

    came_back: bool
    started: int  # the minute the start thrown away was applied
    released: int  # the minute the units were given back
    units: int
    start_minutes: float  # what that start takes: startup_seconds, plus instance_launch_seconds for a new instance
    waited: float  # requests that waited or were lost while the capacity came back


def reversals(timeline: Timeline, cooldown_minutes: float | None = None) -> list[Reversal]:
    """Each start the timeline threw away, from one capacity change to the next. Not counted: a wake-up's units
    (asked for from zero, or while the first unit had only just begun to serve: sized for the requests that waited
    through the cold start, then given back because that demand was gone), and a return to zero after an idle
    minute followed by a wake-up for the next request (the scale-to-zero verdicts judge those). ``cooldown_minutes``:
    the scale-in cooldown that measures the second kind (default: the target's own; a change to the cooldown is
    judged with today's, so a longer one does not count more of the same releases)."""
    minutes = timeline.minutes
    changes = [
        (m.minute, before.desired, m.desired)
        for before, m in zip(minutes, minutes[1:], strict=False)
        if m.desired != before.desired
    ]
    cooldown = _scale_in_cooldown_minutes(timeline.setup.target) if cooldown_minutes is None else cooldown_minutes
    found = []
    for (first, was, became), (second, then_was, then_became) in zip(changes, changes[1:], strict=False):
        if became > was and then_became < then_was and not _waking(timeline, first, was):
            start = _start_minutes(timeline, first)
            if second - first <= start + cooldown:
                found.append(Reversal(False, first, second, min(became - was, then_was - then_became), start, 0.0))
        elif became < was and then_became > then_was and not (became == 0 and _idle(minutes[first - 1])):
            start = _start_minutes(timeline, second)
            if second - first < start:
                waited = sum(m.after_wait + m.lost for m in minutes[second : second + math.ceil(start)])
                found.append(Reversal(True, second, first, min(was - became, then_became - then_was), start, waited))
    return found


def _waking(timeline: Timeline, minute: int, was: int) -> bool:
    """A change applied at ``minute`` from zero units, or decided while the first unit of a wake-up had served for
    a minute at most (its datapoints count the requests that waited through the cold start)."""
    return was == 0 or any(m.serving == 0 for m in timeline.minutes[max(0, minute - 2) : minute])


def _idle(minute) -> bool:
    return minute.offered == 0 and minute.waiting <= 1e-9


def _start_minutes(timeline: Timeline, minute: int) -> float:
    """What the start applied at ``minute`` takes: a copy's start-up, plus an instance's launch where the copies
    needed a new instance (the instances grew while it started); an instance's launch and start-up."""
    assumptions = timeline.assumptions
    start, launch = assumptions.startup_seconds / 60, assumptions.instance_launch_seconds / 60
    if timeline.setup.shape.kind == "instances":
        return start + launch
    ahead = timeline.minutes[minute : minute + math.ceil(start + launch) + 1]
    grew = max((m.instances for m in ahead), default=0) > timeline.minutes[minute - 1].instances
    return start + launch if grew else start


def _scale_in_cooldown_minutes(target: ScalableTarget) -> float:
    """The longest cooldown of the policies that scale in, with the service's defaults (autoscaling.py)."""
    tracking_default = VARIANT_DEFAULT_COOLDOWN_SECONDS if target.unit == "instances" else 0
    seconds = [
        tracking_default if policy.scale_in_cooldown_seconds is None else policy.scale_in_cooldown_seconds
        for policy in target.target_tracking
        if not policy.disable_scale_in
    ] + [
        STEP_DEFAULT_COOLDOWN_SECONDS if policy.cooldown_seconds is None else policy.cooldown_seconds
        for policy in target.step_policies
        if _scales_in(policy)
    ]
    return max(seconds, default=0) / 60


def reversal_cost_usd(timeline: Timeline, found: list[Reversal]) -> float:
    """The starts thrown away, at a unit's share of its instance's price."""
    setup = timeline.setup
    unit_minutes = sum(reversal.units * reversal.start_minutes for reversal in found)
    return unit_minutes / 60 * setup.price_per_instance_hour / setup.shape.units_per_instance


def _quiet(timeline: Timeline, found: list[Reversal], seen: Outcome) -> bool:
    return reversal_cost_usd(timeline, found) <= REVERSAL_COST_SHARE * seen.cost_usd + 1e-9


def _no_oscillation(timeline: Timeline, seen: Outcome) -> Verdict:
    """Judged by what reversals of capacity cost (``reversals``), whatever the load did: each pays a whole start
    for capacity given back too soon. Above REVERSAL_COST_SHARE of the trace's bill they fail, with the change
    that stops them, simulated."""
    name = f"never oscillates (reversals throw away starts worth at most {REVERSAL_COST_SHARE:.0%} of the bill)"
    changes = sum(
        1 for before, m in zip(timeline.minutes, timeline.minutes[1:], strict=False) if m.desired != before.desired
    )
    found = reversals(timeline)
    if not found:
        return Verdict(name, True, f"{changes} capacity change(s), none reversed within a start or a scale-in cooldown")
    detail = f"{changes} capacity change(s); {describe_reversals(timeline, found, seen)}"
    if _quiet(timeline, found, seen):
        return Verdict(name, True, detail)
    return Verdict(name, False, detail, suggest=lambda: _fix_for_reversals(timeline, seen, found))


def describe_reversals(timeline: Timeline, found: list[Reversal], seen: Outcome) -> str:
    unit = timeline.setup.target.unit
    back = [f"{r.released}->{r.started}" for r in found if r.came_back]
    gone = [f"{r.started}->{r.released}" for r in found if not r.came_back]
    parts = []
    if back:
        parts.append(f"{len(back)} given back and asked for again within a start (minutes {', '.join(back[:6])})")
    if gone:
        parts.append(
            f"{len(gone)} launched and given back before serving a scale-in cooldown (minutes {', '.join(gone[:6])})"
        )
    cost = reversal_cost_usd(timeline, found)
    share = cost / seen.cost_usd if seen.cost_usd else 0.0
    unit_minutes = sum(r.units * r.start_minutes for r in found)
    waited = sum(r.waited for r in found)
    return (
        f"{len(found)} reversal(s): {'; '.join(parts)}; the starts thrown away: {unit_minutes:,.0f} "
        f"{one_unit(unit)}-minutes, ${cost:,.2f}, {share:.1%} of the trace's ${seen.cost_usd:,.2f}; "
        f"{waited:,.0f} request(s) waited or were lost while capacity came back"
    )


def _fix_for_reversals(timeline: Timeline, seen: Outcome, found: list[Reversal]) -> str:
    """The cheapest change, simulated on the same trace and readings, whose reversals pass and which keeps the
    SLO's attainment (or loses no more than today): a longer scale-in cooldown, more headroom (a lower
    concurrency target), a higher floor. Not more scale-in evaluation periods: target tracking's scale-in alarm
    is the service's ("Application Auto Scaling creates and manages the CloudWatch alarms that invoke the scaling
    policy", https://docs.aws.amazon.com/autoscaling/application/userguide/target-tracking-scaling-policy-overview.html)
    and TargetTrackingScalingPolicyConfiguration has none to set (CloudFormation resource schema of
    AWS::ApplicationAutoScaling::ScalingPolicy, as cfn-lint ships it: CustomizedMetricSpecification, DisableScaleIn,
    PredefinedMetricSpecification, ScaleInCooldown, ScaleOutCooldown, TargetValue)."""
    setup = timeline.setup
    cooldown = _scale_in_cooldown_minutes(setup.target)
    tried = []
    for key, value, change in _reversal_fixes(timeline, found):
        then_timeline = _timeline_with(timeline, **change)
        then, left = outcome(then_timeline), reversals(then_timeline, cooldown)
        keeps = _meets(then, setup) or then.share(then.lost) <= seen.share(seen.lost) + 1e-9
        tried.append((key, value, then, left, keeps and _quiet(then_timeline, left, then)))
    said = "; ".join(
        f"{setup.spell(key, value)}: {len(left)} reversal(s), {_priced(then, seen)}"
        for key, value, then, left, _ in tried
    )
    passing = [attempt for attempt in tried if attempt[4]]
    if not passing:
        return f"no change tried stops them on this trace: {said or 'no setting of this target applies'}"
    key, value, then, left, _ = min(passing, key=lambda attempt: attempt[2].cost_usd)
    return (
        f"each reversal pays a whole start for capacity given back too soon: set {setup.spell(key, value)}; "
        f"simulated with it: {len(left)} reversal(s), {_describe_try(then, seen).removeprefix('simulated with it: ')}. "
        f"Each tried on this trace: {said}"
    )


def _reversal_fixes(timeline: Timeline, found: list[Reversal]) -> list[tuple[str, float, dict]]:
    """(setting key, value, ``with_changes`` keywords) for each change to try."""
    setup, target = timeline.setup, timeline.setup.target
    tries: list[tuple[str, float, dict]] = []
    if setup.keys.scale_in_cooldown:
        now = _scale_in_cooldown_minutes(target) * 60
        tries += [
            ("scale_in_cooldown", seconds, {"scale_in_cooldown_seconds": seconds})
            for seconds in SCALE_IN_COOLDOWN_STEPS_SECONDS
            if seconds > now
        ]
    concurrency = [
        policy.target_value
        for policy in target.target_tracking
        if policy.query.stat is not None and policy.query.stat.name.startswith("ConcurrentRequests")
    ]
    if concurrency and setup.keys.target:
        values = sorted({round(concurrency[0] * share, 1) for share in HEADROOM_STEPS} - {0.0}, reverse=True)
        tries += [("target", value, {"target_concurrency": value}) for value in values]
    top = min(target.max_capacity, max(timeline.minutes[r.started].desired for r in found))
    tries += [("min_units", floor, {"min_units": floor}) for floor in range(target.min_capacity + 1, top + 1)]
    return tries
