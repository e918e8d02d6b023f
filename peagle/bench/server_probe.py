"""What a benchmark can learn from a server besides its answers.

A local server (``--url``) exposes vLLM's ``/v1/models``, ``/version`` and
``/metrics``. A SageMaker endpoint exposes only ``/invocations`` through
InvokeEndpoint, so for endpoints these stay unknown, acceptance is read from
the answers alone, and the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from peagle.bench.vllm_counters import has_speculation
from peagle_serve.metrics import MetricsSnapshot

ENDPOINT_RESPONSES_NOTE = (
    "Acceptance from the responses (their metrics.speculative_decoding, summed per level): a SageMaker "
    "endpoint's /metrics is not reachable through InvokeEndpoint."
)
ENDPOINT_METRICS_NOTE = (
    "Acceptance not measured: the responses carried no metrics.speculative_decoding (speculation off, or "
    "an image whose launcher predates per-request spec-decode metrics), and a SageMaker endpoint's /metrics "
    "is not reachable through InvokeEndpoint. Read it from the container's peagle_kpi log line or CloudWatch "
    "(EndpointConfig MetricsConfig EnableDetailedObservability)."
)
_TIMEOUT = httpx.Timeout(10.0)


@dataclass(frozen=True)
class ServerInfo:
    model: str | None = None
    max_model_len: int | None = None
    server_version: str | None = None
    metrics_reachable: bool = False
    speculation: str = "unknown"  # "on", "off" or "unknown"
    note: str | None = None


def probe_url(base_url: str) -> ServerInfo:
    base_url = base_url.rstrip("/")
    model = max_model_len = version = None
    try:
        models = httpx.get(f"{base_url}/v1/models", timeout=_TIMEOUT).json().get("data") or []
        if models:
            model = models[0].get("id")
            max_model_len = models[0].get("max_model_len")
        version = httpx.get(f"{base_url}/version", timeout=_TIMEOUT).json().get("version")
    except (httpx.HTTPError, ValueError):
        pass  # a server without these routes can still be benchmarked
    snapshot = scrape_metrics(base_url)
    if snapshot is None:
        return ServerInfo(
            model, max_model_len, version, note=f"{base_url}/metrics not reachable: acceptance not measured."
        )
    speculation = "on" if has_speculation(snapshot) else "off"
    return ServerInfo(model, max_model_len, f"vllm {version}" if version else None, True, speculation)


def scrape_metrics(base_url: str) -> MetricsSnapshot | None:
    try:
        response = httpx.get(f"{base_url.rstrip('/')}/metrics", timeout=_TIMEOUT)
    except httpx.HTTPError:
        return None
    return MetricsSnapshot.parse(response.text) if response.status_code == 200 else None
