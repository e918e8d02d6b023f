"""`peagle simulate` as a user runs it: on cdk.out, with built-in and CSV traffic, and with bad input."""

from __future__ import annotations

import csv

import pytest

from peagle.cli import main


def _base(found, out) -> list[str]:
    return ["simulate", "--deployment", str(found.deployment_file), "--cdk-out", str(found.cdk_out), "--out", str(out)]


def test_simulate_writes_the_summary_table_first_then_timelines_and_plots(synthesized, tmp_path, capsys):
    found = synthesized("default")
    trace = tmp_path / "office-hours.csv"
    trace.write_text("minute,requests\n" + "".join(f"{m},{0 if m < 20 else 300}\n" for m in range(90)))
    out = tmp_path / "report"
    code = main([*_base(found, out), "--traffic", "surge", "--traffic", str(trace)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    header, *rows = printed.splitlines()
    assert header.split()[:4] == ["target", "traffic", "readings", "answered"]
    (surge,) = [row for row in rows if row.split()[:2] == ["peagle-endpoint/Primary", "surge"]]
    assert surge.split()[2:4] == ["every", "reading"] and "PASS" in surge and "$" in surge
    summary = (out / "simulation.md").read_text()
    lines = summary.splitlines()
    assert lines[0].startswith("# Scaling simulation of") and lines[4].startswith("| target | traffic | readings |")
    assert "## What to change" not in summary and "## Assumptions" in summary
    assert (
        "refused requests do not count in Invocations" not in summary.split("## Scenarios")[0].split("| verdict |")[0]
    )
    assert "on-demand, $2.34 per instance-hour" in summary
    (table,) = out.glob("peagle-endpoint-primary-office-hours-*.csv")
    rows = list(csv.DictReader(table.open()))
    assert len(rows) == 90 and {"desired", "serving", "refused", "timed_out", "answered_late", "actions"} <= set(
        rows[0]
    )
    assert max(int(row["desired"]) for row in rows) == 2  # scaled out to the variant's maximum
    assert any("ConcurrencyPerInstance" in row["actions"] for row in rows)
    assert (out / f"{table.stem}.png").stat().st_size > 10_000


def test_a_failing_run_exits_1_and_says_what_to_change_with_its_cost(synthesized, tmp_path, capsys):
    found = synthesized("default")
    out = tmp_path / "report"
    code = main([*_base(found, out), "--traffic", "spike", "--conflicts", "largest", "--no-plots"])
    printed = capsys.readouterr().out
    assert code == 1
    assert "FAIL peagle-endpoint/Primary spike" in printed
    assert (
        "change: " in printed and "set `autoscaling.min_instances` to 2; simulated with it: answered 100.0%" in printed
    )
    summary = (out / "simulation.md").read_text()
    assert summary.index("| target |") < summary.index("## What to change") < summary.index("## Assumptions")
    assert "(8 of 8)" not in summary and "every reading" in summary  # 8 readings run, all one timeline
    assert not list(out.glob("*.png"))


def test_the_readings_can_be_pinned_and_the_budget_start_chosen(synthesized, tmp_path, capsys):
    found = synthesized("scale-to-zero")
    out = tmp_path / "report"
    arguments = ["--traffic", "sparse", "--refused-counted", "no", "--conflicts", "in-turn", "--cooldown", "blocked"]
    arguments += ["--updates", "after-update", "--startup", "budget", "--clients", "once", "--no-plots"]
    main([*_base(found, out), *arguments])
    summary = (out / "simulation.md").read_text()
    # One reading: its label, not "every reading".
    assert "| refused not counted, conflicts in-turn, cooldown blocked, updates after-update |" in summary
    assert "a new unit serves after 1653 s of download + start-up (the plan's download and start-up timeouts" in summary
    assert "clients send each request once" in summary


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--traffic", "tsunami"],
            "neither a built-in shape (idle-burst, surge, daily, sparse, ramp, sawtooth, spike,",
        ),
        (["--request-seconds", "0"], "--request-seconds must be a number above 0"),
        (["--startup", "soon"], "--startup is typical, budget or a number of seconds above 0, not 'soon'"),
        (["--attainment", "1.5"], "--attainment is a share of requests, above 0 and at most 1, not 1.5"),
        (["--cdk-out", "{tmp}/nowhere"], "(or `make synth`) first, or pass --template"),
        (["--traffic", "{tmp}/bad.csv"], "bad.csv:3: 'x' is not a number of requests"),
        (["--traffic", "{tmp}/unsorted.csv"], "unsorted.csv:3: minute 2 comes after minute 5"),
        (["--traffic", "{tmp}/latin1.csv"], "latin1.csv:2: not UTF-8 text"),
        (["--deployment", "{tmp}/nope.yaml"], "nope.yaml' not found; pass an existing file with --deployment <path>"),
    ],
    ids=[
        "unknown shape",
        "zero request time",
        "bad startup",
        "attainment",
        "no cdk.out",
        "bad csv row",
        "unsorted",
        "latin-1",
        "no deployment file",
    ],
)
def test_bad_input_exits_2_with_what_to_do(synthesized, tmp_path, capsys, arguments, message):
    found = synthesized("default")
    (tmp_path / "bad.csv").write_text("requests\n5\nx\n")
    (tmp_path / "unsorted.csv").write_text("minute,requests\n5,1\n2,1\n")
    (tmp_path / "latin1.csv").write_bytes("requests\ncafé\n".encode("latin-1"))
    arguments = [argument.replace("{tmp}", str(tmp_path)) for argument in arguments]
    base = ["simulate", "--deployment", str(found.deployment_file), "--out", str(tmp_path / "out")]
    if "--cdk-out" not in arguments:
        base += ["--cdk-out", str(found.cdk_out)]
    assert main(base + arguments) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err
