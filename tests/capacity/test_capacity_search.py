"""The capacity search on a deterministic stand-in for a server: the bracketing logic is ours, so a
synthetic attainment curve tests it exactly (the real server is tests/capacity/test_capacity_local.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from peagle.capacity.search import (
    CONVERGED,
    INTERRUPTED,
    MACHINE_BUSY,
    MAX_RATE,
    MIN_RATE,
    SWEPT,
    TIME_BUDGET,
    Measured,
    SearchSettings,
    find_capacity,
)

REQUESTS = 40


class FakeServer:
    """Attainment 1 up to ``knee`` req/s, then falling linearly to 0 at ``knee * (1 + fall)``; a level takes
    its sends plus ``tail`` seconds on a fake clock. ``lucky`` rates pass on their first measurement only."""

    def __init__(self, knee: float, *, fall: float = 1.0, tail: float = 2.0, lucky: tuple[float, ...] = ()):
        self.knee, self.fall, self.tail, self.lucky = knee, fall, tail, set(lucky)
        self.now = 0.0
        self.calls: list[tuple[float, int]] = []

    def clock(self) -> float:
        return self.now

    def attainment(self, rate: float) -> float:
        if rate <= self.knee:
            return 1.0
        return max(0.0, 1 - (rate - self.knee) / (self.knee * self.fall))

    def measure(self, rate: float, repeat: int) -> Measured:
        self.calls.append((rate, repeat))
        share = 1.0 if (rate in self.lucky and repeat == 0) else self.attainment(rate)
        wall = REQUESTS / rate + self.tail
        self.now += wall
        achieved = min(rate, self.knee * 1.5)
        return Measured(rate, achieved, REQUESTS, round(REQUESTS * share), wall)


def settings(**changes) -> SearchSettings:
    values = dict(target_attainment=0.9, requests_per_level=REQUESTS, time_budget_seconds=10_000, start_rate=0.5)
    return SearchSettings(**{**values, **changes})


def test_finds_the_knee_within_the_tolerance():
    server = FakeServer(knee=3.7)
    search = find_capacity(server.measure, settings(), clock=server.clock)
    # attainment 0.9 is met up to 3.7 * 1.1 = 4.07 req/s; the answer is within 10% below that.
    assert search.stop_reason == CONVERGED
    assert 4.07 / 1.1 <= search.last_pass <= 4.07
    assert search.first_fail / search.last_pass <= 1.1
    grown = [step.rate for step in search.steps if step.phase in ("start", "grow")]
    assert grown == [0.5, 1.0, 2.0, 4.0, 8.0]


def test_a_sweep_measures_each_rate_given_once_in_order_and_searches_nothing():
    """--sweep: the levels a service curve needs, below and past the knee, not the knee's bracket."""
    server = FakeServer(knee=3.7)
    search = find_capacity(server.measure, settings(repeats=1), clock=server.clock, rates=[6.0, 1.0, 3.0, 5.0])
    assert search.stop_reason == SWEPT
    assert [(step.rate, step.repeat, step.phase) for step in search.steps] == [
        (6.0, 0, "sweep"),
        (1.0, 0, "sweep"),
        (3.0, 0, "sweep"),
        (5.0, 0, "sweep"),
    ]
    assert search.last_pass == 3.0


def test_repeats_the_deciding_points_and_judges_them_pooled():
    server = FakeServer(knee=3.7)
    search = find_capacity(server.measure, settings(repeats=3), clock=server.clock)
    assert len(search.at(search.last_pass)) == 3
    assert len(search.at(search.first_fail)) == 3  # attainment 0.89: close, so repeated
    assert [rate for rate, repeat in server.calls if repeat].count(search.last_pass) == 2


def test_a_lucky_level_above_the_knee_does_not_pick_the_answer():
    # The first bisection point, 5.657 req/s, truly attains 0.47; its first measurement passes (luck),
    # so it becomes the last pass. Its repeat fails, the pooled verdict (0.74) fails it, and the search
    # goes back below it.
    server = FakeServer(knee=3.7, lucky=(5.657,))
    search = find_capacity(server.measure, settings(), clock=server.clock)
    assert search.at(5.657)[0].attainment == 1.0 and len(search.at(5.657)) == 2
    assert not search.passes(5.657)
    assert search.stop_reason == CONVERGED
    assert 4.07 / 1.1 <= search.last_pass <= 4.07


def test_stops_growing_at_a_saturated_level_and_does_not_repeat_it():
    server = FakeServer(knee=3.0, fall=1e-6)  # a cliff: no request meets the SLO above 3 req/s
    search = find_capacity(server.measure, settings(), clock=server.clock)
    assert max(step.rate for step in search.steps) == 4.0  # nothing measured beyond the first saturated level
    assert search.saturated(search.first_fail) and len(search.at(search.first_fail)) == 1
    assert len(search.at(search.last_pass)) == 2
    assert 3.0 / 1.1 <= search.last_pass <= 3.0


def test_stays_inside_the_time_budget_and_keeps_the_bracket_it_has():
    server = FakeServer(knee=3.7)
    search = find_capacity(server.measure, settings(time_budget_seconds=200), clock=server.clock)
    assert search.stop_reason == TIME_BUDGET
    assert search.elapsed_seconds <= 200
    assert search.steps  # what was measured is kept
    assert search.last_pass is not None


def test_ctrl_c_keeps_what_was_measured():
    server = FakeServer(knee=3.7)

    def measure(rate: float, repeat: int) -> Measured:
        if len(server.calls) == 4:
            raise KeyboardInterrupt
        return server.measure(rate, repeat)

    search = find_capacity(measure, settings(), clock=server.clock)
    assert search.stop_reason == INTERRUPTED
    assert [step.rate for step in search.steps] == [0.5, 1.0, 2.0, 4.0]
    assert search.last_pass == 4.0 and search.first_fail is None


def test_shrinks_when_the_start_rate_already_fails():
    server = FakeServer(knee=0.3)
    search = find_capacity(server.measure, settings(start_rate=2.0), clock=server.clock)
    assert [step.phase for step in search.steps][:4] == ["start", "shrink", "shrink", "shrink"]
    assert search.stop_reason == CONVERGED
    assert 0.33 / 1.1 <= search.last_pass <= 0.33


def test_reports_the_ends_of_the_range():
    never_fails = FakeServer(knee=1e9)
    search = find_capacity(never_fails.measure, settings(max_rate=10), clock=never_fails.clock)
    assert search.stop_reason == MAX_RATE and search.first_fail is None and search.last_pass == 8.0
    always_fails = FakeServer(knee=1e-9)
    search = find_capacity(always_fails.measure, settings(min_rate=0.1), clock=always_fails.clock)
    assert search.stop_reason == MIN_RATE and search.last_pass is None


def test_refuses_settings_out_of_range_all_at_once():
    with pytest.raises(ValueError, match=r"start rate -1: above 0.*growth 1: above 1"):
        find_capacity(lambda rate, repeat: None, settings(start_rate=-1, growth=1))


def test_a_level_fills_its_minimum_length_at_high_rates():
    search_settings = settings(min_level_seconds=20)
    assert search_settings.requests_at(0.5) == REQUESTS  # 40 requests take 80 s at 0.5 req/s
    assert search_settings.requests_at(10) == 200  # 40 would be 4 s of arrivals: one burst


def test_a_level_whose_sender_fell_behind_is_not_a_pass():
    # Every request met the SLO, but only a third of the offered rate went out (a client that cannot
    # keep to the schedule): the server was never offered that rate, so it proves nothing.
    server = FakeServer(knee=3.7)

    def measure(rate: float, repeat: int) -> Measured:
        measured = server.measure(rate, repeat)
        behind = rate >= 2.0
        return replace(measured, achieved_rate=rate / 3) if behind else measured

    search = find_capacity(measure, settings(), clock=server.clock)
    assert search.last_pass < 2.0
    assert search.saturated(2.0) and len(search.at(2.0)) == 1


def test_a_level_adds_its_ramp_to_the_requests_judged():
    search_settings = settings(min_level_seconds=20, ramp_seconds=10)
    assert search_settings.requests_at(0.5) == 5 + REQUESTS
    assert search_settings.requests_at(10) == 100 + 200


class BusySpell(FakeServer):
    """FakeServer whose first ``noisy`` measurements happened on a busy machine."""

    def __init__(self, knee: float, *, noisy: int):
        super().__init__(knee)
        self.noisy = noisy
        self.pauses: list[float] = []

    def measure(self, rate: float, repeat: int) -> Measured:
        measured = super().measure(rate, repeat)
        if self.noisy > 0:
            self.noisy -= 1
            return replace(measured, busy=("other work used 1.90 of 2 cores, above the limit 25% (0.50)",))
        return measured

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def test_a_noisy_level_is_measured_again_and_decides_nothing():
    server = BusySpell(knee=3.7, noisy=2)
    search = find_capacity(server.measure, settings(), clock=server.clock, sleep=server.sleep)
    assert search.stop_reason == CONVERGED and 4.07 / 1.1 <= search.last_pass <= 4.07
    assert [step.rate for step in search.noisy] == [0.5, 0.5]  # kept, never judged
    assert server.calls[:3] == [(0.5, 0), (0.5, 0), (0.5, 0)]  # the same level again, not a repeat of it
    assert server.pauses == [15.0, 15.0]


def test_a_machine_that_stays_busy_stops_the_search_without_a_capacity():
    server = BusySpell(knee=3.7, noisy=100)
    search = find_capacity(server.measure, settings(busy_retries=2), clock=server.clock, sleep=server.sleep)
    assert search.stop_reason == MACHINE_BUSY
    assert search.steps == [] and len(search.noisy) == 3  # the level and its two retries
    assert search.last_pass is None
