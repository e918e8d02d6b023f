"""`peagle tune` measures and decides at the sampling users get: every candidate at every --temperatures
value (default the profile's), one table and decision per temperature, the deployment snippet made at
the profile's temperature (never at greedy unless the profile is), and a line saying whether the best K
differs between greedy and sampled. Stored results and a stand-in for bench and the servers: no engine."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from test_tune_choice import _run

from peagle.bench.results import BenchResults, Sampling, results_to_json
from peagle.cli import main
from peagle.tune.choose import decision_temperature, greedy_versus_sampled

# Output tokens/s by temperature: greedy accepts more drafts, so K=4 wins there; sampled at chatbot's
# 0.7 acceptance falls and K=2 wins. At codegen's 0.2 K=4 still wins.
MEASURED = {
    0.0: {"off": {1: 10.0, 4: 40.0}, "K=2": {1: 20.0, 4: 60.0}, "K=4": {1: 30.0, 4: 65.0}},
    0.2: {"off": {1: 10.0, 4: 40.0}, "K=2": {1: 19.0, 4: 58.0}, "K=4": {1: 26.0, 4: 61.0}},
    0.7: {"off": {1: 10.0, 4: 40.0}, "K=2": {1: 18.0, 4: 55.0}, "K=4": {1: 16.0, 4: 45.0}},
}


def stored_runs(tmp_path, temperatures, profile: str = "chatbot") -> list[str]:
    """--from-results arguments: every setting at every temperature, recorded as bench records them."""
    arguments = []
    for temperature in temperatures:
        for label, tokens in MEASURED[temperature].items():
            sampling = Sampling.of_profile(profile, temperature=temperature)
            run = replace(_run(f"{label} T={temperature:g}", tokens), sampling=sampling)
            path = tmp_path / f"{label}-{temperature}.json"
            path.write_text(results_to_json(BenchResults(datetime.now(UTC).isoformat(), {}, {}, [run])))
            arguments += ["--from-results", str(path)]
    return arguments


def sections(report: str) -> list[str]:
    return [line for line in report.splitlines() if line.startswith("## ")]


def test_one_table_per_temperature_and_the_deployment_decided_at_the_profiles(tmp_path, capsys):
    out = tmp_path / "tune"

    assert main(["tune", *stored_runs(tmp_path, (0.0, 0.7)), "--out", str(out)]) == 0

    report = (out / "recommendation.md").read_text()
    assert (
        "Deployed sampling: temperature 0.7, top_p 0.9 (profile chatbot). The recommendation is made at the " in report
    )
    assert sections(report) == [  # the deployed sampling first
        "## Sampling: temperature 0.7, top_p 0.9 (profile chatbot)",
        "## Sampling: greedy (temperature 0), a comparison: deployed profiles sample",
    ]
    deployed, greedy = report.split("## Sampling: ")[1:]
    assert "| K=2 | 18.0 | 55.0 |" in deployed and "Best for the measured levels: K=2" in deployed
    assert "| K=4 | 30.0 | 65.0 |" in greedy and "Best for the measured levels: K=4" in greedy
    assert "The recommendation below is made at this sampling." in deployed
    assert (
        "The best setting differs between greedy and sampled: K=4 at temperature 0 (greedy), K=2 at temperature 0.7."
        in report
    )
    assert "Recommended: **K=2** over the measured levels, at the deployed temperature 0.7" in report
    assert (out / "deployment-snippet.yaml").read_text() == "speculation:\n  speculative_tokens: 2\n"
    assert "The best setting differs between greedy and sampled" in capsys.readouterr().out


def test_the_profile_names_the_deployed_temperature(tmp_path, capsys):
    out = tmp_path / "tune"

    assert main(["tune", *stored_runs(tmp_path, (0.0, 0.2), "codegen"), "--profile", "codegen", "--out", str(out)]) == 0

    report = (out / "recommendation.md").read_text()
    assert sections(report)[0] == "## Sampling: temperature 0.2, top_p 0.95 (profile codegen)"
    assert "Greedy and sampled agree: K=4 is the best setting at temperature 0 and at 0.2." in report
    assert "Recommended: **K=4** over the measured levels, at the deployed temperature 0.2" in report


def test_a_sampled_temperature_other_than_the_profiles_is_decided_at_and_said_so(tmp_path, capsys):
    out = tmp_path / "tune"

    assert main(["tune", *stored_runs(tmp_path, (0.0, 0.2)), "--out", str(out)]) == 0  # chatbot deploys 0.7

    report = (out / "recommendation.md").read_text()
    assert (
        "Recommended: **K=4** over the measured levels, at temperature 0.2, the sampled temperature measured "
        "nearest the deployed 0.7 (not measured)" in report
    )


def test_greedy_runs_alone_are_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "tune"

    assert main(["tune", *stored_runs(tmp_path, (0.0,)), "--out", str(out)]) == 2

    err = capsys.readouterr().err
    assert "only greedy decoding (temperature 0) was measured, and the deployment samples at temperature 0.7" in err
    assert "never at greedy" in err and "--temperatures 0,0.7" in err
    assert not out.exists()


LOCAL = ["--pair", "tiny"]


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        (
            [*LOCAL, "--temperatures", "0,-0.5"],
            "--temperatures takes comma-separated temperatures, each a number from 0 (greedy) to 2; "
            "got '-0.5' in '0,-0.5'",
        ),
        ([*LOCAL, "--temperatures", "0.7,warm"], "got 'warm' in '0.7,warm'"),
        ([*LOCAL, "--temperatures", "3"], "got '3' in '3'"),
        ([*LOCAL, "--temperatures", "0.7,,0"], "got '' in '0.7,,0'"),
        ([*LOCAL, "--temperature", "0"], "only greedy decoding (temperature 0) was measured"),
        (["--url", "http://127.0.0.1:1", "--temperatures", "0"], "only greedy decoding"),
        ([*LOCAL, "--top-p", "1.5"], "--top-p takes a number above 0 and at most 1, got 1.5"),
    ],
)
def test_bad_temperatures_exit_2_before_any_server_starts(arguments, reason, tmp_path, capsys, monkeypatch):
    def started(*args, **kwargs):
        raise AssertionError("a server was started, or bench ran, before the arguments were checked")

    monkeypatch.setattr("peagle.local.served.subprocess.Popen", started)
    monkeypatch.setattr("peagle.bench.cli._run", started)
    out = tmp_path / "tune"

    assert main(["tune", *arguments, "--out", str(out)]) == 2

    assert reason in capsys.readouterr().err
    assert not out.exists()


def test_temperatures_do_not_go_with_stored_runs(tmp_path, capsys):
    argv = ["tune", *stored_runs(tmp_path, (0.7,)), "--temperatures", "0,0.7", "--out", str(tmp_path / "tune")]
    assert main(argv) == 2
    assert "--from-results runs keep the sampling they were measured at" in capsys.readouterr().err


# -- measuring: every candidate at every temperature, interleaved, one server per candidate and round --------


class FakeServer:
    pid = 0
    returncode = 0

    def poll(self):
        return None


@pytest.fixture
def measured(monkeypatch):
    """Stands in for `peagle local` (no process) and bench (a results.json from MEASURED), recording both."""
    served, benched = [], []

    def popen(command, **kwargs):
        served.append(command[command.index("--speculative-tokens") + 1])
        return FakeServer()

    def bench(args):
        if args.from_results:  # tune's comparison/ folder
            return 0
        label, temperature = args.label[0], args.temperature
        benched.append((label, args.profile, temperature, args.top_p))
        setting = label.split(" ")[0]
        tokens = MEASURED[temperature][setting]
        sampling = Sampling.of_profile(args.profile, temperature=temperature, top_p=args.top_p)
        results = BenchResults(datetime.now(UTC).isoformat(), {}, {}, [replace(_run(label, tokens), sampling=sampling)])
        args.out.mkdir(parents=True)
        (args.out / "results.json").write_text(results_to_json(results))
        return 0

    monkeypatch.setattr("peagle.local.served.subprocess.Popen", popen)
    monkeypatch.setattr("peagle.local.served._wait_ready", lambda *args: None)
    monkeypatch.setattr("peagle.local.served._stop", lambda server: None)
    monkeypatch.setattr("peagle.bench.cli._run", bench)
    return served, benched


def test_every_candidate_is_measured_at_every_temperature_interleaved_like_rounds(measured, tmp_path, capsys):
    served, benched = measured
    out = tmp_path / "tune"
    argv = ["tune", "--pair", "tiny", "--k", "0,2,4", "--temperatures", "0,0.7", "--repeat", "2"]

    assert main([*argv, "--out", str(out)]) == 0

    assert served == ["0", "2", "4", "0", "2", "4"]  # one server per candidate and round, not per temperature
    assert benched == [
        (f"{setting} T={temperature:g} #{round_}", "chatbot", temperature, None)
        for round_ in (1, 2)
        for setting in ("off", "K=2", "K=4")
        for temperature in (0.0, 0.7)
    ]
    report = (out / "recommendation.md").read_text()
    assert "Each setting was measured 2 times" in report and "Recommended: **K=2**" in report
    assert (out / "off_T0.7-round2" / "results.json").is_file()


def test_by_default_the_profiles_temperature_alone_is_measured(measured, tmp_path, capsys):
    _, benched = measured
    argv = ["tune", "--pair", "tiny", "--k", "0,4", "--repeat", "1", "--profile", "codegen", "--top-p", "0.8"]

    assert main([*argv, "--out", str(tmp_path / "tune")]) == 0

    assert benched == [("off", "codegen", 0.2, 0.8), ("K=4", "codegen", 0.2, 0.8)]
    report = (tmp_path / "tune" / "recommendation.md").read_text()
    assert sections(report) == ["## Sampling: temperature 0.2, top_p 0.8 (overriding profile codegen)"]


# -- the two rules, on their own ----------------------------------------------------------------------------


def test_decision_temperature_prefers_the_deployed_then_the_nearest_sampled_never_greedy():
    assert decision_temperature({0.0, 0.7}, 0.7)[0] == 0.7
    assert decision_temperature({0.0, 0.3, 1.0}, 0.7)[0] == 1.0
    assert decision_temperature({0.0, None}, 0.7)[0] is None  # runs that do not record it, said so
    assert decision_temperature({0.0}, 0.0)[0] == 0.0  # a greedy profile
    with pytest.raises(ValueError, match="never at greedy"):
        decision_temperature({0.0}, 0.7)


def test_greedy_versus_sampled_speaks_only_when_both_were_measured():
    assert greedy_versus_sampled({0.7: "K=2"}) is None
    assert greedy_versus_sampled({0.0: "K=4"}) is None
    assert greedy_versus_sampled({0.0: "K=4", 0.7: "K=4"}).startswith("Greedy and sampled agree: K=4")
    assert greedy_versus_sampled({0.0: "K=4", 0.2: "K=4", 0.7: "off"}).startswith(
        "The best setting differs between greedy and sampled: K=4 at temperature 0 (greedy), off at temperature 0.7."
    )
