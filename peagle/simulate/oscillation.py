"""The verdict "never oscillates", judged by what reversals of capacity cost: each start thrown away (capacity
given back and asked for again within a start, or launched and given back within a scale-in cooldown), priced,
and for a failure the cheapest change that stops them, simulated."""

from __future__ import annotations

import math
from dataclasses import dataclass

from peagle.simulate.autoscaling import STEP_DEFAULT_COOLDOWN_SECONDS, VARIANT_DEFAULT_COOLDOWN_SECONDS
from peagle.simulate.engine import Timeline, one_unit
from peagle.simulate.outcomes import Outcome, outcome
from peagle.simulate.scaling_template import ScalableTarget
from peagle.simulate.simulated_changes import HEADROOM_STEPS, describe_try, meets, priced, scales_in, timeline_with
from peagle.simulate.verdict import Verdict

# The starts that reversals of capacity throw away (``reversals``) may cost up to this share of the trace's bill
# before "never oscillates" fails: our choice. A reversal or two are the price of following a load that turns (one
# instance's start thrown away is ~0.5 % of a working day's bill on deployments/default.yaml); past 2 % they are a
# pattern a setting should stop: noise around a capacity boundary, or a scale-in that lands where the next rise
# needs the unit again.
REVERSAL_COST_SHARE = 0.02
# Longer scale-in cooldowns tried, in turn, to stop reversals: our choice, within the deployment file's bound
# (AutoscalingSettings.scale_in_cooldown_seconds, at most 3600).
SCALE_IN_COOLDOWN_STEPS_SECONDS = (1800, 3600)


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
    ahead = timeline.minutes[minute : minute + math.ceil(start + launch) + 1]
    grew = max((m.instances for m in ahead), default=0) > timeline.minutes[minute - 1].instances
    return timeline.setup.shape.start_minutes(start, launch, instances_grew=grew)


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
        if scales_in(policy)
    ]
    return max(seconds, default=0) / 60


def reversal_cost_usd(timeline: Timeline, found: list[Reversal]) -> float:
    """The starts thrown away, at a unit's share of its instance's price."""
    setup = timeline.setup
    unit_minutes = sum(reversal.units * reversal.start_minutes for reversal in found)
    return unit_minutes / 60 * setup.price_per_instance_hour / setup.shape.units_per_instance


def _quiet(timeline: Timeline, found: list[Reversal], seen: Outcome) -> bool:
    return reversal_cost_usd(timeline, found) <= REVERSAL_COST_SHARE * seen.cost_usd + 1e-9


def no_oscillation(timeline: Timeline, seen: Outcome) -> Verdict:
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
        then_timeline = timeline_with(timeline, **change)
        then, left = outcome(then_timeline), reversals(then_timeline, cooldown)
        keeps = meets(then, setup) or then.share(then.lost) <= seen.share(seen.lost) + 1e-9
        tried.append((key, value, then, left, keeps and _quiet(then_timeline, left, then)))
    said = "; ".join(
        f"{setup.spell(key, value)}: {len(left)} reversal(s), {priced(then, seen)}"
        for key, value, then, left, _ in tried
    )
    passing = [attempt for attempt in tried if attempt[4]]
    if not passing:
        return f"no change tried stops them on this trace: {said or 'no setting of this target applies'}"
    key, value, then, left, _ = min(passing, key=lambda attempt: attempt[2].cost_usd)
    return (
        f"each reversal pays a whole start for capacity given back too soon: set {setup.spell(key, value)}; "
        f"simulated with it: {len(left)} reversal(s), {describe_try(then, seen).removeprefix('simulated with it: ')}. "
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
