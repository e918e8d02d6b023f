"""Traffic traces: CSV files read strictly (the first reader ignored the minute column, took any number of
columns, treated any non-numeric first line as a header and failed with a traceback on non-UTF-8), and
the built-in shapes sized from the deployment's units."""

from __future__ import annotations

import pytest

from peagle.simulate.traffic import CARRIED_SHAPES, SHAPES, STRESS_SHAPES, TrafficError, built_in, from_csv


def _csv(tmp_path, text: str | bytes, name: str = "trace.csv"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_minute_column_is_honoured_and_gaps_are_idle_minutes(tmp_path):
    trace = from_csv(_csv(tmp_path, "minute,requests\n5,10\n30,2\n68,1.5\n"))
    assert len(trace) == 69
    assert trace.requests_per_minute[5] == 10 and trace.requests_per_minute[30] == 2
    assert trace.requests_per_minute[68] == 1.5
    assert sum(trace.requests_per_minute) == 13.5
    assert trace.name == "trace"


def test_one_column_rows_are_consecutive_minutes_with_or_without_a_header(tmp_path):
    assert from_csv(_csv(tmp_path, "requests\n1\n2\n\n# a comment\n3\n")).requests_per_minute == (1, 2, 3)
    assert from_csv(_csv(tmp_path, "4\n5\n", "bare.csv")).requests_per_minute == (4, 5)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("minute,requests\n3,1\n1,2\n", "trace.csv:3: minute 1 comes after minute 3; minutes must increase"),
        ("minute,requests\n3,1\n3,2\n", "trace.csv:3: minute 3 comes after minute 3"),
        ("minute,requests,region\n0,1,eu\n", "is neither a header (`requests` or `minute,requests`)"),
        ("0,1,2\n", "trace.csv:1: 3 columns; a row is `requests` or `minute,requests`"),
        ("minute,requests\n0,1\n1\n", "trace.csv:3: 1 columns where the file has 2"),
        ("load\n1\n", "trace.csv:1: 'load' is neither a header"),
        ("requests\n1\nx\n", "trace.csv:3: 'x' is not a number of requests"),
        ("requests\n-1\n", "trace.csv:2: requests per minute must be a finite number >= 0, not -1"),
        ("requests\nnan\n", "must be a finite number >= 0, not nan"),
        ("minute,requests\n1.5,3\n", "trace.csv:2: minute '1.5' is not a whole number >= 0"),
        ("requests\n", "has a header but no rows"),
        ("# nothing\n\n", "has no rows of requests per minute"),
    ],
    ids=[
        "unsorted",
        "duplicate minute",
        "third column header",
        "three columns",
        "ragged row",
        "unknown header",
        "not a number",
        "negative",
        "nan",
        "fractional minute",
        "header only",
        "empty",
    ],
)
def test_bad_traces_say_the_line_and_what_is_allowed(tmp_path, text, message):
    with pytest.raises(TrafficError, match=None) as raised:
        from_csv(_csv(tmp_path, text))
    assert message in str(raised.value)


def test_a_file_that_is_not_utf8_names_the_line(tmp_path):
    with pytest.raises(TrafficError) as raised:
        from_csv(_csv(tmp_path, b"requests\n1\n\xff\xfe2\n"))
    assert "trace.csv:3: not UTF-8 text (byte 0xff)" in str(raised.value)


def test_a_missing_file_is_a_traffic_error(tmp_path):
    with pytest.raises(TrafficError, match="cannot read the traffic file"):
        from_csv(tmp_path / "absent.csv")


@pytest.mark.parametrize("shape", SHAPES)
def test_every_built_in_shape_is_sized_from_the_units(shape):
    one = built_in(shape, unit_rpm=100.0, min_units=1, max_units=4)
    double = built_in(shape, unit_rpm=200.0, min_units=1, max_units=4)
    assert len(one) == len(double) >= 180
    if shape != "sparse":
        assert max(double.requests_per_minute) == pytest.approx(2 * max(one.requests_per_minute))
    assert set(CARRIED_SHAPES) | set(STRESS_SHAPES) == set(SHAPES)


def test_stress_shapes_exceed_what_the_deploy_or_the_maximum_carries_and_carried_ones_stay_within():
    unit = 100.0
    for shape in CARRIED_SHAPES:
        assert max(built_in(shape, unit_rpm=unit, min_units=1, max_units=4).requests_per_minute) <= 4 * unit
    assert max(built_in("over-max", unit_rpm=unit, min_units=1, max_units=4).requests_per_minute) == 6 * unit
    assert max(built_in("flash-crowd", unit_rpm=unit, min_units=1, max_units=4).requests_per_minute) == 10 * unit
    assert built_in("spike", unit_rpm=unit, min_units=1, max_units=4).requests_per_minute[30] == 1.6 * unit
