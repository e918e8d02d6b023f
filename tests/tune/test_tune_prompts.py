"""`peagle tune --prompts-file`: every bench run measures the file's prompts alone, recommendation.md
names the file with its sha256 (or the synthetic prompts, with a note), and a file whose lines set
temperature/top_p is refused before anything is served. A stand-in for bench and the servers: no engine."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest
from test_tune_choice import _run
from test_tune_temperatures import FakeServer

from peagle.bench.results import BenchResults, results_to_json
from peagle.cli import main


@pytest.fixture
def benched(monkeypatch):
    """Stands in for `peagle local` (no process) and bench (a results.json), recording bench's prompt flags."""
    calls = []

    def bench(args):
        if args.from_results:  # tune's comparison/ folder
            return 0
        calls.append((args.buckets, args.prompts_file))
        label = args.label[0]
        tokens = {"off": {1: 10.0, 4: 40.0}, "K=4": {1: 20.0, 4: 60.0}}[label]
        args.out.mkdir(parents=True)
        results = BenchResults(datetime.now(UTC).isoformat(), {}, {}, [_run(label, tokens)])
        (args.out / "results.json").write_text(results_to_json(results))
        return 0

    monkeypatch.setattr("peagle.local.served.subprocess.Popen", lambda command, **kwargs: FakeServer())
    monkeypatch.setattr("peagle.local.served._wait_ready", lambda *args: None)
    monkeypatch.setattr("peagle.local.served._stop", lambda server: None)
    monkeypatch.setattr("peagle.bench.cli._run", bench)
    return calls


def test_every_run_measures_the_prompts_file_and_the_recommendation_names_it(benched, tmp_path, capsys):
    prompts_file = tmp_path / "prompts.jsonl"
    prompts_file.write_text('{"prompt": "from production", "max_tokens": 32}\n')
    out = tmp_path / "tune"
    argv = ["tune", "--pair", "tiny", "--k", "0,4", "--repeat", "1", "--prompts-file", str(prompts_file)]
    assert main([*argv, "--out", str(out)]) == 0
    assert benched == [("none", prompts_file), ("none", prompts_file)]
    digest = hashlib.sha256(prompts_file.read_bytes()).hexdigest()[:12]
    assert (
        f"Prompts: {prompts_file} (sha256 {digest}, 1 prompts; max_tokens set by 1)."
        in (out / "recommendation.md").read_text()
    )
    assert "synthetic prompts" not in capsys.readouterr().err


def test_synthetic_prompts_are_named_and_noted(benched, tmp_path, capsys):
    out = tmp_path / "tune"
    assert main(["tune", "--pair", "tiny", "--k", "0,4", "--repeat", "1", "--out", str(out)]) == 0
    assert benched == [("short,long", None), ("short,long", None)]
    assert "Prompts: synthetic prompts (buckets short,long, seed 0)." in (out / "recommendation.md").read_text()
    assert "tune: note: synthetic prompts" in capsys.readouterr().err


def test_a_prompts_file_that_sets_the_temperature_is_refused_before_serving(benched, tmp_path, capsys):
    prompts_file = tmp_path / "prompts.jsonl"
    prompts_file.write_text('{"prompt": "a", "temperature": 0.2}\n{"prompt": "b"}\n')
    argv = ["tune", "--pair", "tiny", "--prompts-file", str(prompts_file), "--out", str(tmp_path / "tune")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "1 of 2 prompts set temperature" in err and "--drop-field temperature --drop-field top_p" in err
    assert benched == [] and not (tmp_path / "tune").exists()
