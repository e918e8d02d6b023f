"""ASGI middleware loaded *inside* vLLM's API server (``--middleware``).

It adapts vLLM's own routes to the SageMaker container contract; it adds no route.

1. ``/ping`` answers 503 until the launcher's self-check has passed. vLLM says 200
   as soon as its engine is up; SageMaker must not see 200 before the warm-up
   proved the drafter is in use, or an endpoint serving without speculation would
   go InService. The launcher opens the gate by creating the file named by
   ``PEAGLE_INTERNAL_READY_FILE``; without that variable (vLLM started by hand)
   the gate is open. Other routes (the warm-up itself, /health, /metrics) pass.
2. ``/invocations`` bodies are JSON whatever Content-Type the client sent. vLLM
   answers 400 "Only 'application/json' is allowed" otherwise, yet SageMaker
   clients often send application/octet-stream or none, and
   ``curl -d '{...}'`` sends a form type. A body that is not JSON still gets
   vLLM's 400 "JSON decode error".

Pure ASGI (no BaseHTTPMiddleware) so streaming responses pass untouched. Runs in
vLLM's process: stdlib and vLLM's own dependencies only.
"""

from __future__ import annotations

import json
import os

READY_FILE_ENV = "PEAGLE_INTERNAL_READY_FILE"

_NOT_READY_BODY = json.dumps(
    {"status": "starting", "detail": "engine up; speculation self-check not passed yet"}
).encode()


class ContainerContractMiddleware:
    def __init__(self, app):
        self.app = app
        self._ready_file = os.environ.get(READY_FILE_ENV)
        self._ready = not self._ready_file

    def _is_ready(self) -> bool:
        if not self._ready and self._ready_file:  # not ready implies a ready file was named
            self._ready = os.path.exists(self._ready_file)
        return self._ready

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            path = scope.get("path", "")
            if path == "/ping" and not self._is_ready():
                await send(
                    {
                        "type": "http.response.start",
                        "status": 503,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(_NOT_READY_BODY)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": _NOT_READY_BODY})
                return
            if path == "/invocations" and scope.get("method") == "POST":
                scope = dict(scope)
                scope["headers"] = _with_json_content_type(scope.get("headers", []))
        await self.app(scope, receive, send)


def _with_json_content_type(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    kept = [(name, value) for name, value in headers if name.lower() != b"content-type"]
    for name, value in headers:
        if name.lower() == b"content-type" and b"json" in value.lower():
            return headers  # application/json and friends: leave as sent
    return kept + [(b"content-type", b"application/json")]
