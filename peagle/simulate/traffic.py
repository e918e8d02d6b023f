"""Traffic traces: requests per minute, built in or from a CSV file.

Built-in shapes are sized from one unit's capacity (``unit_rpm``: max_num_seqs requests at once, each
holding its slot for the assumed request time) and from the deploy's and the maximum's units, so the
same shape means the same thing for every deployment. Two kinds:

Shapes a deployment should carry at typical start-up times (``peagle simulate`` with them should pass):
- ``idle-burst``: 60 idle minutes, 60 minutes of light use (a third of one unit), 150 idle minutes:
  does a deployment that scales to zero go there, wake when a request comes, and go back?
- ``surge``: 30 minutes at half a unit, an hour rising to 1.6 x what the deploy's units carry, an hour
  there, 90 minutes at a quarter of a unit: out ahead of the queue, then back in, without oscillating?
  (A rise a scaler can follow: with a 75 % target a unit's headroom is a quarter of it, and a new unit
  takes minutes to serve.)
- ``daily``: 24 hours, a quiet night (5 % of the ceiling) to an afternoon peak (70 % of what the most
  units carry): does capacity follow the curve ahead of the queue?
- ``sparse``: six hours of single requests, some after gaps longer than any idle window and some
  soon after a scale-in: is each one answered, and does each wake-up start one unit?
- ``ramp``: three hours rising from 10 % to 90 % of what the maximum carries, half an hour there,
  an hour back down: does scale-out keep ahead of a load that grows slowly?
- ``sawtooth``: four hour-long teeth rising from 30 % to 70 % of what the maximum carries, each
  dropping at once, then an hour at 30 %: does capacity follow without flapping?

Stress shapes (they show a limit; failing them is the honest answer, and the report says what to change):
- ``spike``: 30 minutes at half a unit, then at once 60 minutes at 1.6 x what the deploy's units carry,
  150 minutes at a quarter of a unit: a step no scaler can meet before a new unit serves; headroom can;
- ``flash-crowd``: an hour at half the deploy's units, 5 minutes at 10 x them, two hours at half:
  a crowd shorter than any start-up;
- ``over-max``: 30 minutes at half the deploy's units, an hour at 1.5 x what the maximum carries,
  90 minutes at half: the load the maximum cannot carry.

A CSV trace is read strictly (``from_csv``): one or two columns, a header only if it names them.

Minute 0 has a wall-clock time, which scheduled actions need: a CSV's ``# start: 2026-11-30T00:00:00Z``
comment line (what ``peagle traffic`` writes), else ``peagle simulate --trace-start``, else 00:00 UTC on
Monday 2026-01-05 (``DEFAULT_START``: built-in shapes start at midnight, so the daily shape's trough is at
03:00 UTC).
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from peagle.settings.errors import PeagleError

CARRIED_SHAPES = ("idle-burst", "surge", "daily", "sparse", "ramp", "sawtooth")
STRESS_SHAPES = ("spike", "flash-crowd", "over-max")
SHAPES = CARRIED_SHAPES + STRESS_SHAPES
# sparse: the minutes with one request each. Gaps of 70 and 115 minutes outlast any idle window; gaps of
# 45 and 40 minutes come soon after a scale-in (a wake-up the previous one's cooldown must not block).
SPARSE_MINUTES = (30, 100, 145, 260, 300)
CSV_HEADERS = {("requests",), ("minute", "requests")}
DEFAULT_START = datetime(2026, 1, 5, tzinfo=UTC)  # a Monday, 00:00 UTC
_START_COMMENT = re.compile(r"#\s*start:\s*(\S+)\s*$")


class TrafficError(PeagleError):
    """A trace that cannot be read."""


@dataclass(frozen=True)
class Trace:
    name: str
    requests_per_minute: tuple[float, ...]
    start: datetime = field(default=DEFAULT_START)  # minute 0, UTC

    def __len__(self) -> int:
        return len(self.requests_per_minute)


def built_in(shape: str, *, unit_rpm: float, min_units: int, max_units: int) -> Trace:
    deploy = max(1, min_units) * unit_rpm
    ceiling = max(1, max_units) * unit_rpm
    if shape == "idle-burst":
        return Trace(shape, (0.0,) * 60 + (unit_rpm / 3,) * 60 + (0.0,) * 150)
    if shape == "spike":
        return Trace(shape, (unit_rpm / 2,) * 30 + (1.6 * deploy,) * 60 + (unit_rpm / 4,) * 150)
    if shape == "surge":
        rise = [unit_rpm / 2 + (1.6 * deploy - unit_rpm / 2) * minute / 60 for minute in range(60)]
        return Trace(shape, (unit_rpm / 2,) * 30 + tuple(rise) + (1.6 * deploy,) * 60 + (unit_rpm / 4,) * 90)
    if shape == "daily":
        low, high = 0.05 * ceiling, 0.7 * ceiling
        # Trough at 03:00, peak at 15:00.
        minutes = [
            low + (high - low) * (1 - math.cos(2 * math.pi * (minute - 180) / 1440)) / 2 for minute in range(1440)
        ]
        return Trace(shape, tuple(minutes))
    if shape == "sparse":
        return Trace(shape, tuple(1.0 if minute in SPARSE_MINUTES else 0.0 for minute in range(360)))
    if shape == "ramp":
        low, high = 0.1 * ceiling, 0.9 * ceiling
        up = [low + (high - low) * minute / 180 for minute in range(180)]
        down = [high - (high - low) * minute / 60 for minute in range(60)]
        return Trace(shape, tuple(up + [high] * 30 + down + [low] * 30))
    if shape == "sawtooth":
        tooth = [ceiling * (0.3 + 0.4 * minute / 60) for minute in range(60)]
        return Trace(shape, tuple(tooth * 4 + [0.3 * ceiling] * 60))
    if shape == "flash-crowd":
        return Trace(shape, (deploy / 2,) * 60 + (10 * deploy,) * 5 + (deploy / 2,) * 115)
    if shape == "over-max":
        return Trace(shape, (deploy / 2,) * 30 + (1.5 * ceiling,) * 60 + (deploy / 2,) * 90)
    raise TrafficError(f"unknown traffic shape {shape!r}; built-in shapes: {', '.join(SHAPES)}, or a CSV file")


def from_csv(path: Path) -> Trace:
    """A trace of requests per minute, read strictly.

    Allowed: one row per minute, either ``requests`` (minute 0, 1, 2, ... in order) or ``minute,requests``
    (minutes are whole numbers >= 0, strictly increasing; minutes left out carry no requests). A first
    row that is not numeric must be a header naming exactly those columns; ``#`` starts a comment line.
    Anything else (other columns, a repeated or earlier minute, a negative or non-finite count, a file
    that is not UTF-8) is a ``TrafficError`` naming the line and what is allowed.
    """
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as error:
        raise TrafficError(f"cannot read the traffic file {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        line = path.read_bytes()[: error.start].count(b"\n") + 1
        raise TrafficError(
            f"{path}:{line}: not UTF-8 text (byte 0x{path.read_bytes()[error.start]:02x}); save the trace as "
            "UTF-8 CSV with rows `requests` or `minute,requests`"
        ) from None
    rows = [
        (number, [cell.strip() for cell in row])
        for number, row in enumerate(csv.reader(io.StringIO(text)), start=1)
        if row and any(cell.strip() for cell in row) and not row[0].strip().startswith("#")
    ]
    if not rows:
        raise TrafficError(f"{path} has no rows of requests per minute; each row is `requests` or `minute,requests`")
    number, first = rows[0]
    if not _numeric(first[0]):
        if tuple(cell.lower() for cell in first) not in CSV_HEADERS:
            raise TrafficError(
                f"{path}:{number}: {','.join(first)!r} is neither a header (`requests` or `minute,requests`) "
                "nor a row of numbers"
            )
        columns, rows = len(first), rows[1:]
        if not rows:
            raise TrafficError(f"{path} has a header but no rows of requests per minute")
    else:
        columns = len(rows[0][1])
    if columns not in (1, 2):
        raise TrafficError(f"{path}:{rows[0][0]}: {columns} columns; a row is `requests` or `minute,requests`")
    by_minute: dict[int, float] = {}
    last = -1
    for number, cells in rows:
        if len(cells) != columns:
            raise TrafficError(
                f"{path}:{number}: {len(cells)} columns where the file has {columns}; every row is "
                f"{'`requests`' if columns == 1 else '`minute,requests`'}"
            )
        minute = last + 1 if columns == 1 else _minute(path, number, cells[0])
        if minute <= last:
            raise TrafficError(
                f"{path}:{number}: minute {minute} comes after minute {last}; minutes must increase "
                "(sort the file, and give each minute once)"
            )
        by_minute[minute] = _requests(path, number, cells[-1])
        last = minute
    counts = tuple(by_minute.get(minute, 0.0) for minute in range(last + 1))
    return Trace(path.stem, counts, _start(path, text))


def parse_start(text: str, where: str) -> datetime:
    """An ISO 8601 time as minute 0 of a trace (UTC when it names no offset), whole minutes only."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise TrafficError(f"{where}: {text!r} is not an ISO 8601 time such as 2026-11-30T00:00:00Z") from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if moment.second or moment.microsecond:
        raise TrafficError(f"{where}: {text!r} is not on a whole minute; a trace's rows are minutes")
    return moment.astimezone(UTC)


def _start(path: Path, text: str) -> datetime:
    for number, line in enumerate(text.splitlines(), start=1):
        match = _START_COMMENT.match(line.strip())
        if match:
            return parse_start(match.group(1), f"{path}:{number}")
    return DEFAULT_START


def _numeric(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _minute(path: Path, number: int, cell: str) -> int:
    try:
        value = float(cell)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0 and value == int(value)):
        raise TrafficError(f"{path}:{number}: minute {cell!r} is not a whole number >= 0")
    return int(value)


def _requests(path: Path, number: int, cell: str) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise TrafficError(
            f"{path}:{number}: {cell!r} is not a number of requests; each row is `requests` or `minute,requests`"
        ) from None
    if not (math.isfinite(value) and value >= 0):
        raise TrafficError(f"{path}:{number}: requests per minute must be a finite number >= 0, not {cell}")
    return value
