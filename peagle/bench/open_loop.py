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
from typing import TYPE_CHECKING, NamedTuple

from peagle.bench.load import send_one
from peagle.bench.results import LevelResult, OpenLoopLoad, ServerLatency, Speculation
from peagle.bench.stats import RequestRecord, percentile, request_timings, summarise_level
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


class ScheduleTimes(NamedTuple):
    """When an open-loop request was due, went out and was answered, in seconds from the schedule's start."""

    scheduled_s: float
    sent_s: float
    finished_s: float


def schedule_times(record: RequestRecord) -> ScheduleTimes:
    """The schedule times of a record ``run_open_loop`` sent (it sets all three on every record it returns)."""
    scheduled, sent, finished = record.scheduled_s, record.sent_s, record.finished_s
    assert scheduled is not None and sent is not None and finished is not None, "not a record run_open_loop sent"
    return ScheduleTimes(scheduled, sent, finished)


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
        return max(schedule_times(record).finished_s for record in self.records)

    @property
    def send_span_seconds(self) -> float:
        return max(schedule_times(record).sent_s for record in self.records)

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
        lags = []
        for record in self.records:
            times = schedule_times(record)
            lags.append(max(0.0, times.sent_s - times.scheduled_s - record.slot_wait_s))
        return lags

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
        times = [schedule_times(record) for record in self.records]
        events = sorted(
            [(sent_s, 1) for _, sent_s, _ in times] + [(finished_s, -1) for _, _, finished_s in times],
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
        busy = sum(times.finished_s - times.sent_s for times in map(schedule_times, self.records))
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
    offsets = _checked_schedule(
        offsets, len(requests), rate=rate, burstiness=burstiness, seed=seed, max_concurrency=max_concurrency
    )
    records: list[RequestRecord | None] = [None] * len(requests)
    slots = threading.BoundedSemaphore(max_concurrency) if max_concurrency else None
    go = threading.Event()
    start = 0.0
    callback_lock = threading.Lock()  # on_done is called from many threads; callers need not lock

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
        done = replace(
            record,
            scheduled_s=offsets[index],
            sent_s=sent,
            slot_wait_s=sent - due if slots else 0.0,
            finished_s=finished,
        )
        records[index] = done
        with callback_lock:
            on_done(done)

    def begin() -> None:
        nonlocal start
        start = time.perf_counter()
        go.set()

    _run_in_threads(len(requests), send_at_its_time, begin)
    return OpenLoopRun(
        records=[record for record in records if record is not None],
        rate=rate,
        burstiness=burstiness,
        max_concurrency=max_concurrency,
        seed=seed,
    )


def _run_in_threads(count: int, send: Callable[[int], None], begin: Callable[[], None]) -> None:
    """``send(i)`` for every i, each in its own thread, all started before ``begin`` releases them; waits for
    every one and re-raises the first exception a thread raised (not a request's failure, which is a record), as
    a pool's future.result() would."""
    failures: list[BaseException] = []

    def run(index: int) -> None:
        try:
            send(index)
        except BaseException as error:  # re-raised below
            failures.append(error)

    threads = [
        threading.Thread(target=run, args=(index,), name=f"open-loop-{index}", daemon=True) for index in range(count)
    ]
    for thread in threads:
        thread.start()
    begin()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


def _checked_schedule(
    offsets: Sequence[float] | None,
    count: int,
    *,
    rate: float,
    burstiness: float,
    seed: int,
    max_concurrency: int | None,
) -> Sequence[float]:
    """The send times: the caller's, checked against the requests, or vllm bench serve's (``arrival_offsets``).
    Refuses a concurrency cap below 1 too, before any thread starts."""
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
    if offsets is None:
        return arrival_offsets(rate, count, burstiness=burstiness, seed=seed)
    if len(offsets) != count:
        raise ValueError(f"{len(offsets)} send times for {count} requests")
    return offsets


def open_loop_load(run: OpenLoopRun) -> OpenLoopLoad:
    """What an open-loop level's sender did, for results.json."""
    waits = run.slot_waits
    return OpenLoopLoad(
        offered_request_rate=run.rate,
        burstiness=run.burstiness,
        max_concurrency=run.max_concurrency,
        seed=run.seed,
        achieved_request_rate=run.achieved_request_rate,
        send_lag_max_s=run.max_send_lag_s,
        send_lag_p99_s=run.p99_send_lag_s,
        slot_wait_mean_s=sum(waits) / len(waits),
        slot_wait_max_s=max(waits),
        in_flight_peak=run.peak_in_flight,
        in_flight_mean=run.mean_in_flight,
    )


def summarise_open_loop_level(
    run: OpenLoopRun,
    *,
    slo: Slo | None,
    slo_source: str = "",
    speculation: Speculation | None = None,
    price_per_hour_usd: float | None = None,
    server_latency: ServerLatency | None = None,
) -> LevelResult:
    """A LevelResult of one open-loop level: concurrency 0, the load in ``open_loop``."""
    return summarise_level(
        0,
        run.records,
        run.wall_seconds,
        speculation=speculation,
        price_per_hour_usd=price_per_hour_usd,
        server_latency=server_latency,
        open_loop=open_loop_load(run),
        slo=slo,
        slo_source=slo_source,
    )
