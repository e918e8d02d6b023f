"""What one vLLM streamed chunk means: a text delta, a finish reason, usage, or an error.

vLLM streams OpenAI-shaped JSON objects: completions carry ``choices[0].text``,
chat carries ``choices[0].delta.content`` (and ``reasoning_content`` / ``reasoning``
for reasoning models such as gpt-oss); with ``stream_options.include_usage`` the
last chunk has empty ``choices`` and the ``usage`` block. An error raised while
streaming arrives as a chunk with an ``error`` object.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class StreamChunk:
    text: str = ""
    reasoning: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    error: str | None = None


def parse_stream_chunk(data: str) -> StreamChunk:
    """Parse the ``data`` payload of one SSE event (not the ``[DONE]`` sentinel)."""
    try:
        payload = json.loads(data)
    except json.JSONDecodeError as error:
        return StreamChunk(error=f"unparseable stream chunk ({error}): {data[:200]!r}")
    if not isinstance(payload, dict):
        return StreamChunk(error=f"unexpected stream chunk: {data[:200]!r}")

    error = _error_message(payload)
    if error is not None:
        return StreamChunk(error=error)

    text = reasoning = ""
    finish_reason = None
    for choice in payload.get("choices") or ():
        if "text" in choice:  # completion
            text += choice.get("text") or ""
        delta = choice.get("delta") or {}  # chat
        text += delta.get("content") or ""
        reasoning += delta.get("reasoning_content") or delta.get("reasoning") or ""
        finish_reason = choice.get("finish_reason") or finish_reason

    usage = None
    if isinstance(payload.get("usage"), dict):
        raw = payload["usage"]
        usage = Usage(
            prompt_tokens=int(raw.get("prompt_tokens") or 0),
            completion_tokens=int(raw.get("completion_tokens") or 0),
        )
    return StreamChunk(text=text, reasoning=reasoning, finish_reason=finish_reason, usage=usage)


def _error_message(payload: dict) -> str | None:
    # vLLM >= 0.6 streams {"error": {...}}; older servers sent {"object": "error", ...}.
    if isinstance(payload.get("error"), dict):
        error = payload["error"]
        return str(error.get("message") or error)
    if payload.get("object") == "error":
        return str(payload.get("message") or payload)
    return None
