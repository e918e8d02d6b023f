"""The opt-in request log: a sampled share of the generation requests the container served, written as
``peagle_request`` JSON lines on stdout, which SageMaker sends to the endpoint's CloudWatch Logs group
as it does the KPI line. `peagle prompts --from-logs` turns them into a prompts file. It is the way to
collect production prompts where SageMaker Data Capture is not available (docs/production-loop.md), and
it works under network isolation: stdout is the container's one way out.

Privacy is decided here, at the source: a request is sampled with PEAGLE_REQUEST_LOG_SAMPLING_PERCENT;
only ``contract.REQUEST_LOG_KEPT_FIELDS`` (prompt or messages, sampling and length parameters) are
written, of every other body key only its name (so ``user`` and the like never reach the log), never a
header; a kept body over PEAGLE_REQUEST_LOG_MAX_BODY_BYTES is written as its size alone. Only requests
answered 2xx are written, and only once the launcher has opened /ping (readiness.py's ready file), so the
start-up self-check's own warm-up requests never are. The line's keys and why a body is cut into several
lines: contract.py.

``RequestLogMiddleware`` runs inside vLLM's API server, added with ``--middleware`` by launch_plan.py
only when the log is on (vLLM 0.32 "will add it to the server using `app.add_middleware()`",
vllm/entrypoints/launchers/cli_args.py, ``middleware``). Pure ASGI, like readiness.py: request and
response messages pass through unchanged, streams included. Standard library only.
"""

from __future__ import annotations

import json
import logging
import os
import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .contract import (
    REQUEST_LOG_CHUNK_CHARS,
    REQUEST_LOG_EVENT,
    REQUEST_LOG_KEPT_FIELDS,
    REQUEST_LOG_LINE_KEYS,
    REQUEST_LOG_MAX_NAME_CHARS,
    REQUEST_LOG_MAX_NOT_KEPT_NAMES,
    REQUEST_LOG_PATHS,
    REQUEST_LOG_TOO_LARGE,
    REQUEST_PROMPT_FIELDS,
)
from .kpi import write_stdout_line
from .readiness import READY_FILE_ENV

log = logging.getLogger("peagle_serve.request_log")

# How much of a sampled request's raw body is held while it arrives, as a multiple of the kept body's cap:
# a raw body is the kept one plus keys not kept, and JSON's \\uXXXX escapes can double non-ASCII text.
RAW_BODY_CAP_FACTOR = 4


@dataclass(frozen=True)
class RequestLogConfig:
    sampling_percent: int
    max_body_bytes: int
    endpoint_name: str
    variant_name: str

    @classmethod
    def from_environ(cls, environ: Any) -> RequestLogConfig:
        """From the launcher's settings registry (settings.py), which the launcher validated before vLLM started."""
        from .settings import load_settings

        settings = load_settings(environ)
        return cls(
            sampling_percent=settings.request_log_sampling_percent,
            max_body_bytes=settings.request_log_max_body_bytes,
            endpoint_name=settings.endpoint_name,
            variant_name=settings.variant_name,
        )


def is_sampled(sampling_percent: int, draw: float) -> bool:
    """Whether a request with a uniform ``draw`` in [0, 1) is logged: ``sampling_percent`` of them are."""
    return draw * 100 < sampling_percent


def kept_body(payload: Any) -> tuple[dict[str, Any] | None, list[str]]:
    """(what the log may hold of a parsed request body, the names of the keys it may not), or (None, [])
    for a body that is not a completion or chat request (no prompt, no messages)."""
    if not isinstance(payload, dict) or not any(name in payload for name in REQUEST_PROMPT_FIELDS):
        return None, []
    body = {name: payload[name] for name in REQUEST_LOG_KEPT_FIELDS if name in payload}
    others = sorted(str(name) for name in payload if name not in REQUEST_LOG_KEPT_FIELDS)
    return body, [name[:REQUEST_LOG_MAX_NAME_CHARS] for name in others[:REQUEST_LOG_MAX_NOT_KEPT_NAMES]]


def request_lines(
    body: dict[str, Any] | None,
    *,
    not_kept: list[str],
    path: str,
    config: RequestLogConfig,
    request_id: str,
    time: str,
    raw_bytes: int = 0,
) -> list[dict[str, Any]]:
    """The lines of one request: its kept body's JSON text in pieces, or, over the cap (or ``body`` None
    because its raw body already was), one line with its size and no body."""
    text = None if body is None else json.dumps(body, separators=(",", ":"), ensure_ascii=True)
    head = {
        "event": REQUEST_LOG_EVENT,
        "id": request_id,
        "time": time,
        "endpoint_name": config.endpoint_name,
        "variant_name": config.variant_name,
        "path": path,
    }
    if text is None or len(text) > config.max_body_bytes:
        size = raw_bytes if text is None else len(text)
        return [
            _ordered(
                {**head, "part": 1, "parts": 1, "body": None, "not_kept": not_kept},
                skipped=REQUEST_LOG_TOO_LARGE,
                size_bytes=size,
            )
        ]
    pieces = [text[start : start + REQUEST_LOG_CHUNK_CHARS] for start in range(0, len(text), REQUEST_LOG_CHUNK_CHARS)]
    return [
        _ordered(
            {**head, "part": number, "parts": len(pieces), "body": piece},
            **({"not_kept": not_kept} if number == 1 else {}),
        )
        for number, piece in enumerate(pieces, start=1)
    ]


def _ordered(line: dict[str, Any], **more: Any) -> dict[str, Any]:
    values = {**line, **more}
    return {key: values[key] for key in REQUEST_LOG_LINE_KEYS if key in values}


def utc_now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class _SampledRequest:
    """One sampled request: its body as it arrives, its response status, and the lines once both are known."""

    def __init__(self, middleware: RequestLogMiddleware, path: str):
        self.middleware = middleware
        self.path = path
        self.chunks: list[bytes] = []
        self.raw_bytes = 0
        self.complete = False
        self.status: int | None = None
        self.done = False

    def add(self, message: dict) -> None:
        if message.get("type") == "http.disconnect":
            self.done = True  # never answered: nothing to log
            return
        if message.get("type") != "http.request" or self.complete:
            return
        chunk = message.get("body", b"") or b""
        self.raw_bytes += len(chunk)
        if self.raw_bytes <= self.middleware.raw_body_cap:
            self.chunks.append(chunk)
        else:
            self.chunks = []  # over the cap: only its size will be logged
        self.complete = not message.get("more_body", False)
        self.write_when_known()

    def answered(self, status: int) -> None:
        self.status = status
        self.write_when_known()

    def write_when_known(self) -> None:
        if self.done or not self.complete or self.status is None:
            return
        self.done = True
        if not 200 <= self.status < 300:
            return
        try:
            self.middleware.write_request(self.path, self.chunks, self.raw_bytes)
        except Exception:  # the log must never fail a request
            log.exception("peagle request log: a sampled request could not be logged; it was served")


class RequestLogMiddleware:
    """ASGI middleware: logs a sampled share of POSTs to contract.REQUEST_LOG_PATHS that were answered 2xx."""

    def __init__(
        self,
        app,
        *,
        config: RequestLogConfig | None = None,
        write: Callable[[dict], None] = write_stdout_line,
        draw: Callable[[], float] = random.random,
    ):
        self.app = app
        self.config = config or RequestLogConfig.from_environ(os.environ)
        self._write = write
        self._draw = draw
        self.raw_body_cap = self.config.max_body_bytes * RAW_BODY_CAP_FACTOR
        # The launcher's ready file, as readiness.py gates /ping with it: before it exists the only requests are
        # the self-check's. Without the variable (vLLM started by hand, tests) every request counts.
        self._ready_file = os.environ.get(READY_FILE_ENV)
        self._ready = not self._ready_file

    def _serving(self) -> bool:
        if not self._ready and self._ready_file:
            self._ready = os.path.exists(self._ready_file)
        return self._ready

    async def __call__(self, scope, receive, send):
        if (
            scope.get("type") != "http"
            or scope.get("method") != "POST"
            or scope.get("path") not in REQUEST_LOG_PATHS
            or not self._serving()
            or not is_sampled(self.config.sampling_percent, self._draw())
        ):
            await self.app(scope, receive, send)
            return
        request = _SampledRequest(self, scope["path"])

        async def receive_and_keep():
            message = await receive()
            request.add(message)
            return message

        async def send_and_note(message):
            await send(message)
            if message.get("type") == "http.response.start":
                request.answered(int(message.get("status", 0)))

        await self.app(scope, receive_and_keep, send_and_note)

    def write_request(self, path: str, chunks: list[bytes], raw_bytes: int) -> None:
        body, not_kept = None, []
        if raw_bytes <= self.raw_body_cap:  # else: too large, only its size is written
            try:
                body, not_kept = kept_body(json.loads(b"".join(chunks)))
            except (UnicodeDecodeError, json.JSONDecodeError):
                return  # vLLM answered it, yet it is not JSON: nothing a prompts file could use
            if body is None:
                return  # not a completion or chat request
        lines = request_lines(
            body,
            not_kept=not_kept,
            path=path,
            config=self.config,
            request_id=secrets.token_hex(8),
            time=utc_now_text(),
            raw_bytes=raw_bytes,
        )
        for line in lines:
            self._write(line)
