"""`peagle simulate` as a user runs it: on cdk.out, with built-in and CSV traffic, and with bad input."""

from __future__ import annotations

import csv

import pytest

from peagle.cli import main


def test_simulate_writes_a_table_a_plot_and_the_verdicts_per_scenario(synthesized, tmp_path, capsys):
    found = synthesized("default")
    trace = tmp_path / "office-hours.csv"
    trace.write_text("minute,requests\n" + "".join(f"{m},{0 if m < 20 else 900}\n" for m in range(90)))
    out = tmp_path / "report"
    code = main(
        [
            "simulate",
            "--deployment",
            str(found.deployment_file),
            "--cdk-out",
            str(found.cdk_out),
            "--traffic",
            "spike",
            "--traffic",
            str(trace),
            "--refused-counted",
            "no",
            "--conflicts",
            "largest",
            "--out",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "PASS  Primary  spike" in printed and "PASS  Primary  office-hours" in printed
    summary = (out / "simulation.md").read_text()
    assert "scales out within" in summary and "never oscillates" in summary
    (table,) = out.glob("primary-office-hours-*.csv")
    rows = list(csv.DictReader(table.open()))
    assert len(rows) == 90 and {"desired", "serving", "refused", "actions"} <= set(rows[0])
    assert max(int(row["desired"]) for row in rows) == 2  # the spike scaled out to the variant's maximum
    assert any("ConcurrencyPerInstance" in row["actions"] for row in rows)
    assert (out / f"{table.stem}.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--traffic", "tsunami"], "neither a built-in shape (idle-burst, spike, daily) nor a CSV file"),
        (["--request-seconds", "0"], "--request-seconds must be a number of seconds above 0"),
        (["--cdk-out", "{tmp}/nowhere"], "(or `make synth`) first, or pass --template"),
        (["--traffic", "{tmp}/bad.csv"], "bad.csv:3: ['x'] is not a number of requests"),
    ],
    ids=["unknown shape", "zero request time", "no cdk.out", "bad csv row"],
)
def test_bad_input_exits_2_with_what_to_do(synthesized, tmp_path, capsys, arguments, message):
    found = synthesized("default")
    (tmp_path / "bad.csv").write_text("requests\n5\nx\n")
    arguments = [argument.replace("{tmp}", str(tmp_path)) for argument in arguments]
    base = ["simulate", "--deployment", str(found.deployment_file), "--out", str(tmp_path / "out")]
    if "--cdk-out" not in arguments:
        base += ["--cdk-out", str(found.cdk_out)]
    assert main(base + arguments) == 2
    assert message in capsys.readouterr().err
