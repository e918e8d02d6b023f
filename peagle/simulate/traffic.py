"""Traffic traces: requests per minute, built in or from a CSV file.

Built-in shapes are sized from one unit's capacity (``unit_rpm``: max_num_seqs requests at once, each
holding its slot for the assumed request time), so the same shape means the same thing for every
deployment:

- ``idle-burst``: 60 idle minutes, 60 minutes of light use (a third of one unit), 150 idle minutes:
  does a deployment that scales to zero go there, wake when a request comes, and go back?
- ``spike``: 30 minutes at half a unit, 60 minutes at 1.6 x what the deploy's units carry
  (over capacity), 150 minutes at a quarter of a unit: out, then back in, without oscillating?
- ``daily``: 24 hours, a quiet night (5 % of the ceiling) to an afternoon peak (70 % of what the most
  units carry): does capacity follow the curve ahead of the queue?
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from peagle.errors import PeagleError

SHAPES = ("idle-burst", "spike", "daily")


class TrafficError(PeagleError):
    """A trace that cannot be read."""


@dataclass(frozen=True)
class Trace:
    name: str
    requests_per_minute: tuple[float, ...]

    def __len__(self) -> int:
        return len(self.requests_per_minute)


def built_in(shape: str, *, unit_rpm: float, min_units: int, max_units: int) -> Trace:
    if shape == "idle-burst":
        return Trace(shape, (0.0,) * 60 + (unit_rpm / 3,) * 60 + (0.0,) * 150)
    if shape == "spike":
        over = 1.6 * max(1, min_units) * unit_rpm
        return Trace(shape, (unit_rpm / 2,) * 30 + (over,) * 60 + (unit_rpm / 4,) * 150)
    if shape == "daily":
        low, high = 0.05 * max_units * unit_rpm, 0.7 * max_units * unit_rpm
        # Trough at 03:00, peak at 15:00.
        minutes = [
            low + (high - low) * (1 - math.cos(2 * math.pi * (minute - 180) / 1440)) / 2 for minute in range(1440)
        ]
        return Trace(shape, tuple(minutes))
    raise TrafficError(f"unknown traffic shape {shape!r}; built-in shapes: {', '.join(SHAPES)}, or a CSV file")


def from_csv(path: Path) -> Trace:
    """One row per minute: ``requests`` (a header is optional), or ``minute,requests``."""
    try:
        rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
    except OSError as error:
        raise TrafficError(f"cannot read the traffic file {path}: {error.strerror or error}") from None
    values = []
    for number, row in enumerate(rows, start=1):
        cells = [cell.strip() for cell in row if cell.strip()]
        if not cells or cells[0].startswith("#"):
            continue
        try:
            values.append(float(cells[-1]))
        except ValueError:
            if number == 1:
                continue  # a header
            raise TrafficError(
                f"{path}:{number}: {row!r} is not a number of requests; each row is `requests` or `minute,requests`"
            ) from None
        if values[-1] < 0 or not math.isfinite(values[-1]):
            raise TrafficError(f"{path}:{number}: requests per minute must be a finite number >= 0, not {cells[-1]}")
    if not values:
        raise TrafficError(f"{path} has no rows of requests per minute")
    return Trace(path.stem, tuple(values))
