"""The ``peagle_kpi`` log line: vLLM's counters turned into per-interval KPIs.

Under network isolation stdout (CloudWatch Logs) is the only way out of the
container, so every ``PEAGLE_KPI_INTERVAL_SECONDS`` the launcher prints one JSON
object per line; the CDK side's metric filters read its keys by name. The event
name and the keys are the container contract's (``contract.KPI_LINE_KEYS``).
Rates and means are over the interval: deltas of counters and of histogram
sum/count. A value that is undefined in the interval (no requests, no drafts) is null.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import overload

from .contract import VllmMetric, kpi_line
from .metrics import MetricsSnapshot, fetch_metrics

log = logging.getLogger("peagle_serve")


def _delta(previous: MetricsSnapshot, current: MetricsSnapshot, name: str) -> float:
    # Counters only grow while one engine lives; clamp in case a sample vanished.
    return max(0.0, current.total(name) - previous.total(name))


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator > 0 else None


def _histogram_mean(previous: MetricsSnapshot, current: MetricsSnapshot, name: str) -> float | None:
    return _ratio(_delta(previous, current, name + "_sum"), _delta(previous, current, name + "_count"))


def _gauge(current: MetricsSnapshot, name: str) -> float | None:
    return current.total(name) if current.has(name) else None


@overload
def _round(value: float, digits: int = 6) -> float: ...
@overload
def _round(value: float | None, digits: int = 6) -> float | None: ...
def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(value, digits)


def acceptance_kpis(
    *, drafts: float, draft_tokens: float, accepted: float, accepted_per_position: Sequence[float]
) -> dict[str, float | list[float] | None]:
    """Acceptance over a window from its spec-decode totals, as vLLM defines it
    (vllm/v1/spec_decode/metrics.py, ``SpecDecodingLogging.log``: "draft_acceptance_rate =
    num_accepted_tokens / num_draft_tokens", "mean_acceptance_length = 1 + (num_accepted_tokens /
    num_drafts)", per position "np.sum(pos_matrix, axis=0) / num_drafts").

    ``drafts`` are verify steps that had drafts, ``accepted_per_position[i]`` the steps that
    accepted draft position i. The one arithmetic for the KPI line (deltas of /metrics
    counters) and `peagle bench` (those deltas, or sums of the responses' per-request
    metrics), so every report means the same by each number.
    """
    mean_accepted_per_draft = _ratio(accepted, drafts)
    per_position = None
    if drafts > 0 and accepted_per_position:
        per_position = [_round(count / drafts) for count in accepted_per_position]
    return {
        "spec_acceptance_rate": _round(_ratio(accepted, draft_tokens)),
        "spec_mean_acceptance_length": _round(
            None if mean_accepted_per_draft is None else 1.0 + mean_accepted_per_draft
        ),
        "spec_acceptance_per_position": per_position,
    }


def compute_kpi(
    previous: MetricsSnapshot,
    current: MetricsSnapshot,
    *,
    model_pair: str,
    speculative_tokens: int,
    endpoint_name: str | None = None,
    variant_name: str | None = None,
) -> dict:
    """One KPI record for the interval between two snapshots.

    ``endpoint_name``/``variant_name`` become the CloudWatch dimensions of the metrics
    the endpoint's log-group metric filters derive from the line.
    """
    seconds = max(current.taken_at - previous.taken_at, 1e-9)

    finished_now = current.by_label(VllmMetric.REQUEST_SUCCESS, "finished_reason")
    finished_before = previous.by_label(VllmMetric.REQUEST_SUCCESS, "finished_reason")
    finished = {
        reason: int(round(max(0.0, count - finished_before.get(reason, 0.0))))
        for reason, count in sorted(finished_now.items())
    }
    finished_total = sum(finished.values())

    drafts = _delta(previous, current, VllmMetric.SPEC_DRAFTS)
    draft_tokens = _delta(previous, current, VllmMetric.SPEC_DRAFT_TOKENS)
    accepted = _delta(previous, current, VllmMetric.SPEC_ACCEPTED)
    per_position_now = current.by_label(VllmMetric.SPEC_ACCEPTED_PER_POS, "position")
    per_position_before = previous.by_label(VllmMetric.SPEC_ACCEPTED_PER_POS, "position")
    acceptance = acceptance_kpis(
        drafts=drafts,
        draft_tokens=draft_tokens,
        accepted=accepted,
        accepted_per_position=[
            per_position_now[pos] - per_position_before.get(pos, 0.0) for pos in sorted(per_position_now, key=int)
        ],
    )

    return kpi_line(
        {
            "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
            "model_pair": model_pair,
            "endpoint_name": endpoint_name,
            "variant_name": variant_name,
            "interval_seconds": round(seconds, 3),
            "speculative_tokens": speculative_tokens,
            "requests_per_second": _round(finished_total / seconds),
            "generation_tokens_per_second": _round(_delta(previous, current, VllmMetric.GENERATION_TOKENS) / seconds),
            "prompt_tokens_per_second": _round(_delta(previous, current, VllmMetric.PROMPT_TOKENS) / seconds),
            "ttft_mean_seconds": _round(_histogram_mean(previous, current, VllmMetric.TTFT)),
            "tpot_mean_seconds": _round(_histogram_mean(previous, current, VllmMetric.TPOT)),
            "e2e_latency_mean_seconds": _round(_histogram_mean(previous, current, VllmMetric.E2E_LATENCY)),
            "queue_time_mean_seconds": _round(_histogram_mean(previous, current, VllmMetric.QUEUE_TIME)),
            **acceptance,
            "spec_drafts_per_second": _round(drafts / seconds) if speculative_tokens else None,
            "requests_running": _gauge(current, VllmMetric.REQUESTS_RUNNING),
            "requests_waiting": _gauge(current, VllmMetric.REQUESTS_WAITING),
            "kv_cache_usage_ratio": _round(_gauge(current, VllmMetric.KV_CACHE_USAGE)),
            "requests_finished": finished,
            "requests_finished_total_in_interval": finished_total,
        }
    )


def write_stdout_line(record: dict) -> None:
    # One os.write per line: vLLM writes to the same stdout, and a single write of
    # a short line is not interleaved with theirs.
    os.write(1, (json.dumps(record, separators=(",", ":")) + "\n").encode())


class KpiReporter(threading.Thread):
    """Prints a KPI line every ``interval_seconds`` until ``stop()``."""

    def __init__(
        self,
        base_url: str,
        interval_seconds: float,
        *,
        model_pair: str,
        speculative_tokens: int,
        endpoint_name: str | None = None,
        variant_name: str | None = None,
    ):
        super().__init__(name="peagle-kpi", daemon=True)
        self._base_url = base_url
        self._interval = interval_seconds
        self._model_pair = model_pair
        self._speculative_tokens = speculative_tokens
        self._endpoint_name = endpoint_name
        self._variant_name = variant_name
        self._stopped = threading.Event()

    def stop(self) -> None:
        self._stopped.set()

    def run(self) -> None:
        previous = self._snapshot()
        while not self._stopped.wait(self._interval):
            current = self._snapshot()
            if current is None:
                continue  # engine busy or shutting down; keep the old baseline
            if previous is not None:
                write_stdout_line(
                    compute_kpi(
                        previous,
                        current,
                        model_pair=self._model_pair,
                        speculative_tokens=self._speculative_tokens,
                        endpoint_name=self._endpoint_name,
                        variant_name=self._variant_name,
                    )
                )
            previous = current

    def _snapshot(self) -> MetricsSnapshot | None:
        try:
            return fetch_metrics(self._base_url, timeout=max(2.0, min(10.0, self._interval)))
        except (OSError, http.client.HTTPException, ValueError) as error:
            # No connection, a response cut short, or text prometheus_client cannot parse
            # (ValueError): skip this read, never end the thread that prints the line.
            log.warning("KPI: could not read /metrics (%s: %s)", type(error).__name__, error)
            return None
