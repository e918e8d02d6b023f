"""The SageMaker container contract on the real vLLM CPU server, via `peagle local`.

/ping, /invocations with completion, chat and streaming bodies, and bad input:
every bad request gets a 4xx with a message, never a 5xx, and the server stays
healthy afterwards.
"""

from __future__ import annotations

import json

import pytest
from local_engine import http_status
from serving_requests import post, post_json

pytestmark = pytest.mark.engine


def test_ping_is_200_once_ready(local_server):
    assert http_status(local_server.url + "/ping") == 200
    # Nothing before readiness ever said 200 (503 while the self-check ran, or no answer).
    assert 200 not in local_server.ping_statuses_before_ready


def test_vllm_runs_as_vllm_serve_without_deprecation_warnings(local_server):
    # vLLM 0.32 warns for the old module (Python warning, stderr) and for `vllm serve --model`
    # (vLLM's logger, stdout).
    assert "starting vLLM: -m peagle_serve.vllm_cli serve " in local_server.launcher_log()
    output = "\n".join(local_server.stdout_lines + local_server.stderr_lines)
    assert "vllm.entrypoints.openai.api_server` command is deprecated" not in output
    assert "The `--model` option will be removed" not in output


def test_completion_body_returns_text(local_server):
    # What `curl -X POST .../invocations -d '{...}'` sends: a form content type.
    status, text = post(
        local_server.url + "/invocations",
        b'{"prompt":"hello","max_tokens":16}',
        content_type="application/x-www-form-urlencoded",
    )
    assert status == 200, text
    body = json.loads(text)
    assert body["object"] == "text_completion"
    assert body["usage"]["completion_tokens"] == 16 and len(body["choices"][0]["text"]) > 0


def test_chat_body_returns_an_assistant_message(local_server):
    status, body = post_json(
        local_server.url + "/invocations",
        {
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
            "max_tokens": 12,
        },
    )
    assert status == 200, body
    assert body["object"] == "chat.completion"
    message = body["choices"][0]["message"]
    assert message["role"] == "assistant" and message["content"]


def test_streaming_body_returns_server_sent_events(local_server):
    request = {"prompt": "stream me", "max_tokens": 20}
    status, text = post(local_server.url + "/invocations", {**request, "stream": True})
    assert status == 200
    events = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    streamed = "".join(chunk["choices"][0]["text"] for chunk in chunks if chunk["choices"])
    status, whole = post_json(local_server.url + "/invocations", request)
    assert status == 200 and streamed == whole["choices"][0]["text"]


# Requests here name no sampling, so they get the server's default, the profile's (`peagle local`:
# chatbot, temperature 0.7, top_p 0.9), as a SageMaker client leaving sampling to the endpoint does.
# The constructed pairs put all probability on one character, so they run to max_tokens sampled too
# (before the launcher corrected vLLM's CPU faults, speculation made them end early on EOS now and then).
BAD_REQUESTS = {
    "malformed JSON": (b'{"prompt": "hi", ', "JSON decode error"),
    "empty body": (b"", "JSON decode error"),
    "wrong types": (json.dumps({"prompt": 5, "max_tokens": "many"}).encode(), "Expected one of"),
    "neither prompt nor messages": (b"{}", "prompt"),
    "prompt longer than max_model_len": (
        json.dumps({"prompt": "a" * 3000, "max_tokens": 4}).encode(),
        "maximum context length",
    ),
    "max_tokens too large": (json.dumps({"prompt": "hi", "max_tokens": 100000}).encode(), "max_tokens"),
    "negative max_tokens": (json.dumps({"prompt": "hi", "max_tokens": -1}).encode(), "max_tokens"),
    "7 MB body": (json.dumps({"prompt": "a" * (7 * 1024 * 1024), "max_tokens": 4}).encode(), "maximum context length"),
}


@pytest.mark.parametrize("case", list(BAD_REQUESTS), ids=list(BAD_REQUESTS))
def test_bad_input_gets_a_4xx_with_a_message_and_the_server_stays_healthy(local_server, case):
    body, expected_message = BAD_REQUESTS[case]
    status, text = post(local_server.url + "/invocations", body, timeout=180)
    assert 400 <= status < 500, (status, text[:500])
    assert expected_message in json.loads(text)["error"]["message"]
    assert http_status(local_server.url + "/ping") == 200
    still_ok = {"prompt": "still ok?", "max_tokens": 4}
    status, body = post_json(local_server.url + "/invocations", still_ok)
    assert status == 200 and body["usage"]["completion_tokens"] == 4, (status, body)


# Sampling parameters with speculation on (the shared server drafts K=4), through the launcher: vLLM's CPU
# build took the engine down on top_k before the launcher corrected it (peagle_serve/vllm_corrections.py).
# Each must be answered (200) or refused (4xx) and leave the server serving; none may reach a 5xx.
SAMPLING_REQUESTS = {
    "top_k 1": {"temperature": 0.7, "top_k": 1},
    "top_k 5": {"temperature": 0.7, "top_k": 5},
    "top_k -1 (off)": {"temperature": 0.7, "top_k": -1},
    "top_k 0": {"temperature": 0.7, "top_k": 0},
    "top_k above the vocabulary": {"temperature": 0.7, "top_k": 100000},
    "top_k streamed": {"temperature": 0.7, "top_k": 5, "stream": True},
    "top_p tiny": {"temperature": 0.7, "top_p": 1e-6},
    "top_p 0": {"temperature": 0.7, "top_p": 0},
    "top_p above 1": {"temperature": 0.7, "top_p": 1.5},
    "min_p": {"temperature": 0.7, "min_p": 0.1},
    "temperature tiny": {"temperature": 1e-6},
    "temperature 2": {"temperature": 2.0},
    "temperature 100": {"temperature": 100.0},
    "temperature negative": {"temperature": -1.0},
    "seed": {"temperature": 0.7, "seed": 42},
    "seed negative": {"temperature": 0.7, "seed": -5},
    "n 2": {"temperature": 0.7, "n": 2},
    "n 0": {"temperature": 0.7, "n": 0},
    "logprobs 5": {"temperature": 0.7, "logprobs": 5},
    "logprobs 1000": {"temperature": 0.7, "logprobs": 1000},
    "penalties": {"temperature": 0.7, "presence_penalty": 1.5, "frequency_penalty": 1.0, "repetition_penalty": 1.3},
    "everything at once": {"temperature": 0.9, "top_p": 0.8, "top_k": 7, "seed": 1, "n": 2, "logprobs": 2},
}


@pytest.mark.parametrize("case", list(SAMPLING_REQUESTS), ids=list(SAMPLING_REQUESTS))
def test_sampling_parameters_with_speculation_never_get_a_5xx_and_the_server_stays_up(local_server, case):
    body = {"prompt": "sample me", "max_tokens": 12, **SAMPLING_REQUESTS[case]}
    status, text = post(local_server.url + "/invocations", body, timeout=180)
    assert status < 500, (status, text[:500])
    if status >= 400:
        assert json.loads(text)["error"]["message"], text
    assert http_status(local_server.url + "/ping") == 200
    still_ok = {"prompt": "still ok?", "max_tokens": 4}
    status, answer = post_json(local_server.url + "/invocations", still_ok)
    assert status == 200 and answer["usage"]["completion_tokens"] == 4, (status, answer)
