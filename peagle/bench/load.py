"""The load generator: a closed loop of ``concurrency`` workers sending requests.

Each worker sends its next request as soon as its previous answer is complete,
so exactly ``concurrency`` requests are in flight (until the queue drains): the
number that autoscaling's ConcurrentRequestsPerModel metric and vLLM's batch see.
Threads suffice: every request spends its time waiting on the network.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from peagle.bench.stats import RequestRecord
from peagle.client import GenerationRequest, PeagleClient, PeagleClientError


def send_one(client: PeagleClient, request: GenerationRequest) -> RequestRecord:
    """Send one request and turn its result (or typed failure) into a record."""
    started = time.perf_counter()
    try:
        result = client.generate(request)
    except PeagleClientError as error:
        return RequestRecord(
            ok=False,
            e2e_s=time.perf_counter() - started,
            error_type=type(error).__name__,
            error_message=str(error),
            attempts=error.attempts,
        )
    usage = result.usage
    return RequestRecord(
        ok=True,
        e2e_s=result.timings.e2e_s,
        ttft_s=result.timings.ttft_s,
        tpot_s=result.time_per_output_token_s,
        inter_chunk_s=result.timings.inter_chunk_latencies_s,
        prompt_tokens=usage.prompt_tokens if usage else 0,
        # Without usage (a server ignoring include_usage) count chunks: a lower bound.
        output_tokens=usage.completion_tokens if usage else len(result.timings.chunk_times_s),
        attempts=result.attempts,
        spec_decode_metrics=result.spec_decode_metrics,
    )


def run_closed_loop(
    client: PeagleClient,
    requests: Sequence[GenerationRequest],
    concurrency: int,
    on_done: Callable[[RequestRecord], None] = lambda record: None,
) -> tuple[list[RequestRecord], float]:
    """Send all ``requests`` with ``concurrency`` in flight; return records and wall seconds."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    records: list[RequestRecord] = []

    def worker(request: GenerationRequest) -> None:
        record = send_one(client, request)
        records.append(record)  # list.append is atomic under the GIL
        on_done(record)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="bench") as pool:
        for future in [pool.submit(worker, request) for request in requests]:
            future.result()
    return records, time.perf_counter() - started
