"""The scheduled actions a template states (AWS::ApplicationAutoScaling::ScalableTarget ScheduledActions), read into
the grammar's actions (peagle/settings/schedules.py), which say when each runs."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from peagle.settings.schedules import ScheduledAction, ScheduleError


def action_from_template(props: Mapping[str, Any], where: str) -> ScheduledAction:
    """One entry of a ScalableTarget's ``ScheduledActions`` (CloudFormation resource reference,
    AWS::ApplicationAutoScaling::ScalableTarget ScheduledAction: ``ScheduledActionName``, ``Schedule``,
    ``ScalableTargetAction`` {``MinCapacity``, ``MaxCapacity``}, ``StartTime``, ``EndTime``, ``Timezone``)."""
    bounds = props.get("ScalableTargetAction") or {}
    action = ScheduledAction(
        name=str(props.get("ScheduledActionName", where)),
        schedule=str(props.get("Schedule", "")),
        min_capacity=None if bounds.get("MinCapacity") is None else int(bounds["MinCapacity"]),
        max_capacity=None if bounds.get("MaxCapacity") is None else int(bounds["MaxCapacity"]),
        time_zone=str(props.get("Timezone") or "UTC"),
        start=_timestamp(props.get("StartTime"), where),
        end=_timestamp(props.get("EndTime"), where),
    )
    action.check()
    return action


def _timestamp(value: Any, where: str) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ScheduleError(f"{where}: {value!r} is not an ISO 8601 time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
