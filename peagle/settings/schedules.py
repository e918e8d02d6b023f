"""Application Auto Scaling scheduled actions: the expression grammar, and when each action runs, minute by minute.

The settings check a schedule with it (peagle/settings/autoscaling.py); `peagle simulate` runs the actions a template
states with it (peagle/simulate/schedules.py reads them from the template).

What a scheduled action does ("How scheduled scaling for Application Auto Scaling works",
https://docs.aws.amazon.com/autoscaling/application/userguide/scheduled-scaling-policy-overview.html):
"At the specified time, Application Auto Scaling scales based on the new capacity values, by comparing
current capacity to the specified minimum and maximum capacity. If current capacity is less than the
specified minimum capacity, Application Auto Scaling scales out (increases capacity) to the specified
minimum capacity. If current capacity is greater than the specified maximum capacity, Application Auto
Scaling scales in (decreases capacity) to the specified maximum capacity." and "A scheduled action sets the
MinCapacity and MaxCapacity to what is specified by the scheduled action": the new bounds stay until
another action changes them, and the scaling policies act within them (ScalableTargetAction,
https://docs.aws.amazon.com/autoscaling/application/APIReference/API_ScalableTargetAction.html: "When the
scheduled action runs, the resource will have at least this much capacity, but it might have more depending
on other settings, such as the target utilization level of a target tracking scaling policy").

The expressions (PutScheduledAction, Schedule,
https://docs.aws.amazon.com/autoscaling/application/APIReference/API_PutScheduledAction.html): "At
expressions - "at(yyyy-mm-ddThh:mm:ss)"; Rate expressions - "rate(value unit)"; Cron expressions -
"cron(fields)"", and "The cron format consists of six fields separated by white spaces: [Minutes] [Hours]
[Day_of_Month] [Month] [Day_of_Week] [Year]" with "the canonical names of the IANA time zones" as
``Timezone`` (UTC when none: "Schedule recurring scaling actions using Application Auto Scaling",
https://docs.aws.amazon.com/autoscaling/application/userguide/scheduled-scaling-using-cron-expressions.html).
The field syntax is EventBridge's ("Cron expressions reference",
https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-scheduled-rule-pattern.html): day-of-week 1-7
or SUN-SAT, month 1-12 or JAN-DEC, wildcards ``, - * ? /``, and "You can't specify the Day-of-month and
Day-of-week fields in the same cron expression. If you specify a value or a * (asterisk) in one of the
fields, you must use a ? (question mark) in the other." ``L``, ``W`` and ``#`` are not modelled here: a
template using them is refused with the action's name rather than simulated wrongly.

Quota ("Quotas for Application Auto Scaling",
https://docs.aws.amazon.com/autoscaling/application/userguide/application-auto-scaling-quotas.html):
"Scheduled actions per scalable target 200", not adjustable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

SCHEDULED_ACTIONS_PER_TARGET = 200  # the quota quoted above
_MONTHS = {
    name: index
    for index, name in enumerate(
        ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], 1
    )
}
_DAYS = {name: index for index, name in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"], 1)}
# (name, lowest, highest, names) of the six fields, in order.
_FIELDS = (
    ("minutes", 0, 59, {}),
    ("hours", 0, 23, {}),
    ("day-of-month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day-of-week", 1, 7, _DAYS),
    ("year", 1970, 2199, {}),
)
_RATE_UNITS = {"minute": 1, "minutes": 1, "hour": 60, "hours": 60, "day": 1440, "days": 1440}


class ScheduleError(ValueError):
    """A scheduled action Application Auto Scaling would refuse, or the simulator cannot read. The settings report it
    as the field's error (peagle/settings/autoscaling.py), the simulator as its input error (peagle/simulate)."""


@dataclass(frozen=True)
class ScheduledAction:
    name: str
    schedule: str  # at(...), rate(...) or cron(...)
    min_capacity: int | None
    max_capacity: int | None
    time_zone: str = "UTC"
    start: datetime | None = None  # StartTime (UTC)
    end: datetime | None = None  # EndTime (UTC)

    def runs_at(self, when: datetime, trace_start: datetime) -> bool:
        """Whether the action runs in the minute starting at ``when`` (UTC). A rate schedule without a
        StartTime counts from ``trace_start`` (the service counts from the action's creation, which a
        trace does not know)."""
        if (self.start and when < self.start) or (self.end and when > self.end):
            return False
        kind, body = _split(self)
        local = when.astimezone(_zone(self))
        if kind == "at":
            moment = _at(self, body)
            return local.replace(tzinfo=None, second=0, microsecond=0) == moment.replace(second=0)
        if kind == "rate":
            every = _rate_minutes(self, body)
            origin = self.start or trace_start
            elapsed = int((when - origin).total_seconds() // 60)
            return elapsed >= 0 and elapsed % every == 0
        return _cron(self, body).matches(local)

    def check(self, *, simulated: bool = True) -> None:
        """Raise ScheduleError if the expression or time zone is one the simulator cannot evaluate; with
        ``simulated`` False, only what Application Auto Scaling itself refuses (``L``, ``W`` and ``#`` pass)."""
        kind, body = _split(self)
        _zone(self)
        if kind == "at":
            _at(self, body)
        elif kind == "rate":
            _rate_minutes(self, body)
        else:
            _cron(self, body, simulated=simulated)


def daily_cron(minute_of_day: int) -> str:
    """The cron expression that runs every day at ``minute_of_day`` (0-1439) in the action's time zone."""
    hours, minutes = divmod(minute_of_day % 1440, 60)
    return f"cron({minutes} {hours} * * ? *)"


@dataclass(frozen=True)
class _Cron:
    fields: tuple[frozenset[int] | None, ...]  # None: any value ("*" or "?")

    def matches(self, local: datetime) -> bool:
        weekday = local.isoweekday() % 7 + 1  # SUN=1 ... SAT=7
        values = (local.minute, local.hour, local.day, local.month, weekday, local.year)
        return all(allowed is None or value in allowed for allowed, value in zip(self.fields, values, strict=True))


def _split(action: ScheduledAction) -> tuple[str, str]:
    match = re.fullmatch(r"\s*(at|rate|cron)\((.*)\)\s*", action.schedule)
    if not match:
        raise ScheduleError(
            f"scheduled action {action.name}: {action.schedule!r} is not at(yyyy-mm-ddThh:mm:ss), rate(value unit) "
            "or cron(minutes hours day-of-month month day-of-week year)"
        )
    return match.group(1), match.group(2).strip()


def _zone(action: ScheduledAction) -> ZoneInfo:
    try:
        return ZoneInfo(action.time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(
            f"scheduled action {action.name}: time zone {action.time_zone!r} is not an IANA name such as "
            "Europe/Berlin or Etc/UTC"
        ) from None


def _at(action: ScheduledAction, body: str) -> datetime:
    try:
        return datetime.strptime(body, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        raise ScheduleError(f"scheduled action {action.name}: at({body}) is not at(yyyy-mm-ddThh:mm:ss)") from None


def _rate_minutes(action: ScheduledAction, body: str) -> int:
    match = re.fullmatch(r"(\d+)\s+(\w+)", body)
    if not match or match.group(2) not in _RATE_UNITS or int(match.group(1)) < 1:
        raise ScheduleError(
            f"scheduled action {action.name}: rate({body}) is not rate(value unit) with a whole value >= 1 and a "
            "unit of minute(s), hour(s) or day(s)"
        )
    return int(match.group(1)) * _RATE_UNITS[match.group(2)]


def _cron(action: ScheduledAction, body: str, *, simulated: bool = True) -> _Cron:
    parts = body.split()
    if len(parts) != len(_FIELDS):
        raise ScheduleError(
            f"scheduled action {action.name}: cron({body}) has {len(parts)} fields; Application Auto Scaling's has "
            "six: minutes hours day-of-month month day-of-week year, e.g. cron(30 6 ? * MON *)"
        )
    if "?" not in (parts[2], parts[4]):
        raise ScheduleError(
            f"scheduled action {action.name}: cron({body}) gives both day-of-month and day-of-week; one of them "
            "must be ? (EventBridge cron reference), e.g. cron(0 7 * * ? *) for every day"
        )
    return _Cron(tuple(_field(action, body, part, spec, simulated) for part, spec in zip(parts, _FIELDS, strict=True)))


def _field(action: ScheduledAction, body: str, text: str, spec: tuple, simulated: bool = True) -> frozenset[int] | None:
    name, low, high, names = spec
    if text in ("*", "?"):
        return None
    if not simulated and ("#" in text or re.fullmatch(r"\d*L|\d+W|LW", text.upper())):
        return None  # valid EventBridge syntax the simulator does not model
    allowed: set[int] = set()
    for item in text.split(","):
        match = re.fullmatch(r"(\*|[A-Za-z0-9]+)(?:-([A-Za-z0-9]+))?(?:/(\d+))?", item)
        if not match or "#" in item or re.fullmatch(r"\d*L|\d+W|LW", item.upper()):
            raise ScheduleError(
                f"scheduled action {action.name}: cron({body}): {name} {item!r} uses syntax the simulator does not "
                "model (L, W and # are not); use values, ranges, lists and steps"
            )
        first, last, step = match.groups()
        start = low if first == "*" else _value(action, body, name, first, low, high, names)
        stop = (
            (high if first == "*" or step else start)
            if last is None
            else _value(action, body, name, last, low, high, names)
        )
        allowed.update(range(start, stop + 1, int(step or 1)))
    return frozenset(allowed)


def _value(action: ScheduledAction, body: str, name: str, text: str, low: int, high: int, names: dict[str, int]) -> int:
    value = names.get(text.upper()) if not text.isdigit() else int(text)
    if value is None or not low <= value <= high:
        raise ScheduleError(
            f"scheduled action {action.name}: cron({body}): {name} {text!r} is outside {low}-{high}"
            + (f" or {list(names)[0]}-{list(names)[-1]}" if names else "")
        )
    return value
