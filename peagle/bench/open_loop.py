"""Open-loop load: requests sent at a request rate, whatever the server does.

A closed loop (load.py) sends the next request when an answer returns, so a slow server
slows its own arrivals and the queue it would face in production never forms (coordinated
omission). Here every request has a scheduled send time drawn up front, as ``vllm bench
serve --request-rate`` does, and goes out at that time however many earlier ones are still
waiting; each record keeps when it was scheduled and when it went out, so a sender that fell
behind its schedule shows (``max_send_lag_s``, ``p99_send_lag_s``) instead of hiding the load.

``--max-concurrency`` caps the requests in flight as vllm bench serve's does: a request whose
time has come waits for a free slot (``slot_wait_s``, vLLM's ``client_queue_time``) and its
TTFT and E2EL start when it is sent, after the wait.

Threads, as in load.py: every request spends its time waiting on the network. The client's
connection pool is not widened here: past its size (64, peagle/client/http_transport.py and
sagemaker_transport.py) a request waits for a connection inside its TTFT.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from peagle.bench.load import send_one
from peagle.bench.stats import RequestRecord, percentile, request_timings
from peagle.client import GenerationRequest, PeagleClient
from peagle.slo import Attainment, RequestTiming, attainment

if TYPE_CHECKING:
    from peagle.catalog import Slo


def arrival_offsets(rate: float, count: int, *, burstiness: float = 1.0, seed: int = 0) -> list[float]:
    """Seconds from the start at which each of ``count`` requests is scheduled.

    vllm bench serve's schedule (vLLM 0.32.0, vllm/benchmarks/serve.py, ``get_request``): at
    ``rate`` inf every request at 0; else gamma inter-arrival times, "theta = 1.0 /
    (current_request_rate * burstiness)", ``np.random.gamma(shape=burstiness, scale=theta)``
    (mean 1/rate; burstiness 1 is a Poisson process, above 1 more even, below 1 burstier),
    summed, then scaled so the last arrival is at exactly ``count / rate`` ("to close the gap
    for stabilizing the throughput data from different random seeds"). The first request's
    offset is a gap too, as there. The generator is numpy's legacy one that ``np.random.seed``
    seeds, as vllm bench serve's ``--seed``.
    """
    import numpy as np

    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    if not rate > 0:
        raise ValueError(f"the request rate must be above 0 (or inf), got {rate}")
    if not burstiness > 0:
        raise ValueError(f"burstiness must be above 0, got {burstiness}")
    if math.isinf(rate):
        return [0.0] * count
    if math.isinf(burstiness):  # "when burstiness tends to infinity, the delay time becomes constant"
        return [(index + 1) / rate for index in range(count)]
    gaps = np.random.RandomState(seed).gamma(shape=burstiness, scale=1.0 / (rate * burstiness), size=count)
    offsets = np.cumsum(gaps)
    return [float(offset) for offset in offsets * ((count / rate) / offsets[-1])]


@dataclass(frozen=True)
class OpenLoopRun:
    """One open-loop level: its records (in schedule order) and what the load itself did.

    Times are seconds from the schedule's start, the moment ``arrival_offsets`` counts from.
    """

    records: list[RequestRecord]  # each with scheduled_s, sent_s, slot_wait_s, finished_s
    rate: float  # offered, requests/s (math.inf: all at once)
    burstiness: float
    max_concurrency: int | None
    seed: int

    @property
    def wall_seconds(self) -> float:
        """Schedule start to the last answer: vllm bench serve's benchmark duration (its ``dur_s``,
        what its throughputs and goodput divide by), which counts the first gap as the schedule does."""
        return max(record.finished_s for record in self.records)

    @property
    def send_span_seconds(self) -> float:
        return max(record.sent_s for record in self.records)

    @property
    def achieved_request_rate(self) -> float:
        """Requests sent / schedule start to the last send: equals ``rate`` when the sender kept to the
        schedule (the last send is due at count / rate), lower when it fell behind or waited for slots."""
        span = self.send_span_seconds
        return len(self.records) / span if span > 0 else math.inf

    @property
    def send_lags(self) -> list[float]:
        """Per request, how late it went out beyond its schedule and any --max-concurrency slot wait:
        the sender's own delay (thread start-up, a busy CPU), the figure coordinated omission hides."""
        return [max(0.0, record.sent_s - record.scheduled_s - record.slot_wait_s) for record in self.records]

    @property
    def max_send_lag_s(self) -> float:
        return max(self.send_lags)

    @property
    def p99_send_lag_s(self) -> float:
        return percentile(sorted(self.send_lags), 0.99)

    @property
    def slot_waits(self) -> list[float]:
        return [record.slot_wait_s for record in self.records]

    @property
    def peak_in_flight(self) -> int:
        """The most requests this load had sent and not yet had answered at one moment."""
        events = sorted(
            [(record.sent_s, 1) for record in self.records] + [(record.finished_s, -1) for record in self.records],
            key=lambda event: (event[0], event[1]),  # an answer at the same instant as a send frees first
        )
        peak = current = 0
        for _, change in events:
            current += change
            peak = max(peak, current)
        return peak

    @property
    def mean_in_flight(self) -> float:
        """Time-averaged requests in flight over the wall time (the sum of their time in flight over it,
        as Little's law counts)."""
        wall = self.wall_seconds
        busy = sum(record.finished_s - record.sent_s for record in self.records)
        return busy / wall if wall > 0 else 0.0

    def timings(self) -> list[RequestTiming]:
        return request_timings(self.records)

    def attainment(self, slo: Slo) -> Attainment:
        """``peagle.slo.attainment`` of this level's requests against ``slo`` (a catalog ``Slo``);
        its goodput divides by ``wall_seconds``: ``.attainment(slo).goodput(run.wall_seconds)``."""
        return attainment(slo, self.timings())


def run_open_loop(
    client: PeagleClient,
    requests: Sequence[GenerationRequest],
    *,
    rate: float,
    burstiness: float = 1.0,
    max_concurrency: int | None = None,
    seed: int = 0,
    on_done: Callable[[RequestRecord], None] = lambda record: None,
    offsets: Sequence[float] | None = None,
) -> OpenLoopRun:
    """Send ``requests[i]`` at ``arrival_offsets(rate, len(requests), ...)[i]`` (or at ``offsets[i]``, a schedule
    of the caller's: a replayed trace) and wait for every answer.

    No send waits for an earlier answer: each request has its own thread, started before the schedule
    begins, that sleeps until its time and sends (with ``max_concurrency``, after taking one of that
    many slots). Starting the threads up front keeps thread creation out of the send times: on a busy
    2-core machine a sender that created a thread per send fell up to 1.5 s behind its schedule.
    """
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
    if offsets is None:
        offsets = arrival_offsets(rate, len(requests), burstiness=burstiness, seed=seed)
    elif len(offsets) != len(requests):
        raise ValueError(f"{len(offsets)} send times for {len(requests)} requests")
    records: list[RequestRecord | None] = [None] * len(requests)
    slots = threading.BoundedSemaphore(max_concurrency) if max_concurrency else None
    go = threading.Event()
    start = 0.0
    callback_lock = threading.Lock()  # on_done is called from many threads; callers need not lock

    failures: list[BaseException] = []  # raised in a thread (not a request's failure, which is a record)

    def send(index: int) -> None:
        try:
            send_at_its_time(index)
        except BaseException as error:  # re-raised below, as a pool's future.result() would
            failures.append(error)

    def send_at_its_time(index: int) -> None:
        go.wait()
        delay = start + offsets[index] - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        due = time.perf_counter() - start
        if slots is not None:
            slots.acquire()
        try:
            sent = time.perf_counter() - start
            record = send_one(client, requests[index])
            finished = time.perf_counter() - start
        finally:
            if slots is not None:
                slots.release()
        records[index] = replace(
            record,
            scheduled_s=offsets[index],
            sent_s=sent,
            slot_wait_s=sent - due if slots else 0.0,
            finished_s=finished,
        )
        with callback_lock:
            on_done(records[index])

    threads = [
        threading.Thread(target=send, args=(index,), name=f"open-loop-{index}", daemon=True)
        for index in range(len(requests))
    ]
    for thread in threads:
        thread.start()
    start = time.perf_counter()
    go.set()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return OpenLoopRun(
        records=[record for record in records if record is not None],
        rate=rate,
        burstiness=burstiness,
        max_concurrency=max_concurrency,
        seed=seed,
    )
