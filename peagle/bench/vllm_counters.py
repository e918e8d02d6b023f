"""What vLLM's own ``/metrics`` counters say about a benchmark level.

Acceptance is a property of the server, not of one response, so it comes from
the change of the spec-decode counters over a level, as vLLM defines it
(vllm/v1/spec_decode/metrics.py, ``SpecDecodingProm``: acceptance rate = Δaccepted
tokens / Δdraft tokens, mean acceptance length = 1 + Δaccepted tokens / Δdrafts). The server's
latency histograms give a second view of TTFT/TPOT, measured inside the server:
on a CPU-starved machine the API server can deliver a whole stream in one burst,
which the client then sees as TTFT ~ e2e and TPOT ~ 0.

The counter names are the container contract's (``peagle_serve.contract.VllmMetric``).
The parsing and the arithmetic are the launcher's own code (``peagle_serve.metrics``
and ``peagle_serve.kpi.compute_kpi``), imported on purpose, not copied: the numbers
in a benchmark report are then defined exactly like the ``peagle_kpi`` log line's
on a real endpoint.
"""

from __future__ import annotations

from peagle.bench.results import SOURCE_METRICS, ServerLatency, Speculation
from peagle_serve.contract import VllmMetric
from peagle_serve.kpi import compute_kpi
from peagle_serve.metrics import MetricsSnapshot


def has_speculation(snapshot: MetricsSnapshot) -> bool:
    """vLLM registers the spec-decode counters only when speculation is configured."""
    return snapshot.has(VllmMetric.SPEC_DRAFTS)


def speculation_between(before: MetricsSnapshot, after: MetricsSnapshot) -> Speculation | None:
    if not has_speculation(after):
        return None
    kpi = compute_kpi(before, after, model_pair="", speculative_tokens=0)

    def delta(name: str) -> int:
        return int(round(after.total(name) - before.total(name)))

    return Speculation.from_kpi(
        kpi,
        drafts=delta(VllmMetric.SPEC_DRAFTS),
        draft_tokens=delta(VllmMetric.SPEC_DRAFT_TOKENS),
        accepted_tokens=delta(VllmMetric.SPEC_ACCEPTED),
        source=SOURCE_METRICS,
    )


def server_latency_between(before: MetricsSnapshot, after: MetricsSnapshot) -> ServerLatency:
    kpi = compute_kpi(before, after, model_pair="", speculative_tokens=0)
    return ServerLatency(
        ttft_mean_s=kpi["ttft_mean_seconds"],
        tpot_mean_s=kpi["tpot_mean_seconds"],
        e2e_mean_s=kpi["e2e_latency_mean_seconds"],
        queue_time_mean_s=kpi["queue_time_mean_seconds"],
    )
