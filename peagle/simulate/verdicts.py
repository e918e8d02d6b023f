"""The properties a timeline must have, each a pass or a fail with what was seen.

Which apply: a target whose floor is zero must wake from zero within the cold-start budget, not pile
copies up while it wakes, return to zero after its idle time and stay there while idle; a target that
can grow must scale out soon after the load outgrows it and come back in; every target must not
oscillate. Thresholds that are our choice, not AWS figures, are named constants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from peagle.simulate.engine import Timeline

# Allowance past the idle time for the last unit to go (cooldowns, alarm windows): our choice.
RETURN_TO_ZERO_SLACK_MINUTES = 20
# A reversal of capacity within this many minutes, while the load moved less than FLAP_LOAD_CHANGE, is
# an oscillation: our choice (the default scale-in cooldown is 15 minutes).
FLAP_WINDOW_MINUTES = 30
FLAP_LOAD_CHANGE = 0.10


@dataclass(frozen=True)
class Verdict:
    name: str
    passed: bool
    detail: str


def verdicts(timeline: Timeline) -> list[Verdict]:
    target = timeline.setup.target
    found = []
    if target.min_capacity == 0:
        found += [
            _wakes_from_zero(timeline),
            _no_pile_up(timeline),
            _returns_to_zero(timeline),
            _stays_at_zero(timeline),
        ]
    if target.max_capacity > max(target.min_capacity, 1) and _load_outgrows(timeline):
        found += [_scales_out(timeline), _scales_in(timeline)]
    found.append(_no_oscillation(timeline))
    return [verdict for verdict in found if verdict is not None]


def _needed(timeline: Timeline, offered: float) -> int:
    setup = timeline.setup
    return min(setup.target.max_capacity, math.ceil(round(offered / setup.unit_rpm(timeline.assumptions), 9)))


def _load_outgrows(timeline: Timeline) -> bool:
    return any(_needed(timeline, minute.offered) > minute.desired for minute in timeline.minutes)


def _wake_episodes(timeline: Timeline) -> list[tuple[int, int | None]]:
    """(first minute refused at zero serving, first minute served after it, or None)."""
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


def _wakes_from_zero(timeline: Timeline) -> Verdict | None:
    episodes = _wake_episodes(timeline)
    if not episodes:
        return None
    budget = timeline.setup.cold_start_budget_seconds / 60
    name = f"wakes from zero within the cold-start budget ({budget:.0f} min)"
    for start, served in episodes:
        if served is None:
            held = [m.desired for m in timeline.minutes[start:]]
            return Verdict(
                name,
                False,
                f"requests from minute {start} were never served; copies requested meanwhile: max {max(held)}, "
                f"{sum(1 for d in held if d == 0)} of {len(held)} minutes at 0",
            )
        if served - start > budget:
            return Verdict(name, False, f"the request at minute {start} waited {served - start} min for capacity")
    waits = ", ".join(f"{served - start} min (from minute {start})" for start, served in episodes)
    return Verdict(name, True, f"served after {waits}")


def _no_pile_up(timeline: Timeline) -> Verdict | None:
    episodes = _wake_episodes(timeline)
    if not episodes:
        return None
    worst = (0, 0, 0)
    for start, served in episodes:
        for minute in timeline.minutes[start : served if served is not None else None]:
            excess = minute.desired - max(1, _needed(timeline, minute.offered))
            if excess > worst[0]:
                worst = (excess, minute.minute, minute.desired)
    name = "asks for no more units than the load needs while waking"
    if worst[0] > 0:
        return Verdict(name, False, f"{worst[2]} {timeline.setup.target.unit} requested at minute {worst[1]}")
    return Verdict(name, True, "one wake-up's worth")


def _idle_stretches(timeline: Timeline) -> list[tuple[int, int]]:
    """[first idle minute, end) of each stretch without traffic after traffic or the deploy."""
    stretches, start = [], None
    for minute in timeline.minutes:
        if minute.offered == 0 and start is None:
            start = minute.minute
        elif minute.offered > 0 and start is not None:
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
        return None
    for start, end in checked:
        zero = next((m.minute for m in timeline.minutes[start:end] if m.desired == 0), None)
        if zero is None or zero - start > bound:
            seen = "never" if zero is None else f"after {zero - start} min"
            return Verdict(name, False, f"idle from minute {start}: back to zero {seen}")
    return Verdict(name, True, ", ".join(f"idle from minute {s}" for s, _ in checked))


def _stays_at_zero(timeline: Timeline) -> Verdict | None:
    started = [
        m.minute
        for previous, m in zip(timeline.minutes, timeline.minutes[1:], strict=False)
        if previous.desired == 0 and m.desired > 0 and previous.offered == 0 and m.offered == 0
    ]
    name = "stays at zero while idle"
    if not any(m.desired == 0 for m in timeline.minutes):
        return None
    if started:
        return Verdict(name, False, f"units requested without traffic at minute(s) {started[:5]}")
    return Verdict(name, True, "no unit requested without a request")


def _scales_out(timeline: Timeline) -> Verdict:
    budget = timeline.setup.reaction_minutes
    name = f"scales out within {budget} min of the load outgrowing capacity"
    worst = 0
    short_since = None
    for minute in timeline.minutes:
        needed = _needed(timeline, minute.offered)
        if needed > minute.desired:
            short_since = minute.minute if short_since is None else short_since
            worst = max(worst, minute.minute - short_since)
        else:
            short_since = None
    peak = max(timeline.minutes, key=lambda m: m.offered)
    reached = max(m.desired for m in timeline.minutes)
    detail = (
        f"longest wait for the capacity the load needs: {worst} min; peak load needs "
        f"{_needed(timeline, peak.offered)} {timeline.setup.target.unit}, most requested {reached}"
    )
    return Verdict(name, worst <= budget, detail)


def _kept_for(timeline: Timeline, offered: float) -> int:
    """The units the policies mean to keep for ``offered``: at the concurrency target when a
    target-tracking policy tracks concurrency (it scales in only under 90 % of it), else full units."""
    targets = [
        policy.target_value
        for policy in timeline.setup.target.target_tracking
        if policy.query.stat is not None and policy.query.stat.name.startswith("ConcurrentRequests")
    ]
    if not targets:
        return _needed(timeline, offered)
    in_flight = offered * timeline.assumptions.request_seconds / 60
    return min(timeline.setup.target.max_capacity, math.ceil(round(in_flight / (0.9 * min(targets)), 9)))


def _scales_in(timeline: Timeline) -> Verdict:
    last = timeline.minutes[-1]
    floor = max(timeline.setup.target.min_capacity, _kept_for(timeline, last.offered))
    peak = max(m.desired for m in timeline.minutes)
    name = "scales back in when the load falls"
    return Verdict(
        name,
        last.desired <= floor or peak == last.desired == floor,
        f"{last.desired} {timeline.setup.target.unit} at the end (the policies keep {floor} for that load; peak {peak})",
    )


def _no_oscillation(timeline: Timeline) -> Verdict:
    changes = [
        (m.minute, m.desired - previous.desired)
        for previous, m in zip(timeline.minutes, timeline.minutes[1:], strict=False)
        if m.desired != previous.desired
    ]
    flaps = []
    for (first, one), (second, other) in zip(changes, changes[1:], strict=False):
        if (one > 0) == (other > 0) or second - first > FLAP_WINDOW_MINUTES:
            continue
        loads = [m.offered for m in timeline.minutes[first : second + 1]]
        mean = sum(loads) / len(loads) or 1.0
        if (max(loads) - min(loads)) / mean <= FLAP_LOAD_CHANGE:
            flaps.append(f"{first}->{second}")
    name = "never oscillates"
    if flaps:
        return Verdict(name, False, f"capacity reversed under steady load at minutes {', '.join(flaps[:6])}")
    return Verdict(name, True, f"{len(changes)} capacity change(s), none reversed under steady load")
