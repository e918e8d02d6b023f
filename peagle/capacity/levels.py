"""One capacity level against a real target: open-loop requests at a rate (peagle/bench/open_loop.py),
judged against the SLO with peagle/slo.py's definitions (vllm bench serve's), and, for a URL target,
vLLM's running/waiting gauges sampled from /metrics while the level runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from peagle.bench.host_conditions import DEFAULT_BUSY_LIMIT, BusyLimit, HostConditions, HostWatch
from peagle.bench.open_loop import run_open_loop, schedule_times
from peagle.bench.server_probe import scrape_metrics
from peagle.bench.stats import RequestRecord, distribution, request_timings
from peagle.capacity.search import Measured
from peagle.catalog import Slo
from peagle.client import GenerationRequest, PeagleClient
from peagle.slo import attainment

GAUGE_PERIOD_SECONDS = 0.5
# vLLM's scheduler gauges (vllm/v1/metrics/loggers.py): requests in the running batch, and queued.
RUNNING_GAUGE = "vllm:num_requests_running"
WAITING_GAUGE = "vllm:num_requests_waiting"


@dataclass(frozen=True)
class LevelRecord:
    """Everything capacity.json keeps of one level. Latencies in seconds; None where nothing was measured."""

    offered_rate: float
    repeat: int
    seed: int
    requests: int  # judged: those scheduled after the ramp
    failed: int
    wall_seconds: float
    achieved_rate: float  # requests sent / send span: below offered when the sender fell behind
    completed_rate: float  # successful answers / wall time
    attainment: float  # share of requests meeting every bound
    attainment_per_bound: dict[str, float]
    good_requests: int
    goodput: float  # requests/s meeting every bound (over the wall time, as vllm bench serve divides)
    ttft_p50: float | None
    ttft_p90: float | None
    tpot_p50: float | None
    tpot_p90: float | None
    e2el_p50: float | None
    e2el_p90: float | None
    output_tokens: int
    output_tokens_per_s: float
    in_flight_mean: float  # the load's own count, time-averaged
    in_flight_peak: int
    max_send_lag_s: float
    p99_send_lag_s: float
    vllm_running_mean: float | None = None
    vllm_running_peak: float | None = None
    vllm_waiting_mean: float | None = None
    vllm_waiting_peak: float | None = None
    speculative_tokens: int | None = None  # K the answers reported (their metrics.speculative_decoding)
    ramp_seconds: float = 0.0  # requests scheduled before this were sent but not judged
    # Means, for the service curve (peagle/simulate/service_curve.py); None in files written before them.
    ttft_mean: float | None = None
    tpot_mean: float | None = None
    e2el_mean: float | None = None
    sent: int = 0  # requests sent, the ramp's included
    host: HostConditions | None = None  # what the machine did meanwhile (peagle/bench/host_conditions.py)
    # The seed its synthetic prompts were drawn from (a repeat's own); None for a --prompts-file's, and in
    # files written before repeats drew their own prompts. ``seed`` is the arrivals'.
    prompts_seed: int | None = None

    def as_dict(self) -> dict:
        return asdict(self)


class GaugeSampler:
    """Polls a URL target's /metrics for vLLM's running and waiting gauges while a level runs."""

    def __init__(self, url: str | None):
        self.url = url
        self.running: list[tuple[float, float]] = []  # (seconds since the sampler started, value)
        self.waiting: list[tuple[float, float]] = []
        self._started = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="capacity-gauges", daemon=True)

    def __enter__(self) -> GaugeSampler:
        if self.url:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _poll(self) -> None:
        url = self.url
        if not url:  # __enter__ starts polling only for a URL target
            return
        while not self._stop.is_set():
            snapshot = scrape_metrics(url)
            if snapshot is not None and snapshot.has(RUNNING_GAUGE):
                now = time.perf_counter() - self._started
                self.running.append((now, snapshot.total(RUNNING_GAUGE)))
                self.waiting.append((now, snapshot.total(WAITING_GAUGE)))
            self._stop.wait(GAUGE_PERIOD_SECONDS)

    def summary(self, after_seconds: float = 0.0) -> dict[str, float | None]:
        """Mean and peak of the samples taken ``after_seconds`` into the level."""
        running = [value for at, value in self.running if at >= after_seconds]
        waiting = [value for at, value in self.waiting if at >= after_seconds]
        return {
            "vllm_running_mean": sum(running) / len(running) if running else None,
            "vllm_running_peak": max(running) if running else None,
            "vllm_waiting_mean": sum(waiting) / len(waiting) if waiting else None,
            "vllm_waiting_peak": max(waiting) if waiting else None,
        }


def measure_level(
    client: PeagleClient,
    requests: Sequence[GenerationRequest],
    slo: Slo,
    *,
    rate: float,
    repeat: int,
    seed: int,
    burstiness: float,
    metrics_url: str | None,
    ramp_seconds: float = 0.0,
    on_done: Callable[[RequestRecord], None] = lambda record: None,
    busy_limit: BusyLimit = DEFAULT_BUSY_LIMIT,
    prompts_seed: int | None = None,
) -> Measured:
    """Send ``requests`` open loop at ``rate`` and judge those scheduled after ``ramp_seconds``; a repeat
    gets its own arrival seed (``prompts_seed``: the seed the caller drew the requests' prompts from, kept).

    The ramp is left out because a level starts on an idle server: the requests in flight climb to their steady
    count over about one request's latency, so the first requests see a lighter load than the rate gives (on the
    partial pair a 24-request level at 1.19 req/s carried 8 in flight and met the SLO; 48 at that rate, 11 and 50%).
    """
    level_seed = seed + repeat
    with HostWatch(metrics_url) as watch, GaugeSampler(metrics_url) as gauges:
        run = run_open_loop(client, requests, rate=rate, burstiness=burstiness, seed=level_seed, on_done=on_done)
    host = watch.conditions(busy_limit, send_lag_p99_s=run.p99_send_lag_s)
    judged = [record for record in run.records if schedule_times(record).scheduled_s >= ramp_seconds] or run.records
    ramp = min(ramp_seconds, min(schedule_times(record).scheduled_s for record in judged))
    attained = attainment(slo, request_timings(judged))
    ok = [record for record in judged if record.ok]
    wall = run.wall_seconds - ramp  # the judged window: from the ramp's end to the last answer
    ttft = distribution([r.ttft_s for r in ok if r.ttft_s is not None])
    tpot = distribution([r.tpot_s for r in ok if r.tpot_s is not None])
    e2el = distribution([r.e2e_s for r in ok])
    output_tokens = sum(record.output_tokens for record in ok)
    ks = {r.spec_decode_metrics.num_spec_tokens for r in ok if r.spec_decode_metrics is not None}
    record = LevelRecord(
        offered_rate=rate,
        repeat=repeat,
        seed=level_seed,
        requests=len(judged),
        failed=len(judged) - len(ok),
        wall_seconds=wall,
        achieved_rate=run.achieved_request_rate,
        completed_rate=len(ok) / wall if wall > 0 else 0.0,
        attainment=attained.all_bounds,
        attainment_per_bound=dict(attained.per_bound),
        good_requests=attained.good_requests,
        goodput=attained.goodput(wall),
        ttft_p50=ttft.p50 if ttft else None,
        ttft_p90=ttft.p90 if ttft else None,
        tpot_p50=tpot.p50 if tpot else None,
        tpot_p90=tpot.p90 if tpot else None,
        e2el_p50=e2el.p50 if e2el else None,
        e2el_p90=e2el.p90 if e2el else None,
        output_tokens=output_tokens,
        output_tokens_per_s=output_tokens / wall if wall > 0 else 0.0,
        in_flight_mean=_mean_in_flight(run.records, ramp, max(schedule_times(r).scheduled_s for r in run.records)),
        in_flight_peak=run.peak_in_flight,
        max_send_lag_s=run.max_send_lag_s,
        p99_send_lag_s=run.p99_send_lag_s,
        speculative_tokens=max(ks) if ks else None,
        ramp_seconds=ramp,
        ttft_mean=ttft.mean if ttft else None,
        tpot_mean=tpot.mean if tpot else None,
        e2el_mean=e2el.mean if e2el else None,
        sent=len(run.records),
        host=host,
        prompts_seed=prompts_seed,
        **gauges.summary(after_seconds=ramp),
    )
    return Measured(
        offered_rate=rate,
        achieved_rate=record.achieved_rate,
        requests=record.requests,
        good_requests=record.good_requests,
        wall_seconds=wall,
        detail=record,
        busy=tuple(host.busy),
    )


def _mean_in_flight(records: Sequence[RequestRecord], start: float, end: float) -> float:
    """Time-averaged requests in flight between ``start`` and ``end`` (seconds into the level): the
    steady part of the level, from the ramp's end to the last arrival, before the level drains."""
    if end <= start:
        return 0.0
    busy = sum(max(0.0, min(t.finished_s, end) - max(t.sent_s, start)) for t in map(schedule_times, records))
    return busy / (end - start)
