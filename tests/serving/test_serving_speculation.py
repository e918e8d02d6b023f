"""P-EAGLE really runs: drafts are made and accepted, and the KPI line reports it."""

from __future__ import annotations

import time

import pytest
from local_engine import TEST_KPI_INTERVAL_SECONDS
from serving_requests import greedy_completion, metrics

from peagle_serve.contract import KPI_LINE_KEYS, VllmMetric

pytestmark = pytest.mark.engine

# The real engine's KPI line has every key of the contract, which a pure test
# (tests/infra/test_container_contract.py) matches against the CDK side's metric filters.
KPI_KEYS = set(KPI_LINE_KEYS)


def test_spec_decode_counters_move_and_acceptance_length_is_above_one(local_server):
    before = metrics(local_server.url)
    greedy_completion(local_server.url, "Parallel drafting", max_tokens=64)
    after = metrics(local_server.url)
    drafts = after.total(VllmMetric.SPEC_DRAFTS) - before.total(VllmMetric.SPEC_DRAFTS)
    accepted = after.total(VllmMetric.SPEC_ACCEPTED) - before.total(VllmMetric.SPEC_ACCEPTED)
    draft_tokens = after.total(VllmMetric.SPEC_DRAFT_TOKENS) - before.total(VllmMetric.SPEC_DRAFT_TOKENS)
    assert drafts > 0 and draft_tokens == 4 * drafts
    mean_acceptance_length = 1 + accepted / drafts
    # The tiny drafter's drafts are accepted at every position (peagle/local/tiny_pair.py): 5 at K=4,
    # less only where max_tokens cuts the last step short.
    assert mean_acceptance_length > 4.5, (drafts, accepted)


def test_kpi_line_appears_on_stdout_with_sane_values(local_server):
    seen_before = len(local_server.kpi_records())
    # Steady traffic across a few intervals: a request's prompt, first token and
    # finish can fall in different intervals, so each value is checked over them.
    traffic_until = time.monotonic() + 2.5 * TEST_KPI_INTERVAL_SECONDS
    while time.monotonic() < traffic_until:
        greedy_completion(local_server.url, "Measure me", max_tokens=48)
    deadline = time.monotonic() + 2 * TEST_KPI_INTERVAL_SECONDS + 10
    while time.monotonic() < deadline and len(local_server.kpi_records()) < seen_before + 3:
        time.sleep(0.5)
    records = local_server.kpi_records()[seen_before:]
    assert len(records) >= 3, "too few KPI lines:\n" + local_server.output_tail()

    for record in records:
        assert set(record) == KPI_KEYS
        assert record["event"] == "peagle_kpi" and record["model_pair"] == "tiny-pair"
        assert record["speculative_tokens"] == 4
        # the interval is measured between scrapes of /metrics, which a busy CPU delays
        assert TEST_KPI_INTERVAL_SECONDS * 0.5 <= record["interval_seconds"] <= TEST_KPI_INTERVAL_SECONDS * 5
        assert record["requests_finished_total_in_interval"] == sum(record["requests_finished"].values())
        assert 0 <= record["kv_cache_usage_ratio"] <= 1
        assert record["requests_running"] >= 0 and record["requests_waiting"] >= 0
        for key in ("ttft_mean_seconds", "tpot_mean_seconds", "e2e_latency_mean_seconds", "queue_time_mean_seconds"):
            assert record[key] is None or 0 <= record[key] < 30, key
        if record["spec_mean_acceptance_length"] is not None:
            assert 0 < record["spec_acceptance_rate"] <= 1
            assert 1 <= record["spec_mean_acceptance_length"] <= 5
            assert len(record["spec_acceptance_per_position"]) == 4
            assert all(0 <= p <= 1 for p in record["spec_acceptance_per_position"])

    def some(key):
        return [r[key] for r in records if r[key] is not None]

    for key in (
        "requests_per_second",
        "generation_tokens_per_second",
        "prompt_tokens_per_second",
        "spec_drafts_per_second",
        "ttft_mean_seconds",
        "tpot_mean_seconds",
        "e2e_latency_mean_seconds",
    ):
        assert any(value > 0 for value in some(key)), key
    assert max(some("spec_mean_acceptance_length")) > 4.5
    per_position = [r["spec_acceptance_per_position"] for r in records if r["spec_acceptance_per_position"]]
    assert all(max(rates[position] for rates in per_position) > 0.9 for position in range(4)), per_position
    assert sum(r["requests_finished"]["length"] for r in records) >= 2


def test_kpi_lines_carry_every_field_the_cloudwatch_metric_filters_read(local_server):
    """The contract between the launcher and peagle_cdk/kpi_metrics.py, checked on real lines."""
    from peagle_cdk.kpi_metrics import KPI_EVENT, KPI_FIELDS

    deadline = time.monotonic() + 3 * TEST_KPI_INTERVAL_SECONDS + 10
    while time.monotonic() < deadline and not local_server.kpi_records():
        time.sleep(0.5)
    records = local_server.kpi_records()
    assert records, local_server.output_tail()
    for record in records:
        assert record["event"] == KPI_EVENT
        # the dimensions of every metric the filters publish
        assert record["endpoint_name"] == "local" and record["variant_name"] == "local"
        for kpi in KPI_FIELDS:
            value = record
            for part in kpi.json_field.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if "." not in kpi.json_field:
                assert kpi.json_field in record, kpi.json_field
            assert value is None or isinstance(value, (int, float)), (kpi.json_field, value)
