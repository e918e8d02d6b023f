"""speculation-on over --url: what vLLM's spec-decode counters before and after the smoke
requests make of the step (the real server's passing case is in the local-server test)."""

from __future__ import annotations

from peagle.smoke.invocations import check_speculation_from_counters
from peagle.smoke.step import StepStatus
from peagle_serve.metrics import MetricsSnapshot

URL = "http://127.0.0.1:8080"


def counters(drafts: float, draft_tokens: float, accepted: float) -> MetricsSnapshot:
    return MetricsSnapshot.parse(
        "# TYPE vllm:spec_decode_num_drafts counter\n"
        f'vllm:spec_decode_num_drafts_total{{engine="0"}} {drafts}\n'
        "# TYPE vllm:spec_decode_num_draft_tokens counter\n"
        f'vllm:spec_decode_num_draft_tokens_total{{engine="0"}} {draft_tokens}\n'
        "# TYPE vllm:spec_decode_num_accepted_tokens counter\n"
        f'vllm:spec_decode_num_accepted_tokens_total{{engine="0"}} {accepted}\n'
    )


NO_SPECULATION = MetricsSnapshot.parse(
    '# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total{engine="0"} 64\n'
)


def test_accepted_drafts_pass():
    result = check_speculation_from_counters(counters(10, 40, 20), counters(18, 72, 36), URL)
    assert result.status is StepStatus.OK
    assert "8 drafts, 16 accepted tokens" in result.detail and "mean acceptance length 3.00" in result.detail


def test_drafts_without_accepted_tokens_fail():
    result = check_speculation_from_counters(counters(10, 40, 20), counters(18, 72, 20), URL)
    assert result.status is StepStatus.FAIL and "8 drafts, 0 accepted tokens" in result.detail


def test_no_new_drafts_fail():
    result = check_speculation_from_counters(counters(10, 40, 20), counters(10, 40, 20), URL)
    assert result.status is StepStatus.FAIL and "no drafts were made" in result.detail


def test_a_server_without_spec_decode_counters_fails_as_speculation_off():
    result = check_speculation_from_counters(NO_SPECULATION, NO_SPECULATION, URL)
    assert result.status is StepStatus.FAIL and "speculation is off" in result.detail


def test_unreachable_metrics_fail():
    result = check_speculation_from_counters(None, counters(1, 4, 2), URL)
    assert result.status is StepStatus.FAIL and "http://127.0.0.1:8080/metrics" in result.detail
