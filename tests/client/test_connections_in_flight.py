"""The client never holds a request back for want of a connection: a load test that sends 80 requests
at once must have 80 at the server at once, or the wait for a free connection lands in each request's
TTFT and the load is lower than the one asked for.

The server here answers nothing until IN_FLIGHT requests are open together (a barrier), so the test
passes only if the client's own pool lets them all through: httpx for --url targets and botocore's
urllib3 pool for endpoints, both real, against a local stand-in for the wire. A cap a caller asks for
(`peagle batch --concurrency`) still holds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from peagle.client.http_transport import KEEPALIVE_CONNECTIONS, HttpTransport
from peagle.client.sagemaker_transport import make_runtime_client

IN_FLIGHT = KEEPALIVE_CONNECTIONS + 16  # past the connections the client keeps, where a cap would bite
BARRIER_TIMEOUT_S = 20.0


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 4 * IN_FLIGHT  # every connect is accepted at once

    def __init__(self, parties: int | None, hold_s: float) -> None:
        """Answer once ``parties`` requests are open together, or (None) after holding each ``hold_s``."""
        super().__init__(("127.0.0.1", 0), _Handler)
        self.barrier = threading.Barrier(parties, timeout=BARRIER_TIMEOUT_S) if parties else None
        self.hold_s = hold_s
        self.lock = threading.Lock()
        self.open_now = self.open_most = 0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        server: _Server = self.server
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with server.lock:
            server.open_now += 1
            server.open_most = max(server.open_most, server.open_now)
        try:
            server.barrier.wait() if server.barrier else time.sleep(server.hold_s)
            status, body = 200, b"data: [DONE]\n\n"
        except threading.BrokenBarrierError:
            status, body = 503, b"fewer requests arrived together than were sent together"
        with server.lock:
            server.open_now -= 1
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@contextmanager
def _serving(parties: int | None, hold_s: float = 0.0) -> Iterator[_Server]:
    server = _Server(parties, hold_s)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    with _serving(IN_FLIGHT) as serving:
        yield serving


def _send_together(send, count: int) -> list:
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(send, range(count)))


def _stream_together(transport: HttpTransport, count: int) -> list[bytes]:
    try:
        return _send_together(lambda i: b"".join(transport.stream_bytes(b"{}", f"r{i}")), count)
    finally:
        transport.close()


def test_every_request_sent_together_over_http_is_at_the_server_together(server):
    bodies = _stream_together(HttpTransport(f"http://127.0.0.1:{server.server_port}"), IN_FLIGHT)

    assert bodies == [b"data: [DONE]\n\n"] * IN_FLIGHT
    assert server.open_most == IN_FLIGHT


def test_a_cap_the_caller_asks_for_holds():
    cap = 8
    with _serving(None, hold_s=0.5) as server:  # each held long enough for all to be sent meanwhile
        bodies = _stream_together(HttpTransport(f"http://127.0.0.1:{server.server_port}", max_connections=cap), 3 * cap)

    assert bodies == [b"data: [DONE]\n\n"] * (3 * cap)
    assert server.open_most == cap


def test_every_invocation_sent_together_to_an_endpoint_is_at_the_wire_together(server, monkeypatch):
    # botocore's service-specific endpoint variable points sagemaker-runtime at the stand-in.
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    runtime = make_runtime_client("us-east-1")

    def invoke(i: int) -> bytes:
        response = runtime.invoke_endpoint(EndpointName="stand-in", Body=b"{}", ContentType="application/json")
        return response["Body"].read()

    bodies = _send_together(invoke, IN_FLIGHT)

    assert bodies == [b"data: [DONE]\n\n"] * IN_FLIGHT
    assert server.open_most == IN_FLIGHT
