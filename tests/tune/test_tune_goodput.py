"""Choosing K for the SLO: ranked by goodput (requests/s meeting every bound) over the expected
request-rate band, with tokens/s beside it, and a verdict when the two objectives disagree."""

from __future__ import annotations

from datetime import UTC, datetime

from peagle.bench.results import BenchResults, LevelResult, OpenLoopLoad, RunResult, SloResult, results_to_json
from peagle.cli import main
from peagle.tune.choose import GOODPUT, Candidate, recommend, slo_verdict

SLO = "95% of requests: TTFT <= 1 s, TPOT <= 100 ms"


def _candidate(label: str, k: int, tokens: dict[float, float], goodput: dict[float, float]) -> Candidate:
    return Candidate(label, k, None, tokens_per_s=tokens, tpot_p50_s=dict.fromkeys(tokens), goodput_rps=goodput)


# As recorded on a loaded server: K=7 turns out the most tokens, but its longer verify steps push TPOT
# over the bound for more requests than K=3's do.
CANDIDATES = [
    _candidate("off", 0, {1.0: 40.0, 2.0: 70.0, 4.0: 90.0}, {1.0: 0.95, 2.0: 1.2, 4.0: 0.8}),
    _candidate("K=3", 3, {1.0: 55.0, 2.0: 95.0, 4.0: 120.0}, {1.0: 1.0, 2.0: 1.9, 4.0: 2.9}),
    _candidate("K=7", 7, {1.0: 60.0, 2.0: 105.0, 4.0: 135.0}, {1.0: 1.0, 2.0: 1.6, 4.0: 1.7}),
]


def test_the_tokens_per_second_winner_loses_on_goodput_and_the_verdict_says_why():
    by_tokens = recommend(CANDIDATES, (1.0, 4.0))
    by_goodput = recommend(CANDIDATES, (1.0, 4.0), objective=GOODPUT)
    assert by_tokens.chosen.label == "K=7"
    assert by_goodput.chosen.label == "K=3"
    assert [(c.concurrency, c.best) for c in by_goodput.levels] == [(1.0, "K=3"), (2.0, "K=3"), (4.0, "K=3")]
    verdict = slo_verdict(by_goodput, by_tokens, SLO)
    assert verdict.startswith("Goodput and tokens/s disagree: K=7 delivers the most output tokens/s, but K=3")
    assert "at 4 req/s: 2.90 vs 1.70 req/s within the SLO, 120.0 vs 135.0 tokens/s" in verdict
    assert "Deploy K=3" in verdict


def test_the_band_decides_and_agreement_is_said():
    by_goodput = recommend(CANDIDATES, (1.0, 1.0), objective=GOODPUT)
    assert by_goodput.chosen.label == "K=3"  # ties at 1 req/s go to the smaller K, which drafts less
    agreeing = [c for c in CANDIDATES if c.label != "K=7"]
    verdict = slo_verdict(recommend(agreeing, objective=GOODPUT), recommend(agreeing), SLO)
    assert verdict.startswith("Goodput and tokens/s agree: K=3")


def test_a_level_where_nothing_met_the_slo_decides_nothing():
    starved = [
        _candidate(c.label, c.speculative_tokens, {**c.tokens_per_s, 8.0: 100.0}, {**c.goodput_rps, 8.0: 0.0})
        for c in CANDIDATES
    ]
    assert recommend(starved, (1.0, 8.0), objective=GOODPUT).chosen.label == "K=3"


def _open_loop_run(label: str, levels: dict[float, tuple[float, float]]) -> RunResult:
    """A recorded open-loop run: request rate -> (output tokens/s, goodput req/s)."""
    recorded = []
    for rate, (tokens, goodput) in levels.items():
        load = OpenLoopLoad(rate, 1.0, None, 0, rate, 0.01, 0.01, 0.0, 0.0, 4, 2.0)
        slo = SloResult(
            1.0, 0.1, None, 0.95, "profile chatbot", {"ttft": 0.97, "tpot": 0.9}, goodput / rate, 16, goodput
        )
        recorded.append(
            LevelResult(
                0,
                16,
                0,
                {},
                10.0,
                160,
                int(tokens * 10),
                tokens,
                rate,
                None,
                None,
                None,
                None,
                None,
                None,
                open_loop=load,
                slo=slo,
            )
        )
    return RunResult(label, "http://127.0.0.1:8080", "tiny-pair", "0.32.0", 1024, "on", None, None, None, [], recorded)


def test_tune_from_recorded_open_loop_runs_ranks_by_goodput_and_says_why_tokens_disagree(tmp_path, capsys):
    files = []
    for index, candidate in enumerate(CANDIDATES):
        levels = {rate: (candidate.tokens_per_s[rate], candidate.goodput_rps[rate]) for rate in candidate.tokens_per_s}
        path = tmp_path / f"run{index}.json"
        results = BenchResults(datetime.now(UTC).isoformat(), {}, {}, [_open_loop_run(candidate.label, levels)])
        path.write_text(results_to_json(results), encoding="utf-8")
        files += ["--from-results", str(path)]
    out = tmp_path / "tune"
    assert main(["tune", *files, "--out", str(out), "--band", "1-4"]) == 0
    report = (out / "recommendation.md").read_text()
    assert (
        "ranked by goodput: requests/s answered within the SLO (95% of requests: TTFT <= 1 s, TPOT <= 100 ms)" in report
    )
    assert "| K=7 | 1.00 (60.0 tok/s) | 1.60 (105.0 tok/s) | 1.70 (135.0 tok/s) |" in report
    assert "Goodput and tokens/s disagree: K=7 delivers the most output tokens/s, but K=3" in report
    assert "Recommended: **K=3** for request rates 1-4 req/s" in report
    assert (out / "deployment-snippet.yaml").read_text() == "speculation:\n  speculative_tokens: 3\n"
