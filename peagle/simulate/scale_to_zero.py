"""The scale-to-zero verdicts: a request that woke the endpoint is answered within the cold-start budget, a unit
started for waiting requests is not removed before it serves, a wake-up asks for no more than the waiting
requests need, and an idle endpoint returns to zero and stays there. With the fix for a start cancelled by too
short an idle window."""

from __future__ import annotations

import math

from peagle.simulate.engine import Timeline, one_unit
from peagle.simulate.load_need import needed_units
from peagle.simulate.outcomes import Outcome, instances_for, outcome
from peagle.simulate.simulated_changes import tried
from peagle.simulate.verdict import Verdict

# Allowance past the idle time for the last unit to go (cooldowns, alarm windows): our choice.
RETURN_TO_ZERO_SLACK_MINUTES = 20
# A start the idle window must outlast: the wake-up alarm's minute and its action come before it.
IDLE_WINDOW_MARGIN_MINUTES = 2


def scale_to_zero_verdicts(timeline: Timeline) -> list[Verdict | None]:
    """The verdicts of a target whose minimum is zero; None where the timeline gives nothing to judge."""
    return [
        _wait_within_budget(timeline),
        _starts_not_cancelled(timeline),
        _no_pile_up(timeline),
        _returns_to_zero(timeline),
        _stays_at_zero(timeline),
    ]


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
        suggest=lambda: idle_window_fix(timeline, seen),
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
            asked = instances_for(setup, minute.desired)
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


def idle_window_fix(timeline: Timeline, seen: Outcome) -> str:
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
        f"{tried(timeline, seen, idle_minutes=minutes)}"
    )
