"""The request log through the real server: `peagle local` (the container's launcher and vLLM's CPU build) with
PEAGLE_REQUEST_LOG_SAMPLING_PERCENT=100, as `capture.method: request_log` sets it. Requests on /invocations,
/v1/completions (streamed) and /v1/chat/completions come out of the container's stdout as `peagle_request` lines
that `peagle prompts`' reader turns back into the kept bodies; a header, a key that is not kept and a refused
request never show. The middleware's logic alone: tests/prompts/test_request_log_writer.py."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest
from serving_requests import post, post_json

from peagle.prompts_capture.request_log import LogEvent, log_records

pytestmark = pytest.mark.engine

SECRET = "Bearer sk-never-in-the-log"


def _post_with_header(url: str, body: dict) -> int:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": SECRET},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        response.read()
        return response.status


@pytest.fixture(scope="module")
def logging_server(local_server_factory):
    return local_server_factory(speculative_tokens=4, env={"PEAGLE_REQUEST_LOG_SAMPLING_PERCENT": "100"})


def test_served_requests_come_out_as_request_log_lines_and_read_back(logging_server):
    server = logging_server
    completion = {"prompt": "The quick brown fox", "max_tokens": 8, "temperature": 0, "user": "alice@example.com"}
    assert _post_with_header(server.url + "/invocations", completion) == 200
    streamed = {"prompt": "P-EAGLE drafts", "max_tokens": 8, "temperature": 0.7, "top_p": 0.9, "stream": True}
    assert post(server.url + "/v1/completions", streamed)[0] == 200
    chat = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 8, "temperature": 0}
    status, _ = post_json(server.url + "/v1/chat/completions", chat)
    assert status == 200
    refused = {"prompt": "refused", "max_tokens": -1}  # "max_tokens must be at least 1" (vllm/sampling_params.py)
    assert 400 <= post(server.url + "/invocations", refused)[0] < 500  # refused: never logged

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(_request_lines(server)) < 3:
        time.sleep(0.5)
    lines = _request_lines(server)
    assert "request log on: 100%" in server.launcher_log()
    assert all(line.startswith('{"event":"peagle_request"') for line in lines), lines
    text = "\n".join(lines)
    assert "sk-never-in-the-log" not in text and "alice@example.com" not in text and "refused" not in text

    records = list(log_records(LogEvent("local", line) for line in lines))
    bodies = [record.decoded.body for record in records]
    assert bodies == [
        {"prompt": "The quick brown fox", "max_tokens": 8, "temperature": 0},
        {"prompt": "P-EAGLE drafts", "max_tokens": 8, "temperature": 0.7, "top_p": 0.9},
        {"messages": chat["messages"], "max_tokens": 8, "temperature": 0},
    ]
    assert {record.unit for record in records} == {"local/local"}
    assert set(records[0].decoded.dropped_fields) == {"user"}


def _request_lines(server) -> list[str]:
    return [line for line in list(server.stdout_lines) if '"peagle_request"' in line]
