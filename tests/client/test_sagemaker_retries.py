"""Retry classification and stream handling of the SageMaker transport, driven
through a real sagemaker-runtime client under botocore's Stubber."""

from __future__ import annotations

import pytest
from sagemaker_wire import StubbedEndpoint, payload_part, split_at, stream_exception, vllm_sse_stream

from peagle.client import (
    ClientConfigurationError,
    GenerationRequest,
    InvalidRequestError,
    ModelServerError,
    StreamInterruptedError,
    ThrottledError,
)
from peagle.client.sagemaker_transport import make_runtime_client

REQUEST = GenerationRequest(prompt="hello", max_tokens=8)
OK_STREAM = [payload_part(vllm_sse_stream(["Hi", " there"]))]


@pytest.fixture
def endpoint():
    """A real sagemaker-runtime client under botocore's Stubber; see StubbedEndpoint."""
    stubbed = StubbedEndpoint()
    with stubbed.stubber:
        yield stubbed


@pytest.mark.parametrize(
    ("code", "http_status", "fields"),
    [
        ("ThrottlingException", 400, {}),
        ("ModelNotReadyException", 429, {}),
        ("ModelError", 424, {"OriginalStatusCode": 503, "OriginalMessage": "engine overloaded"}),
        ("ModelError", 424, {"OriginalStatusCode": 0, "OriginalMessage": "no response"}),
        ("ServiceUnavailable", 503, {}),
        ("InternalFailure", 500, {}),
    ],
)
def test_retryable_failures_are_retried_then_succeed(endpoint, code, http_status, fields):
    endpoint.add_error(code, http_status, **fields)
    endpoint.add_stream(OK_STREAM)

    result = endpoint.client().generate(REQUEST)

    assert result.text == "Hi there"
    assert result.attempts == 2
    assert endpoint.sleeps == [0.5]  # first retry waits up to base_delay_s (random() = 1.0 here)
    endpoint.stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("code", "http_status", "fields", "message_part"),
    [
        ("ModelError", 424, {"OriginalStatusCode": 400, "OriginalMessage": "bad"}, "status 400"),
        ("ModelError", 424, {"OriginalStatusCode": 422}, "status 422"),
        ("ValidationError", 400, {}, "rejected"),
    ],
)
def test_client_errors_are_never_retried(endpoint, code, http_status, fields, message_part):
    endpoint.add_error(code, http_status, message="This model's maximum context length is 512", **fields)
    endpoint.add_stream(OK_STREAM)  # must stay unused

    with pytest.raises(InvalidRequestError, match=message_part) as raised:
        endpoint.client().generate(REQUEST)

    assert raised.value.attempts == 1
    assert endpoint.sleeps == []
    with pytest.raises(AssertionError):
        endpoint.stubber.assert_no_pending_responses()


def test_missing_endpoint_says_what_to_check(endpoint):
    endpoint.add_error("ValidationError", 400, message="Endpoint peagle-test of account 1 not found")

    with pytest.raises(InvalidRequestError, match="Check the endpoint name and region"):
        endpoint.client().generate(REQUEST)


def test_model_error_points_at_container_logs(endpoint):
    arn = "arn:aws:logs:us-east-1:1:log-group:/aws/sagemaker/Endpoints/peagle-test"
    for _ in range(2):
        endpoint.add_error("ModelError", 424, OriginalStatusCode=500, LogStreamArn=arn)

    with pytest.raises(ModelServerError, match="Container logs: arn:aws:logs") as raised:
        endpoint.client(max_attempts=2).generate(REQUEST)
    assert raised.value.attempts == 2


def test_backoff_grows_exponentially_with_full_jitter_until_attempts_run_out(endpoint):
    for _ in range(5):
        endpoint.add_error("ThrottlingException", 400, message="Rate exceeded")

    with pytest.raises(ThrottledError, match="Rate exceeded") as raised:
        endpoint.client(max_attempts=5).generate(REQUEST)

    assert raised.value.attempts == 5
    assert endpoint.sleeps == [0.5, 1.0, 2.0, 4.0]  # ceilings, since random() = 1.0


def test_jitter_draws_below_the_ceiling(endpoint):
    endpoint.add_error("ThrottlingException", 400)
    endpoint.add_error("ThrottlingException", 400)
    endpoint.add_stream(OK_STREAM)

    endpoint.client(random=lambda: 0.25).generate(REQUEST)

    assert endpoint.sleeps == [0.125, 0.25]


def test_failure_after_first_byte_is_not_retried(endpoint):
    sse = vllm_sse_stream(["Hi", " there", " friend"])
    first_half = sse[: sse.index(b"\n\n") + 2 + 30]  # one whole event and part of the next
    endpoint.add_stream([payload_part(first_half), stream_exception("ModelStreamError", "CUDA error")])
    endpoint.add_stream(OK_STREAM)  # must stay unused: a resend would repeat the generation

    with pytest.raises(StreamInterruptedError, match="CUDA error") as raised:
        endpoint.client().generate(REQUEST)

    assert raised.value.partial_text == "Hi"
    assert raised.value.attempts == 1
    assert endpoint.sleeps == []
    with pytest.raises(AssertionError):
        endpoint.stubber.assert_no_pending_responses()


def test_stream_failure_before_any_byte_is_retried(endpoint):
    endpoint.add_stream([stream_exception("InternalStreamFailure", "stream reset")])
    endpoint.add_stream(OK_STREAM)

    result = endpoint.client().generate(REQUEST)

    assert result.text == "Hi there"
    assert result.attempts == 2


def test_stream_without_done_is_reported_as_interrupted(endpoint):
    truncated = vllm_sse_stream(["Hi", " there"]).split(b"\n\n")[0] + b"\n\n"
    endpoint.add_stream([payload_part(truncated)])

    with pytest.raises(StreamInterruptedError, match=r"\[DONE\] missing") as raised:
        endpoint.client().generate(REQUEST)
    assert raised.value.partial_text == "Hi"


def test_payload_parts_split_anywhere_decode_to_the_same_text(endpoint):
    text_pieces = ["Grüße", " 日本", " 🚀", " done"]
    sse = vllm_sse_stream(text_pieces, completion_tokens=7)
    # PayloadParts cut mid-line and mid-UTF-8 sequence; event-stream frames cut mid-frame too.
    cut = sse.index("ü".encode()) + 1
    parts = [payload_part(piece) for piece in split_at(sse, 5, cut, cut + 40, sse.index("🚀".encode()) + 2)]
    wire = b"".join(parts)
    endpoint.add_stream(split_at(wire, 7, 100, len(wire) - 3))

    result = endpoint.client().generate(REQUEST)

    assert result.text == "".join(text_pieces)
    assert result.usage.completion_tokens == 7
    assert result.finish_reason == "length"
    # One arrival time per network read that carried text (here: a fixed clock, so one).
    assert 1 <= len(result.timings.chunk_times_s) <= len(text_pieces)


def test_request_carries_a_request_id_and_streams(endpoint):
    endpoint.add_stream(OK_STREAM)
    seen = {}

    def capture(params, **kwargs):
        seen.update(params)

    endpoint.runtime.meta.events.register("provide-client-params.sagemaker-runtime.*", capture)
    result = endpoint.client().generate(REQUEST, request_id="abc123")

    assert seen["CustomAttributes"] == "peagle-request-id=abc123"
    assert seen["Accept"] == "text/event-stream"
    assert b'"stream": true' in seen["Body"]
    assert result.request_id == "abc123"


def test_runtime_client_leaves_retries_to_the_client_and_has_a_long_read_timeout():
    config = make_runtime_client("us-east-1").meta.config

    assert config.retries["total_max_attempts"] == 1  # sends are counted in test_sends_per_call.py
    assert config.read_timeout >= 70


def test_short_read_timeout_is_refused():
    with pytest.raises(ClientConfigurationError, match="resend"):
        make_runtime_client("us-east-1", read_timeout_s=30)
