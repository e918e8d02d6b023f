"""Acceptance taken from the answers: summed per level, by the same arithmetic as /metrics.

A SageMaker endpoint shows acceptance only in its answers (``metrics.speculative_decoding``);
these tests pin how a level's figures are made of them, and that a run against an endpoint
reports them (botocore's Stubber serves recorded vLLM 0.32 streams, TargetVariant checked).
"""

from __future__ import annotations

import json

import pytest
from botocore.stub import ANY
from client.sagemaker_wire import (
    RECORDED_SPEC_DECODE,
    StubbedEndpoint,
    payload_part,
    recorded_vllm_stream,
    split_at,
    vllm_sse_stream,
)
from spec_counters import spec_metrics

from peagle.bench.response_acceptance import speculation_from_responses
from peagle.bench.results import SOURCE_METRICS, SOURCE_RESPONSES, load_results
from peagle.bench.vllm_counters import speculation_between
from peagle.cli import main
from peagle.client import SpecDecodeMetrics


def _answer(histogram: list[int], k: int = 4) -> SpecDecodeMetrics:
    """One answer's metrics as vLLM computes them from its histogram (RequestSpecDecodeMetrics.to_dict)."""
    steps = sum(histogram)
    accepted = sum(j * count for j, count in enumerate(histogram))
    return SpecDecodeMetrics(
        mean_acceptance_length=1 + accepted / steps,
        draft_acceptance_rate=accepted / (steps * k),
        acceptance_histogram=tuple(histogram),
        num_spec_steps=steps,
        num_accepted_draft_tokens=accepted,
        num_draft_tokens=steps * k,
        num_spec_tokens=k,
    )


def test_a_level_sums_its_answers_and_matches_what_the_counters_say_about_the_same_steps():
    # 16 steps accepting one draft each (the tiny pair), and 6 steps: 2 none, 1 one, 3 all four.
    answers = [_answer([0, 16, 0, 0, 0]), _answer([2, 1, 0, 0, 3])]
    # The same 22 verify steps as vLLM's /metrics counters count them (SpecDecodingStats.observe_draft).
    counters = speculation_between(spec_metrics(0, 0, 0, [0, 0, 0, 0]), spec_metrics(22, 88, 29, [20, 3, 3, 3]))

    level = speculation_from_responses(answers)

    assert (level.drafts, level.draft_tokens, level.accepted_tokens) == (22, 88, 29)
    assert level.acceptance_rate == pytest.approx(29 / 88, abs=1e-6)  # token-weighted, not the mean of 0.25 and 0.54
    assert level.mean_acceptance_length == pytest.approx(1 + 29 / 22, abs=1e-6)
    assert level.per_position_acceptance == pytest.approx([20 / 22, 3 / 22, 3 / 22, 3 / 22], abs=1e-6)
    assert (level.source, counters.source) == (SOURCE_RESPONSES, SOURCE_METRICS)
    assert (
        level.acceptance_rate,
        level.mean_acceptance_length,
        level.per_position_acceptance,
        level.drafts,
        level.draft_tokens,
        level.accepted_tokens,
    ) == (
        counters.acceptance_rate,
        counters.mean_acceptance_length,
        counters.per_position_acceptance,
        counters.drafts,
        counters.draft_tokens,
        counters.accepted_tokens,
    )


def test_no_answer_with_metrics_means_no_acceptance_from_responses():
    assert speculation_from_responses([]) is None


ENDPOINT = "peagle-endpoint"


def _bench_endpoint(monkeypatch, tmp_path, endpoint: StubbedEndpoint, *extra: str) -> tuple[int, dict, str]:
    monkeypatch.setattr("peagle.client.sagemaker_transport.make_runtime_client", lambda *a, **k: endpoint.runtime)
    out = tmp_path / "report"
    argv = ["bench", "--endpoint", ENDPOINT, "--region", "us-east-1", "--concurrency", "1,2", "--requests", "2"]
    exit_code = main([*argv, "--max-tokens", "32", "--buckets", "short", *extra, "--out", str(out)])
    return exit_code, json.loads((out / "results.json").read_text()), (out / "report.md").read_text()


def test_an_endpoint_run_reports_acceptance_from_the_answers(monkeypatch, tmp_path):
    recorded = recorded_vllm_stream()  # K=4, every draft accepted: histogram [0, 0, 0, 0, 3]
    # Another answer of the same shape, drafts accepted in part: 3 steps accepting 0, 1 and 4 drafts.
    partial = vllm_sse_stream(
        ["abcd"],
        completion_tokens=8,
        spec_decode={
            **RECORDED_SPEC_DECODE,
            "acceptance_histogram": [1, 1, 0, 0, 1],
            "num_accepted_draft_tokens": 5,
            "mean_acceptance_length": 1 + 5 / 3,
            "draft_acceptance_rate": 5 / 12,
        },
    )
    endpoint = StubbedEndpoint()
    # The warm-up, two answers at concurrency 1, then two at concurrency 2 (one of each kind).
    for wire in (recorded, recorded, recorded, recorded, partial):
        # PayloadParts cut mid-line, as SageMaker may deliver them; the SSE decoder rejoins them.
        endpoint.add_stream([payload_part(part) for part in split_at(wire, 7, len(wire) - 40)])

    with endpoint.stubber:
        exit_code, results, report = _bench_endpoint(monkeypatch, tmp_path, endpoint)
        endpoint.stubber.assert_no_pending_responses()

    assert exit_code == 0
    run = results["runs"][0]
    assert (run["target"], run["speculation"], run["speculative_tokens"]) == (f"sagemaker:{ENDPOINT}", "on", 4)
    assert run["notes"][0].startswith("Acceptance from the responses")
    first, second = run["levels"]
    assert first["speculation"] is None and second["speculation"] is None  # no /metrics through InvokeEndpoint
    assert first["speculation_from_responses"] == {
        "acceptance_rate": 1.0,
        "mean_acceptance_length": 5.0,
        "per_position_acceptance": [1.0, 1.0, 1.0, 1.0],
        "drafts": 6,
        "draft_tokens": 24,
        "accepted_tokens": 24,
        "source": "responses",
    }
    # Token-weighted over the level: 3 + 3 steps, 12 + 12 drafted, 12 + 5 accepted.
    mixed = second["speculation_from_responses"]
    assert (mixed["drafts"], mixed["draft_tokens"], mixed["accepted_tokens"]) == (6, 24, 17)
    assert mixed["acceptance_rate"] == pytest.approx(17 / 24, abs=1e-6)
    assert mixed["mean_acceptance_length"] == pytest.approx(1 + 17 / 6, abs=1e-6)
    assert mixed["per_position_acceptance"] == pytest.approx([5 / 6, 4 / 6, 4 / 6, 4 / 6], abs=1e-6)
    assert "| 1.000 | 5.00 | 1.00, 1.00, 1.00, 1.00 | responses |" in report
    assert "| 0.708 | 3.83 | 0.83, 0.67, 0.67, 0.67 | responses |" in report
    # Read back (--from-results, --compare-to), the figures keep their source.
    stored = load_results(tmp_path / "report" / "results.json").runs[0].levels[1].acceptance
    assert (stored.source, stored.accepted_tokens) == (SOURCE_RESPONSES, 17)


def test_an_endpoint_whose_answers_carry_no_metrics_says_acceptance_was_not_measured(monkeypatch, tmp_path):
    endpoint = StubbedEndpoint()
    for _ in range(1 + 2 + 2):
        endpoint.add_stream([payload_part(recorded_vllm_stream(with_metrics=False))])

    with endpoint.stubber:
        exit_code, results, report = _bench_endpoint(monkeypatch, tmp_path, endpoint)

    run = results["runs"][0]
    assert exit_code == 0 and run["speculation"] == "unknown" and run["speculative_tokens"] is None
    assert all(level["speculation_from_responses"] is None for level in run["levels"])
    assert run["notes"][0].startswith("Acceptance not measured")


def test_target_variant_reaches_invoke_endpoint_for_each_endpoint_target(monkeypatch, tmp_path):
    endpoint = StubbedEndpoint()
    for variant in ("Primary",) * 5 + ("Baseline",) * 5:  # one target, then the other
        expected = {
            "EndpointName": ENDPOINT,
            "TargetVariant": variant,
            "Body": ANY,
            "ContentType": "application/json",
            "Accept": "text/event-stream",
            "CustomAttributes": ANY,
        }
        endpoint.add_stream([payload_part(recorded_vllm_stream())], expected_params=expected)

    with endpoint.stubber:
        exit_code, results, _ = _bench_endpoint(
            monkeypatch,
            tmp_path,
            endpoint,
            "--endpoint",
            ENDPOINT,
            "--target-variant",
            "Primary",
            "--target-variant",
            "Baseline",
        )
        endpoint.stubber.assert_no_pending_responses()

    assert exit_code == 0
    assert [(run["label"], run["target"]) for run in results["runs"]] == [
        (f"{ENDPOINT}/Primary", f"sagemaker:{ENDPOINT} variant Primary"),
        (f"{ENDPOINT}/Baseline", f"sagemaker:{ENDPOINT} variant Baseline"),
    ]


def test_invoke_sends_its_target_variant(monkeypatch, capsys):
    endpoint = StubbedEndpoint()
    monkeypatch.setattr("peagle.client.sagemaker_transport.make_runtime_client", lambda *a, **k: endpoint.runtime)
    endpoint.add_stream(
        [payload_part(recorded_vllm_stream())],
        expected_params={
            "EndpointName": ENDPOINT,
            "TargetVariant": "Baseline",
            "Body": ANY,
            "ContentType": ANY,
            "Accept": ANY,
            "CustomAttributes": ANY,
        },
    )

    with endpoint.stubber:
        exit_code = main(["invoke", "--endpoint", ENDPOINT, "--target-variant", "Baseline", "--prompt", "hi", "--json"])
        endpoint.stubber.assert_no_pending_responses()

    assert exit_code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["spec_decode_metrics"]["acceptance_histogram"] == RECORDED_SPEC_DECODE["acceptance_histogram"]


@pytest.mark.parametrize(
    "argv",
    [
        ["invoke", "--url", "http://127.0.0.1:1", "--target-variant", "Baseline", "--prompt", "hi"],
        ["bench", "--url", "http://127.0.0.1:1", "--target-variant", "Baseline", "--out", "never-written"],
        [
            "bench",
            "--endpoint",
            "e",
            "--endpoint",
            "e",
            "--target-variant",
            "A",
            "--target-variant",
            "B",
            "--target-variant",
            "C",
            "--out",
            "never-written",
        ],
    ],
    ids=["invoke-url", "bench-url", "bench-count"],
)
def test_target_variant_without_a_matching_endpoint_exits_2_before_sending(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert "--target-variant" in capsys.readouterr().err
    assert not (tmp_path / "never-written").exists()
