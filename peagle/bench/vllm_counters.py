"""Speculative-decoding acceptance over a benchmark level, from vLLM's ``/metrics``.

Acceptance is a property of the server, not of one response, so it comes from
the change of the spec-decode counters over a level (facts.md §4). The parsing
and the arithmetic are the container launcher's (``peagle_serve.metrics`` and
``peagle_serve.kpi.compute_kpi``), so the numbers in a benchmark report are
defined exactly like the ``peagle_kpi`` log line's on a real endpoint.
"""

from __future__ import annotations

from peagle.bench.results import Speculation
from peagle_serve import metrics as vllm_metrics
from peagle_serve.kpi import compute_kpi
from peagle_serve.metrics import MetricsSnapshot


def has_speculation(snapshot: MetricsSnapshot) -> bool:
    """vLLM registers the spec-decode counters only when speculation is configured."""
    return snapshot.has(vllm_metrics.SPEC_DRAFTS)


def speculation_between(before: MetricsSnapshot, after: MetricsSnapshot) -> Speculation | None:
    if not has_speculation(after):
        return None
    kpi = compute_kpi(before, after, model_pair="", speculative_tokens=0)

    def delta(name: str) -> int:
        return int(round(after.total(name) - before.total(name)))

    return Speculation(
        acceptance_rate=kpi["spec_acceptance_rate"],
        mean_acceptance_length=kpi["spec_mean_acceptance_length"],
        per_position_acceptance=kpi["spec_acceptance_per_position"] or [],
        drafts=delta(vllm_metrics.SPEC_DRAFTS),
        draft_tokens=delta(vllm_metrics.SPEC_DRAFT_TOKENS),
        accepted_tokens=delta(vllm_metrics.SPEC_ACCEPTED),
    )
