"""P-EAGLE really runs: drafts are made and accepted, and the KPI line reports it."""

from __future__ import annotations

import time

import pytest
from conftest import TEST_KPI_INTERVAL_SECONDS
from peagle_serve import metrics as m
from serving_requests import greedy_completion, metrics

pytestmark = pytest.mark.engine

# The keys the CDK side's CloudWatch metric filters read, by name.
KPI_KEYS = {
    "event", "timestamp", "model_pair", "interval_seconds", "speculative_tokens",
    "requests_per_second", "generation_tokens_per_second", "prompt_tokens_per_second",
    "ttft_mean_seconds", "tpot_mean_seconds", "e2e_latency_mean_seconds", "queue_time_mean_seconds",
    "spec_acceptance_rate", "spec_mean_acceptance_length", "spec_acceptance_per_position",
    "spec_drafts_per_second", "requests_running", "requests_waiting", "kv_cache_usage_ratio",
    "requests_finished", "requests_finished_total_in_interval",
}


def test_spec_decode_counters_move_and_acceptance_length_is_above_one(local_server):
    before = metrics(local_server.url)
    greedy_completion(local_server.url, "Parallel drafting", max_tokens=64)
    after = metrics(local_server.url)
    drafts = after.total(m.SPEC_DRAFTS) - before.total(m.SPEC_DRAFTS)
    accepted = after.total(m.SPEC_ACCEPTED) - before.total(m.SPEC_ACCEPTED)
    draft_tokens = after.total(m.SPEC_DRAFT_TOKENS) - before.total(m.SPEC_DRAFT_TOKENS)
    assert drafts > 0 and draft_tokens == 4 * drafts
    mean_acceptance_length = 1 + accepted / drafts
    # The tiny drafter predicts draft position 0 exactly: ~2.0 at K=4.
    assert mean_acceptance_length > 1.5, (drafts, accepted)


def test_kpi_line_appears_on_stdout_with_sane_values(local_server):
    for _ in range(3):
        greedy_completion(local_server.url, "Measure me", max_tokens=48)
    deadline = time.monotonic() + 4 * TEST_KPI_INTERVAL_SECONDS + 10
    record = None
    while time.monotonic() < deadline and record is None:
        busy = [r for r in local_server.kpi_records() if r["requests_finished_total_in_interval"] > 0
                and r["spec_mean_acceptance_length"] is not None]
        record = busy[-1] if busy else None
        time.sleep(0.5)
    assert record is not None, "no KPI line with traffic:\n" + local_server.output_tail()

    assert set(record) == KPI_KEYS
    assert record["event"] == "peagle_kpi" and record["model_pair"] == "tiny-pair"
    assert record["speculative_tokens"] == 4
    assert abs(record["interval_seconds"] - TEST_KPI_INTERVAL_SECONDS) < 1.5
    assert record["requests_per_second"] > 0 and record["generation_tokens_per_second"] > 0
    assert record["prompt_tokens_per_second"] > 0
    for key in ("ttft_mean_seconds", "tpot_mean_seconds", "e2e_latency_mean_seconds"):
        assert 0 < record[key] < 30, key
    assert record["queue_time_mean_seconds"] >= 0
    assert 0 < record["spec_acceptance_rate"] <= 1
    assert 1.5 < record["spec_mean_acceptance_length"] <= 5
    per_position = record["spec_acceptance_per_position"]
    assert len(per_position) == 4 and per_position[0] > 0.9
    assert record["spec_drafts_per_second"] > 0
    assert 0 <= record["kv_cache_usage_ratio"] <= 1
    assert record["requests_running"] >= 0 and record["requests_waiting"] >= 0
    assert record["requests_finished"]["length"] >= 1
    assert record["requests_finished_total_in_interval"] == sum(record["requests_finished"].values())
    # Every line on stdout that claims to be a KPI line is one whole JSON object.
    assert all(set(r) == KPI_KEYS for r in local_server.kpi_records())
