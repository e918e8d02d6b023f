"""`peagle capacity --sweep RATES --repeats N` then `--compare FIRST SECOND`: two settings measured on the same seeds
(a stand-in target, no server), compared rate by rate with the interval of their per-seed differences."""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import replace
from types import SimpleNamespace

import pytest
from capacity_stand_in import level

import peagle.capacity.cli as capacity_cli
import peagle.capacity.levels as levels
from peagle.bench.intervals import difference_interval
from peagle.cli import main

# The second setting's goodput against the first's, per repeat (seed): at 2 req/s lower on every seed by about
# 0.1 req/s; at 1 req/s up on two seeds and down on one, by more than the mean.
SECOND_AT = {1.0: (0.05, -0.06, 0.04), 2.0: (-0.10, -0.11, -0.09)}


class FakeClient:
    def generate(self, request):
        return SimpleNamespace(timings=SimpleNamespace(e2e_s=2.0))


def _run(monkeypatch, out, *arguments, shift=None) -> list[tuple[float, int]]:
    """One capacity run on the stand-in; ``shift`` moves its goodput per (rate, repeat). The levels it measured."""
    measured = []

    @contextmanager
    def target(args):
        yield FakeClient(), None, "stand-in"

    def measure_level(client, requests, slo, *, rate, repeat, seed, **_):
        measured.append((rate, repeat))
        point = level(rate, repeat)
        delta = shift[rate][repeat] if shift else 0.0
        return replace(point, detail=replace(point.detail, seed=seed + repeat, goodput=point.detail.goodput + delta))

    monkeypatch.setattr(capacity_cli, "_target", target)
    monkeypatch.setattr(levels, "measure_level", measure_level)
    argv = ["capacity", "--url", "http://stand-in", "--out", str(out), "--seed", "5", *arguments]
    assert main([*argv, "--time-budget", "1e6"]) == 0
    return measured


def test_a_sweep_with_repeats_measures_each_rate_on_that_many_seeds(monkeypatch, tmp_path):
    measured = _run(monkeypatch, tmp_path / "a", "--sweep", "1,2", "--repeats", "3")
    assert measured == [(1.0, 0), (1.0, 1), (1.0, 2), (2.0, 0), (2.0, 1), (2.0, 2)]
    rates = json.loads((tmp_path / "a" / "capacity.json").read_text())["rates"]
    assert [(entry["offered_rate"], entry["seeds"]) for entry in rates] == [(1.0, [5, 6, 7]), (2.0, [5, 6, 7])]


def test_two_runs_on_the_same_seeds_differ_only_beyond_the_paired_interval(monkeypatch, tmp_path, capsys):
    _run(monkeypatch, tmp_path / "first", "--sweep", "1,2", "--repeats", "3")
    _run(monkeypatch, tmp_path / "second", "--sweep", "1,2", "--repeats", "3", shift=SECOND_AT)
    capsys.readouterr()
    argv = ["capacity", "--compare", str(tmp_path / "first"), str(tmp_path / "second" / "capacity.json")]
    assert main([*argv, "--out", str(tmp_path / "compared")]) == 0
    printed = capsys.readouterr().out
    compared = json.loads((tmp_path / "compared" / "comparison.json").read_text())
    by_rate = {entry["offered_rate"]: entry for entry in compared["rates"]}
    assert by_rate[2.0]["goodput"]["verdict"] == "higher"  # the first setting, on every seed
    assert by_rate[1.0]["goodput"]["verdict"] == "cannot tell"
    assert by_rate[1.0]["goodput"]["difference"]["high"] == pytest.approx(
        difference_interval([0.0] * 3, list(SECOND_AT[1.0])).high
    )
    assert by_rate[2.0]["attainment"]["verdict"] == "cannot tell"  # identical on every seed: no difference
    assert " at 1 req/s, goodput: " in printed and "cannot tell" in printed
    assert "paired by seed" in (tmp_path / "compared" / "comparison.md").read_text()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"slo": "90% of requests: TTFT <= 2 s"}, "the runs' slo differ"),
        ({"prompts": "synthetic prompts (buckets long, seed 9)"}, "the runs' prompts differ"),
        ({"schema": "something else"}, "not a capacity run"),
    ],
)
def test_runs_on_different_workloads_are_refused(monkeypatch, tmp_path, capsys, change, message):
    _run(monkeypatch, tmp_path / "first", "--sweep", "1")
    document = json.loads((tmp_path / "first" / "capacity.json").read_text())
    (tmp_path / "other.json").write_text(json.dumps({**document, **change}))
    argv = [
        "capacity",
        "--compare",
        str(tmp_path / "first"),
        str(tmp_path / "other.json"),
        "--out",
        str(tmp_path / "c"),
    ]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_compare_serves_nothing(tmp_path, capsys):
    argv = ["capacity", "--compare", "a", "b", "--url", "http://127.0.0.1:9", "--out", str(tmp_path / "c")]
    assert main(argv) == 2
    assert "--compare reads two stored runs and serves nothing: drop --url" in capsys.readouterr().err
