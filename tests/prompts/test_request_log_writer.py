"""The container's request log (inference_image/peagle_serve/request_log.py), without an engine: the ASGI middleware
driven as vLLM's server drives it (request messages in, response messages out), and what it writes, read back
with `peagle prompts`' own reader (peagle/prompts_capture/request_log.py). What must never be logged (headers,
keys that are not kept, prompts of unsampled or failed requests) is asserted on the written text. The real server
with the log on: tests/serving/test_serving_request_log.py."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from peagle.prompts_capture.request_log import INCOMPLETE, TOO_LARGE, LogEvent, log_records
from peagle_serve.contract import (
    REQUEST_LOG_EVENT,
    REQUEST_LOG_LINE_BYTES,
    REQUEST_LOG_MAX_NAME_CHARS,
    REQUEST_LOG_MAX_NOT_KEPT_NAMES,
)
from peagle_serve.launch_plan import READINESS_MIDDLEWARE, REQUEST_LOG_MIDDLEWARE, build_launch_plan
from peagle_serve.request_log import RequestLogConfig, RequestLogMiddleware, is_sampled
from peagle_serve.settings import load_settings

SECRET_HEADER = b"Bearer sk-do-not-log-me"
CHAT = {
    "model": "peagle",
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is EAGLE?"}],
    "max_tokens": 200,
    "temperature": 0.7,
    "stream": True,
    "stream_options": {"include_usage": True},
    "user": "alice@example.com",
}
KEPT_CHAT = {key: CHAT[key] for key in ("messages", "max_tokens", "temperature")}


def config(**overrides) -> RequestLogConfig:
    values = {"sampling_percent": 100, "max_body_bytes": 256 * 1024, "endpoint_name": "chat", "variant_name": "Primary"}
    return RequestLogConfig(**{**values, **overrides})


class Served:
    """One request through the middleware to an app that reads the whole body, then answers ``status``."""

    def __init__(self, *, log_config: RequestLogConfig | None = None, draw: float = 0.0, fail_writes: bool = False):
        self.lines: list[dict] = []
        self.app_received = b""
        self.sent: list[dict] = []

        def write(line: dict) -> None:
            if fail_writes:
                raise OSError("stdout closed")
            self.lines.append(line)

        self.middleware = RequestLogMiddleware(self._app, config=log_config or config(), write=write, draw=lambda: draw)
        self.status = 200

    async def _app(self, scope, receive, send):
        while True:
            message = await receive()
            self.app_received += message.get("body", b"")
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": self.status, "headers": []})
        await send({"type": "http.response.body", "body": b'{"ok": true}'})

    def request(self, body: bytes, *, path="/v1/chat/completions", method="POST", status=200, pieces=1) -> None:
        self.status = status
        size = -(-len(body) // pieces) or 1
        chunks = [body[start : start + size] for start in range(0, len(body), size)] or [b""]
        messages = [
            {"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1}
            for index, chunk in enumerate(chunks)
        ]
        scope = {
            "type": "http",
            "method": method,
            "path": path,
            "headers": [(b"authorization", SECRET_HEADER), (b"content-type", b"application/json")],
        }

        async def receive():
            return messages.pop(0)

        async def send(message):
            self.sent.append(message)

        asyncio.run(self.middleware(scope, receive, send))

    def text(self) -> str:
        return "\n".join(json.dumps(line) for line in self.lines)

    def read_back(self, stream: str = "Primary/i-0123") -> list:
        return list(log_records(LogEvent(stream, json.dumps(line)) for line in self.lines))


def test_a_served_chat_request_is_one_line_with_the_kept_fields_only():
    served = Served()
    served.request(json.dumps(CHAT).encode())
    assert served.app_received == json.dumps(CHAT).encode()  # the app got the body untouched
    assert [message["type"] for message in served.sent] == ["http.response.start", "http.response.body"]
    (line,) = served.lines
    assert line["event"] == REQUEST_LOG_EVENT and (line["part"], line["parts"]) == (1, 1)
    assert (line["endpoint_name"], line["variant_name"], line["path"]) == ("chat", "Primary", "/v1/chat/completions")
    assert json.loads(line["body"]) == KEPT_CHAT
    # Other keys by name only; their values and the request's headers never reach the log.
    assert line["not_kept"] == ["model", "stream", "stream_options", "user"]
    assert "alice@example.com" not in served.text() and "sk-do-not-log-me" not in served.text()
    (record,) = served.read_back()
    assert record.decoded.body == KEPT_CHAT and record.unit == "chat/Primary"
    assert set(record.decoded.dropped_fields) == {"model", "stream", "stream_options", "user"}


@pytest.mark.parametrize(
    ("path", "method", "status"),
    [
        ("/v1/chat/completions", "POST", 400),  # refused by vLLM: not a request the endpoint served
        ("/v1/chat/completions", "GET", 200),
        ("/v1/embeddings", "POST", 200),
        ("/ping", "POST", 200),
    ],
)
def test_only_generation_requests_answered_2xx_are_logged(path, method, status):
    served = Served()
    served.request(json.dumps(CHAT).encode(), path=path, method=method, status=status)
    assert served.lines == [] and served.app_received == json.dumps(CHAT).encode()


def test_a_body_without_prompt_or_messages_is_not_logged():
    served = Served()
    served.request(json.dumps({"input": "an embedding request", "user": "bob"}).encode(), path="/invocations")
    assert served.lines == []


def test_the_sampling_percentage_decides_which_requests_are_logged():
    assert not is_sampled(0, 0.0) and is_sampled(100, 0.999999)
    assert is_sampled(10, 0.0999) and not is_sampled(10, 0.1)
    draws = random.Random(7)
    share = sum(is_sampled(10, draws.random()) for _ in range(20000)) / 20000
    assert 0.09 < share < 0.11
    unsampled = Served(log_config=config(sampling_percent=10), draw=0.5)
    unsampled.request(json.dumps(CHAT).encode())
    assert unsampled.lines == [] and unsampled.app_received == json.dumps(CHAT).encode()


def test_a_long_body_is_cut_into_lines_below_the_limit_and_read_back_whole():
    # Worst case for the line's size: characters JSON escapes twice (quotes, backslashes), non-ASCII, newlines,
    # and the most not-kept names of the longest length.
    prompt = ('"\\' * 9000) + "é\n" * 3000 + "x" * 5000
    request = {"prompt": prompt, "max_tokens": 8}
    request.update({f"k{index:02d}" + "n" * 100: index for index in range(40)})
    served = Served()
    served.request(json.dumps(request).encode(), path="/v1/completions", pieces=7)
    assert len(served.lines) > 5
    assert [line["part"] for line in served.lines] == list(range(1, len(served.lines) + 1))
    assert {line["id"] for line in served.lines} == {served.lines[0]["id"]}
    for line in served.lines:
        assert len(json.dumps(line, separators=(",", ":")).encode()) < REQUEST_LOG_LINE_BYTES
    names = served.lines[0]["not_kept"]
    assert len(names) == REQUEST_LOG_MAX_NOT_KEPT_NAMES and {len(name) for name in names} == {
        REQUEST_LOG_MAX_NAME_CHARS
    }
    (record,) = served.read_back()
    assert record.decoded.body == {"prompt": prompt, "max_tokens": 8}


def test_lines_missing_from_the_window_are_counted_not_guessed():
    served = Served()
    served.request(json.dumps({"prompt": "y" * 20000}).encode(), path="/v1/completions")
    served.lines.pop()  # the last piece fell after --end
    (record,) = served.read_back()
    assert record.decoded.body is None and record.decoded.reason == INCOMPLETE


def test_over_the_cap_only_the_size_is_logged():
    served = Served(log_config=config(max_body_bytes=1024))
    served.request(json.dumps({"prompt": "secret plans " * 200, "max_tokens": 8}).encode(), path="/v1/completions")
    (line,) = served.lines
    assert line["body"] is None and line["skipped"] == "too_large" and line["size_bytes"] > 1024
    assert "secret plans" not in served.text()
    (record,) = served.read_back()
    assert record.decoded.reason == TOO_LARGE
    # A raw body far over the cap is not even held: its size is what is logged.
    huge = Served(log_config=config(max_body_bytes=1024))
    huge.request(json.dumps({"prompt": "p", "tools": ["t" * 10000]}).encode(), path="/v1/completions", pieces=4)
    (line,) = huge.lines
    assert line["skipped"] == "too_large" and line["size_bytes"] > 4 * 1024


def test_nothing_is_logged_before_the_launcher_opens_ping(monkeypatch, tmp_path):
    """The start-up self-check's warm-up requests are not production prompts: the log starts with /ping's gate."""
    ready = tmp_path / "ready"
    monkeypatch.setenv("PEAGLE_INTERNAL_READY_FILE", str(ready))
    served = Served()
    served.request(json.dumps(CHAT).encode())
    assert served.lines == []
    ready.touch()  # the self-check passed: the launcher opens /ping
    served.request(json.dumps(CHAT).encode())
    assert len(served.lines) == 1


def test_a_failing_write_never_fails_the_request():
    served = Served(fail_writes=True)
    served.request(json.dumps(CHAT).encode())
    assert [message["type"] for message in served.sent] == ["http.response.start", "http.response.body"]


def test_the_middleware_reads_its_settings_from_the_launchers_registry():
    environ = {
        "PEAGLE_REQUEST_LOG_SAMPLING_PERCENT": "25",
        "PEAGLE_REQUEST_LOG_MAX_BODY_BYTES": "4096",
        "PEAGLE_ENDPOINT_NAME": "chat",
        "PEAGLE_VARIANT_NAME": "Baseline",
    }
    assert RequestLogConfig.from_environ(environ) == RequestLogConfig(25, 4096, "chat", "Baseline")
    assert load_settings({}).request_log_sampling_percent == 0  # off unless asked for


def test_the_launcher_adds_the_middleware_only_when_the_log_is_on(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    env = {"SM_VLLM_MODEL": str(tmp_path)}
    off = build_launch_plan(load_settings(env), env, []).argv
    assert REQUEST_LOG_MIDDLEWARE not in off and off[-2:] == ["--middleware", READINESS_MIDDLEWARE]
    on_env = {**env, "PEAGLE_REQUEST_LOG_SAMPLING_PERCENT": "5"}
    on = build_launch_plan(load_settings(on_env), on_env, []).argv
    assert on[-4:] == ["--middleware", READINESS_MIDDLEWARE, "--middleware", REQUEST_LOG_MIDDLEWARE]
