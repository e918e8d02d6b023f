"""Speculation changes speed, never output; SIGTERM drains in-flight requests.

One extra engine with speculation off (K=0) on the same weights serves both: the
lossless comparison, then (last, since it stops the server) the drain test.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest
from serving_requests import greedy_completion, metrics, post_json

from peagle_serve.contract import VllmMetric

pytestmark = pytest.mark.engine

PROMPTS = ["hello", "The quick brown fox", "P-EAGLE drafts in parallel", '{"a": 1}', "x"]


@pytest.fixture(scope="module")
def speculation_off_server(local_server_factory):
    return local_server_factory(speculative_tokens=0)


def test_greedy_output_is_identical_with_p_eagle_on_and_off(local_server, speculation_off_server):
    before = metrics(local_server.url)
    for prompt in PROMPTS:
        with_speculation = greedy_completion(local_server.url, prompt, max_tokens=48)["choices"][0]
        without = greedy_completion(speculation_off_server.url, prompt, max_tokens=48)["choices"][0]
        assert with_speculation["token_ids"] == without["token_ids"], prompt
        assert len(without["token_ids"]) == 48
        assert with_speculation["text"] == without["text"]
    after = metrics(local_server.url)
    # Lossless only means something if drafts were actually accepted.
    accepted = after.total(VllmMetric.SPEC_ACCEPTED) - before.total(VllmMetric.SPEC_ACCEPTED)
    assert accepted >= len(PROMPTS) * 10, accepted
    # And the K=0 server really ran without a drafter.
    assert not metrics(speculation_off_server.url).has(VllmMetric.SPEC_DRAFTS)
    assert speculation_off_server.kpi_records() == [] or all(
        r["speculative_tokens"] == 0 and r["spec_drafts_per_second"] is None
        for r in speculation_off_server.kpi_records()
    )


def test_sigterm_during_an_in_flight_request_lets_it_finish(speculation_off_server):
    server = speculation_off_server
    result = {}

    def long_request():
        result["status"], result["body"] = post_json(
            server.url + "/invocations", {"prompt": "drain", "max_tokens": 900, "temperature": 0}, timeout=60
        )

    request = threading.Thread(target=long_request)
    request.start()
    deadline = time.monotonic() + 10
    while metrics(server.url).total(VllmMetric.REQUESTS_RUNNING) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)  # what SageMaker sends on scale-in
    request.join(timeout=60)
    assert result["status"] == 200, result
    assert result["body"]["usage"]["completion_tokens"] == 900
    assert server.process.wait(timeout=30) == 0
    assert time.monotonic() - started < 30  # within SageMaker's SIGKILL deadline
    assert "SIGTERM received: vLLM drains in-flight requests" in server.launcher_log()
