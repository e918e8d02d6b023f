"""The window `peagle traffic` reads: the resolution CloudWatch keeps for its start (GetMetricData's
retention), rounding to whole minutes or periods, and the limits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from peagle.traffic.window import TrafficHistoryError, parse_time, plan_window

NOW = datetime(2026, 12, 4, 10, 0, 30, tzinfo=UTC)


def test_a_start_just_inside_15_days_is_read_per_minute():
    start = datetime(2026, 11, 19, 10, 1, 5, tzinfo=UTC)  # 14 days 23:59:25 ago

    window = plan_window(start, start + timedelta(hours=1), now=NOW)

    assert window.period_seconds == 60
    assert window.start == datetime(2026, 11, 19, 10, 1, tzinfo=UTC)  # rounded down to its minute
    assert window.minutes == 61  # the end is rounded up: 11:01:05 -> 11:02


def test_the_start_is_judged_after_rounding_down():
    start = NOW - timedelta(days=15) + timedelta(seconds=1)  # 10:00:31, but minute 0 would be 10:00:00

    with pytest.raises(TrafficHistoryError, match="start at 2026-11-19T10:01:00Z or later"):
        plan_window(start, start + timedelta(hours=1), now=NOW)


def test_a_start_15_days_ago_has_only_5_minute_sums():
    start = NOW - timedelta(days=15)

    with pytest.raises(TrafficHistoryError, match="only 5-minute sums for a start that old"):
        plan_window(start, start + timedelta(hours=1), now=NOW)
    window = plan_window(start, start + timedelta(hours=1), now=NOW, coarse=True)

    assert (window.period_seconds, window.minutes_per_period) == (300, 5)
    assert window.start == datetime(2026, 11, 19, 10, 0, tzinfo=UTC)  # a 5-minute clock interval
    assert window.end == datetime(2026, 11, 19, 11, 5, tzinfo=UTC)


def test_a_start_63_days_ago_has_only_hourly_sums():
    start = NOW - timedelta(days=63)

    window = plan_window(start, start + timedelta(hours=2), now=NOW, coarse=True)

    assert window.period_seconds == 3600
    assert (window.start, window.end) == (
        datetime(2026, 10, 2, 10, 0, tzinfo=UTC),
        datetime(2026, 10, 2, 13, 0, tzinfo=UTC),
    )


def test_a_window_of_15_days_is_the_longest():
    end = datetime(2026, 11, 14, 10, 0, tzinfo=UTC)
    assert plan_window(end - timedelta(days=15), end, now=NOW, coarse=True).minutes == 15 * 1440

    with pytest.raises(TrafficHistoryError, match="one trace covers at most 15 days"):
        plan_window(end - timedelta(days=15, minutes=1), end, now=NOW, coarse=True)


def test_a_time_without_an_offset_is_utc_and_an_offset_is_converted():
    assert parse_time("2026-12-01", flag="--start") == datetime(2026, 12, 1, tzinfo=UTC)
    assert parse_time("2026-12-01T09:30+01:00", flag="--start") == datetime(2026, 12, 1, 8, 30, tzinfo=UTC)
