"""`peagle tune`'s choice, fed recorded measurements: per-level winners, the static K that loses
least over the band, and a dynamic schedule only when it never lost."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from host_records import recorded_host

from peagle.bench.results import BenchResults, LevelResult, RunResult, load_results, results_to_json
from peagle.cli import main
from peagle.tune.choose import Candidate, recommend

# Output tokens/s by concurrency, shaped like the published P-EAGLE results: K=4 wins alone,
# the gain shrinks with load and K=4 turns into a slow-down at 8, where K=2 still pays.
MEASURED = {
    "off": {1: 10.0, 4: 40.0, 8: 70.0},
    "K=2": {1: 20.0, 4: 60.0, 8: 80.0},
    "K=4": {1: 30.0, 4: 65.0, 8: 60.0},
}
SCHEDULE_THAT_LOSES = {1: 29.0, 4: 62.0, 8: 66.0}  # below K=4 at 1, below K=2 at 8
SCHEDULE_THAT_WINS = {1: 31.0, 4: 66.0, 8: 81.0}


def _candidate(label: str, tokens: dict[int, float], schedule=None) -> Candidate:
    k = 0 if label == "off" else int(label[2:]) if label.startswith("K=") else max(b[2] for b in schedule)
    return Candidate(label, k, schedule, tokens, {c: 1 / t for c, t in tokens.items()})


def _statics() -> list[Candidate]:
    return [_candidate(label, tokens) for label, tokens in MEASURED.items()]


def test_each_level_names_its_winner_and_the_speedup_over_speculation_off():
    recommendation = recommend(_statics())
    assert [(c.concurrency, c.best) for c in recommendation.levels] == [(1, "K=4"), (4, "K=4"), (8, "K=2")]
    assert recommendation.levels[0].speedup_vs_off == pytest.approx(3.0)
    assert recommendation.levels[2].speedup_vs_off == pytest.approx(80 / 70)


def test_the_static_choice_is_the_one_that_loses_least_over_the_band():
    # K=4 loses 25 % at c=8; K=2 loses 33 % at c=1: over 1-8 the answer is K=4 ...
    overall = recommend(_statics())
    assert overall.static.label == "K=4" and overall.worst_shortfall == pytest.approx(0.25)
    # ... but for a high-concurrency band it is K=2, and for c=1 alone K=4.
    assert recommend(_statics(), band=(4, 8)).static.label == "K=2"
    assert recommend(_statics(), band=(1, 1)).static.label == "K=4"


def test_a_dynamic_schedule_that_loses_anywhere_is_not_recommended():
    schedule = ((1, 2, 4), (3, 16, 2))
    recommendation = recommend([*_statics(), _candidate("schedule 1-2:4,3-16:2", SCHEDULE_THAT_LOSES, schedule)])
    assert recommendation.dynamic is None and recommendation.chosen.label == "K=4"
    assert "lost to a static K at concurrency 1, 4, 8" in recommendation.dynamic_verdict
    assert recommendation.deployment_snippet() == "speculation:\n  speculative_tokens: 4\n"


def test_a_dynamic_schedule_that_wins_everywhere_is_recommended_with_its_snippet():
    schedule = ((1, 2, 4), (3, 16, 2))
    recommendation = recommend([*_statics(), _candidate("schedule 1-2:4,3-16:2", SCHEDULE_THAT_WINS, schedule)])
    assert recommendation.chosen.label == "schedule 1-2:4,3-16:2"
    assert "{min_batch: 1, max_batch: 2, speculative_tokens: 4}" in recommendation.deployment_snippet()


def _run(label: str, tokens: dict[int, float], noisy: tuple[int, ...] = ()) -> RunResult:
    """A stored run; the levels at the concurrencies in ``noisy`` were measured on a busy machine."""
    levels = [
        LevelResult(
            concurrency=c,
            requests=16,
            failed=0,
            errors_by_type={},
            duration_s=10.0,
            prompt_tokens=160,
            output_tokens=int(t * 10),
            output_tokens_per_s=t,
            requests_per_s=1.6,
            ttft_s=None,
            tpot_s=None,
            itl_s=None,
            e2e_s=None,
            speculation=None,
            cost_per_million_output_tokens_usd=None,
            host=recorded_host(busy=c in noisy),
        )
        for c, t in tokens.items()
    ]
    return RunResult(label, "http://127.0.0.1:8080", "tiny-pair", "0.32.0", 1024, "on", None, None, None, [], levels)


def _stored(tmp_path, runs: dict[str, RunResult]) -> list[str]:
    files = []
    for index, run in enumerate(runs.values()):
        path = tmp_path / f"run{index}.json"
        path.write_text(results_to_json(BenchResults(datetime.now(UTC).isoformat(), {}, {}, [run])), encoding="utf-8")
        files += ["--from-results", str(path)]
    return files


def test_levels_measured_on_a_busy_machine_are_not_chosen_from(tmp_path, capsys):
    """K=2's level at 8 was measured beside other work: left out, concurrency 8 decides nothing (no
    candidate's column for it) and the choice is made on 1 and 4, where K=4 wins."""
    runs = {label: _run(label, tokens, noisy=(8,) if label == "K=2" else ()) for label, tokens in MEASURED.items()}
    out = tmp_path / "tune"
    assert main(["tune", *_stored(tmp_path, runs), "--out", str(out), "--band", "1-8"]) == 0
    report = (out / "recommendation.md").read_text()
    assert "1 level(s) measured on a busy machine were left out" in report
    assert "- K=2 c=8: other work used 1.60 of 2 cores" in report
    assert "| K=2 | 20.0 | 60.0 |\n" in report  # concurrency 8 decided nothing: no candidate's column
    assert "Recommended: **K=4**" in report


def test_tune_refuses_when_every_level_was_measured_on_a_busy_machine(tmp_path, capsys):
    runs = {label: _run(label, tokens, noisy=tuple(tokens)) for label, tokens in MEASURED.items()}
    assert main(["tune", *_stored(tmp_path, runs), "--out", str(tmp_path / "tune")]) == 1
    err = capsys.readouterr().err
    assert "machine busy: every level was measured on a busy machine" in err and "stop the other work" in err


def test_tune_from_recorded_results_writes_the_recommendation_and_the_snippet(tmp_path, capsys):
    files = []
    runs = {**MEASURED, "schedule 1-2:4,3-16:2": SCHEDULE_THAT_LOSES}
    for index, (label, tokens) in enumerate(runs.items()):
        results = BenchResults(datetime.now(UTC).isoformat(), {}, {}, [_run(label, tokens)])
        path = tmp_path / f"run{index}.json"
        path.write_text(results_to_json(results), encoding="utf-8")
        files += ["--from-results", str(path)]
    out = tmp_path / "tune"
    assert main(["tune", *files, "--out", str(out), "--band", "1-8"]) == 0
    report = (out / "recommendation.md").read_text()
    assert "Recommended: **K=4** for concurrency 1-8" in report
    assert "schedule 1-2:4,3-16:2 lost to a static K" in report
    assert (out / "deployment-snippet.yaml").read_text() == "speculation:\n  speculative_tokens: 4\n"
    assert (out / "comparison" / "report.md").is_file()


def test_a_bad_band_is_refused(tmp_path, capsys):
    assert main(["tune", "--from-results", str(tmp_path / "x.json"), "--out", str(tmp_path), "--band", "8-1"]) == 2
    assert "--band takes LO-HI" in capsys.readouterr().err


@pytest.mark.engine
def test_tune_serves_each_candidate_through_the_launcher_and_recommends_from_what_it_measured(tmp_path, capsys):
    # The real path: `peagle local` per candidate (one at a time), `peagle bench` against it at the
    # deployed temperature and greedy beside it, the choice. --busy-limit 1: this test is about the path and
    # the choice, not the machine; a CI machine's neighbours (steal) must not turn it into a busy-machine
    # test, which test_levels_measured_on_a_busy_machine_are_not_chosen_from and tests/bench cover.
    out = tmp_path / "tune"
    argv = ["tune", "--pair", "tiny", "--k", "0,2", "--concurrency", "1", "--requests", "2", "--max-tokens", "32"]
    argv += ["--busy-limit", "1", "--repeat", "1"]
    assert main([*argv, "--temperatures", "0.7,0", "--buckets", "short", "--out", str(out)]) == 0
    report = (out / "recommendation.md").read_text()
    assert "| off |" in report and "| K=2 |" in report and "Recommended: **" in report
    assert "## Sampling: temperature 0.7, top_p 0.9 (profile chatbot)" in report and "## Sampling: greedy" in report
    runs = {
        run.label: run.sampling.temperature for path in out.glob("*/results.json") for run in load_results(path).runs
    }
    assert runs == {"off T=0.7": 0.7, "off T=0": 0.0, "K=2 T=0.7": 0.7, "K=2 T=0": 0.0}, runs
    assert (out / "deployment-snippet.yaml").read_text().startswith("speculation:\n  speculative_tokens: ")


def test_repeated_rounds_are_means_with_their_interval_and_a_lucky_run_cannot_decide(tmp_path, capsys):
    # Three interleaved rounds. One lucky K=4 run at c=1 (50 tok/s) puts its mean above K=2's, but the paired
    # interval of their difference (30, -3, -0.5) includes no difference: the level cannot tell them apart.
    rounds = {
        "off": [{1: 10.0}, {1: 11.0}, {1: 9.0}],
        "K=2": [{1: 20.0}, {1: 21.0}, {1: 19.5}],
        "K=4": [{1: 50.0}, {1: 18.0}, {1: 19.0}],
    }
    files = []
    for label, runs in rounds.items():
        for round_, tokens in enumerate(runs, start=1):
            results = BenchResults(datetime.now(UTC).isoformat(), {}, {}, [_run(f"{label} #{round_}", tokens)])
            path = tmp_path / f"{label}-{round_}.json"
            path.write_text(results_to_json(results), encoding="utf-8")
            files += ["--from-results", str(path)]
    out = tmp_path / "tune"
    assert main(["tune", *files, "--out", str(out)]) == 0
    report = (out / "recommendation.md").read_text()
    assert "measured 3 times" in report
    assert "| K=4 | 29.0 ± 45.2 |" in report and "| K=2 | 20.2 ± 1.9 |" in report
    assert "- concurrency 1: cannot tell: K=4, K=2, off (highest mean K=4, 29.0 tok/s" in report
    assert "This rests on a cannot-tell at concurrency 1" in report


def test_a_bad_repeat_is_refused(tmp_path, capsys):
    assert main(["tune", "--pair", "tiny", "--out", str(tmp_path), "--repeat", "0"]) == 2
    assert "--repeat takes a number of rounds >= 1" in capsys.readouterr().err


def test_every_candidate_is_checked_before_the_first_server_starts(tmp_path, capsys):
    # K=0 alone would serve for minutes before K=99 or the gapped schedule failed at its turn.
    out = tmp_path / "out"
    argv = ["tune", "--pair", "demo", "--k", "0,99", "--schedule", "1-2:4,4-16:0", "--schedule", "1-16:9"]
    argv += ["--schedule", "1-8:4"]  # `peagle local` runs up to 16 requests at once
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "nothing was started" in err and "--k 99: above the 8 tokens" in err and "use K <= 8" in err
    assert "--schedule 1-2:4,4-16:0: no band covers batch size 3" in err
    assert "--schedule 1-16:9: band 1 (1-16: K=9): K=9 is above the 8 tokens" in err
    assert "--schedule 1-8:4: the bands end at batch size 8, but the server runs up to max_num_seqs=16" in err
    assert not out.exists()  # no server log, no folder: nothing to clean up


def test_runs_without_a_shared_level_are_refused_naming_what_each_measured():
    low = _candidate("K=2", {1: 20.0, 4: 60.0})
    high = _candidate("K=8", {16: 80.0})
    with pytest.raises(ValueError, match=r"levels measured: K=2: 1, 4; K=8: 16\)"):
        recommend([low, high])


def test_tune_measures_a_capture_turned_prompts_file_and_names_it(tmp_path, capsys):
    # The production loop's real path: capture records in SageMaker's format -> `peagle prompts` -> `peagle tune
    # --prompts-file` serving the tiny pair through the launcher; the recommendation names the file it measured.
    capture = Path(__file__).resolve().parents[2] / "examples" / "production-loop" / "capture"
    prompts = tmp_path / "tune-prompts.jsonl"
    drop = ["--drop-field", "temperature", "--drop-field", "top_p", "--drop-field", "max_tokens", "--limit", "2"]
    assert main(["prompts", str(capture), "--out", str(prompts), *drop]) == 0
    out = tmp_path / "tune"
    argv = ["tune", "--pair", "tiny", "--k", "0", "--concurrency", "1", "--requests", "2", "--max-tokens", "16"]
    argv += ["--busy-limit", "1", "--repeat", "1"]
    assert main([*argv, "--prompts-file", str(prompts), "--out", str(out)]) == 0
    digest = hashlib.sha256(prompts.read_bytes()).hexdigest()[:12]
    named = f"{prompts} (sha256 {digest}, 2 prompts)"
    assert f"Prompts: {named}." in (out / "recommendation.md").read_text()
    measured = json.loads((out / "off" / "results.json").read_text())  # the candidate's bench run
    assert measured["settings"]["prompts"] == named, measured["settings"]
    assert "synthetic prompts" not in capsys.readouterr().err
