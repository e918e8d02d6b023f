"""Wire-format helpers for the client's unit tests: vLLM-shaped SSE bytes and SageMaker's
event-stream wire format, so botocore's own EventStream parser decodes what the
Stubber returns, exactly as it would decode a real InvokeEndpointWithResponseStream."""

from __future__ import annotations

import binascii
import json
import struct
from dataclasses import dataclass, field
from types import SimpleNamespace

import boto3
from botocore.eventstream import EventStream
from botocore.parsers import EventStreamJSONParser
from botocore.stub import Stubber

from peagle.client import PeagleClient, RetryPolicy
from peagle.client.sagemaker_transport import SageMakerTransport, make_runtime_client

# What SageMaker answers when the invoked inference component has no copy (scaled to zero), as AWS's
# scale-to-zero launch post shows it: "An error occurred (ValidationError) when calling the
# InvokeEndpoint operation: Inference Component has no capacity to process this request. ..."
NO_CAPACITY_MESSAGE = (
    "Inference Component has no capacity to process this request. ApplicationAutoScaling may be in-progress "
    "(if configured) or try to increase the capacity by invoking UpdateInferenceComponentRuntimeConfig API."
)


def described_component(component: str, *, download_s: int | None, startup_s: int | None) -> dict:
    """A DescribeInferenceComponent answer (the Stubber checks it against botocore's SageMaker model):
    the component's start-up timeouts, or none when a value is None."""
    from datetime import UTC, datetime

    arn = "arn:aws:sagemaker:us-east-1:123456789012"
    startup = {
        key: value
        for key, value in (
            ("ModelDataDownloadTimeoutInSeconds", download_s),
            ("ContainerStartupHealthCheckTimeoutInSeconds", startup_s),
        )
        if value is not None
    }
    return {
        "InferenceComponentName": component,
        "InferenceComponentArn": f"{arn}:inference-component/{component}",
        "EndpointName": "peagle-test",
        "EndpointArn": f"{arn}:endpoint/peagle-test",
        "VariantName": "AllTraffic",
        "Specification": {"ModelName": f"{component}-model", **({"StartupParameters": startup} if startup else {})},
        "RuntimeConfig": {"DesiredCopyCount": 0, "CurrentCopyCount": 0},
        "InferenceComponentStatus": "InService",
        "CreationTime": datetime(2026, 11, 30, tzinfo=UTC),
        "LastModifiedTime": datetime(2026, 11, 30, tzinfo=UTC),
    }


@dataclass
class FakeClock:
    """``sleep`` advances the clock instead of waiting; every sleep is recorded."""

    now: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def read(self) -> float:
        return self.now

    def as_time_module(self) -> SimpleNamespace:
        """Stands in for ``time`` in ``peagle.client.client``: the clients the CLI builds then sleep here."""
        return SimpleNamespace(sleep=self.sleep, perf_counter=self.read, monotonic=self.read)


def vllm_sse_stream(
    pieces: list[str], *, completion_tokens: int | None = None, chat: bool = False, spec_decode: dict | None = None
) -> bytes:
    """The bytes vLLM streams for a generation whose text deltas are ``pieces``; ``spec_decode`` goes
    where vLLM 0.32 puts per-request acceptance, ``metrics.speculative_decoding`` of the usage chunk."""
    events = []
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        choice = {"index": 0, "finish_reason": "length" if last else None}
        if chat:
            choice["delta"] = {"content": piece}
        else:
            choice["text"] = piece
        events.append({"id": "cmpl-1", "object": "text_completion", "choices": [choice], "usage": None})
    usage_chunk = {
        "id": "cmpl-1",
        "choices": [],
        "usage": {"prompt_tokens": 3, "completion_tokens": completion_tokens or len(pieces), "total_tokens": 0},
    }
    if spec_decode is not None:
        usage_chunk["metrics"] = {"speculative_decoding": spec_decode}
    events.append(usage_chunk)
    lines = [f"data: {json.dumps(event, ensure_ascii=False)}\n\n" for event in events]
    lines.append("data: [DONE]\n\n")
    return "".join(lines).encode("utf-8")


# One streamed answer exactly as vLLM 0.32.0 (CPU build) sent it through the launcher with
# speculation on: `peagle local`, the tiny pair, K=4; POST /invocations {"prompt": "Hello, world",
# "max_tokens": 12, "temperature": 0, "ignore_eos": true, "stream": true, "stream_options":
# {"include_usage": true}}. Acceptance rides on the last chunk before [DONE], the usage chunk.
RECORDED_VLLM_STREAM = (
    'data: {"id":"cmpl-8a03091013371f51","object":"text_completion","created":1796081251,"model":"tiny-pair","choices":[{"index":0,"text":"¢","logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}]}\n\n'
    'data: {"id":"cmpl-8a03091013371f51","object":"text_completion","created":1796081251,"model":"tiny-pair","choices":[{"index":0,"text":"К¸vÌN","logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}]}\n\n'
    'data: {"id":"cmpl-8a03091013371f51","object":"text_completion","created":1796081251,"model":"tiny-pair","choices":[{"index":0,"text":"eзеØл","logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}]}\n\n'
    'data: {"id":"cmpl-8a03091013371f51","object":"text_completion","created":1796081251,"model":"tiny-pair","choices":[{"index":0,"text":"4","logprobs":null,"finish_reason":"length","stop_reason":null,"prompt_token_ids":null,"token_ids":null}]}\n\n'
    'data: {"id":"cmpl-8a03091013371f51","object":"text_completion","created":1796081251,"model":"tiny-pair","choices":[],"usage":{"prompt_tokens":12,"total_tokens":24,"completion_tokens":12},"system_fingerprint":"vllm-0.32.0-4e0ddd8e","metrics":{"speculative_decoding":{"mean_acceptance_length":5.0,"draft_acceptance_rate":1.0,"acceptance_histogram":[0,0,0,0,3],"num_spec_steps":3,"num_accepted_draft_tokens":12,"num_draft_tokens":12,"num_spec_tokens":4}}}\n\n'
    "data: [DONE]\n\n"
).encode()
RECORDED_SPEC_DECODE = json.loads(RECORDED_VLLM_STREAM.split(b"\n\n")[-3][len(b"data: ") :])["metrics"][
    "speculative_decoding"
]


def recorded_vllm_stream(*, with_metrics: bool = True) -> bytes:
    """RECORDED_VLLM_STREAM, or the same answer from a server that sends no per-request metrics."""
    if with_metrics:
        return RECORDED_VLLM_STREAM
    events = RECORDED_VLLM_STREAM.decode("utf-8").split("\n\n")
    usage_chunk = json.loads(events[-3][len("data: ") :])
    del usage_chunk["metrics"]
    events[-3] = "data: " + json.dumps(usage_chunk, ensure_ascii=False)
    return "\n\n".join(events).encode("utf-8")


def split_at(data: bytes, *positions: int) -> list[bytes]:
    bounds = [0, *positions, len(data)]
    return [data[start:end] for start, end in zip(bounds, bounds[1:], strict=False)]


def _header(name: str, value: str) -> bytes:
    encoded_name, encoded_value = name.encode(), value.encode()
    return bytes([len(encoded_name)]) + encoded_name + b"\x07" + struct.pack(">H", len(encoded_value)) + encoded_value


def event_stream_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One message in the AWS event-stream binary framing (prelude, CRCs, headers, payload)."""
    header_bytes = b"".join(_header(name, value) for name, value in headers.items())
    total_length = 12 + len(header_bytes) + len(payload) + 4
    prelude = struct.pack(">II", total_length, len(header_bytes))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    message = prelude + header_bytes + payload
    return message + struct.pack(">I", binascii.crc32(message))


def payload_part(data: bytes) -> bytes:
    headers = {":message-type": "event", ":event-type": "PayloadPart", ":content-type": "application/octet-stream"}
    return event_stream_message(headers, data)


def stream_exception(kind: str, message: str) -> bytes:
    headers = {":message-type": "exception", ":exception-type": kind, ":content-type": "application/json"}
    return event_stream_message(headers, json.dumps({"Message": message}).encode())


class _RawStream:
    """What botocore's EventStream reads from: ``.stream()`` yielding network chunks."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def stream(self):
        yield from self._chunks

    def close(self) -> None:
        pass


class StubbedEndpoint:
    """A real sagemaker-runtime client under botocore's Stubber.

    ``add_stream`` queues a successful InvokeEndpointWithResponseStream whose Body is
    a real botocore EventStream over ``wire_chunks`` (the Stubber validates response
    dicts and cannot hold one, so an after-call hook puts it in place).
    """

    def __init__(self) -> None:
        self.runtime = make_runtime_client("us-east-1")
        self.stubber = Stubber(self.runtime)
        # The control plane, for DescribeInferenceComponent (peagle/client/cold_start.py).
        self.control = boto3.client("sagemaker", region_name="us-east-1")
        self.control_stubber = Stubber(self.control)
        self._bodies: list[list[bytes]] = []
        operation = self.runtime.meta.service_model.operation_model("InvokeEndpointWithResponseStream")
        self._body_shape = operation.output_shape.members["Body"]
        self.runtime.meta.events.register(
            "after-call.sagemaker-runtime.InvokeEndpointWithResponseStream", self._install_event_stream
        )
        self.sleeps: list[float] = []

    def _install_event_stream(self, parsed, http_response, **kwargs) -> None:
        if http_response.status_code == 200:
            raw = _RawStream(self._bodies.pop(0))
            parsed["Body"] = EventStream(
                raw, self._body_shape, EventStreamJSONParser(), "InvokeEndpointWithResponseStream"
            )

    def add_stream(self, wire_chunks: list[bytes], *, expected_params: dict | None = None) -> None:
        """Queue one answer; with ``expected_params`` the Stubber also checks the call's parameters."""
        self._bodies.append(wire_chunks)
        self.stubber.add_response(
            "invoke_endpoint_with_response_stream",
            {"Body": {}, "ContentType": "text/event-stream"},
            expected_params=expected_params,
        )

    def add_no_capacity(self, times: int = 1, *, operation: str = "invoke_endpoint_with_response_stream") -> None:
        """Queue ``times`` answers of a component scaled to zero (ValidationError, HTTP 400)."""
        for _ in range(times):
            self.stubber.add_client_error(
                operation,
                service_error_code="ValidationError",
                service_message=NO_CAPACITY_MESSAGE,
                http_status_code=400,
            )

    def patch_clients(self, monkeypatch) -> None:
        """Hand these clients to every client the CLIs build: the runtime one and the control plane's."""
        monkeypatch.setattr("peagle.client.sagemaker_transport.make_runtime_client", lambda *a, **k: self.runtime)
        monkeypatch.setattr("peagle.client.cold_start.make_sagemaker_client", lambda region: self.control)

    def add_component_budgets(self, component: str, *, download_s: int | None, startup_s: int | None) -> None:
        self.control_stubber.add_response(
            "describe_inference_component",
            described_component(component, download_s=download_s, startup_s=startup_s),
            {"InferenceComponentName": component},
        )

    def record_sends(self) -> list[dict]:
        """The parameters of every InvokeEndpoint(WithResponseStream) call from now on, one dict per send."""
        sent: list[dict] = []
        self.runtime.meta.events.register(
            "provide-client-params.sagemaker-runtime.*", lambda params, **kwargs: sent.append(dict(params))
        )
        return sent

    def add_error(self, code: str, http_status: int, message: str = "stubbed", **modeled_fields) -> None:
        self.stubber.add_client_error(
            "invoke_endpoint_with_response_stream",
            service_error_code=code,
            service_message=message,
            http_status_code=http_status,
            modeled_fields=modeled_fields or None,
        )

    def client(self, *, max_attempts: int = 5, random=lambda: 1.0) -> PeagleClient:
        return PeagleClient(
            SageMakerTransport("peagle-test", runtime_client=self.runtime),
            retry_policy=RetryPolicy(max_attempts=max_attempts, base_delay_s=0.5, max_delay_s=20.0),
            sleep=self.sleeps.append,  # record the backoff instead of waiting it out
            random=random,
        )
