"""How many times one `generate` call puts a request on the wire, counted at the wire.

The Stubber answers before botocore's retry handler runs, so it cannot see botocore
retries; here a ``before-send`` handler stands in for the network instead: every
request botocore sends (its own retries included) reaches it and is counted, and it
answers with the failure SageMaker would send. The documented number
(docs/client-and-bench.md, "Retries and errors") is ``RetryPolicy.max_attempts`` sends
for a retried failure and one for a final one; for an inference component scaled to zero,
one per look until ``RetryPolicy.cold_start_wait_s`` has passed.
"""

from __future__ import annotations

import json

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ReadTimeoutError

from peagle.client import (
    GenerationRequest,
    ModelServerError,
    PeagleClient,
    PeagleClientError,
    ResponseTimeoutError,
    RetryPolicy,
    ServiceError,
    ThrottledError,
)
from peagle.client.sagemaker_transport import SageMakerTransport, make_runtime_client

REQUEST = GenerationRequest(prompt="hello", max_tokens=8)
APP_ATTEMPTS = RetryPolicy().max_attempts  # what `peagle invoke/bench/batch` use unless --max-attempts


class _Body:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **kwargs):
        yield self._data


def _error_response(url: str, status: int, code: str, fields: dict) -> AWSResponse:
    headers = {"x-amzn-ErrorType": code, "Content-Type": "application/json"}
    return AWSResponse(url, status, headers, _Body(json.dumps({"message": "stubbed", **fields}).encode()))


class _Wire:
    """Stands in for the network under a real sagemaker-runtime client; counts the sends."""

    def __init__(self, monkeypatch, answer) -> None:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")  # requests are signed before they are sent
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
        monkeypatch.delenv("AWS_PROFILE", raising=False)
        self.sends = 0
        self._answer = answer
        self.runtime = make_runtime_client("us-east-1")
        self.runtime.meta.events.register("before-send.sagemaker-runtime.InvokeEndpointWithResponseStream", self._send)
        # botocore's own backoff would otherwise really sleep between its retries.
        monkeypatch.setattr("time.sleep", lambda seconds: None)

    def _send(self, request, **kwargs):
        self.sends += 1
        return self._answer(request)

    def generate(self) -> None:
        policy = RetryPolicy(max_attempts=APP_ATTEMPTS)
        transport = SageMakerTransport("peagle-test", runtime_client=self.runtime)
        PeagleClient(transport, retry_policy=policy, sleep=lambda seconds: None).generate(REQUEST)


@pytest.mark.parametrize(
    ("status", "code", "fields", "raised"),
    [
        (400, "ThrottlingException", {}, ThrottledError),
        (503, "ServiceUnavailable", {}, ServiceError),
        (500, "InternalFailure", {}, ServiceError),
        (424, "ModelError", {"OriginalStatusCode": 503, "OriginalMessage": "overloaded"}, ModelServerError),
    ],
)
def test_a_failure_that_persists_is_sent_max_attempts_times_in_all(monkeypatch, status, code, fields, raised):
    wire = _Wire(monkeypatch, lambda request: _error_response(request.url, status, code, fields))

    with pytest.raises(raised) as error:
        wire.generate()

    assert error.value.attempts == APP_ATTEMPTS
    assert wire.sends == APP_ATTEMPTS  # not APP_ATTEMPTS x botocore's attempts


def test_a_rejected_request_is_sent_once(monkeypatch):
    fields = {"OriginalStatusCode": 400, "OriginalMessage": "maximum context length"}
    wire = _Wire(monkeypatch, lambda request: _error_response(request.url, 424, "ModelError", fields))

    with pytest.raises(PeagleClientError):
        wire.generate()

    assert wire.sends == 1


def test_a_read_timeout_is_sent_once(monkeypatch):
    """The generation may still be running: a resend would pay for it twice."""

    def time_out(request):
        raise ReadTimeoutError(endpoint_url=request.url)

    wire = _Wire(monkeypatch, time_out)

    with pytest.raises(ResponseTimeoutError):
        wire.generate()

    assert wire.sends == 1


def test_a_component_scaled_to_zero_is_sent_until_the_cold_start_wait_ends_and_botocore_adds_none(monkeypatch):
    """Cold-start sends are bounded by ``cold_start_wait_s``, not ``max_attempts``; each carries the
    component's header (X-Amzn-SageMaker-Inference-Component, botocore's serialization of InferenceComponentName)."""
    from sagemaker_wire import NO_CAPACITY_MESSAGE, FakeClock

    from peagle.client import NoCapacityError

    headers = []

    def no_capacity(request):
        headers.append(request.headers.get("X-Amzn-SageMaker-Inference-Component"))
        return _error_response(request.url, 400, "ValidationError", {"message": NO_CAPACITY_MESSAGE})

    wire = _Wire(monkeypatch, no_capacity)
    clock = FakeClock()
    transport = SageMakerTransport("peagle-test", runtime_client=wire.runtime, inference_component="peagle-primary")
    client = PeagleClient(
        transport,
        retry_policy=RetryPolicy(max_attempts=APP_ATTEMPTS, cold_start_wait_s=60),
        sleep=clock.sleep,
        clock=clock.read,
        random=lambda: 1.0,
    )

    with pytest.raises(NoCapacityError) as error:
        client.generate(REQUEST)

    assert clock.sleeps == [5.0, 10.0, 20.0, 25.0]  # 5, 10, 20, then cut at the 60 s deadline
    assert wire.sends == 5 == error.value.attempts  # one send per look, none added by botocore
    assert headers == [b"peagle-primary"] * 5  # the header as botocore puts it on the wire
