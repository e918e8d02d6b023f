"""A synthetic capacity level for the tests that need no server (a module of its own, not a conftest)."""

from __future__ import annotations

from peagle.capacity.levels import LevelRecord
from peagle.capacity.search import Measured

REQUESTS = 20
KNEE = 2.5  # req/s


def level(rate: float, repeat: int) -> Measured:
    """A server whose every request meets the SLO up to KNEE req/s and a third of them above it, with
    6.4 requests in flight at any rate (so the answer's concurrency is known exactly)."""
    good = REQUESTS if rate <= KNEE else REQUESTS // 3
    wall = REQUESTS / rate + 1
    record = LevelRecord(
        offered_rate=rate,
        repeat=repeat,
        seed=repeat,
        requests=REQUESTS,
        failed=0,
        wall_seconds=wall,
        achieved_rate=rate,
        completed_rate=REQUESTS / wall,
        attainment=good / REQUESTS,
        attainment_per_bound={"ttft": good / REQUESTS, "tpot": 1.0},
        good_requests=good,
        goodput=good / wall,
        ttft_p50=0.2,
        ttft_p90=0.4 if rate <= KNEE else 3.0,
        tpot_p50=0.03,
        tpot_p90=0.05,
        e2el_p50=2.0,
        e2el_p90=3.0,
        output_tokens=REQUESTS * 64,
        output_tokens_per_s=REQUESTS * 64 / wall,
        in_flight_mean=6.4,
        in_flight_peak=9,
        max_send_lag_s=0.001,
        p99_send_lag_s=0.001,
        vllm_running_mean=6.0,
        vllm_running_peak=8,
        vllm_waiting_mean=0.0,
        vllm_waiting_peak=0,
    )
    return Measured(rate, rate, REQUESTS, good, wall, detail=record)
