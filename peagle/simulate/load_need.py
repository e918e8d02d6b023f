"""What a timeline's load needs: the units that carry it with every slot busy, and the units the scaling policies
mean to keep for it (what the tracked metrics see)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from peagle.simulate.engine import Timeline


def needed_units(timeline: Timeline, offered: float) -> int:
    """Units that carry ``offered`` requests a minute with every slot busy (not capped at the maximum)."""
    return math.ceil(round(offered / timeline.setup.unit_rpm(timeline.assumptions), 9))


def capped_units(timeline: Timeline, offered: float) -> int:
    return min(timeline.setup.target.max_capacity, needed_units(timeline, offered))


def load_outgrows(timeline: Timeline) -> bool:
    return any(capped_units(timeline, minute.offered) > minute.desired for minute in timeline.minutes)


def tracked_share(timeline: Timeline) -> float | None:
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
