"""The properties a timeline must have, each a pass or a fail with what was seen and, for a failure, the
setting to change with the value the simulation suggests (checked by simulating the change).

From the users' seat first: the share of requests answered (on time or after a cold start) must reach
the SLO's attainment, whatever the capacity did; a request woken for must be answered within the
cold-start budget; a unit started for waiting requests must not be removed before it serves. Then the
machinery: wake from zero without piling units up, return to zero and stay there while idle, scale out
soon after the load outgrows capacity, give back what the load no longer needs, never oscillate.
Thresholds that are our choice, not AWS figures, are named constants.

Here: what users got and following the load. Beside it: scale_to_zero (waking from zero and returning to it),
oscillation (reversals of capacity), loss_fix and scheduled_floor (the fix for requests lost), and
simulated_changes (a setting changed and the trace simulated again, which every fix reads).
"""

from __future__ import annotations

import math

from peagle.simulate.engine import Setup, Timeline, one_unit
from peagle.simulate.load_need import Load, capped_units, kept_for, load_of, load_outgrows, needed_units
from peagle.simulate.loss_fix import fix_for_losses
from peagle.simulate.oscillation import no_oscillation
from peagle.simulate.outcomes import Outcome, outcome
from peagle.simulate.scale_to_zero import scale_to_zero_verdicts
from peagle.simulate.scaling_template import ScalableTarget
from peagle.simulate.verdict import Verdict

# Minutes past the scale-in window and its cooldown that unneeded capacity may stay: our choice.
GIVE_BACK_SLACK_MINUTES = 5
# Target tracking's managed low alarm waits this long before it scales in (autoscaling.TRACKING_ALARMS).
TRACKING_SCALE_IN_MINUTES = 15


def verdicts(timeline: Timeline, seen: Outcome | None = None) -> list[Verdict]:
    seen = seen or outcome(timeline)
    target = timeline.setup.target
    found = [_answers(timeline, seen), _slo_not_checked(timeline, seen)]
    if target.min_capacity == 0:
        found += scale_to_zero_verdicts(timeline)
    if target.max_capacity > max(target.min_capacity, 1) and load_outgrows(timeline):
        found.append(_scales_out(timeline))
    found += [_gives_back(timeline), no_oscillation(timeline, seen)]
    return [verdict for verdict in found if verdict is not None]


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
    return Verdict(name, False, detail, suggest=lambda: fix_for_losses(timeline, seen))


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


# --- following the load -----------------------------------------------------------------------------


def _scales_out(timeline: Timeline) -> Verdict:
    budget = timeline.setup.reaction_minutes
    name = f"scales out within {budget} min of the load outgrowing capacity"
    worst = 0
    short_since = None
    for minute in timeline.minutes:
        if capped_units(timeline, minute.offered) > minute.desired:
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
