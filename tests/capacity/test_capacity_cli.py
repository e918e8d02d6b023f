"""The command around the search, on a stand-in target (no server): the SLO it measures against, Ctrl-C
writing what was measured and exiting 130, and a target that never meets the SLO exiting 1."""

from __future__ import annotations

import json
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from capacity_stand_in import level

import peagle.capacity.cli as capacity_cli
import peagle.capacity.levels as levels
from peagle.cli import EXIT_INTERRUPTED, main


class FakeClient:
    def generate(self, request):  # a warm-up answer: the ramp is sized from its latency
        return SimpleNamespace(timings=SimpleNamespace(e2e_s=2.0))


@pytest.fixture
def stand_in(monkeypatch):
    """The target is a FakeClient; each level is test_report's synthetic one, judged by ``verdicts``."""
    seen = {"slo": None, "calls": 0, "interrupt_at": None}

    @contextmanager
    def target(args):
        yield FakeClient(), None, "stand-in"

    def measure_level(client, requests, slo, *, rate, repeat, **_):
        seen["calls"] += 1
        seen["slo"] = slo
        if seen["calls"] == seen["interrupt_at"]:
            raise KeyboardInterrupt
        return level(rate, repeat)

    monkeypatch.setattr(capacity_cli, "_target", target)
    monkeypatch.setattr(levels, "measure_level", measure_level)
    return seen


def test_the_slo_comes_from_the_deployment_files_plan(stand_in, tmp_path, capsys):
    out = tmp_path / "out"
    assert (
        main(["capacity", "--url", "http://stand-in", "--deployment", "deployments/default.yaml", "--out", str(out)])
        == 0
    )
    assert stand_in["slo"].ttft_seconds == 1.0 and stand_in["slo"].attainment == 0.95  # chatbot's
    document = json.loads((out / "capacity.json").read_text())
    assert document["slo_source"] == "plan of deployments/default.yaml"
    assert document["settings"]["ramp s"] == 3.0  # 1.5 x the warm-up's 2 s
    assert "capacity:" in capsys.readouterr().out


def test_goodput_and_attainment_replace_the_profiles_slo(stand_in, tmp_path):
    argv = ["capacity", "--url", "http://stand-in", "--goodput", "ttft:2000 e2el:30000", "--attainment", "0.9"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    slo = stand_in["slo"]
    assert (slo.ttft_seconds, slo.tpot_seconds, slo.e2e_seconds, slo.attainment) == (2.0, None, 30.0, 0.9)


def test_ctrl_c_writes_the_levels_measured_and_exits_130(stand_in, tmp_path, capsys):
    stand_in["interrupt_at"] = 4
    assert main(["capacity", "--url", "http://stand-in", "--out", str(tmp_path)]) == EXIT_INTERRUPTED
    assert len(json.loads((tmp_path / "capacity.json").read_text())["points"]) == 3
    assert "interrupted" in capsys.readouterr().err
    assert (tmp_path / "capacity-snippet.yaml").is_file()  # 2 req/s met the SLO before Ctrl-C


def test_no_rate_meeting_the_slo_exits_1_with_the_report(stand_in, monkeypatch, tmp_path, capsys):
    argv = ["capacity", "--url", "http://stand-in", "--start-rate", "50", "--max-rate", "100", "--goodput", "ttft:1"]

    def never(client, requests, slo, *, rate, repeat, **_):  # the search shrinks to the min rate, gives up
        measured = level(rate, repeat)
        return type(measured)(rate, rate, measured.requests, 0, measured.wall_seconds, measured.detail)

    monkeypatch.setattr(levels, "measure_level", never)
    assert main([*argv, "--time-budget", "1e6", "--out", str(tmp_path)]) == 1
    assert "no measured rate met the SLO" in capsys.readouterr().err
    assert not (tmp_path / "capacity-snippet.yaml").exists()
    assert "No measured rate met the SLO" in (tmp_path / "capacity.md").read_text()
