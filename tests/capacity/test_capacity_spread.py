"""The report's figures with their spread: each rate's levels pooled and as a mean with its 95% interval
(peagle/bench/intervals.py), the rates the repeats could not tell about, and the answer's own interval, written
from a search on a stand-in whose figures move between seeds (no server). The format stays the one `peagle
simulate --service-curve` reads: new fields only."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from capacity_stand_in import KNEE, REQUESTS, level

from peagle.bench.intervals import mean_interval
from peagle.capacity.report import Context, write_report
from peagle.capacity.search import SearchSettings, find_capacity
from peagle.catalog import Slo
from peagle.simulate.service_curve import curve_from_levels

SHORT = 4  # requests one seed in three misses at rates just below the stand-in's knee


def on_seeds(rate: float, repeat: int):
    """The stand-in's level on arrival seed 10 + repeat: between 2 req/s and the knee the second seed misses SHORT
    requests, and TTFT p90 moves by 10 ms a seed."""
    measured = level(rate, repeat)
    good = measured.good_requests - (SHORT if 2 < rate <= KNEE and repeat == 1 else 0)
    record = replace(
        measured.detail,
        seed=10 + repeat,
        good_requests=good,
        attainment=good / REQUESTS,
        goodput=good / measured.wall_seconds,
        ttft_p90=measured.detail.ttft_p90 + 0.01 * repeat,
    )
    return replace(measured, good_requests=good, detail=record)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    settings = SearchSettings(target_attainment=0.95, requests_per_level=REQUESTS, time_budget_seconds=1e9, repeats=3)
    search = find_capacity(on_seeds, settings)
    out = tmp_path_factory.mktemp("spread")
    context = Context(
        date="2026-12-06",
        target="stand-in",
        speculative_tokens="4",
        slo_text="95% of requests: TTFT <= 1 s",
        slo_source="--slo",
        sampling="temperature 0 (test), max_tokens 64",
        settings={"repeats": 3},
        headroom=0.8,
    )
    write_report(search, context, out)
    return search, json.loads((out / "capacity.json").read_text()), (out / "capacity.md").read_text()


def test_each_rate_is_reported_pooled_and_as_a_mean_with_its_interval_over_the_seeds(written):
    search, document, _ = written
    assert document["confidence"] == 0.95
    rates = {entry["offered_rate"]: entry for entry in document["rates"]}
    assert sorted(rates) == search.rates
    told = rates[2.0]
    assert (told["verdict"], told["runs"], told["seeds"]) == ("pass", 3, [10, 11, 12])
    assert told["ttft_p90"]["mean"] == pytest.approx(0.41)
    assert (told["ttft_p90"]["low"], told["ttft_p90"]["high"]) == pytest.approx(
        (mean_interval([0.40, 0.41, 0.42]).low, mean_interval([0.40, 0.41, 0.42]).high)
    )
    untold = rates[search.first_fail]
    shares = [1.0, (REQUESTS - SHORT) / REQUESTS, 1.0]
    assert untold["verdict"] == "cannot tell"
    assert untold["attainment"]["pooled"] == pytest.approx(sum(shares) / 3)
    assert (untold["attainment"]["low"], untold["attainment"]["high"]) == pytest.approx(
        (mean_interval(shares).low, mean_interval(shares).high)
    )


def test_the_answer_is_a_rate_that_passed_and_the_rates_it_could_not_tell_are_named(written):
    search, document, markdown = written
    assert document["capacity"]["rate_per_instance"] == 2.0
    assert document["capacity"]["spread"]["verdict"] == "pass" and document["capacity"]["spread"]["runs"] == 3
    assert document["cannot_tell_rates"] == search.cannot_tell and 2 < min(search.cannot_tell) <= KNEE
    named = ", ".join(f"{rate:g}" for rate in search.cannot_tell)
    assert f"**Could not tell** whether these rates meet the target: {named} requests/s" in markdown
    assert "How sure: its 3 levels ran on arrival seeds 10, 11, 12" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith(f"| {search.first_fail:g} | 3 (10, 11, 12)"))
    assert "| cannot tell | 93.3 (mean 93.3 ± " in row


def test_the_levels_keep_their_format_so_the_service_curve_still_reads_them(written):
    _, document, _ = written
    assert {"schema", "speculative_tokens", "capacity", "first_fail_rate", "points", "noisy_points"} <= set(document)
    assert all(point["seed"] == 10 + point["repeat"] for point in document["points"])
    curve = curve_from_levels(
        document["points"], slo=Slo(ttft_seconds=1.0, attainment=0.95), output_tokens=64, source="test"
    )
    assert curve is not None and len(curve.points) == len({point["offered_rate"] for point in document["points"]})
