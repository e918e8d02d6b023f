"""Per-level statistics from per-request records.

Definitions (docs/client-and-bench.md has the long form):
- TTFT: request sent -> first text chunk;
- TPOT: (e2e - TTFT) / (output tokens - 1), per request: the decode time per token;
- ITL: gaps between text chunks. Under speculation one chunk carries several
  tokens, so ITL is per *chunk* and overstates per-token latency; TPOT is the fair
  comparison across speculation on/off;
- output tokens/s and requests/s: totals over the level's wall time (first send
  to last answer), successful requests only;
- cost per 1M output tokens: instance price per hour / (output tokens/s x 3600) x 1e6,
  i.e. one instance kept busy at this concurrency;
- SLO attainment and goodput: peagle.slo's, vllm bench serve's definitions, over every
  request sent (a failed one meets no bound); goodput divides by the wall time. For an
  open-loop level the wall time is vllm bench serve's benchmark duration: from the
  schedule's start (the first request is due one gap after it) to the last answer;
- acceptance: from the successful answers' per-request metrics (response_acceptance.py)
  and, for URL targets, from the server's /metrics counters (vllm_counters.py).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from peagle.bench.response_acceptance import speculation_from_responses
from peagle.bench.results import Distribution, LevelResult, OpenLoopLoad, ServerLatency, SloResult, Speculation
from peagle.client import SpecDecodeMetrics
from peagle.slo import RequestTiming, attainment

if TYPE_CHECKING:
    from peagle.catalog import Slo


@dataclass(frozen=True)
class RequestRecord:
    """What one benchmark request measured (or how it failed)."""

    ok: bool
    e2e_s: float
    ttft_s: float | None = None
    tpot_s: float | None = None
    inter_chunk_s: tuple[float, ...] = ()
    prompt_tokens: int = 0
    output_tokens: int = 0
    error_type: str | None = None
    error_message: str | None = None
    attempts: int = 1
    spec_decode_metrics: SpecDecodeMetrics | None = None  # the answer's acceptance, if it carried it
    # Open loop only (open_loop.py), seconds from the schedule's start: when the request was due, when it
    # went out (after any --max-concurrency slot wait, which slot_wait_s holds) and when its answer ended.
    scheduled_s: float | None = None
    sent_s: float | None = None
    slot_wait_s: float = 0.0
    finished_s: float | None = None


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Linear interpolation between closest ranks (numpy's default method)."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    rank = (len(sorted_values) - 1) * fraction
    low, high = math.floor(rank), math.ceil(rank)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (rank - low)


def distribution(values: Sequence[float]) -> Distribution | None:
    if not values:
        return None
    ordered = sorted(values)
    return Distribution(
        p50=percentile(ordered, 0.50),
        p90=percentile(ordered, 0.90),
        p99=percentile(ordered, 0.99),
        mean=sum(ordered) / len(ordered),
        count=len(ordered),
    )


def cost_per_million_output_tokens(price_per_hour_usd: float | None, output_tokens_per_s: float) -> float | None:
    if price_per_hour_usd is None or output_tokens_per_s <= 0:
        return None
    return price_per_hour_usd / (output_tokens_per_s * 3600.0) * 1_000_000


def request_timings(records: Sequence[RequestRecord]) -> list[RequestTiming]:
    """The records as peagle.slo judges them (a failed request meets no bound)."""
    return [
        RequestTiming(
            ok=record.ok,
            ttft_seconds=record.ttft_s if record.ok else None,
            e2e_seconds=record.e2e_s if record.ok else None,
            output_tokens=record.output_tokens,
        )
        for record in records
    ]


def slo_result(slo: Slo, source: str, records: Sequence[RequestRecord], duration_s: float) -> SloResult:
    """What ``records`` attained against ``slo`` (a catalog Slo), and their goodput over ``duration_s``."""
    attained = attainment(slo, request_timings(records))
    return SloResult(
        ttft_seconds=slo.ttft_seconds,
        tpot_seconds=slo.tpot_seconds,
        e2e_seconds=slo.e2e_seconds,
        target_attainment=slo.attainment,
        source=source,
        per_bound=dict(attained.per_bound),
        all_bounds=attained.all_bounds,
        good_requests=attained.good_requests,
        goodput_requests_per_s=attained.goodput(duration_s),
    )


def summarise_level(
    concurrency: int,
    records: Sequence[RequestRecord],
    duration_s: float,
    *,
    speculation: Speculation | None,
    price_per_hour_usd: float | None,
    server_latency: ServerLatency | None = None,
    open_loop: OpenLoopLoad | None = None,
    slo: Slo | None = None,
    slo_source: str = "",
) -> LevelResult:
    succeeded = [record for record in records if record.ok]
    output_tokens = sum(record.output_tokens for record in succeeded)
    output_tokens_per_s = output_tokens / duration_s if duration_s > 0 else 0.0
    return LevelResult(
        concurrency=concurrency,
        requests=len(records),
        failed=len(records) - len(succeeded),
        # A failed record always names its error (load.py, send_one); "unknown" keeps the count whole if not.
        errors_by_type=dict(Counter(record.error_type or "unknown" for record in records if not record.ok)),
        duration_s=duration_s,
        prompt_tokens=sum(record.prompt_tokens for record in succeeded),
        output_tokens=output_tokens,
        output_tokens_per_s=output_tokens_per_s,
        requests_per_s=len(succeeded) / duration_s if duration_s > 0 else 0.0,
        ttft_s=distribution([r.ttft_s for r in succeeded if r.ttft_s is not None]),
        tpot_s=distribution([r.tpot_s for r in succeeded if r.tpot_s is not None]),
        itl_s=distribution([gap for r in succeeded for gap in r.inter_chunk_s]),
        e2e_s=distribution([r.e2e_s for r in succeeded]),
        speculation=speculation,
        cost_per_million_output_tokens_usd=cost_per_million_output_tokens(price_per_hour_usd, output_tokens_per_s),
        server_latency=server_latency,
        speculation_from_responses=speculation_from_responses(
            [r.spec_decode_metrics for r in succeeded if r.spec_decode_metrics is not None]
        ),
        open_loop=open_loop,
        slo=slo_result(slo, slo_source, records, duration_s) if slo is not None else None,
    )
