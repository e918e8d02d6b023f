"""One capacity level against a real target: open-loop requests at a rate (peagle/bench/open_loop.py),
judged against the SLO with peagle/slo.py's definitions (vllm bench serve's), and, for a URL target,
vLLM's running/waiting gauges sampled from /metrics while the level runs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from peagle.bench.open_loop import run_open_loop
from peagle.bench.server_probe import scrape_metrics
from peagle.bench.stats import RequestRecord, distribution
from peagle.capacity.search import Measured
from peagle.catalog import Slo
from peagle.client import GenerationRequest, PeagleClient

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
    requests: int
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

    def as_dict(self) -> dict:
        return asdict(self)


class GaugeSampler:
    """Polls a URL target's /metrics for vLLM's running and waiting gauges while a level runs."""

    def __init__(self, url: str | None):
        self.url = url
        self.running: list[float] = []
        self.waiting: list[float] = []
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
        while not self._stop.is_set():
            snapshot = scrape_metrics(self.url)
            if snapshot is not None and snapshot.has(RUNNING_GAUGE):
                self.running.append(snapshot.total(RUNNING_GAUGE))
                self.waiting.append(snapshot.total(WAITING_GAUGE))
            self._stop.wait(GAUGE_PERIOD_SECONDS)

    def summary(self) -> dict[str, float | None]:
        def mean(values: list[float]) -> float | None:
            return sum(values) / len(values) if values else None

        return {
            "vllm_running_mean": mean(self.running),
            "vllm_running_peak": max(self.running) if self.running else None,
            "vllm_waiting_mean": mean(self.waiting),
            "vllm_waiting_peak": max(self.waiting) if self.waiting else None,
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
    on_done: Callable[[RequestRecord], None] = lambda record: None,
) -> Measured:
    """Send ``requests`` open loop at ``rate`` and judge them; a repeat gets its own arrival seed."""
    level_seed = seed + repeat
    with GaugeSampler(metrics_url) as gauges:
        run = run_open_loop(client, requests, rate=rate, burstiness=burstiness, seed=level_seed, on_done=on_done)
    attained = run.attainment(slo)
    ok = [record for record in run.records if record.ok]
    wall = run.wall_seconds
    ttft = distribution([r.ttft_s for r in ok if r.ttft_s is not None])
    tpot = distribution([r.tpot_s for r in ok if r.tpot_s is not None])
    e2el = distribution([r.e2e_s for r in ok])
    output_tokens = sum(record.output_tokens for record in ok)
    ks = {r.spec_decode_metrics.num_spec_tokens for r in ok if r.spec_decode_metrics is not None}
    record = LevelRecord(
        offered_rate=rate,
        repeat=repeat,
        seed=level_seed,
        requests=len(run.records),
        failed=len(run.records) - len(ok),
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
        in_flight_mean=run.mean_in_flight,
        in_flight_peak=run.peak_in_flight,
        max_send_lag_s=run.max_send_lag_s,
        p99_send_lag_s=run.p99_send_lag_s,
        speculative_tokens=max(ks) if ks else None,
        **gauges.summary(),
    )
    return Measured(
        offered_rate=rate,
        achieved_rate=record.achieved_rate,
        requests=record.requests,
        good_requests=record.good_requests,
        wall_seconds=wall,
        detail=record,
    )
