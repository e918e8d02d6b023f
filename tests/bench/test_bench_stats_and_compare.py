"""The bench's own arithmetic: percentiles, level summaries, cost, regressions, prompt files."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from host_records import recorded_host
from spec_counters import spec_metrics

from peagle.bench.compare import find_regressions, matching_baseline_run, reference_run
from peagle.bench.prompts import DEFAULT_BUCKETS, load_prompt_file, synthetic_prompts
from peagle.bench.results import BenchResults, RunResult, load_results, results_to_json
from peagle.bench.stats import RequestRecord, cost_per_million_output_tokens, percentile, summarise_level
from peagle.bench.vllm_counters import speculation_between
from peagle.cli import main
from peagle_serve.metrics import MetricsSnapshot


def test_percentile_interpolates_like_numpy():
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 0.5) == 2.5
    assert percentile(values, 0.9) == pytest.approx(3.7)
    assert percentile([7.0], 0.99) == 7.0


def test_cost_per_million_output_tokens():
    # $2.336/h at 100 tok/s: 360,000 tokens per hour -> $6.49 per million.
    assert cost_per_million_output_tokens(2.336, 100.0) == pytest.approx(6.4889, rel=1e-4)
    assert cost_per_million_output_tokens(None, 100.0) is None
    assert cost_per_million_output_tokens(2.0, 0.0) is None


def _level(concurrency=1, tokens_per_s=100.0, tpot=0.01, failures=0):
    ok = [
        RequestRecord(
            ok=True,
            e2e_s=1.0 + i / 10,
            ttft_s=0.1,
            tpot_s=tpot,
            inter_chunk_s=(0.02, 0.02),
            prompt_tokens=10,
            output_tokens=50,
        )
        for i in range(4)
    ]
    failed = [RequestRecord(ok=False, e2e_s=0.1, error_type="ThrottledError", error_message="slow down")] * failures
    duration = 200 / tokens_per_s
    return summarise_level(concurrency, ok + failed, duration, speculation=None, price_per_hour_usd=1.0)


def test_level_summary_counts_only_successes_for_throughput():
    level = _level(failures=1)
    assert (level.requests, level.failed, level.error_rate) == (5, 1, 0.2)
    assert level.errors_by_type == {"ThrottledError": 1}
    assert level.output_tokens == 200 and level.output_tokens_per_s == pytest.approx(100.0)
    assert level.e2e_s.p50 == pytest.approx(1.15) and level.itl_s.count == 8


def _run(label, speculation="on", **level_args):
    return RunResult(
        label=label,
        target="http://x",
        model="m",
        server_version=None,
        max_model_len=None,
        speculation=speculation,
        speculative_tokens=None,
        price_per_hour_usd=1.0,
        price_source="test",
        notes=[],
        levels=[_level(**level_args)],
    )


def test_regressions_beyond_tolerance_are_flagged_and_within_are_not():
    baseline = _run("k4", tokens_per_s=100.0, tpot=0.010)
    assert find_regressions(_run("k4", tokens_per_s=95.0, tpot=0.0105), baseline, tolerance=0.10) == []

    slower = find_regressions(_run("k4", tokens_per_s=80.0, tpot=0.013), baseline, tolerance=0.10)
    assert {item["metric"] for item in slower} == {"output_tokens_per_s", "tpot_p50"}
    throughput = next(item for item in slower if item["metric"] == "output_tokens_per_s")
    assert throughput["change"] == pytest.approx(-0.2)


def _measured(run: RunResult, *, busy: bool) -> RunResult:
    host = recorded_host(busy=busy)
    return replace(run, levels=[replace(level, host=host) for level in run.levels])


def _stored(tmp_path, name: str, run: RunResult) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(results_to_json(BenchResults("t", {}, {}, [run])), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("busy_side", ["baseline", "now"])
def test_a_level_measured_on_a_busy_machine_is_not_compared_and_says_so(tmp_path, capsys, busy_side):
    """A 20% drop against a level measured beside other work (on either side) is the machine's, not a
    regression: left out of --compare-to, listed as not compared. Quiet on both sides, it is a regression."""
    baseline = _measured(_run("k4", tokens_per_s=100.0), busy=busy_side == "baseline")
    now = _measured(_run("k4", tokens_per_s=80.0), busy=busy_side == "now")
    argv = ["bench", "--from-results", _stored(tmp_path, "now", now)]
    argv += ["--compare-to", _stored(tmp_path, "baseline", baseline), "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    (note,) = json.loads((tmp_path / "out" / "results.json").read_text())["not_compared"]
    side = "this run" if busy_side == "now" else "the baseline"
    assert note.startswith("`k4` at c=1 not compared with `k4`: measured on a busy machine in " + side)
    assert f"- {note}" in (tmp_path / "out" / "report.md").read_text()
    assert "not compared: 1 level(s) measured on a busy machine" in capsys.readouterr().err

    quiet = _stored(tmp_path, "quiet", _measured(_run("k4", tokens_per_s=100.0), busy=False))
    argv = ["bench", "--from-results", _stored(tmp_path, "now2", _measured(_run("k4", tokens_per_s=80.0), busy=False))]
    assert main([*argv, "--compare-to", quiet, "--out", str(tmp_path / "out2")]) == 3


def test_new_errors_are_a_regression():
    regressions = find_regressions(_run("k4", failures=1), _run("k4"), tolerance=0.5)
    assert [item["metric"] for item in regressions] == ["error_rate"]


def test_baseline_run_is_matched_by_label_and_reference_is_speculation_off():
    on, off = _run("p-eagle-k4"), _run("no-spec", speculation="off")
    baseline = BenchResults(created_utc="t", environment={}, settings={}, runs=[off, on])
    assert matching_baseline_run(_run("p-eagle-k4"), baseline) is on
    assert matching_baseline_run(_run("other"), baseline) is None
    assert reference_run([on, off]) is off


def test_results_round_trip_through_json(tmp_path):
    results = BenchResults(
        created_utc="t", environment={"client_machine": "x"}, settings={"concurrency": "1"}, runs=[_run("a")]
    )
    path = tmp_path / "results.json"
    path.write_text(results_to_json(results))
    loaded = load_results(path)
    assert loaded == results
    assert json.loads(path.read_text())["runs"][0]["levels"][0]["error_rate"] == 0.0


def test_foreign_json_is_refused_with_the_reason(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="not a peagle bench results file"):
        load_results(path)


def test_synthetic_prompts_are_deterministic_and_interleaved():
    first = synthetic_prompts(DEFAULT_BUCKETS, seed=3)
    assert first == synthetic_prompts(DEFAULT_BUCKETS, seed=3)
    assert [case.bucket for case in first[:3]] == list(DEFAULT_BUCKETS)
    lengths = {case.bucket: len(case.prompt.split()) for case in first}
    assert lengths["short"] < lengths["medium"] < lengths["long"]
    with pytest.raises(ValueError, match="valid: short"):
        synthetic_prompts(["huge"])


def test_synthetic_prompts_end_in_different_tokens():
    # A deterministic pair continues from the last token: one shared ending would send every
    # request down the same output path and measure acceptance at a single point.
    endings = {case.prompt[-1] for case in synthetic_prompts(DEFAULT_BUCKETS)}
    assert len(endings) >= 4, endings


def test_prompt_file_lines_and_errors(tmp_path):
    path = tmp_path / "traffic.jsonl"
    path.write_text(
        '{"prompt": "hi", "max_tokens": 5, "seed": 1}\n\n{"messages": [{"role": "user", "content": "yo"}], "bucket": "chat"}\n'
    )
    first, second = load_prompt_file(path)
    assert (first.prompt, first.max_tokens, dict(first.extra), first.bucket) == ("hi", 5, {"seed": 1}, "file")
    assert second.messages[0]["content"] == "yo" and second.bucket == "chat"

    path.write_text('{"prompt": "a", "messages": []}\n')
    with pytest.raises(ValueError, match=r"traffic.jsonl:1: .*exactly one"):
        load_prompt_file(path)


def test_acceptance_is_the_change_of_the_counters_over_the_level():
    before = spec_metrics(10, 40, 10, [10, 0, 0, 0])
    after = spec_metrics(110, 440, 160, [100, 40, 10, 0])

    speculation = speculation_between(before, after)

    assert (speculation.drafts, speculation.draft_tokens, speculation.accepted_tokens) == (100, 400, 150)
    assert speculation.acceptance_rate == pytest.approx(150 / 400)
    assert speculation.mean_acceptance_length == pytest.approx(2.5)
    assert speculation.per_position_acceptance == pytest.approx([0.9, 0.4, 0.1, 0.0])


def test_no_spec_counters_means_speculation_off():
    snapshot = MetricsSnapshot.parse("vllm:generation_tokens_total 5\n")
    assert speculation_between(snapshot, snapshot) is None
