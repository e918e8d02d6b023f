"""What one vLLM streamed chunk means: a text delta, a finish reason, usage, or an error.

vLLM streams OpenAI-shaped JSON objects: completions carry ``choices[0].text``,
chat carries ``choices[0].delta.content`` (and ``reasoning_content`` / ``reasoning``
for reasoning models such as gpt-oss); with ``stream_options.include_usage`` the
last chunk has empty ``choices`` and the ``usage`` block, and, when the server runs
speculation with per-request metrics on (the launcher does), ``metrics.speculative_decoding``
(``peagle_serve.contract`` has the vLLM rule). An error raised while streaming arrives as a
chunk with an ``error`` object.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from peagle_serve.contract import RESPONSE_METRICS_KEY, RESPONSE_SPEC_DECODE_KEY


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class SpecDecodeMetrics:
    """One request's speculative decoding, as vLLM 0.32 reports it in ``metrics.speculative_decoding``
    (``SpeculativeDecodingMetrics`` in vllm/entrypoints/generate/base/protocol.py, filled by
    ``RequestSpecDecodeMetrics.to_dict`` in vllm/v1/metrics/stats.py; vLLM calls the field experimental).

    ``acceptance_histogram[j]`` counts the verify steps that accepted exactly ``j`` draft tokens
    (``num_spec_tokens + 1`` entries; the bonus token excluded). ``mean_acceptance_length``
    includes the bonus token (1 + accepted / steps); ``draft_acceptance_rate`` is accepted / drafted.
    """

    mean_acceptance_length: float
    draft_acceptance_rate: float
    acceptance_histogram: tuple[int, ...]
    num_spec_steps: int
    num_accepted_draft_tokens: int
    num_draft_tokens: int
    num_spec_tokens: int

    @property
    def accepted_per_position(self) -> list[int]:
        """Steps that accepted draft position ``i`` (0-based): those that accepted more than ``i``
        tokens, as vLLM counts its per-position counter (vllm/v1/spec_decode/metrics.py,
        ``SpecDecodingStats.observe_draft``: "for i in range(num_accepted_tokens):
        self.num_accepted_tokens_per_pos[i] += 1")."""
        histogram = self.acceptance_histogram
        return [sum(histogram[i + 1 :]) for i in range(len(histogram) - 1)]


def spec_decode_metrics_in(payload: object) -> SpecDecodeMetrics | None:
    """``metrics.speculative_decoding`` of a response object or streamed chunk; None when absent
    (speculation off, per-request metrics off, ``n`` > 1) or not the shape vLLM 0.32 sends."""
    metrics = payload.get(RESPONSE_METRICS_KEY) if isinstance(payload, dict) else None
    raw = metrics.get(RESPONSE_SPEC_DECODE_KEY) if isinstance(metrics, dict) else None
    if not isinstance(raw, dict):
        return None
    try:
        return SpecDecodeMetrics(
            mean_acceptance_length=float(raw["mean_acceptance_length"]),
            draft_acceptance_rate=float(raw["draft_acceptance_rate"]),
            acceptance_histogram=tuple(int(count) for count in raw["acceptance_histogram"]),
            num_spec_steps=int(raw["num_spec_steps"]),
            num_accepted_draft_tokens=int(raw["num_accepted_draft_tokens"]),
            num_draft_tokens=int(raw["num_draft_tokens"]),
            num_spec_tokens=int(raw["num_spec_tokens"]),
        )
    except (KeyError, TypeError, ValueError):
        # An experimental field whose shape changed: no acceptance, never a failed generation.
        return None


@dataclass(frozen=True)
class StreamChunk:
    text: str = ""
    reasoning: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    error: str | None = None
    spec_decode_metrics: SpecDecodeMetrics | None = None


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
    return StreamChunk(
        text=text,
        reasoning=reasoning,
        finish_reason=finish_reason,
        usage=usage,
        spec_decode_metrics=spec_decode_metrics_in(payload),
    )


def _error_message(payload: dict) -> str | None:
    # vLLM >= 0.6 streams {"error": {...}}; older servers sent {"object": "error", ...}.
    if isinstance(payload.get("error"), dict):
        error = payload["error"]
        return str(error.get("message") or error)
    if payload.get("object") == "error":
        return str(payload.get("message") or payload)
    return None
