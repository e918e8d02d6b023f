"""What a smoke step reports, and the clock the waiting steps use (injectable for tests)."""

from __future__ import annotations

import random as _random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any

ENDPOINT_IN_SERVICE = "endpoint-in-service"
PLAIN_INVOCATION = "plain-invocation"
STREAMED_INVOCATION = "streamed-invocation"
SPECULATION_ON = "speculation-on"
KPI_METRICS = "kpi-metrics"
ALARMS_OK = "alarms-ok"
# In the order they run.
STEP_NAMES = (ENDPOINT_IN_SERVICE, PLAIN_INVOCATION, STREAMED_INVOCATION, SPECULATION_ON, KPI_METRICS, ALARMS_OK)


class StepStatus(str, Enum):
    OK = "ok"
    FAIL = "FAIL"
    SKIP = "skip"


@dataclass(frozen=True)
class StepResult:
    name: str
    status: StepStatus
    detail: str
    error: Exception | None = field(default=None, compare=False, repr=False)  # what failed it, if an error did
    # An invocation's answer's metrics.speculative_decoding (SpecDecodeMetrics), for the speculation step.
    acceptance: Any = field(default=None, compare=False, repr=False)

    def line(self) -> str:
        return f"{self.status.value:<5}{self.name:<21}{self.detail}"


def ok(name: str, detail: str, *, acceptance: Any = None) -> StepResult:
    return StepResult(name, StepStatus.OK, detail, acceptance=acceptance)


def fail(name: str, detail: str, error: Exception | None = None) -> StepResult:
    return StepResult(name, StepStatus.FAIL, detail, error)


def skip(name: str, detail: str) -> StepResult:
    return StepResult(name, StepStatus.SKIP, detail)


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Timing:
    """Sleeping, both clocks and the retries' jitter in one place, so tests run the polling steps
    (and the invocations' cold-start waits) without waiting."""

    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    utc_now: Callable[[], datetime] = field(default=_utc_now)
    random: Callable[[], float] = _random.random


def poll_until(read, satisfied, *, deadline: float, interval_seconds: float, timing: Timing):
    """``read()`` until ``satisfied(value)`` or ``deadline`` (monotonic) passes; the last value read."""
    while True:
        value = read()
        now = timing.monotonic()
        if satisfied(value) or now >= deadline:
            return value
        timing.sleep(min(interval_seconds, deadline - now))
