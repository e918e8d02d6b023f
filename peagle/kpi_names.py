"""Names of the KPI metrics in CloudWatch: written once, read by the CDK side and the CLI.

The launcher prints one ``peagle_kpi`` JSON line per interval (``peagle_serve.kpi``);
the endpoint stack's metric filters turn its keys into metrics in ``KPI_NAMESPACE``
with the dimensions below (``cdk_constructs/kpi_metrics.py``); `peagle smoke` reads
them back with GetMetricData. Dependency-free, so the CLI can import it without
aws-cdk-lib.
"""

from __future__ import annotations

KPI_NAMESPACE = "PEagle/Endpoints"

# Dimension names of every KPI metric; the values come from the KPI line itself
# (endpoint_name / variant_name, which the launcher reads from its environment).
ENDPOINT_NAME_DIMENSION = "EndpointName"
VARIANT_NAME_DIMENSION = "VariantName"

# KPI line key -> CloudWatch metric name (the unit is in the name where it has one).
KPI_METRIC_NAMES: dict[str, str] = {
    "requests_per_second": "RequestsPerSecond",
    "generation_tokens_per_second": "GenerationTokensPerSecond",
    "prompt_tokens_per_second": "PromptTokensPerSecond",
    "ttft_mean_seconds": "TimeToFirstTokenSeconds",
    "tpot_mean_seconds": "TimePerOutputTokenSeconds",
    "e2e_latency_mean_seconds": "EndToEndLatencySeconds",
    "queue_time_mean_seconds": "QueueTimeSeconds",
    "spec_acceptance_rate": "SpecAcceptanceRate",
    "spec_mean_acceptance_length": "SpecMeanAcceptanceLength",
    "spec_drafts_per_second": "SpecDraftsPerSecond",
    "requests_running": "RequestsRunning",
    "requests_waiting": "RequestsWaiting",
    "kv_cache_usage_ratio": "KvCacheUsageRatio",
    "requests_finished_total_in_interval": "RequestsFinished",
    "requests_finished.length": "RequestsFinishedByLength",
    "requests_finished.abort": "RequestsAborted",
}

SPEC_ACCEPTANCE_RATE_METRIC = KPI_METRIC_NAMES["spec_acceptance_rate"]
SPEC_MEAN_ACCEPTANCE_LENGTH_METRIC = KPI_METRIC_NAMES["spec_mean_acceptance_length"]

# One datapoint per KPI line, whatever its contents: its absence means the container
# stopped reporting.
KPI_REPORTS_METRIC = "KpiReports"
