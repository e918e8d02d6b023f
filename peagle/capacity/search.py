"""The search for capacity at the SLO: the highest offered request rate whose SLO attainment still
meets the target, from measurements the caller makes (``measure(rate, repeat)``).

It grows the rate geometrically from ``start_rate`` until a level fails (or, when the first level
already fails, shrinks it until one passes), then bisects the bracket (geometric midpoint) until
``first fail / last pass <= 1 + tolerance``. The two points that decide the answer, the last pass and
the first fail, are measured ``repeats`` times (the caller gives each repeat its own prompt and arrival
seed) and judged by the 95% interval of their attainments (peagle/bench/intervals.py: Student t over the
repeats), so one lucky or unlucky level does not pick the answer. A rate passes when its pooled attainment
meets the target and the interval lies at or above it, fails when the pooled attainment misses and the
interval lies below it, and otherwise the search cannot tell, which is no pass: the capacity is the highest
rate that passes. A rate measured once has no interval: its pooled value decides, provisionally, until it
becomes a deciding point and is repeated. A re-measured point that changes its verdict moves the bracket
and the search goes on. A fail that is clearly saturated (attainment far below the target, or the
achieved rate well below the offered one) is not repeated: noise does not turn it into a pass. A
level whose sender fell that far behind its schedule is never a pass, whatever its attainment: the
server was offered a lower rate than the level is filed under.

Every level is checked against the time budget before it starts (its expected length: requests over
rate plus the tail the levels so far took to drain), so the search stops inside the budget with the
bracket it has. Ctrl-C (KeyboardInterrupt) ends it the same way, keeping every point measured.

A level measured on a busy machine (``Measured.busy``: other work beside the server, or a sender behind
its schedule; peagle/bench/host_conditions.py) decides nothing: it is kept apart (``noisy``), the level
is measured again after a pause, and when it is still noisy after ``busy_retries`` the search stops
(MACHINE_BUSY) and publishes no capacity, as a figure from a busy machine would measure the machine.

Nothing here talks to a server, so the logic is tested on a stand-in (tests/capacity/test_search.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from peagle.bench.intervals import Interval, mean_interval

# Why the search stopped.
CONVERGED = "converged"
TIME_BUDGET = "time budget"
INTERRUPTED = "interrupted"
MAX_RATE = "max rate"
MIN_RATE = "min rate"
MACHINE_BUSY = "machine busy"
SWEPT = "swept"  # --sweep: every rate given measured (``repeats`` times), no search

# A rate's verdict against the target attainment.
PASS = "pass"
FAIL = "fail"
CANNOT_TELL = "cannot tell"  # the interval of its repeats' attainments straddles the target

# Clearly saturated: attainment below this share of the target, or the achieved rate below this share of
# the offered one (the server, or the sender, no longer keeps up).
SATURATED_ATTAINMENT_SHARE = 0.5
SATURATED_ACHIEVED_SHARE = 0.8


@dataclass(frozen=True)
class Measured:
    """One level: ``requests`` sent at ``offered_rate``, of which ``good_requests`` met every bound."""

    offered_rate: float
    achieved_rate: float
    requests: int
    good_requests: int
    wall_seconds: float
    detail: Any = None  # what the caller wants kept with the point (capacity.json's record)
    busy: tuple[str, ...] = ()  # why it was measured on a busy machine; empty when quiet

    @property
    def attainment(self) -> float:
        return self.good_requests / self.requests if self.requests else 0.0


@dataclass(frozen=True)
class SearchSettings:
    target_attainment: float
    requests_per_level: int
    time_budget_seconds: float
    start_rate: float = 0.5
    growth: float = 2.0
    tolerance: float = 0.10  # stop bisecting once first fail / last pass <= 1 + tolerance
    repeats: int = 2  # measurements of each deciding point
    max_rate: float = 1000.0
    min_rate: float = 0.01
    # A level lasts at least this long (more requests at high rates): a few seconds of Poisson arrivals
    # are one burst or one lull, and a queue needs time to build before it shows in the latencies.
    min_level_seconds: float = 0.0
    # Each level first sends this long of arrivals that are not judged (the server filling up from idle).
    ramp_seconds: float = 0.0
    # A noisy level is measured again this many times, each after busy_pause_seconds, before the search stops.
    busy_retries: int = 2
    busy_pause_seconds: float = 15.0

    def requests_at(self, rate: float) -> int:
        """Requests sent at a level of ``rate``: the ramp's, then --requests-per-level judged, or more to
        fill min_level_seconds."""
        judged = max(self.requests_per_level, math.ceil(rate * self.min_level_seconds))
        return math.ceil(rate * self.ramp_seconds) + judged

    def problems(self) -> list[str]:
        """Every setting out of range, each saying what was given and what is allowed."""
        checks = [
            (0 < self.target_attainment <= 1, f"target attainment {self.target_attainment:g}: above 0 and at most 1"),
            (self.requests_per_level >= 1, f"requests per level {self.requests_per_level}: at least 1"),
            (self.time_budget_seconds > 0, f"time budget {self.time_budget_seconds:g} s: above 0"),
            (self.start_rate > 0, f"start rate {self.start_rate:g}: above 0 requests/s"),
            (self.growth > 1, f"growth {self.growth:g}: above 1"),
            (self.tolerance > 0, f"tolerance {self.tolerance:g}: above 0"),
            (self.repeats >= 1, f"repeats {self.repeats}: at least 1"),
            (self.max_rate >= self.start_rate, f"max rate {self.max_rate:g}: at least the start rate"),
            (0 < self.min_rate <= self.start_rate, f"min rate {self.min_rate:g}: above 0, at most the start rate"),
            (self.min_level_seconds >= 0, f"min level seconds {self.min_level_seconds:g}: 0 or more"),
            (self.ramp_seconds >= 0, f"ramp {self.ramp_seconds:g} s: 0 or more"),
            (self.busy_retries >= 0, f"--busy-retries {self.busy_retries}: 0 or more"),
            (self.busy_pause_seconds >= 0, f"busy pause {self.busy_pause_seconds:g} s: 0 or more"),
        ]
        return [message for ok, message in checks if not ok]


@dataclass(frozen=True)
class Step:
    rate: float
    repeat: int  # 0 for the first measurement at this rate
    phase: str  # start, grow, shrink, bisect, repeat last pass, repeat first fail
    measured: Measured
    elapsed_seconds: float  # since the search began, when this level ended


@dataclass
class CapacitySearch:
    settings: SearchSettings
    steps: list[Step] = field(default_factory=list)
    noisy: list[Step] = field(default_factory=list)  # measured on a busy machine: kept, never judged
    stop_reason: str = CONVERGED
    elapsed_seconds: float = 0.0

    def at(self, rate: float) -> list[Measured]:
        return [step.measured for step in self.steps if step.rate == rate]

    def pooled_attainment(self, rate: float) -> float:
        points = self.at(rate)
        requests = sum(point.requests for point in points)
        return sum(point.good_requests for point in points) / requests if requests else 0.0

    def attainment_interval(self, rate: float) -> Interval:
        """The mean of the levels' attainments at ``rate`` and its 95% interval over them."""
        return mean_interval([point.attainment for point in self.at(rate)])

    def verdict(self, rate: float) -> str:
        """PASS, FAIL or CANNOT_TELL. A level whose sender fell far behind its schedule measured a lower rate
        than the one it is filed under: the rate fails outright. Otherwise the pooled attainment says which
        side of the target the rate is on, and the interval of the levels' attainments whether the repeats
        are sure of it (one level has no interval: its value decides)."""
        points = self.at(rate)
        if not points or any(_sender_behind(point) for point in points):
            return FAIL
        target = self.settings.target_attainment
        meets = self.pooled_attainment(rate) >= target
        interval = self.attainment_interval(rate)
        if interval.low is None or interval.high is None:
            return PASS if meets else FAIL
        if meets and interval.low >= target:
            return PASS
        if not meets and interval.high < target:
            return FAIL
        return CANNOT_TELL

    def passes(self, rate: float) -> bool:
        return self.verdict(rate) == PASS

    @property
    def cannot_tell(self) -> list[float]:
        """The rates whose repeats could not say whether they meet the target."""
        return [rate for rate in self.rates if self.verdict(rate) == CANNOT_TELL]

    def saturated(self, rate: float) -> bool:
        return any(_saturated(point, self.settings) for point in self.at(rate))

    @property
    def rates(self) -> list[float]:
        return sorted({step.rate for step in self.steps})

    @property
    def first_fail(self) -> float | None:
        """The lowest rate that did not pass: it failed, or its repeats could not tell."""
        return next((rate for rate in self.rates if not self.passes(rate)), None)

    @property
    def last_pass(self) -> float | None:
        """The capacity: the highest passing rate below the first failing one."""
        ceiling = self.first_fail
        below = [rate for rate in self.rates if self.passes(rate) and (ceiling is None or rate < ceiling)]
        return max(below) if below else None

    @property
    def converged(self) -> bool:
        return self.stop_reason == CONVERGED

    def bracket_width(self) -> float | None:
        low, high = self.last_pass, self.first_fail
        return high / low - 1 if low and high else None


_VERDICT_WORDS = {PASS: "meets", FAIL: "misses", CANNOT_TELL: "cannot tell whether it meets"}


def _spread(search: CapacitySearch, rate: float) -> str:
    """ ", mean 95.8% ± 17.9% over 3 levels": the levels' attainments at ``rate`` and their interval."""
    interval = search.attainment_interval(rate)
    half = interval.half_width
    return "" if half is None else f", mean {interval.mean:.1%} ± {half:.1%} over {interval.runs} levels"


def _sender_behind(point: Measured) -> bool:
    return point.achieved_rate < point.offered_rate * SATURATED_ACHIEVED_SHARE


def _saturated(point: Measured, settings: SearchSettings) -> bool:
    return point.attainment < settings.target_attainment * SATURATED_ATTAINMENT_SHARE or _sender_behind(point)


def _rounded(rate: float) -> float:
    """Four significant digits: rates a person can read back and type."""
    return float(f"{rate:.4g}")


def next_step(search: CapacitySearch) -> tuple[float, str] | str:
    """The next (rate, phase) to measure, or why the search is over."""
    settings = search.settings
    if not search.steps:
        return settings.start_rate, "start"
    high, low = search.first_fail, search.last_pass
    if high is None:
        assert low is not None, "steps were measured and none failed, so the highest rate passed"
        rate = _rounded(low * settings.growth)
        return (rate, "grow") if rate <= settings.max_rate else MAX_RATE
    if low is None:
        rate = _rounded(high / settings.growth)
        return (rate, "shrink") if rate >= settings.min_rate else MIN_RATE
    if high / low > 1 + settings.tolerance:
        middle = _rounded(math.sqrt(low * high))
        if low < middle < high:
            return middle, "bisect"
    if len(search.at(low)) < settings.repeats:
        return low, "repeat last pass"
    if len(search.at(high)) < settings.repeats and not search.saturated(high):
        return high, "repeat first fail"
    return CONVERGED


def expected_seconds(rate: float, search: CapacitySearch) -> float:
    """How long a level at ``rate`` should take: its sends, plus the longest drain a level has had."""
    settings = search.settings
    judged = settings.requests_at(rate) - math.ceil(rate * settings.ramp_seconds)
    tails = [step.measured.wall_seconds - step.measured.requests / step.rate for step in search.steps]
    return settings.ramp_seconds + judged / rate + max([0.0, *tails])


def find_capacity(
    measure: Callable[[float, int], Measured],
    settings: SearchSettings,
    *,
    clock: Callable[[], float] = time.monotonic,
    progress: Callable[[str], None] = lambda line: None,
    sleep: Callable[[float], None] = time.sleep,
    rates: Sequence[float] | None = None,
) -> CapacitySearch:
    """Search until converged, out of time, out of range, interrupted or on a busy machine;
    ``measure(rate, repeat)`` runs one level (``repeat`` counts earlier levels at that rate, e.g. for a
    fresh arrival seed)."""
    problems = settings.problems()
    if problems:
        raise ValueError("; ".join(problems))
    search = CapacitySearch(settings)
    started = clock()
    try:
        while True:
            step = next_step(search) if rates is None else _swept(search, rates)
            if isinstance(step, str):
                search.stop_reason = step
                break
            rate, phase = step
            expected = expected_seconds(rate, search)
            remaining = settings.time_budget_seconds - (clock() - started)
            if expected > remaining:
                search.stop_reason = TIME_BUDGET
                progress(
                    f"time budget: a level at {rate:g} req/s would take ~{expected:.0f} s, {max(0.0, remaining):.0f} s left"
                )
                break
            repeat = len(search.at(rate))
            measured = measure(rate, repeat)
            tries = 0
            while measured.busy:
                search.noisy.append(Step(rate, repeat, phase, measured, clock() - started))
                progress(f"{phase}: {rate:g} req/s measured on a busy machine: {'; '.join(measured.busy)}")
                tries += 1
                if tries > settings.busy_retries:
                    break
                progress(
                    f"measuring {rate:g} req/s again in {settings.busy_pause_seconds:g} s ({tries} of {settings.busy_retries})"
                )
                sleep(settings.busy_pause_seconds)
                measured = measure(rate, repeat)
            if measured.busy:
                search.stop_reason = MACHINE_BUSY
                progress(
                    f"machine busy: {rate:g} req/s was noisy {tries} times in a row; stopping without a capacity "
                    "(a figure from a busy machine measures the machine): stop the other work and run again"
                )
                break
            search.steps.append(Step(rate, repeat, phase, measured, clock() - started))
            verdict = _VERDICT_WORDS[search.verdict(rate)]
            pooled = f", pooled {search.pooled_attainment(rate):.1%}{_spread(search, rate)}" if repeat else ""
            if _sender_behind(measured):
                why = " (the sender fell behind its schedule: the rate was not offered, so it counts as a miss)"
            else:
                why = " (saturated)" if _saturated(measured, settings) else ""
            progress(
                f"{phase}: {rate:g} req/s offered, {measured.achieved_rate:.3g} achieved: attainment "
                f"{measured.attainment:.1%}{pooled} {verdict} the target {settings.target_attainment:.0%}{why}"
                f" [{clock() - started:.0f} s]"
            )
    except KeyboardInterrupt:
        search.stop_reason = INTERRUPTED
        progress("interrupted: keeping the levels measured so far")
    search.elapsed_seconds = clock() - started
    return search


def _swept(search: CapacitySearch, rates: Sequence[float]) -> tuple[float, str] | str:
    """--sweep: the next of ``rates`` not measured yet, in the order given, each ``repeats`` times in a row (each
    on its own seed); SWEPT when each has been."""
    levels = [rate for rate in rates for _ in range(search.settings.repeats)]
    done = len(search.steps)
    return (levels[done], "sweep") if done < len(levels) else SWEPT
