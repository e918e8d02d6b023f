"""A stand-in for vLLM's OpenAI server, for the launcher's supervision tests.

The subject of those tests is the supervisor (``peagle_serve.launcher``), not the engine:
this script answers what the launcher and its self-check ask of vLLM, and misbehaves on
request. The real engine is exercised by the other serving tests.

Started by ``supervise_fake_engine.py`` with the tail of the real launch plan, exactly
the options vLLM would get (``<model> --host H --port P --shutdown-timeout S
--speculative-config JSON --served-model-name N --middleware ...``); it reads the ones it
needs and ignores the rest.

Routes (stdlib HTTP, one thread per request):
  /health             200 (503 with FAKE_ENGINE_NEVER_HEALTHY=1)
  /ping               503 until the launcher's ready file exists, then 200 (what
                      ``readiness.py`` does inside vLLM)
  /metrics            Prometheus text with the ``vllm:*`` series the KPI line and the
                      self-check read; counters move with each completion
  /v1/models          the served model name
  /v1/completions     a completion of ``max_tokens`` characters; an extra body field
                      ``fake_seconds`` makes it take that long (a request in flight)

Behaviour, from the environment (the launcher passes its environment on):
  FAKE_ENGINE_NEVER_HEALTHY=1          /health never answers 200
  FAKE_ENGINE_EXIT_AFTER_READY_SECONDS this long after /ping opened, exit with
  FAKE_ENGINE_EXIT_STATUS              this status (default 1), or "SIGKILL" to die by signal
  FAKE_ENGINE_IGNORE_SIGTERM=1         SIGTERM does nothing (a hung engine)
  FAKE_ENGINE_METRICS_FAULT_FILE=path  while that file exists /metrics fails the way it
                                       says: "500" (HTTP 500), "garbage" (200, not Prometheus
                                       text) or "truncated" (the body is cut short)
  FAKE_ENGINE_PID_DIR=dir              write engine.pid there, and start a child process in
                                       the engine's session that ignores SIGTERM and outlives
                                       the engine (child.pid): what the launcher must clean up
On SIGTERM (unless ignored) it stops taking requests, lets the ones in flight finish for up
to ``--shutdown-timeout`` seconds, as vLLM does, and exits 0.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from peagle_serve.readiness import READY_FILE_ENV  # the launcher puts peagle_serve on PYTHONPATH

_ORPHAN_CODE = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"


class EngineState:
    """Counters and gauges, as vLLM would export them; guarded by one lock."""

    def __init__(self, speculative_tokens: int):
        self.k = speculative_tokens
        self.lock = threading.Lock()
        self.in_flight = 0
        self.idle = threading.Condition(self.lock)
        self.requests = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.e2e_sum = 0.0
        self.drafts = 0
        self.accepted_per_position = [0] * speculative_tokens

    def metrics_text(self) -> str:
        with self.lock:
            lines = [
                "# TYPE vllm:num_requests_running gauge",
                f'vllm:num_requests_running{{model_name="fake"}} {self.in_flight}',
                "# TYPE vllm:num_requests_waiting gauge",
                'vllm:num_requests_waiting{model_name="fake"} 0',
                "# TYPE vllm:kv_cache_usage_perc gauge",
                'vllm:kv_cache_usage_perc{model_name="fake"} 0.0',
                "# TYPE vllm:prompt_tokens counter",
                f'vllm:prompt_tokens_total{{model_name="fake"}} {self.prompt_tokens}',
                "# TYPE vllm:generation_tokens counter",
                f'vllm:generation_tokens_total{{model_name="fake"}} {self.generation_tokens}',
                "# TYPE vllm:request_success counter",
                f'vllm:request_success_total{{finished_reason="length",model_name="fake"}} {self.requests}',
                'vllm:request_success_total{finished_reason="stop",model_name="fake"} 0',
                "# TYPE vllm:e2e_request_latency_seconds histogram",
                f'vllm:e2e_request_latency_seconds_bucket{{le="+Inf",model_name="fake"}} {self.requests}',
                f'vllm:e2e_request_latency_seconds_count{{model_name="fake"}} {self.requests}',
                f'vllm:e2e_request_latency_seconds_sum{{model_name="fake"}} {self.e2e_sum}',
            ]
            if self.k:  # vLLM exports the spec-decode series only with speculation configured
                accepted = sum(self.accepted_per_position)
                lines += [
                    "# TYPE vllm:spec_decode_num_drafts counter",
                    f'vllm:spec_decode_num_drafts_total{{model_name="fake"}} {self.drafts}',
                    "# TYPE vllm:spec_decode_num_draft_tokens counter",
                    f'vllm:spec_decode_num_draft_tokens_total{{model_name="fake"}} {self.drafts * self.k}',
                    "# TYPE vllm:spec_decode_num_accepted_tokens counter",
                    f'vllm:spec_decode_num_accepted_tokens_total{{model_name="fake"}} {accepted}',
                    "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter",
                ]
                lines += [
                    f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name="fake",position="{pos}"}} {count}'
                    for pos, count in enumerate(self.accepted_per_position)
                ]
        return "\n".join(lines) + "\n"

    def begin(self) -> None:
        with self.lock:
            self.in_flight += 1

    def end(self) -> None:
        """The response is written: the request no longer holds up a drain."""
        with self.lock:
            self.in_flight -= 1
            self.idle.notify_all()

    def complete(self, prompt: str, max_tokens: int, seconds: float) -> None:
        started = time.monotonic()
        time.sleep(seconds)
        with self.lock:
            self.requests += 1
            self.prompt_tokens += len(prompt)
            self.generation_tokens += max_tokens
            self.e2e_sum += time.monotonic() - started
            if self.k:
                # Two tokens per step: the first draft position is always accepted.
                drafts = math.ceil(max_tokens / 2)
                self.drafts += drafts
                self.accepted_per_position[0] += drafts

    def wait_idle(self, timeout: float) -> bool:
        with self.lock:
            return self.idle.wait_for(lambda: self.in_flight == 0, timeout=timeout)


def make_handler(state: EngineState, served_model_name: str):
    never_healthy = os.environ.get("FAKE_ENGINE_NEVER_HEALTHY") == "1"
    fault_file = os.environ.get("FAKE_ENGINE_METRICS_FAULT_FILE")
    ready_file = os.environ.get(READY_FILE_ENV)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):
            pass  # quiet: the launcher's log is what the tests read

        def _send(self, status: int, body: str, content_type: str = "application/json") -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                self._send(503 if never_healthy else 200, "")
            elif self.path == "/ping":
                ready = not ready_file or os.path.exists(ready_file)
                self._send(200 if ready else 503, "{}")
            elif self.path == "/metrics":
                fault = Path(fault_file).read_text().strip() if fault_file and os.path.exists(fault_file) else ""
                if fault == "500":
                    self._send(500, "Internal Server Error", "text/plain")
                elif fault == "garbage":
                    self._send(200, "<html>this is not Prometheus text {{{</html>\n", "text/plain")
                elif fault == "truncated":  # the connection closes mid-body
                    self.send_response(200)
                    self.send_header("Content-Length", "4096")
                    self.end_headers()
                    self.wfile.write(b"vllm:num_requests_running 0\n")
                    self.close_connection = True
                else:
                    self._send(200, state.metrics_text(), "text/plain; version=0.0.4")
            elif self.path == "/v1/models":
                self._send(200, json.dumps({"object": "list", "data": [{"id": served_model_name, "object": "model"}]}))
            else:
                self._send(404, json.dumps({"error": "not found"}))

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if self.path != "/v1/completions":
                self._send(404, json.dumps({"error": "not found"}))
                return
            state.begin()
            try:
                max_tokens = int(body.get("max_tokens", 16))
                state.complete(str(body.get("prompt", "")), max_tokens, float(body.get("fake_seconds", 0.0)))
                self._send(
                    200,
                    json.dumps(
                        {
                            "object": "text_completion",
                            "model": served_model_name,
                            "choices": [{"index": 0, "text": "x" * max_tokens, "finish_reason": "length"}],
                            "usage": {"completion_tokens": max_tokens},
                        }
                    ),
                )
            finally:
                state.end()

    return Handler


def _spawn_orphan_to_be(pid_dir: Path) -> None:
    # Same session and process group as the engine (as vLLM's engine-core and workers are);
    # it ignores SIGTERM and outlives the engine unless someone kills the group.
    child = subprocess.Popen([sys.executable, "-c", _ORPHAN_CODE], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (pid_dir / "child.pid").write_text(str(child.pid))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--shutdown-timeout", type=float, default=0.0)
    parser.add_argument("--speculative-config")
    parser.add_argument("--served-model-name")
    options, _ = parser.parse_known_args(argv)
    speculative_tokens = (
        json.loads(options.speculative_config)["num_speculative_tokens"] if options.speculative_config else 0
    )

    stop = threading.Event()
    if os.environ.get("FAKE_ENGINE_IGNORE_SIGTERM") == "1":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    pid_dir = os.environ.get("FAKE_ENGINE_PID_DIR")
    if pid_dir:
        (Path(pid_dir) / "engine.pid").write_text(str(os.getpid()))
        _spawn_orphan_to_be(Path(pid_dir))

    state = EngineState(speculative_tokens)
    server = ThreadingHTTPServer(
        (options.host, options.port), make_handler(state, options.served_model_name or options.model)
    )
    threading.Thread(target=server.serve_forever, name="fake-engine-http", daemon=True).start()

    exit_after = os.environ.get("FAKE_ENGINE_EXIT_AFTER_READY_SECONDS")
    ready_file = os.environ.get(READY_FILE_ENV)
    exit_at = None
    while not stop.wait(0.05):
        if exit_after is None:
            continue
        if exit_at is None and ready_file and os.path.exists(ready_file):
            exit_at = time.monotonic() + float(exit_after)
        if exit_at is not None and time.monotonic() >= exit_at:
            status = os.environ.get("FAKE_ENGINE_EXIT_STATUS", "1")
            print(f"fake engine: dying on purpose ({status})", file=sys.stderr, flush=True)
            if status == "SIGKILL":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(int(status))

    # SIGTERM: no new requests; the ones in flight get up to --shutdown-timeout to finish.
    server.shutdown()
    drained = state.wait_idle(options.shutdown_timeout)
    print(f"fake engine: stopped after SIGTERM (drained: {drained})", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
