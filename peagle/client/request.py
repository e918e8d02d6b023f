"""The typed request and result of one generation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from peagle.client.stream_chunks import SpecDecodeMetrics, Usage

_DEFAULT_MAX_TOKENS = 256


@dataclass(frozen=True)
class GenerationRequest:
    """One completion (``prompt``) or chat (``messages``) request.

    Sampling fields left as ``None`` are not sent, so the server's defaults apply;
    ``with_profile`` fills them from a catalog workload profile. ``extra`` goes into
    the body unchanged, for vLLM options this class does not name (``ignore_eos``,
    ``seed``, ``min_tokens`` ...).
    """

    prompt: str | None = None
    messages: Sequence[Mapping[str, Any]] | None = None
    max_tokens: int | None = _DEFAULT_MAX_TOKENS
    temperature: float | None = None
    top_p: float | None = None
    stop: Sequence[str] = ()
    model: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("give exactly one of prompt (completion) or messages (chat)")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))

    @classmethod
    def with_profile(cls, profile: str, **fields: Any) -> GenerationRequest:
        """Sampling defaults from catalog profile ``profile``; ``fields`` given as non-None win."""
        from peagle.catalog import ProfileName, load_catalog

        profiles = load_catalog().profiles
        if profile not in profiles:
            raise ValueError(f"unknown profile {profile!r}; valid: {', '.join(sorted(profiles))}")
        sampling = profiles[ProfileName(profile)].sampling
        defaults = {"temperature": sampling.temperature, "top_p": sampling.top_p, "max_tokens": sampling.max_tokens}
        overrides = {name: value for name, value in fields.items() if value is not None}
        return cls(**{**defaults, **overrides})

    @property
    def is_chat(self) -> bool:
        return self.messages is not None

    def to_body(self) -> dict[str, Any]:
        """The streamed OpenAI-style body that /invocations (and InvokeEndpoint) take."""
        body: dict[str, Any] = {}
        if self.model is not None:
            body["model"] = self.model
        if self.messages is not None:  # is_chat
            body["messages"] = [dict(message) for message in self.messages]
        else:
            body["prompt"] = self.prompt
        for name in ("max_tokens", "temperature", "top_p"):
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        if self.stop:
            body["stop"] = list(self.stop)
        body.update(self.extra)
        # Always streamed: TTFT is measurable and a long generation does not hit
        # SageMaker's 60 s InvokeEndpoint limit.
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        return body


@dataclass(frozen=True)
class Timings:
    """Wall-clock timings of one request, in seconds from when it was first sent (after a cold
    start: from the send that found a copy of the inference component).

    ``chunk_times_s`` are the times at which new text arrived (one entry per network
    read that carried text: SSE events read together arrived together). With
    speculative decoding one event can carry several tokens, so the gaps between
    arrivals (inter-token latency) are longer than the time per output token.
    """

    ttft_s: float | None
    e2e_s: float
    chunk_times_s: tuple[float, ...] = ()

    @property
    def inter_chunk_latencies_s(self) -> tuple[float, ...]:
        times = self.chunk_times_s
        return tuple(later - earlier for earlier, later in zip(times, times[1:], strict=False))


@dataclass(frozen=True)
class GenerationResult:
    text: str
    reasoning: str
    finish_reason: str | None
    usage: Usage | None
    timings: Timings
    request_id: str
    attempts: int = 1
    # The server's acceptance for this request (``metrics.speculative_decoding`` of the final
    # usage chunk); None when the server sent none (speculation off, an older image).
    spec_decode_metrics: SpecDecodeMetrics | None = None
    # Seconds spent waiting for an inference component scaled to zero to get a copy (0: none);
    # ``timings`` start after it, at the send that found the copy.
    cold_start_wait_s: float = 0.0

    @property
    def time_per_output_token_s(self) -> float | None:
        """(e2e - TTFT) / (output tokens - 1): decode time per token after the first."""
        if self.usage is None or self.timings.ttft_s is None or self.usage.completion_tokens < 2:
            return None
        return (self.timings.e2e_s - self.timings.ttft_s) / (self.usage.completion_tokens - 1)
