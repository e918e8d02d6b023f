"""The URL transport and `peagle invoke` against the real local P-EAGLE server."""

from __future__ import annotations

import socket

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
        ["invoke", "--url", local_server.url, "--prompt", "Hello", "--profile", "chatbot", "--max-tokens", "8"]
    )

    out, err = capsys.readouterr()
    assert exit_code == 0
    assert out.strip()  # sampled at the profile's temperature: special tokens may decode to ""
    assert "8 output tokens" in err and "TTFT" in err and "finish length" in err


def test_invoke_explains_a_rejected_request_with_exit_2(local_server, capsys):
    exit_code = main(["invoke", "--url", local_server.url, "--prompt", "Hello", "--max-tokens", "5000"])

    assert exit_code == 2
    assert "max_model_len" in capsys.readouterr().err
