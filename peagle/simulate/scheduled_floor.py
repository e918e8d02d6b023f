"""A floor raised on a daily schedule around the minutes a trace lost requests: the cheapest that meets the SLO,
found by simulating it, and the change as the deployment file or the props write it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from peagle.settings.props_values import whole_prop
from peagle.settings.refs import Door
from peagle.settings.schedules import ScheduledAction, daily_cron
from peagle.simulate.engine import Timeline, simulate
from peagle.simulate.outcomes import Outcome, outcome
from peagle.simulate.scaling_template import ScalableTarget
from peagle.simulate.simulated_changes import meets, with_changes

if TYPE_CHECKING:
    from peagle.planning.planner import Plan


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
        (peagle/settings/props_values.py); a props snippet needs the record, which every props-made app carries."""
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
            if meets(then, setup):
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
