"""Writes the working-day traces `peagle simulate --traffic` reads (docs/simulate.md, "never oscillates"): a working
day of requests per minute, and the same day with +-15 % minute-to-minute noise. Deterministic (seeded); the
committed files are its output:

    .venv/bin/python examples/traces/make_working_day.py

Sized for deployments/default.yaml: one ml.g6e.xlarge carries 384 requests/min with every slot busy (32 slots, 5 s
a request), its maximum of 2 carry 768. The day: a quiet night at 5 % of that maximum, a ramp from 07:00 to 09:00
to 40 % (about one instance at the 75 % concurrency target, the boundary between one and two), a lunch dip to
80 % of it from 12:00 to 13:00, a ramp down from 17:00 to 19:00, and the evening back at night level.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
START = "2026-01-05T00:00:00Z"  # a Monday
MAXIMUM_RPM = 2 * 32 * 60 / 5  # deployments/default.yaml's two instances with every slot busy
NIGHT, DAY, LUNCH = 0.05 * MAXIMUM_RPM, 0.40 * MAXIMUM_RPM, 0.32 * MAXIMUM_RPM
NOISE = 0.15  # each minute's requests times a uniform draw from [1 - NOISE, 1 + NOISE]
SEED = 44


def _between(minute: float, start: float, end: float, low: float, high: float) -> float:
    """A smooth (half-cosine) change from ``low`` at ``start`` to ``high`` at ``end``, in minutes of the day."""
    share = min(1.0, max(0.0, (minute - start) / (end - start)))
    return low + (high - low) * (1 - math.cos(math.pi * share)) / 2


def working_day() -> list[float]:
    """Requests per minute over 24 hours from 00:00 UTC."""
    day = []
    for minute in range(1440):
        if minute < 13 * 60:
            rate = _between(minute, 7 * 60, 9 * 60, NIGHT, DAY)
            rate = min(rate, _between(minute, 12 * 60, 12 * 60 + 15, DAY, LUNCH)) if minute >= 12 * 60 else rate
        elif minute < 17 * 60:
            rate = _between(minute, 13 * 60, 13 * 60 + 15, LUNCH, DAY)
        else:
            rate = _between(minute, 17 * 60, 19 * 60, DAY, NIGHT)
        day.append(rate)
    return day


def noisy(day: list[float], noise: float = NOISE, seed: int = SEED) -> list[float]:
    draw = random.Random(seed)
    return [rate * (1 + draw.uniform(-noise, noise)) for rate in day]


def csv_text(requests: list[float], source: str) -> str:
    lines = [
        f"# start: {START}",
        f"# source: {source} (examples/traces/make_working_day.py)",
        "minute,requests",
    ]
    lines += [f"{minute},{rate:.1f}" for minute, rate in enumerate(requests)]
    return "\n".join(lines) + "\n"


def main() -> None:
    day = working_day()
    (HERE / "working-day.csv").write_text(csv_text(day, "a made-up working day sized for deployments/default.yaml"))
    (HERE / "noisy-working-day.csv").write_text(
        csv_text(noisy(day), f"the same working day with +-{NOISE:.0%} minute-to-minute noise, seed {SEED}")
    )


if __name__ == "__main__":
    main()
