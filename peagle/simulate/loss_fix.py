"""The fix for requests lost: the smallest change to the scaling's bounds that answers them, found by simulating
it (a retrying client or one unit kept warm, a higher maximum, headroom), and beside a floor kept all day its
alternatives (the maximum alone, more headroom, the floor raised on a schedule), each simulated and priced."""

from __future__ import annotations

import math

from peagle.settings.refs import Door
from peagle.simulate.engine import Setup, Timeline, one_unit
from peagle.simulate.load_need import needed_units, tracked_share
from peagle.simulate.outcomes import Outcome
from peagle.simulate.scale_to_zero import idle_window_fix
from peagle.simulate.scheduled_floor import scheduled_floor
from peagle.simulate.simulated_changes import HEADROOM_STEPS, describe_try, meets, outcome_with, priced, tried


def fix_for_losses(timeline: Timeline, seen: Outcome) -> str:
    """The smallest change to the bounds that answers the requests lost, found by simulating it: a higher
    maximum where the load outgrew it, then headroom (a higher floor) where new units could not start in
    time."""
    if timeline.cancelled:
        return idle_window_fix(timeline, seen)
    warm = _keep_one_warm(timeline, seen)
    if warm is not None:
        return warm
    # Units enough that the load sits at the policies' target, not at full slots (a fleet at full slots never
    # drains the resends of what timed out).
    share = tracked_share(timeline) or 1.0
    change, best = _smallest_bounds_change(timeline, share)
    if best is None:
        return "no change to the bounds helps; lower the load or the scaling target"
    found = _describe_bounds_change(timeline, seen, change, best, share)
    if "min_units" not in change:
        return found
    return _beside_the_floor(timeline, seen, change, best, found)


def _keep_one_warm(timeline: Timeline, seen: Outcome) -> str | None:
    """Where most requests lost were refused while a scale-to-zero target had no copy: a retrying client, or one
    unit kept warm; None otherwise."""
    setup = timeline.setup
    target = setup.target
    refused = seen.refused + (0 if setup.shape.asynchronous else seen.unresolved)
    if not (refused >= seen.lost / 2 and target.min_capacity == 0 and not setup.shape.asynchronous):
        return None
    why = (
        "clients that send once lose every request sent while no copy runs; use a retrying client "
        "(peagle.client waits for the cold start)"
        if timeline.assumptions.clients == "once"
        else "requests waited out the client's cold-start wait "
        f"({timeline.assumptions.cold_start_wait_seconds / 60:.0f} min) for a unit"
    )
    warm = setup.spell("min_units", 1)
    return f"{why}, or keep one {one_unit(target.unit)} warm: set {warm}; {tried(timeline, seen, min_units=1)}"


def _smallest_bounds_change(timeline: Timeline, share: float) -> tuple[dict, Outcome | None]:
    """The first change to the bounds, in turn, whose simulation meets the SLO (else the last tried) and what it
    gives; None for the outcome when there is nothing to try. ``share``: the policies' target as a share of a
    unit's slots, which sizes the maximum tried."""
    target = timeline.setup.target
    lost = [m for m in timeline.minutes if m.lost > 1e-9] or timeline.minutes
    wanted = min(100, max(math.ceil(round(needed_units(timeline, m.offered) / share, 9)) for m in lost))
    maximum = max(wanted, target.max_capacity)
    # Headroom within today's maximum first, then a higher maximum, then both.
    tries = [{"min_units": floor} for floor in range(target.min_capacity + 1, target.max_capacity + 1)]
    tries += [{"max_units": higher} for higher in range(target.max_capacity + 1, maximum + 1)]
    tries += [{"min_units": floor, "max_units": maximum} for floor in range(target.min_capacity + 1, maximum + 1)]
    best, change = None, {}
    for change in tries:
        best = outcome_with(timeline, **change)
        if meets(best, timeline.setup):
            break
    return change, best


def _maximum_change(setup: Setup, change: dict) -> dict:
    """The settings a higher maximum in ``change`` sets: the units, and the instances where they go beyond the
    pool."""
    maximum_change = {key: change[key] for key in ("max_units",) if key in change}
    if "max_units" in change:
        instances = math.ceil(change["max_units"] / setup.shape.units_per_instance)
        if setup.shape.beyond_pool(instances):
            maximum_change["max_instances"] = instances
    return maximum_change


def _describe_bounds_change(timeline: Timeline, seen: Outcome, change: dict, best: Outcome, share: float) -> str:
    """Why each bound in ``change`` moves and the settings that move it, what the simulation then shows, and the
    other lever."""
    setup = timeline.setup
    unit, target = setup.target.unit, setup.target
    said = []
    # At the props door a snippet is the whole prop, so a floor and a maximum are one snippet (two would undo each
    # other); the file's keys are set one by one.
    joint = setup.door is Door.PROPS and "min_units" in change
    maximum_change = _maximum_change(setup, change)
    if "max_units" in change:
        carried = target.max_capacity * setup.unit_rpm(timeline.assumptions) * share
        peak_rpm = max(m.offered for m in timeline.minutes)
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
    if "min_units" in change:
        copy_start = timeline.assumptions.startup_seconds / 60
        took = setup.shape.describe_start(copy_start, copy_start + timeline.assumptions.instance_launch_seconds / 60)
        said.append(
            f"new {unit} serve {took} after they are asked for, and the load outgrew the ones serving sooner: keep "
            f"headroom: set {setup.keys.spell_changes(setup.door, floor_change)}"
        )
    return f"{'; and '.join(said)}; {describe_try(best, seen)}{_other_lever(timeline, seen, change)}"


def _other_lever(timeline: Timeline, seen: Outcome, change: dict) -> str:
    """Beside a floor: losses no longer than a start are carried only by capacity kept ahead; else a lower
    scaling target starts scale-out earlier."""
    setup = timeline.setup
    start = timeline.assumptions.startup_seconds / 60 + timeline.assumptions.instance_launch_seconds / 60
    first, last = seen.lost_minutes or (0, 0)
    if "min_units" in change and last - first + 1 <= start:
        return (
            f"; the losses lasted {last - first + 1} min, no longer than a start: only capacity kept ahead carries "
            "a crowd this short, or accept the loss"
        )
    return (
        f"; or lower {setup.spell('target')} so scale-out starts earlier"
        if setup.keys.target and "min_units" in change
        else ""
    )


def _beside_the_floor(timeline: Timeline, seen: Outcome, change: dict, best: Outcome, found: str) -> str:
    """``found`` (a floor kept all day) and its alternatives side by side, each simulated on this trace: the
    maximum alone, more headroom, the floor raised on a schedule; the cheapest that meets the SLO named."""
    setup = timeline.setup
    maximum = change.get("max_units")
    options: list[tuple[str, Outcome, str]] = []  # (what, what it gives, how to apply it when chosen)
    if maximum:
        options.append((f"the maximum {maximum} alone", outcome_with(timeline, max_units=maximum), ""))
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
    passing = [option for option in options if meets(option[1], setup)]
    side_by_side = "; ".join(f"{words}: {priced(then, seen)}" for words, then, _ in options)
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
    attempt = None
    for share in HEADROOM_STEPS:
        value = round(tracked[0].target_value * share, 1)
        if value <= 0:
            break
        then = outcome_with(timeline, max_units=maximum, target_concurrency=value)
        attempt = (value, then)
        if meets(then, setup):
            break
    return attempt


def _and_max(change: dict) -> str:
    return f" with the maximum {change['max_units']}" if "max_units" in change else ""
