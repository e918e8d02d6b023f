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
from peagle.cli import main
from peagle.cli_errors import ExitCode


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
    assert main(["capacity", "--url", "http://stand-in", "--out", str(tmp_path)]) == ExitCode.INTERRUPTED
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


def test_a_sweep_writes_the_service_curve_of_its_levels(stand_in, tmp_path):
    """--sweep measures the rates given, once each, and the curve holds each level's figures per unit."""
    from peagle.simulate.service_curve import load_curve

    argv = ["capacity", "--url", "http://stand-in", "--sweep", "1,2,4", "--out", str(tmp_path)]
    assert main([*argv, "--time-budget", "1e6"]) == 0
    curve = load_curve(tmp_path / "service-curve.json")
    assert [point.rate for point in curve.points] == [1.0, 2.0, 4.0]
    assert [point.ttft_p90 for point in curve.points] == [0.4, 0.4, 3.0]  # the stand-in's knee is 2.5 req/s
    assert "K=" in curve.source and curve.ttft_seconds is not None


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--service-curve", "{tmp}/curve.json"], "--service-curve goes with --replay CSV"),
        (["--replay", "{tmp}/bad.csv"], "bad.csv:2: 'x' is not a number of requests"),
        (["--replay", "{tmp}/ok.csv", "--service-curve", "{tmp}/bad.csv"], "not a service curve"),
        (["--sweep", "0.5,x"], "--sweep 0.5,x: request rates separated by commas"),
    ],
    ids=["curve without a trace", "bad trace", "not a curve", "bad sweep"],
)
def test_bad_replay_and_sweep_arguments_exit_2_before_any_server_starts(stand_in, tmp_path, capsys, arguments, message):
    (tmp_path / "bad.csv").write_text("minute,requests\n0,x\n")
    (tmp_path / "ok.csv").write_text("minute,requests\n0,3\n")
    (tmp_path / "curve.json").write_text("{}")
    arguments = [argument.replace("{tmp}", str(tmp_path)) for argument in arguments]
    assert main(["capacity", "--url", "http://stand-in", "--out", str(tmp_path / "out"), *arguments]) == 2
    assert message in capsys.readouterr().err
    assert stand_in["calls"] == 0
