"""`peagle tune`'s verdicts say how sure they are: figures over rounds (seeds) as a mean with its 95% interval, a
level that cannot tell its best from the runner-up says so, the proposed schedule's bands and rules, and the measured
schedule against the static K its bands name. Stored runs in bench's format: no engine."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from test_tune_choice import _run

from peagle.bench.intervals import mean_interval
from peagle.bench.results import BenchResults, results_to_json
from peagle.cli import main
from peagle.tune.measured import candidates_from_runs
from peagle.tune.proposal import propose

# Output tokens/s per round (seed) by concurrency. K=4 is clearly best at 1; at 4 it is ahead of K=2 by less than
# the interval of their paired difference (2, 1, 1 tok/s: cannot tell); at 8 off is clearly best.
ROUNDS = {
    "off": {1: [20.0, 21.0, 19.0], 4: [75.0, 78.0, 74.0], 8: [98.0, 101.0, 97.0]},
    "K=2": {1: [45.0, 47.0, 44.0], 4: [80.0, 84.0, 79.0], 8: [92.0, 95.0, 90.0]},
    "K=4": {1: [62.0, 65.0, 60.0], 4: [82.0, 85.0, 80.0], 8: [85.0, 88.0, 84.0]},
}
PROPOSED = "schedule 1-4:4,5-16:0"
HOLDS = {1: [61.0, 66.0, 60.0], 4: [81.0, 86.0, 79.0], 8: [97.0, 100.0, 97.0]}  # level with its band's K
FALLS = {1: [61.0, 66.0, 60.0], 4: [81.0, 86.0, 79.0], 8: [88.0, 90.0, 87.0]}  # below off at 8, beyond the interval


def _runs(rounds: dict[str, dict[int, list[float]]]) -> list:
    """One stored run per setting and round, labelled as tune labels them ("K=4 #2")."""
    return [
        _run(f"{label} #{round_ + 1}", {level: values[round_] for level, values in levels.items()})
        for label, levels in rounds.items()
        for round_ in range(3)
    ]


def _stored(tmp_path, runs) -> list[str]:
    files = []
    for index, run in enumerate(runs):
        path = tmp_path / f"run{index}.json"
        path.write_text(results_to_json(BenchResults(datetime.now(UTC).isoformat(), {}, {}, [run])), encoding="utf-8")
        files += ["--from-results", str(path)]
    return files


def _tune(tmp_path, rounds) -> str:
    out = tmp_path / "tune"
    assert main(["tune", *_stored(tmp_path, _runs(rounds)), "--out", str(out)]) == 0
    return (out / "recommendation.md").read_text()


def _spread(values: list[float]) -> str:
    interval = mean_interval(values)
    return f"{interval.mean:.1f} ± {interval.half_width:.1f}"


def test_cells_are_means_with_their_interval_and_a_close_level_says_cannot_tell(tmp_path, capsys):
    report = _tune(tmp_path, ROUNDS)
    assert "Each setting was measured 3 times, in interleaved rounds: cells are means ± the 95% interval." in report
    assert (
        f"| K=4 | {_spread(ROUNDS['K=4'][1])} | {_spread(ROUNDS['K=4'][4])} | {_spread(ROUNDS['K=4'][8])} |" in report
    )
    assert "- concurrency 1: K=4 (62.3 tok/s, 3.12x speculation off (95% interval " in report
    assert "- concurrency 4: cannot tell: K=4, K=2 (highest mean K=4, 82.3 tok/s" in report
    assert "- concurrency 8: off (98.7 tok/s" in report
    assert "This rests on a cannot-tell at concurrency 4" in report


def test_a_single_run_per_setting_reads_no_interval(tmp_path, capsys):
    single = [_run(label, {level: values[0] for level, values in levels.items()}) for label, levels in ROUNDS.items()]
    out = tmp_path / "tune"
    assert main(["tune", *_stored(tmp_path, single), "--out", str(out)]) == 0
    report = (out / "recommendation.md").read_text()
    assert "One run per setting (1 run, no interval)" in report and "| K=4 | 62.0 | 82.0 | 85.0 |" in report
    assert "- concurrency 1: cannot tell: K=4, K=2, off" in report  # one run tells nothing apart


def _proposal(rounds):
    return propose(candidates_from_runs(_runs(rounds)), max_num_seqs=16, trained_k=8)


def test_the_proposal_takes_each_bands_best_k_and_merges_equal_neighbours():
    proposal = _proposal(ROUNDS)
    assert proposal.bands == ((1, 4, 4), (5, 16, 0)) and proposal.label == PROPOSED
    assert proposal.reasons == (
        "1-1: K=4, the most tokens/s at concurrency 1",
        "2-4: K=4, the most tokens/s at concurrency 4",
        "5-16: off, the most tokens/s at concurrency 8",
    )


def test_batch_size_1_drafts_even_where_off_leads_within_the_interval():
    rounds = {**ROUNDS, "off": {**ROUNDS["off"], 1: [70.0, 58.0, 69.0]}}  # ahead of K=4 by 8, -7, 9: cannot tell
    proposal = _proposal(rounds)
    assert proposal.bands == ((1, 4, 4), (5, 16, 0))
    assert proposal.reasons[0] == (
        "1-1: K=4, the best K > 0 at concurrency 1 (batch size 1 drafts; off's lead is within the interval)"
    )


def test_off_beyond_the_interval_at_batch_size_1_proposes_speculation_off():
    rounds = {**ROUNDS, "off": {**ROUNDS["off"], 1: [72.0, 75.0, 70.0]}}  # 10 above K=4 in every round
    proposal = _proposal(rounds)
    assert proposal.bands is None and proposal.label == "off"
    assert proposal.reasons == (
        "at concurrency 1 the best K > 0 (K=4) fell below off beyond the interval, and batch size 1 must draft: "
        "speculation off",
    )


def test_one_k_for_every_band_is_proposed_as_that_static_k():
    rounds = {**ROUNDS, "K=4": {**ROUNDS["K=4"], 8: [110.0, 112.0, 109.0]}}
    proposal = _proposal(rounds)
    assert proposal.bands is None and proposal.speculative_tokens == 4 and proposal.label == "K=4"


@pytest.mark.parametrize(
    ("schedule", "recommended", "at_8"),
    [(HOLDS, PROPOSED, "cannot tell"), (FALLS, "K=4", "below it")],
)
def test_the_measured_schedule_is_recommended_only_when_no_level_falls_below_its_bands_k(
    tmp_path, capsys, schedule, recommended, at_8
):
    report = _tune(tmp_path, {**ROUNDS, PROPOSED: schedule})
    assert f"Proposed: **{PROPOSED}**" in report
    assert "Measured, against the static K its band names at each level (paired by round):" in report
    checks = {line.split(":")[0]: line for line in report.splitlines() if "x K=4 (" in line or "x off (" in line}
    ratio_1 = mean_interval([s / k for s, k in zip(schedule[1], ROUNDS["K=4"][1], strict=True)]).mean
    assert checks["- concurrency 1"].startswith(f"- concurrency 1: {ratio_1:.2f}x K=4 (95% interval ")
    assert checks["- concurrency 1"].endswith(": cannot tell")
    ratio_8 = mean_interval([s / o for s, o in zip(schedule[8], ROUNDS["off"][8], strict=True)]).mean
    assert checks["- concurrency 8"].startswith(f"- concurrency 8: {ratio_8:.2f}x off (95% interval ")
    assert checks["- concurrency 8"].endswith(f": {at_8}")
    assert f"Recommended: **{recommended}**" in report
    snippet = (tmp_path / "tune" / "deployment-snippet.yaml").read_text()
    if recommended == PROPOSED:
        assert "    - {min_batch: 5, max_batch: 1024, speculative_tokens: 0}" in snippet
        assert (
            "Speculation.by_batch_size([(1, 4, 4), (5, 1024, 0)])"
            in (tmp_path / "tune" / "library-snippet.py").read_text()
        )
    else:
        assert snippet == "speculation:\n  speculative_tokens: 4\n"


def test_a_proposal_not_measured_is_said_and_not_recommended(tmp_path, capsys):
    report = _tune(tmp_path, ROUNDS)
    assert f"Proposed: **{PROPOSED}**" in report
    assert "Not measured (--no-measure-proposal, or stored runs without it): it is not recommended" in report
    assert "Recommended: **K=4**" in report
