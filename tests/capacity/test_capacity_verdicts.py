"""A rate's verdict from its levels' attainments and their 95% interval (peagle/capacity/search.py), and the search
treating "cannot tell" as no pass: built from constructed level measurements, no server."""

from __future__ import annotations

import pytest

from peagle.bench.intervals import mean_interval
from peagle.capacity.search import (
    CANNOT_TELL,
    CONVERGED,
    FAIL,
    PASS,
    CapacitySearch,
    Measured,
    SearchSettings,
    Step,
    find_capacity,
    next_step,
)

REQUESTS = 24
TARGET = 0.95


def settings(**changes) -> SearchSettings:
    values = dict(target_attainment=TARGET, requests_per_level=REQUESTS, time_budget_seconds=1e9, repeats=3)
    return SearchSettings(**{**values, **changes})


def measured(rate: float, good: int, *, achieved: float | None = None) -> Measured:
    return Measured(rate, rate if achieved is None else achieved, REQUESTS, good, REQUESTS / rate)


def search_of(levels: dict[float, list[int]], **changes) -> CapacitySearch:
    """A search holding, per rate, one level per good-request count given (repeat i on seed + i)."""
    search = CapacitySearch(settings(**changes))
    for rate, goods in levels.items():
        for repeat, good in enumerate(goods):
            search.steps.append(Step(rate, repeat, "constructed", measured(rate, good), 0.0))
    return search


@pytest.mark.parametrize(
    ("goods", "verdict"),
    [
        ([24, 24, 24], PASS),  # every request met the SLO on every seed: the interval is [100%, 100%]
        ([24, 24, 23], CANNOT_TELL),  # pooled 98.6%, but one seed's 95.8% leaves the interval reaching 92.6%
        ([20, 21, 20], FAIL),  # pooled 84.7%, the interval (78.7%, 90.7%) wholly below
        ([24, 20, 24], CANNOT_TELL),  # pooled 94.4% misses, but the interval reaches 100%: no fail either
        ([23], PASS),  # one level: no interval, its 95.8% decides (provisionally, until repeated)
        ([22], FAIL),
    ],
    ids=["all met", "one seed short", "all below", "pooled miss, wide", "one level meets", "one level misses"],
)
def test_a_rate_passes_only_when_its_interval_lies_at_or_above_the_target(goods, verdict):
    search = search_of({1.0: goods})
    assert search.verdict(1.0) == verdict
    interval = search.attainment_interval(1.0)
    assert interval == mean_interval([good / REQUESTS for good in goods])
    assert search.passes(1.0) == (verdict == PASS)
    assert search.cannot_tell == ([1.0] if verdict == CANNOT_TELL else [])


def test_a_level_whose_sender_fell_behind_fails_the_rate_whatever_its_interval():
    search = search_of({1.0: [24, 24]})
    search.steps.append(Step(1.0, 2, "constructed", measured(1.0, 24, achieved=0.5), 0.0))
    assert search.verdict(1.0) == FAIL


def test_the_capacity_is_the_highest_rate_that_passes_below_one_that_cannot_tell():
    search = search_of({0.5: [24, 24, 24], 1.0: [24, 24, 23], 2.0: [5]})
    assert search.first_fail == 1.0 and search.last_pass == 0.5
    assert search.cannot_tell == [1.0]


def test_a_deciding_pass_that_turns_cannot_tell_moves_the_bracket_down():
    """1.0 req/s passed once, then its repeats straddled the target: the search now bisects below it, between the
    last rate that passes and the one it cannot tell about, instead of converging on it."""
    search = search_of({0.5: [24], 1.0: [24, 24, 23], 1.05: [2]})
    assert search.last_pass == 0.5 and search.first_fail == 1.0
    assert next_step(search) == (0.7071, "bisect")


def test_a_search_over_seeds_that_disagree_near_the_knee_answers_a_rate_that_passes_and_names_the_others():
    """A server that meets the SLO on every seed up to 2 req/s, on two seeds of three up to 3, and on none above:
    the rates between 2 and 3 req/s cannot tell, and the answer is a rate every seed met."""

    def measure(rate: float, repeat: int) -> Measured:
        if rate <= 2.0:
            return measured(rate, REQUESTS)
        if rate <= 3.0:
            return measured(rate, REQUESTS if repeat != 1 else REQUESTS - 3)
        return measured(rate, 4)

    search = find_capacity(measure, settings())
    assert search.stop_reason == CONVERGED
    assert search.verdict(search.last_pass) == PASS and len(search.at(search.last_pass)) == 3
    assert 2.0 / 1.1 <= search.last_pass <= 2.0
    assert search.cannot_tell and all(2.0 < rate <= 3.0 for rate in search.cannot_tell)
    # The rate just above the answer: pooled, its three seeds met the target (69 of 72), so pooling alone passed it.
    assert search.first_fail in search.cannot_tell and len(search.at(search.first_fail)) == 3
    assert search.pooled_attainment(search.first_fail) >= TARGET
