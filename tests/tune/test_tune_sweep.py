"""`peagle tune` on the local pair: every candidate measured closed loop and open loop in the same run, round r on
seed --seed + r - 1, the rounds interleaved; then the proposed schedule served on the same seeds, levels and rates,
and the recommendation made from all of it. A stand-in for bench and the servers (no engine), and one run on the
real engine (marked engine: the serving lane)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from test_tune_choice import _run
from test_tune_goodput import _open_loop_run
from test_tune_intervals import HOLDS, PROPOSED, ROUNDS
from test_tune_temperatures import FakeServer

from peagle.bench.results import BenchResults, results_to_json
from peagle.cli import main

# Goodput (requests/s within the SLO) per round at 0.5 and 1 req/s.
GOODPUT = {
    "off": {0.5: [0.50, 0.49, 0.50], 1.0: [0.86, 0.90, 0.81]},
    "K=2": {0.5: [0.50, 0.50, 0.50], 1.0: [0.84, 0.92, 0.80]},
    "K=4": {0.5: [0.50, 0.50, 0.49], 1.0: [0.80, 0.93, 0.79]},
    PROPOSED: {0.5: [0.50, 0.50, 0.50], 1.0: [0.85, 0.91, 0.80]},
}


@pytest.fixture
def stand_in(monkeypatch):
    """`peagle local` (no process; records the speculation asked for) and bench (stored figures by setting, loop
    and round; records the label, the loop and the seed)."""
    served, benched = [], []

    def popen(command, **kwargs):
        flag = "--speculative-schedule" if "--speculative-schedule" in command else "--speculative-tokens"
        served.append(command[command.index(flag) + 1])
        return FakeServer()

    def bench(args):
        if args.from_results:  # tune's comparison/ folder
            return 0
        label = args.label[0]
        setting, _, round_ = label.rpartition(" #")
        index = int(round_) - 1
        benched.append((label, "open" if args.request_rate else "closed", args.seed))
        if args.request_rate:
            rates = [float(rate) for rate in args.request_rate.split(",")]
            run = _open_loop_run(label, {rate: (10.0 * rate, GOODPUT[setting][rate][index]) for rate in rates})
        else:
            figures = HOLDS if setting == PROPOSED else ROUNDS[setting]
            run = _run(label, {int(c): figures[int(c)][index] for c in args.concurrency.split(",")})
        args.out.mkdir(parents=True)
        (args.out / "results.json").write_text(
            results_to_json(BenchResults(datetime.now(UTC).isoformat(), {}, {}, [run]))
        )
        return 0

    monkeypatch.setattr("peagle.local.served.subprocess.Popen", popen)
    monkeypatch.setattr("peagle.local.served._wait_ready", lambda *args: None)
    monkeypatch.setattr("peagle.local.served._stop", lambda server: None)
    monkeypatch.setattr("peagle.bench.cli._run", bench)
    return served, benched


ARGV = ["tune", "--pair", "tiny", "--k", "0,2,4", "--concurrency", "1,4,8", "--request-rate", "0.5,1", "--seed", "5"]


def test_both_loops_every_round_on_its_seed_then_the_proposal_on_the_same_seeds(stand_in, tmp_path, capsys):
    served, benched = stand_in
    out = tmp_path / "tune"

    assert main([*ARGV, "--out", str(out)]) == 0

    assert served == ["0", "2", "4"] * 3 + ["1-4:4,5-16:0"] * 3  # interleaved rounds, then the proposal's
    settings = ["off", "K=2", "K=4"]
    expected = [(f"{s} #{r}", loop, 4 + r) for r in (1, 2, 3) for s in settings for loop in ("closed", "open")]
    expected += [(f"{PROPOSED} #{r}", loop, 4 + r) for r in (1, 2, 3) for loop in ("closed", "open")]
    assert benched == expected
    assert (out / "off-round1" / "results.json").is_file() and (out / "off-round1-open" / "results.json").is_file()
    report = (out / "recommendation.md").read_text()
    assert "Rounds: 3, on seeds 5-7 (`peagle bench --seed`, round r on --seed + r - 1)" in report
    assert "### Closed loop: output tokens/s (TPOT p50 ms) by concurrency" in report
    assert "### Open loop: goodput, requests/s within the SLO (tokens/s), by request rate" in report
    assert f"Goodput of {PROPOSED} at each request rate, against off and the best static K (paired by round):" in report
    assert "- 1 req/s: 0.85 ± " in report and "off 0.86 ± " in report and ": cannot tell" in report
    assert f"Recommended: **{PROPOSED}**" in report
    assert "Speculation.by_batch_size([(1, 4, 4), (5, 1024, 0)])" in (out / "library-snippet.py").read_text()


def test_the_proposal_can_be_left_unmeasured_and_is_then_not_recommended(stand_in, tmp_path, capsys):
    served, _ = stand_in
    out = tmp_path / "tune"

    assert main([*ARGV, "--no-measure-proposal", "--out", str(out)]) == 0

    assert served == ["0", "2", "4"] * 3
    report = (out / "recommendation.md").read_text()
    assert f"Proposed: **{PROPOSED}**" in report and "Not measured (--no-measure-proposal" in report
    assert "Recommended: **K=4**" in report


def test_with_a_prompts_file_the_seed_moves_the_arrivals_only(stand_in, tmp_path, capsys):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"prompt": "from production"}\n')
    out = tmp_path / "tune"
    assert main([*ARGV, "--no-measure-proposal", "--prompts-file", str(prompts), "--out", str(out)]) == 0
    assert "so the seed moves the open-loop arrivals only" in (out / "recommendation.md").read_text()
