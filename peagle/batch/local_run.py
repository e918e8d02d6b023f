"""The record protocol against a URL: what a transform job does, on a server you can see.

Each record is POSTed unchanged to ``<url>/invocations`` (the client's
``HttpTransport``), at most ``concurrency`` at a time (MaxConcurrentTransforms),
and each answer is written joined to its record, in input order. Failures are
classified by the client's retry rules: throttling, not-ready and 5xx are retried
with its jittered backoff; a 4xx (the record itself is wrong) becomes an error
record with the status and message, and the run goes on. Where a transform job
would fail as a whole on a bad record, the local run reports them all at once.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from peagle.batch.records import failed_output, joined_output
from peagle.client.errors import ClientConfigurationError, ConnectionFailedError, PeagleClientError
from peagle.client.retry import RetryPolicy


@dataclass
class RecordOutcome:
    line_number: int
    output: dict
    ok: bool
    status: int | None = None
    message: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class LocalRunSummary:
    records: int
    succeeded: int
    failed: int
    seconds: float
    prompt_tokens: int
    completion_tokens: int
    failures: list[RecordOutcome] = field(default_factory=list)

    @property
    def output_tokens_per_second(self) -> float:
        return self.completion_tokens / self.seconds if self.seconds > 0 else 0.0


class ServerUnreachableError(PeagleClientError):
    """Nothing answers at the URL: every further record would fail the same way."""


def invoke_record(
    transport, body: bytes, policy: RetryPolicy, *, sleep: Callable[[float], None] = time.sleep
) -> object:
    """POST one record; the parsed JSON answer, or the classified failure after the policy's retries."""
    for attempt in range(1, policy.max_attempts + 1):
        try:
            data = b"".join(transport.stream_bytes(body, uuid.uuid4().hex))
        except PeagleClientError as error:
            error.attempts = attempt
            if not error.retryable or attempt == policy.max_attempts:
                raise
            sleep(policy.delay_before_retry(attempt))
            continue
        try:
            return json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise PeagleClientError(f"the answer is not JSON: {data[:200]!r}", status=200) from None
    raise AssertionError("unreachable: the loop returns or raises")


def _outcome(line_number: int, line: bytes, transport, policy: RetryPolicy, sleep) -> RecordOutcome:
    try:
        answer = invoke_record(transport, line, policy, sleep=sleep)
    except (ConnectionFailedError, ClientConfigurationError) as error:
        raise ServerUnreachableError(str(error), status=error.status) from error
    except PeagleClientError as error:
        return RecordOutcome(
            line_number,
            failed_output(line, error.status, error.message),
            ok=False,
            status=error.status,
            message=str(error),
        )
    usage = answer.get("usage") if isinstance(answer, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    return RecordOutcome(
        line_number,
        joined_output(line, answer),
        ok=True,
        status=200,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


def run_records(
    records: Sequence[bytes],
    url: str | None,
    output_path: Path,
    *,
    concurrency: int = 4,
    retry_policy: RetryPolicy | None = None,
    on_outcome: Callable[[RecordOutcome], None] = lambda outcome: None,
    sleep: Callable[[float], None] = time.sleep,
    transport=None,
) -> LocalRunSummary:
    """Send every record, ``concurrency`` in flight; write one output line per record, in order.

    To ``url`` (a server speaking the container contract), or through ``transport`` (e.g. a
    SageMakerTransport for `peagle batch --endpoint`), which is closed at the end.
    """
    from peagle.client.http_transport import HttpTransport

    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    policy = retry_policy or RetryPolicy()
    if transport is None:
        if url is None:
            raise ValueError("give the server's url or a transport to send the records through")
        transport = HttpTransport(url, max_connections=concurrency)
    summary = LocalRunSummary(len(records), 0, 0, 0.0, 0, 0)
    started = time.perf_counter()
    output_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with (
            output_path.open("w", encoding="utf-8") as out,
            ThreadPoolExecutor(concurrency, thread_name_prefix="batch") as pool,
        ):
            # A window of submitted records, drained from the front: output stays in input
            # order while at most ~2 x concurrency answers wait in memory.
            window: deque[Future[RecordOutcome]] = deque()
            numbered = iter(enumerate(records, start=1))

            def top_up() -> None:
                while len(window) < 2 * concurrency:
                    try:
                        number, line = next(numbered)
                    except StopIteration:
                        return
                    window.append(pool.submit(_outcome, number, line, transport, policy, sleep))

            top_up()
            while window:
                try:
                    outcome = window.popleft().result()
                except (ServerUnreachableError, KeyboardInterrupt):
                    # Stop now: only the records already being sent finish (the pool waits for them).
                    for pending in window:
                        pending.cancel()
                    raise
                out.write(json.dumps(outcome.output, ensure_ascii=False, separators=(",", ":")) + "\n")
                if outcome.ok:
                    summary.succeeded += 1
                else:
                    summary.failed += 1
                    summary.failures.append(outcome)
                summary.prompt_tokens += outcome.prompt_tokens
                summary.completion_tokens += outcome.completion_tokens
                on_outcome(outcome)
                top_up()
    finally:
        transport.close()
        summary.seconds = time.perf_counter() - started
    return summary
