"""The window `peagle traffic` reads, and the resolution CloudWatch still keeps for it.

CloudWatch ages data into coarser periods (GetMetricData, Amazon CloudWatch API Reference,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricData.html):
"Data points with a period of 60 seconds (1-minute) are available for 15 days. Data points with a
period of 300 seconds (5-minute) are available for 63 days. Data points with a period of 3600 seconds
(1 hour) are available for 455 days (15 months)." Which period a request must use is decided by how
old its start is (MetricStat, same reference,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricStat.html): "If the
StartTime parameter specifies a time stamp that is greater than 3 hours ago, you must specify the
period as follows or no data points in that time range is returned: Start time between 3 hours and 15
days ago - Use a multiple of 60 seconds (1 minute). Start time between 15 and 63 days ago - Use a
multiple of 300 seconds (5 minutes). Start time greater than 63 days ago - Use a multiple of 3600
seconds (1 hour)." And GetMetricData's StartTime rounds the same way: "Start time between 15 and 63
days ago - Round down to the nearest 5-minute clock interval ... Start time greater than 63 days ago -
Round down to the nearest 1-hour clock interval."

So a per-minute trace can start at most 15 days ago. An older start is refused unless the user asks
for ``coarse``: then the window is aligned to the coarser period, and each period's sum is later
spread evenly over its minutes (trace_file). Refusing is the default because a spread sum has no
bursts: a 5-minute or hourly average replayed through the scaling policies looks calmer than the
minutes were, and the simulation would pass a schedule the real traffic fails.
"""

from __future__ import annotations

import math
from argparse import ArgumentTypeError
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from peagle.settings.errors import PeagleError

MINUTE = timedelta(minutes=1)


class TrafficHistoryError(PeagleError):
    """The window, the names given, or what CloudWatch holds cannot make a trace."""


@dataclass(frozen=True)
class Resolution:
    period_seconds: int
    kept_for: timedelta  # a start less than this long ago can be read at this period


# The GetMetricData retention quoted above, finest first.
RESOLUTIONS = (
    Resolution(60, timedelta(days=15)),
    Resolution(300, timedelta(days=63)),
    Resolution(3600, timedelta(days=455)),
)
PER_MINUTE = RESOLUTIONS[0]
# The longest window one trace covers: what CloudWatch keeps per minute. A longer stretch of older,
# coarser data is read window by window (and `peagle simulate` replays each trace on its own anyway).
MAX_WINDOW = PER_MINUTE.kept_for


@dataclass(frozen=True)
class Window:
    start: datetime  # UTC, on a whole period: minute 0 of the trace
    end: datetime  # UTC, exclusive (GetMetricData's EndTime: "The value specified is exclusive")
    period_seconds: int

    @property
    def minutes(self) -> int:
        return int((self.end - self.start) / MINUTE)

    @property
    def minutes_per_period(self) -> int:
        return self.period_seconds // 60


def parse_time(text: str, *, flag: str) -> datetime:
    """An ISO 8601 date or time; one without an offset is UTC."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise TrafficHistoryError(
            f"{flag} {text!r} is not an ISO 8601 date or time; give e.g. 2026-12-01T09:00Z, "
            "2026-12-01T09:00+01:00 or 2026-12-01 (UTC unless an offset is given)"
        ) from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utc_text(moment: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ``, the form the trace's ``# start:`` line uses."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def positive_days(text: str) -> int:
    """An argparse type for a window given in whole days (``--days N``), 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise ArgumentTypeError(f"{text!r} is not a whole number of days") from None
    if value < 1:
        raise ArgumentTypeError(f"{value} days: give 1 or more")
    return value


def floor_to(moment: datetime, seconds: int) -> datetime:
    epoch = moment.timestamp()
    return datetime.fromtimestamp(epoch - epoch % seconds, UTC)


def ceil_to(moment: datetime, seconds: int) -> datetime:
    return datetime.fromtimestamp(math.ceil(moment.timestamp() / seconds) * seconds, UTC)


def plan_window(start: datetime, end: datetime, *, now: datetime, coarse: bool = False) -> Window:
    """The window to read: ``start`` rounded down and ``end`` up to whole minutes (whole periods when
    a coarser one is needed), checked against what CloudWatch keeps at ``now``."""
    asked = end - start  # judged before rounding, so `--days 15` is 15 days
    start, end = floor_to(start, 60), ceil_to(end, 60)
    if end <= start:
        raise TrafficHistoryError(
            f"the window ends ({utc_text(end)}) before it starts ({utc_text(start)}); give --end after --start, "
            "or --days N for the last N days"
        )
    if end > ceil_to(now, 60):
        raise TrafficHistoryError(
            f"--end {utc_text(end)} is in the future (now: {utc_text(now)}); give an end up to now, or leave "
            "--end out to read until now"
        )
    if asked > MAX_WINDOW:
        raise TrafficHistoryError(
            f"the window is {_span(asked)} long; one trace covers at most {MAX_WINDOW.days} days (what "
            "CloudWatch keeps per minute); read a longer stretch as several windows of up to "
            f"{MAX_WINDOW.days} days"
        )
    age = now - start
    resolution = next((kept for kept in RESOLUTIONS if age < kept.kept_for), None)
    if resolution is None:
        raise TrafficHistoryError(
            f"--start {utc_text(start)} is {_span(age)} ago; CloudWatch keeps no datapoint older than "
            f'{RESOLUTIONS[-1].kept_for.days} days (GetMetricData: hourly data points "are available for 455 '
            'days"); choose a later start'
        )
    if resolution is not PER_MINUTE and not coarse:
        earliest = floor_to(now - PER_MINUTE.kept_for, 60) + MINUTE
        raise TrafficHistoryError(
            f"--start {utc_text(start)} is {_span(age)} ago; CloudWatch keeps 1-minute datapoints for "
            f"{PER_MINUTE.kept_for.days} days and only {resolution.period_seconds // 60}-minute sums for a start "
            f"that old (GetMetricData, Amazon CloudWatch API Reference). For a per-minute trace start at "
            f"{utc_text(earliest)} or later (--days {PER_MINUTE.kept_for.days - 1} at most); or pass --coarse to "
            f"read {resolution.period_seconds // 60}-minute sums spread evenly over their minutes (bursts "
            "inside a period are lost, so the replay is calmer than the real minutes were)"
        )
    if resolution is PER_MINUTE:
        return Window(start, end, PER_MINUTE.period_seconds)
    period = resolution.period_seconds
    return Window(floor_to(start, period), ceil_to(end, period), period)


def _span(length: timedelta) -> str:
    days = length / timedelta(days=1)
    if days >= 1:
        return f"{days:.1f} days"
    return f"{length / timedelta(hours=1):.1f} hours"
