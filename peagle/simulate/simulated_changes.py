"""A setting changed and the same trace simulated again: the setup as if the deployment file said otherwise,
whether the change meets the SLO, and what it gives beside today (the fixes the verdicts suggest read these)."""

from __future__ import annotations

from dataclasses import replace

from peagle.settings.schedules import ScheduledAction
from peagle.simulate.engine import Setup, Timeline, simulate
from peagle.simulate.outcomes import Outcome, outcome
from peagle.simulate.scaling_template import Alarm, ScalableTarget

# More headroom: the concurrency target at these shares of today's, tried in turn (our choice).
HEADROOM_STEPS = (0.75, 0.5, 0.35, 0.25)


def meets(then: Outcome | None, setup: Setup) -> bool:
    return then is not None and then.meets(setup.slo_attainment)


def tried(
    timeline: Timeline,
    seen: Outcome,
    *,
    min_units: int | None = None,
    max_units: int | None = None,
    idle_minutes: int | None = None,
) -> str:
    """The same trace and assumptions with the change: what users then get and what it costs."""
    then = outcome_with(timeline, min_units=min_units, max_units=max_units, idle_minutes=idle_minutes)
    return describe_try(then, seen)


def outcome_with(timeline: Timeline, **changes) -> Outcome:
    return outcome(timeline_with(timeline, **changes))


def timeline_with(timeline: Timeline, **changes) -> Timeline:
    """The same trace and assumptions, simulated with ``changes`` (``with_changes``)."""
    return simulate(with_changes(timeline.setup, **changes), timeline.trace, timeline.assumptions)


def describe_try(then: Outcome, seen: Outcome) -> str:
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
        shape = shape.with_room_for(max_units)
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
        replace(policy, cooldown_seconds=seconds) if scales_in(policy) else policy for policy in target.step_policies
    )
    return replace(target, target_tracking=tracking, step_policies=steps)


def scales_in(policy) -> bool:
    """A step policy that removes units (the light-load one); the scale-to-zero policy sets an exact 0 instead."""
    return policy.adjustment_type != "ExactCapacity" and any(step.adjustment < 0 for step in policy.steps)


def priced(then: Outcome, seen: Outcome) -> str:
    return f"answered {then.answered_share:.1%}, ${then.cost_usd:,.2f} ({then.cost_usd - seen.cost_usd:+,.2f})"
