"""The container contract, written once: what the CDK app and the CLI put into the
container (environment, model mount) and read back out of it (the KPI line, vLLM's
counters), and what the launcher reads.

The CDK side (``peagle.container_env``, ``cdk_constructs``), the CLI (``peagle``) and
the launcher (this package) all import these names instead of spelling them, the way
vLLM keeps every ``VLLM_*`` variable in ``vllm/envs.py``. Standard library only: the
image copies just ``peagle_serve/``, and the CLI imports this without vLLM or
aws-cdk-lib. What each ``PEAGLE_*`` setting means, its type and default live in the
launcher's registry (``settings.py``); only the names are here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

# --- Environment: the launcher's settings ------------------------------------------
# Every variable with this prefix must be a known setting (settings.py refuses others),
# except PEAGLE_INTERNAL_*, which the launcher sets for its own child process.
PEAGLE_PREFIX = "PEAGLE_"
PEAGLE_INTERNAL_PREFIX = "PEAGLE_INTERNAL_"

ENV_MODEL_PAIR = "PEAGLE_MODEL_PAIR"
ENV_ENDPOINT_NAME = "PEAGLE_ENDPOINT_NAME"
ENV_VARIANT_NAME = "PEAGLE_VARIANT_NAME"
ENV_HF_TOKEN_SECRET_ARN = "PEAGLE_HF_TOKEN_SECRET_ARN"
ENV_DRAFTER_TRAINED_K = "PEAGLE_DRAFTER_TRAINED_K"
ENV_MODEL_ROOT = "PEAGLE_MODEL_ROOT"
ENV_HOST = "PEAGLE_HOST"
ENV_PORT = "PEAGLE_PORT"
ENV_SHUTDOWN_DRAIN_SECONDS = "PEAGLE_SHUTDOWN_DRAIN_SECONDS"
ENV_STARTUP_TIMEOUT_SECONDS = "PEAGLE_STARTUP_TIMEOUT_SECONDS"
ENV_SPECULATION_SELF_CHECK = "PEAGLE_SPECULATION_SELF_CHECK"
ENV_SELF_CHECK_PROMPT = "PEAGLE_SELF_CHECK_PROMPT"
ENV_SELF_CHECK_MAX_TOKENS = "PEAGLE_SELF_CHECK_MAX_TOKENS"
ENV_SELF_CHECK_TIMEOUT_SECONDS = "PEAGLE_SELF_CHECK_TIMEOUT_SECONDS"
ENV_KPI_INTERVAL_SECONDS = "PEAGLE_KPI_INTERVAL_SECONDS"

# --- Model data ------------------------------------------------------------------
# With S3DataType S3Prefix and CompressionType None, "for each S3 object under the key name
# pefix referenced by S3Uri, SageMaker will trim its key by the prefix, and use the remainder
# as the path (relative to /opt/ml/model) of the file holding the content of the S3 object"
# (SageMaker API Reference, S3ModelDataSource,
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_S3ModelDataSource.html).
# CloudFormation's AWS::SageMaker::Model has no AdditionalModelDataSources (the API's extra
# channels), so target and drafter share that one prefix, side by side.
MODEL_MOUNT = "/opt/ml/model"
TARGET_SUBDIR = "target"
DRAFTER_SUBDIR = "drafter"
TARGET_DIR = f"{MODEL_MOUNT}/{TARGET_SUBDIR}"
DRAFTER_DIR = f"{MODEL_MOUNT}/{DRAFTER_SUBDIR}"

# --- Shutdown -----------------------------------------------------------------------
# On scale-in (UpdateEndpointWeightsAndCapacities) and on endpoint updates SageMaker stops
# the container with SIGTERM and sends SIGKILL 30 seconds later (SageMaker Developer Guide,
# Custom Inference Code with Hosting Services, "How SageMaker AI Runs Your Inference Image",
# https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-inference-code.html).
SAGEMAKER_SIGKILL_AFTER_SECONDS = 30
# How long in-flight requests may finish after SIGTERM (vLLM --shutdown-timeout): below
# the SIGKILL, with a few seconds left for vLLM and the launcher to exit.
SHUTDOWN_DRAIN_SECONDS = 25

# --- vLLM options as SM_VLLM_* variables -------------------------------------------
# vLLM's own SageMaker entrypoint (examples/online_serving/sagemaker-entrypoint.sh in
# vllm-project/vllm) turns SM_VLLM_FOO_BAR=v into --foo-bar v. Booleans are refined,
# because the entrypoint turns SM_VLLM_ENFORCE_EAGER=true into `--enforce-eager true`,
# which argparse reads as a stray positional (the model tag!): "true" or "" is the bare
# flag, "false" is --no-<flag> (vLLM's boolean-optional flags only).
SM_VLLM_PREFIX = "SM_VLLM_"


def sm_vllm_name(flag: str) -> str:
    """``max-model-len`` or ``--max-model-len`` -> ``SM_VLLM_MAX_MODEL_LEN``."""
    return SM_VLLM_PREFIX + flag.removeprefix("--").upper().replace("-", "_")


def vllm_option(env_name: str) -> str:
    """``SM_VLLM_MAX_MODEL_LEN`` -> ``--max-model-len``."""
    return "--" + env_name.removeprefix(SM_VLLM_PREFIX).lower().replace("_", "-")


def encode_vllm_flags(flags: Mapping[str, bool | int | float | str]) -> dict[str, str]:
    """vLLM flags by name (no leading ``--``) -> ``SM_VLLM_*`` variables; True/False -> "true"/"false"."""
    return {
        sm_vllm_name(flag): ("true" if value else "false") if isinstance(value, bool) else str(value)
        for flag, value in flags.items()
    }


def decode_vllm_env(environ: Mapping[str, str]) -> list[str]:
    """Every ``SM_VLLM_*`` variable as vLLM command-line options, in a stable (sorted) order."""
    args: list[str] = []
    for name in sorted(environ):
        if not name.startswith(SM_VLLM_PREFIX) or name == SM_VLLM_PREFIX:
            continue
        option = vllm_option(name)
        value = environ[name]
        lowered = value.strip().lower()
        if lowered in ("", "true"):
            args.append(option)
        elif lowered == "false":
            args.append("--no-" + option[2:])
        else:
            args += [option, value]
    return args


# --- P-EAGLE speculation -------------------------------------------------------------
def speculative_config(drafter_path: str, k: int) -> dict | None:
    """vLLM's ``--speculative-config`` for a P-EAGLE drafter drafting ``k`` tokens, or None for k=0.

    ``parallel_drafting`` must be explicit: vLLM defaults it to False (vllm/config/speculative.py,
    ``SpeculativeConfig.parallel_drafting: bool = False``) and switches it on by itself only for
    the dflash and dspark methods, so a P-EAGLE drafter would otherwise run as plain EAGLE-3.
    Parallel drafting arrived in vLLM 0.16.0 (vllm-project/vllm PR #32887, "Unified Parallel Drafting").
    """
    if k < 0:
        raise ValueError(f"k={k}: the number of speculative tokens is >= 0 (0 turns speculation off)")
    if k == 0:
        return None
    return {"method": "eagle3", "model": drafter_path, "num_speculative_tokens": k, "parallel_drafting": True}


# Where vLLM looks for the parallel-drafting mask token, after dflash_config.mask_token_id
# and in its order (vllm/v1/spec_decode/llm_base_proposer.py, _init_parallel_drafting_params,
# which otherwise raises "For parallel drafting, the draft model config must have
# `dflash_config.mask_token_id`, `mask_token_id`, `dspark_noise_token_id`, `pard_token`,
# or `ptd_token_id` specified in its config.json.").
MASK_TOKEN_KEYS = ("mask_token_id", "dspark_noise_token_id", "pard_token", "ptd_token_id")


def mask_token_problem(drafter_config: Mapping) -> str | None:
    """None when a parsed drafter config.json names a parallel-drafting mask token, else what to fix.

    The launcher refuses such a drafter before loading it; `peagle stage` before uploading it.
    """
    dflash = drafter_config.get("dflash_config") or {}
    if any(drafter_config.get(key) is not None for key in MASK_TOKEN_KEYS) or (
        isinstance(dflash, Mapping) and dflash.get("mask_token_id") is not None
    ):
        return None
    return (
        f"names no mask token, which parallel drafting needs: add one of dflash_config.mask_token_id, "
        f"{', '.join(MASK_TOKEN_KEYS)} (P-EAGLE drafters use ptd_token_id, the id the drafter was "
        "trained with), or use a P-EAGLE drafter"
    )


# --- Hugging Face token secret -------------------------------------------------------
# Keys tried, in this order, when the secret is a JSON object rather than the bare token.
HF_TOKEN_SECRET_JSON_KEYS = ("HF_TOKEN", "hf_token", "token", "HUGGING_FACE_HUB_TOKEN")


def hub_token_from_secret(secret_string: str | None) -> str:
    """The Hugging Face token held in a Secrets Manager ``SecretString``.

    Two forms are accepted: the bare token (surrounding whitespace ignored), or a JSON object
    (what the console's key/value editor stores) with the token as a non-empty string under
    the first present of ``HF_TOKEN``, ``hf_token``, ``token``, ``HUGGING_FACE_HUB_TOKEN``.
    Anything else raises ValueError saying what to store; the message never contains the
    secret's value, and the caller prefixes the secret's name (``f"secret {arn} {error}"``).
    """
    text = (secret_string or "").strip()
    if not text:
        raise ValueError('has no SecretString; store the token as text or as JSON {"HF_TOKEN": "hf_..."}')
    if not text.startswith("{"):
        return text
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        payload = None
    if not isinstance(payload, dict):
        raise ValueError(
            'starts with "{" but is not a JSON object; store the bare token, or JSON {"HF_TOKEN": "hf_..."}'
        )
    for key in HF_TOKEN_SECRET_JSON_KEYS:
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    raise ValueError(
        f"is a JSON object without a token key; use one of {', '.join(HF_TOKEN_SECRET_JSON_KEYS)} "
        f"(keys present: {', '.join(sorted(payload)) or 'none'})"
    )


# --- vLLM's /metrics: the counters the KPI line, the self-check and the CLI read ---------
class VllmMetric:
    """Prometheus names as vLLM 0.32 exports them on ``GET /metrics``: the spec_decode counters from
    vllm/v1/spec_decode/metrics.py (``SpecDecodingProm``), the rest from vllm/v1/metrics/loggers.py.
    Counters get the ``_total`` suffix from prometheus_client; histograms ``_sum`` and ``_count``."""

    SPEC_DRAFTS = "vllm:spec_decode_num_drafts_total"
    SPEC_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
    SPEC_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
    SPEC_ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    PROMPT_TOKENS = "vllm:prompt_tokens_total"
    GENERATION_TOKENS = "vllm:generation_tokens_total"
    REQUEST_SUCCESS = "vllm:request_success_total"
    TTFT = "vllm:time_to_first_token_seconds"
    TPOT = "vllm:request_time_per_output_token_seconds"
    E2E_LATENCY = "vllm:e2e_request_latency_seconds"
    QUEUE_TIME = "vllm:request_queue_time_seconds"
    REQUESTS_RUNNING = "vllm:num_requests_running"
    REQUESTS_WAITING = "vllm:num_requests_waiting"
    KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"


# --- The KPI line ----------------------------------------------------------------------
# Every PEAGLE_KPI_INTERVAL_SECONDS the launcher prints one JSON object per line on stdout
# (kpi.py); the endpoint's log-group metric filters (cdk_constructs/kpi_metrics.py) match
# KPI_EVENT and turn keys into metrics in KPI_NAMESPACE; `peagle smoke` reads them back.
KPI_EVENT = "peagle_kpi"
KPI_NAMESPACE = "PEagle/Endpoints"

# Every key of the line, in the order written.
KPI_LINE_KEYS: tuple[str, ...] = (
    "event",
    "timestamp",
    "model_pair",
    "endpoint_name",
    "variant_name",
    "interval_seconds",
    "speculative_tokens",
    "requests_per_second",
    "generation_tokens_per_second",
    "prompt_tokens_per_second",
    "ttft_mean_seconds",
    "tpot_mean_seconds",
    "e2e_latency_mean_seconds",
    "queue_time_mean_seconds",
    "spec_acceptance_rate",
    "spec_mean_acceptance_length",
    "spec_acceptance_per_position",
    "spec_drafts_per_second",
    "requests_running",
    "requests_waiting",
    "kv_cache_usage_ratio",
    "requests_finished",
    "requests_finished_total_in_interval",
)

# Dimensions of every KPI metric -> the line key holding the value (from PEAGLE_ENDPOINT_NAME
# and PEAGLE_VARIANT_NAME).
ENDPOINT_NAME_DIMENSION = "EndpointName"
VARIANT_NAME_DIMENSION = "VariantName"
KPI_DIMENSION_KEYS: dict[str, str] = {ENDPOINT_NAME_DIMENSION: "endpoint_name", VARIANT_NAME_DIMENSION: "variant_name"}

# Line key (a.b: key b of object a) -> CloudWatch metric name; the unit is in the name where it has one.
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

# Line keys no metric filter publishes, and why. A new key goes either here or into
# KPI_METRIC_NAMES (tests/infra/test_container_contract.py checks that).
KPI_KEYS_WITHOUT_METRIC: dict[str, str] = {
    "event": "what the metric filters match on",
    "timestamp": "CloudWatch Logs stamps each line itself",
    "model_pair": "context for a reader of the log",
    "endpoint_name": "a dimension of every metric (KPI_DIMENSION_KEYS)",
    "variant_name": "a dimension of every metric (KPI_DIMENSION_KEYS)",
    "interval_seconds": "context for a reader of the log",
    "speculative_tokens": "context for a reader of the log",
    "spec_acceptance_per_position": "a list: a metric filter publishes only a number",
}

SPEC_ACCEPTANCE_RATE_METRIC = KPI_METRIC_NAMES["spec_acceptance_rate"]
SPEC_MEAN_ACCEPTANCE_LENGTH_METRIC = KPI_METRIC_NAMES["spec_mean_acceptance_length"]
# One datapoint per KPI line, whatever its contents: its absence means the container
# stopped reporting.
KPI_REPORTS_METRIC = "KpiReports"


def kpi_line(values: Mapping[str, object]) -> dict[str, object]:
    """The KPI line: ``event`` and then the value of every other key of KPI_LINE_KEYS, in that order.

    Raises ValueError when ``values`` lacks a key or has one the contract does not list.
    """
    expected = set(KPI_LINE_KEYS) - {"event"}
    missing, unknown = sorted(expected - set(values)), sorted(set(values) - expected)
    if missing or unknown:
        raise ValueError(f"KPI line keys differ from KPI_LINE_KEYS: missing {missing}, not in the contract {unknown}")
    return {key: KPI_EVENT if key == "event" else values[key] for key in KPI_LINE_KEYS}
