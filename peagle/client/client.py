"""One generation API over two transports (SageMaker endpoint, plain URL).

The retry loop (``retry.send_with_retries``) wraps opening the stream up to its first
byte, because only here is it known whether that byte has arrived: before it, a
classified-retryable failure is sent again after a jittered backoff (and a component
scaled to zero is waited for, up to ``RetryPolicy.cold_start_wait_s``); after it, any
failure ends the request with ``StreamInterruptedError`` (a resend would pay for and
repeat the whole generation).
"""

from __future__ import annotations

import json
import random as _random
import time
import uuid
from collections.abc import Callable, Generator, Iterator
from dataclasses import replace
from typing import Any, Protocol

from peagle.client.errors import ModelServerError, PeagleClientError, StreamInterruptedError
from peagle.client.request import GenerationRequest, GenerationResult, Timings
from peagle.client.retry import RetryPolicy, send_with_retries
from peagle.client.sse import DONE_SENTINEL, SSEDecoder
from peagle.client.stream_chunks import SpecDecodeMetrics, Usage, parse_stream_chunk


class Transport(Protocol):
    def stream_bytes(self, body: bytes, request_id: str) -> Generator[bytes, None, None]:
        """Send ``body``; yield response bytes as they arrive; raise ``PeagleClientError``. A generator: the
        client closes it when it stops reading, which releases the connection."""
        ...

    def close(self) -> None: ...


class PeagleClient:
    def __init__(
        self,
        transport: Transport,
        *,
        retry_policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] | None = None,
        random: Callable[[], float] = _random.random,
        clock: Callable[[], float] | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        """``sleep`` and ``clock`` default to ``time.sleep`` and ``time.perf_counter``; ``notify`` is told
        why a request waits (a cold start) and when the wait is over (the CLI prints it on stderr)."""
        self.transport = transport
        self.retry_policy = retry_policy or RetryPolicy()
        self._sleep = sleep if sleep is not None else time.sleep
        self._random = random
        self._clock = clock if clock is not None else time.perf_counter
        self._notify = notify

    @classmethod
    def for_url(
        cls,
        url: str,
        *,
        retry_policy: RetryPolicy | None = None,
        notify: Callable[[str], None] | None = None,
        **transport_options: Any,
    ) -> PeagleClient:
        from peagle.client.http_transport import HttpTransport

        return cls(HttpTransport(url, **transport_options), retry_policy=retry_policy, notify=notify)

    @classmethod
    def for_endpoint(
        cls,
        endpoint_name: str,
        *,
        region: str | None = None,
        runtime_client: Any = None,
        retry_policy: RetryPolicy | None = None,
        notify: Callable[[str], None] | None = None,
        **transport_options: Any,
    ) -> PeagleClient:
        """``transport_options``: ``target_variant``, ``inference_component`` (SageMakerTransport)."""
        from peagle.client.sagemaker_transport import SageMakerTransport

        transport = SageMakerTransport(endpoint_name, region=region, runtime_client=runtime_client, **transport_options)
        return cls(transport, retry_policy=retry_policy, notify=notify)

    def with_retry_policy(self, retry_policy: RetryPolicy) -> PeagleClient:
        """The same transport, clock and notices under another policy (closing either closes the transport)."""
        return PeagleClient(
            self.transport,
            retry_policy=retry_policy,
            sleep=self._sleep,
            random=self._random,
            clock=self._clock,
            notify=self._notify,
        )

    def __enter__(self) -> PeagleClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self.transport.close()

    def generate(
        self,
        request: GenerationRequest,
        *,
        request_id: str | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> GenerationResult:
        """Send ``request``, stream the answer (``on_text`` gets each text delta), return it whole."""
        request_id = request_id or uuid.uuid4().hex
        body = json.dumps(request.to_body()).encode("utf-8")
        started = self._clock()
        opened = self._open_with_retries(body, request_id)
        chunks, first_chunk = opened.value
        attempts = opened.sends
        # After a cold start the timings start at the send that found a copy: the wait for the
        # copy is reported on its own (``cold_start_wait_s``), not as latency.
        if opened.cold_start_ended_at is not None:
            started = opened.cold_start_ended_at
        accumulator = _StreamAccumulator(started, on_text)
        try:
            accumulator.add_bytes(first_chunk, self._clock())
            for chunk in chunks:
                accumulator.add_bytes(chunk, self._clock())
            accumulator.finish(self._clock())
        except PeagleClientError as error:
            raise StreamInterruptedError(
                f"The stream broke after the first byte and was not retried: {error.message}",
                partial_text=accumulator.text,
                status=error.status,
                code=error.code,
                attempts=attempts,
            ) from error
        finally:
            chunks.close()
        return replace(accumulator.result(request_id, attempts), cold_start_wait_s=opened.cold_start_wait_s)

    def _open_with_retries(self, body: bytes, request_id: str):
        """Send until the first byte arrives; retry only what ``retry.py`` allows."""

        def open_stream() -> tuple[Generator[bytes, None, None], bytes]:
            chunks = self.transport.stream_bytes(body, request_id)
            try:
                return chunks, next(chunks)
            except StopIteration:
                raise ModelServerError("The server answered with an empty body.", status=0) from None

        return send_with_retries(
            open_stream,
            self.retry_policy,
            sleep=self._sleep,
            clock=self._clock,
            random=self._random,
            notify=self._notify,
        )


class _StreamAccumulator:
    """Turns arriving bytes into text, usage and per-chunk arrival times."""

    def __init__(self, started: float, on_text: Callable[[str], None] | None) -> None:
        self._started = started
        self._on_text = on_text
        self._decoder = SSEDecoder()
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._chunk_times: list[float] = []
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._spec_decode_metrics: SpecDecodeMetrics | None = None
        self._done = False
        self._ended_at = started

    @property
    def text(self) -> str:
        return "".join(self._text)

    def add_bytes(self, data: bytes, now: float) -> None:
        self._handle_events(self._decoder.feed(data), now)

    def finish(self, now: float) -> None:
        self._handle_events(self._decoder.flush(), now)
        self._ended_at = now
        if not self._done and self._finish_reason is None:
            raise ModelServerError("The stream ended before the server finished the generation ([DONE] missing).")

    def _handle_events(self, events: Iterator[str], now: float) -> None:
        for data in events:
            if data == DONE_SENTINEL:
                self._done = True
                continue
            chunk = parse_stream_chunk(data)
            if chunk.error is not None:
                raise ModelServerError(f"The server reported an error mid-stream: {chunk.error}")
            if chunk.text or chunk.reasoning:
                # Events that arrived in the same network read count as one arrival:
                # their zero gaps are the server's or the socket's batching, not latency.
                arrival = now - self._started
                if not self._chunk_times or self._chunk_times[-1] != arrival:
                    self._chunk_times.append(arrival)
                self._text.append(chunk.text)
                self._reasoning.append(chunk.reasoning)
                if self._on_text is not None and chunk.text:
                    self._on_text(chunk.text)
            self._finish_reason = chunk.finish_reason or self._finish_reason
            self._usage = chunk.usage or self._usage
            self._spec_decode_metrics = chunk.spec_decode_metrics or self._spec_decode_metrics

    def result(self, request_id: str, attempts: int) -> GenerationResult:
        chunk_times = tuple(self._chunk_times)
        timings = Timings(
            ttft_s=chunk_times[0] if chunk_times else None,
            e2e_s=self._ended_at - self._started,
            chunk_times_s=chunk_times,
        )
        return GenerationResult(
            text=self.text,
            reasoning="".join(self._reasoning),
            finish_reason=self._finish_reason,
            usage=self._usage,
            timings=timings,
            request_id=request_id,
            attempts=attempts,
            spec_decode_metrics=self._spec_decode_metrics,
        )
