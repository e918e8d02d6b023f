"""Per-period sums -> requests per minute -> the trace CSV `peagle simulate --traffic FILE` reads.

The file is what ``peagle.simulate.traffic.from_csv`` reads strictly: ``#`` comment lines, the header
``minute,requests``, then one row per minute that had a datapoint, minute 0 being the window's start.
Its first line is ``# start: YYYY-MM-DDTHH:MM:SSZ``, the UTC wall-clock time of minute 0. Minutes left
out carry no requests (from_csv's rule); the window's last minute is always written, so the trace is as
long as the window even when its last minutes were idle.

Gaps: SageMaker's page on its metrics says they "are available at a 1-minute frequency" and nowhere
that a minute without requests gets a datapoint of 0 ("Amazon SageMaker AI metrics in Amazon
CloudWatch", https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html); CloudWatch
says "not every expected data point for a metric gets reported to CloudWatch. For example, this can
happen when a connection is lost, a server goes down, or when a metric reports data only intermittently
by design" ("Configuring how CloudWatch alarms treat missing data",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-missing-data.html). So a
minute for which GetMetricData returns no timestamp is read as a minute without requests; it may also be
a minute before the endpoint existed, or one whose datapoint CloudWatch never received: the CSV comments
say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from peagle.traffic.cloudwatch_history import METRIC_NAME, NAMESPACE, STATISTIC, Source
from peagle.traffic.window import Window, utc_text

CSV_HEADER = "minute,requests"


@dataclass(frozen=True)
class MinuteCounts:
    requests: dict[int, float]  # minute of the window -> requests; minutes without a datapoint are absent
    minutes: int  # the window's length

    @property
    def total(self) -> float:
        return sum(self.requests.values())

    def peak(self) -> tuple[int, float]:
        """The busiest minute and its requests (the first one, on a tie)."""
        return max(self.requests.items(), key=lambda item: (item[1], -item[0]), default=(0, 0.0))


def minute_counts(sums: dict[datetime, float], window: Window) -> MinuteCounts:
    """Requests per minute of ``window``: a 1-minute sum as it is; a coarser period's sum spread evenly
    over its minutes. A datapoint's timestamp is the start of its period."""
    per_minute: dict[int, float] = {}
    for timestamp, total in sums.items():
        first = int((timestamp - window.start).total_seconds()) // 60
        if not 0 <= first < window.minutes:
            continue  # CloudWatch answers inside [StartTime, EndTime); never trust that blindly
        share = total / window.minutes_per_period
        for minute in range(first, min(first + window.minutes_per_period, window.minutes)):
            per_minute[minute] = share
    return MinuteCounts(requests=dict(sorted(per_minute.items())), minutes=window.minutes)


def trace_csv(counts: MinuteCounts, *, window: Window, source: Source, region: str) -> str:
    """The CSV text: the ``# start:`` line, comments saying where the counts came from, then the rows."""
    comments = [
        f"start: {utc_text(window.start)}",
        f"source: {NAMESPACE} {METRIC_NAME} ({STATISTIC}) for {source.describe()} ({source.in_dimensions()}), "
        f"region {region}",
        f"window: {utc_text(window.start)} to {utc_text(window.end)} (UTC, end exclusive), {window.minutes} minutes; "
        "minute 0 is the start",
        f"period: {window.period_seconds} s",
    ]
    if window.minutes_per_period > 1:
        comments.append(
            f"spread: CloudWatch keeps only {window.period_seconds}-second sums for a start this old; each sum is "
            f"spread evenly over its {window.minutes_per_period} minutes, so bursts inside a period are lost"
        )
    comments += [
        "gaps: a minute without a row had no Invocations datapoint and counts as no requests (no request came,",
        "the endpoint or component did not exist yet, or CloudWatch received nothing); the last minute is always",
        "written so the trace spans the whole window",
    ]
    rows = dict(counts.requests)
    rows.setdefault(counts.minutes - 1, 0.0)
    lines = [f"# {comment}" for comment in comments] + [CSV_HEADER]
    lines += [f"{minute},{_number(requests)}" for minute, requests in sorted(rows.items())]
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    if value == int(value):
        return str(int(value))
    return f"{value:.6f}".rstrip("0").rstrip(".")
