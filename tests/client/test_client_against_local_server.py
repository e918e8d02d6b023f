"""The URL transport and `peagle invoke` against the real local P-EAGLE server."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from peagle.cli import main
from peagle.client import ConnectionFailedError, GenerationRequest, InvalidRequestError, PeagleClient, RetryPolicy
from peagle.client.http_transport import HttpTransport

pytestmark = pytest.mark.engine


def test_completion_streams_text_usage_and_timings(local_server):
    with PeagleClient.for_url(local_server.url) as client:
        result = client.generate(GenerationRequest(prompt="Hello, world", max_tokens=24, temperature=0.0))

    # The tiny pair never emits EOS, so a generation runs to max_tokens.
    assert result.usage.completion_tokens == 24 and result.finish_reason == "length"
    assert len(result.text) == 24  # one character per token
    timings = result.timings
    assert 0 < timings.ttft_s <= timings.chunk_times_s[-1] <= timings.e2e_s
    assert list(timings.chunk_times_s) == sorted(timings.chunk_times_s)
    assert result.time_per_output_token_s > 0


def test_chat_and_greedy_determinism(local_server):
    request = GenerationRequest(messages=[{"role": "user", "content": "Hi"}], max_tokens=12, temperature=0.0)
    with PeagleClient.for_url(local_server.url) as client:
        first, second = client.generate(request), client.generate(request)
    assert first.text == second.text and len(first.text) == 12


def test_a_request_the_model_rejects_is_not_retried(local_server):
    sleeps: list[float] = []
    client = PeagleClient(HttpTransport(local_server.url), sleep=sleeps.append)
    with pytest.raises(InvalidRequestError, match="max_model_len") as raised:
        client.generate(GenerationRequest(prompt="Hi", max_tokens=100_000))
    assert raised.value.status == 400 and raised.value.attempts == 1 and sleeps == []


def test_nothing_listening_is_retried_then_reported():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    sleeps: list[float] = []
    client = PeagleClient(
        HttpTransport(f"http://127.0.0.1:{port}"), retry_policy=RetryPolicy(max_attempts=3), sleep=sleeps.append
    )
    with pytest.raises(ConnectionFailedError, match="Is the server running") as raised:
        client.generate(GenerationRequest(prompt="Hi"))
    assert raised.value.attempts == 3 and len(sleeps) == 2


def test_invoke_streams_to_stdout_and_reports_timings(local_server, capsys):
    exit_code = main(
        # At the profile's sampling (temperature 0.7): the tiny pair still runs to max_tokens.
        ["invoke", "--url", local_server.url, "--prompt", "Hello", "--profile", "chatbot", "--max-tokens", "8"]
    )

    out, err = capsys.readouterr()
    assert exit_code == 0
    assert out.strip()
    assert "8 output tokens" in err and "TTFT" in err and "finish length" in err


def test_invoke_explains_a_rejected_request_with_exit_2(local_server, capsys):
    exit_code = main(["invoke", "--url", local_server.url, "--prompt", "Hello", "--max-tokens", "5000"])

    assert exit_code == 2
    assert "max_model_len" in capsys.readouterr().err


def _sse_payloads(response) -> list[dict]:
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: {")]


def _consistent(spec: dict, k: int) -> None:
    """One answer's metrics hold together the way vLLM computes them (RequestSpecDecodeMetrics.to_dict)."""
    histogram = spec["acceptance_histogram"]
    assert len(histogram) == k + 1 == spec["num_spec_tokens"] + 1
    assert spec["num_spec_steps"] == sum(histogram) > 0
    assert spec["num_accepted_draft_tokens"] == sum(j * count for j, count in enumerate(histogram))
    assert spec["mean_acceptance_length"] == 1 + spec["num_accepted_draft_tokens"] / spec["num_spec_steps"]
    assert spec["draft_acceptance_rate"] == spec["num_accepted_draft_tokens"] / spec["num_draft_tokens"]


def test_what_carries_acceptance_streamed_and_not(local_server):
    """With speculation on (the launcher adds --per-request-spec-decode-metrics summary), vLLM 0.32 puts
    metrics.speculative_decoding on a non-streamed answer, and on a streamed one only in the final usage
    chunk, which exists only with stream_options.include_usage; n > 1 gets none."""
    body = {"prompt": "Hello, world", "max_tokens": 16, "temperature": 0.0}
    with httpx.Client(base_url=local_server.url, timeout=120) as http:
        whole = http.post("/v1/completions", json=body).json()
        chat = http.post("/v1/chat/completions", json=_chat(body)).json()
        streamed = _sse_payloads(
            http.post("/v1/completions", json={**body, "stream": True, "stream_options": {"include_usage": True}})
        )
        streamed_chat = _sse_payloads(
            http.post(
                "/v1/chat/completions",
                json={**_chat(body), "stream": True, "stream_options": {"include_usage": True}},
            )
        )
        without_usage = _sse_payloads(http.post("/v1/completions", json={**body, "stream": True}))
        two = http.post("/v1/completions", json={**body, "max_tokens": 4, "n": 2}).json()

    for answer in (whole, chat):
        _consistent(answer["metrics"]["speculative_decoding"], k=4)
    # The same greedy generation, the same acceptance; the non-streamed answer also spells out the
    # `detailed` level's per-step arrays as null (streamed chunks drop None fields).
    not_null = {key: value for key, value in whole["metrics"]["speculative_decoding"].items() if value is not None}
    assert not_null == streamed[-1]["metrics"]["speculative_decoding"]
    for chunks in (streamed, streamed_chat):
        assert chunks[-1]["choices"] == [] and "usage" in chunks[-1]
        assert [i for i, chunk in enumerate(chunks) if "metrics" in chunk] == [len(chunks) - 1]
    assert not any("metrics" in chunk for chunk in without_usage)
    assert "speculative_decoding" not in (two.get("metrics") or {})


def _chat(body: dict) -> dict:
    return {"messages": [{"role": "user", "content": body["prompt"]}], "max_tokens": 16, "temperature": 0.0}


def test_the_client_returns_each_answers_acceptance(local_server):
    with PeagleClient.for_url(local_server.url) as client:
        completion = client.generate(GenerationRequest(prompt="Hello, world", max_tokens=16, temperature=0.0))
        chat = client.generate(
            GenerationRequest(messages=[{"role": "user", "content": "Hi"}], max_tokens=16, temperature=0.0)
        )

    for result in (completion, chat):
        spec = result.spec_decode_metrics
        assert spec is not None and spec.num_spec_tokens == 4 and spec.num_spec_steps > 0
        assert sum(spec.accepted_per_position) == spec.num_accepted_draft_tokens
