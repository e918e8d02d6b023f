"""The container contract, written once: what the CDK app and the CLI put into the
container (environment, model mount) and read back out of it (the KPI line, vLLM's
counters), and what the launcher reads.

The CDK side (``peagle.planning.container_env``, ``peagle_cdk``), the CLI (``peagle``) and
the launcher (this package) all import these names instead of spelling them, the way
vLLM keeps every ``VLLM_*`` variable in ``vllm/envs.py``. Standard library only: the
image copies just ``peagle_serve/``, and the CLI imports this without vLLM or
aws-cdk-lib. What each ``PEAGLE_*`` setting means, its type and default live in the
launcher's registry (``settings.py``); only the names are here, and the parts of the
start-up budget the planner sizes the container's start-up timeout with.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

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
ENV_SELF_CHECK_SAMPLED_MIN_RATIO = "PEAGLE_SELF_CHECK_SAMPLED_MIN_RATIO"
ENV_SELF_CHECK_SAMPLED_COLLAPSE = "PEAGLE_SELF_CHECK_SAMPLED_COLLAPSE"
ENV_VLLM_CPU_CORRECTIONS = "PEAGLE_VLLM_CPU_CORRECTIONS"
ENV_KPI_INTERVAL_SECONDS = "PEAGLE_KPI_INTERVAL_SECONDS"
ENV_REQUEST_LOG_SAMPLING_PERCENT = "PEAGLE_REQUEST_LOG_SAMPLING_PERCENT"
ENV_REQUEST_LOG_MAX_BODY_BYTES = "PEAGLE_REQUEST_LOG_MAX_BODY_BYTES"

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

# --- Start-up budget ----------------------------------------------------------------
# The start-up budget (PEAGLE_STARTUP_TIMEOUT_SECONDS) is SageMaker's, not ours:
# ProductionVariant.ContainerStartupHealthCheckTimeoutInSeconds, "The timeout value, in
# seconds, for your inference container to pass health check by SageMaker Hosting", 60-3600
# (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html;
# botocore data/sagemaker/2017-07-24/service-2.json, shape
# ProductionVariantContainerStartupHealthCheckTimeoutInSeconds: "min": 60, "max": 3600).
# /ping answers 200 only after the self-check, so engine start-up AND self-check must
# both fit in it; when they don't, SageMaker kills the container with a generic error.
# The launcher therefore ends the start-up this long before the budget runs out, so its
# own exit-3/exit-4 message is in the log first (it also absorbs the seconds between
# the container's start and the launcher's).
STARTUP_MARGIN_SECONDS = 30.0
# The self-check's default time (PEAGLE_SELF_CHECK_TIMEOUT_SECONDS), reserved out of the budget when it runs.
SELF_CHECK_TIMEOUT_SECONDS = 300.0

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
def speculative_config(drafter_path: str, k: int, schedule: Sequence[ScheduleBand] | None = None) -> dict | None:
    """vLLM's ``--speculative-config`` for a P-EAGLE drafter drafting ``k`` tokens, or None for k=0.

    ``parallel_drafting`` must be explicit: vLLM defaults it to False (vllm/config/speculative.py,
    ``SpeculativeConfig.parallel_drafting: bool = False``) and switches it on by itself only for
    the dflash and dspark methods, so a P-EAGLE drafter would otherwise run as plain EAGLE-3.
    Parallel drafting arrived in vLLM 0.16.0 (vllm-project/vllm PR #32887, "Unified Parallel Drafting").

    :param schedule: K by batch size, ``(min_batch, max_batch, K)`` bands (see SCHEDULE_KEY);
        ``k`` must then be the schedule's largest K, which vLLM needs next to it: an EAGLE
        drafter without ``num_speculative_tokens`` is refused ("A speculative model was provided,
        but `num_speculative_tokens` was not provided", vllm/config/speculative.py), and "Every
        `optimal_K` must be less than or equal to `num_speculative_tokens`, which defines the
        maximum draft window" (docs/features/speculative_decoding/dynamic_speculative_decoding.md);
        a larger band K is silently cut to it (vllm/v1/spec_decode/dynamic/utils.py,
        ``build_dynamic_sd_schedule_lookup``: ``min(vllm_num_speculative_tokens, num_speculative_tokens)``).
    """
    if k < 0:
        raise ValueError(f"k={k}: the number of speculative tokens is >= 0 (0 turns speculation off)")
    if schedule:
        largest = max(band[2] for band in schedule)
        if largest == 0:
            raise ValueError("a schedule needs a band with K > 0; without a schedule, k=0 turns speculation off")
        if k != largest:
            raise ValueError(f"k={k}: with a schedule, k is the schedule's largest K ({largest})")
    if k == 0:
        return None
    config: dict = {"method": "eagle3", "model": drafter_path, "num_speculative_tokens": k, "parallel_drafting": True}
    if schedule:
        config[SCHEDULE_KEY] = [list(band) for band in schedule]
    return config


# --- Dynamic speculation: K by batch size ----------------------------------------------
# vLLM 0.32 takes "num_speculative_tokens_per_batch_size" in the speculative config: "an entry
# is `[start_bs, end_bs, optimal_K]` which means when the concurrency is within range
# `[start_bs, end_bs]` then `optimal_K` number of draft tokens are used" (vLLM docs,
# features/speculative_decoding/dynamic_speculative_decoding.md; vllm-project/vllm PR 32374).
# The batch size is the number of requests the scheduler runs in one step
# (vllm/v1/core/sched/scheduler.py: ``self.dynamic_sd_lookup[len(num_scheduled_tokens)]``),
# at most --max-num-seqs. vLLM checks a schedule only when the engine starts
# (vllm/v1/spec_decode/dynamic/utils.py, validate_and_normalize_dynamic_sd_schedule):
#   "Batch-size range ({range_start}, {range_end}) must be positive."
#   "Batch-size range start must be <= end"
#   "num_speculative_tokens_per_batch_size values must be >= 0."
#   "Batch-size ranges must be non-overlapping and sorted." (after sorting by start)
#   "The first batch-size range must start at 1 so every runtime batch size has a defined schedule."
# It does not refuse gaps or a short last band; build_dynamic_sd_schedule_lookup fills them:
#   "Fill any gap before the next configured range by carrying forward the previous K."
#   "Fill the tail after the final configured range by carrying forward the last K through
#   vllm_max_batch_size."
# and ignores bands past max_num_seqs. A reader of the schedule would not expect either, so
# schedule_problems refuses gaps and schedule_coverage_problems a schedule that does not end
# at or past max_num_seqs, or has a band that starts past it. Two rules are this project's own:
# at least one band drafts (else speculation is off but the drafter still costs: at K=0 vLLM
# still runs its forward pass, "The prefill forward pass above already ran to keep the drafter
# KV cache in sync", vllm/v1/spec_decode/llm_base_proposer.py, propose), and, when the start-up
# self-check runs, batch size 1 drafts: the warm-up request is sent alone (self_check.py), so
# with K=0 there it would see no drafts and fail the start. A cost to know: with a schedule,
# vLLM's V1 model runner (the one parallel drafting uses) gives up full CUDA graphs, "Overriding
# cudagraph_mode from %s to PIECEWISE for reliability" (vllm/config/vllm.py,
# _maybe_override_dynamic_sd_cudagraph_mode).
SCHEDULE_KEY = "num_speculative_tokens_per_batch_size"
ScheduleBand = tuple[int, int, int]  # (min_batch, max_batch, K), both ends inclusive


def describe_band(band: ScheduleBand) -> str:
    """``(3, 16, 0)`` -> ``"3-16: K=0"``."""
    low, high, k = band
    return f"{low}-{high}: K={k}"


def _batch_sizes(low: int, high: int) -> str:
    return f"batch size {low}" if low == high else f"batch sizes {low}-{high}"


def describe_schedule(schedule: Sequence[ScheduleBand]) -> str:
    """``[(1, 2, 4), (3, 16, 0)]`` -> ``"1-2: K=4, 3-16: K=0"``."""
    return ", ".join(describe_band(band) for band in schedule)


def schedule_problems(
    schedule: object, *, trained_k: int | None = None, drafts_at_batch_size_1: bool = True
) -> list[str]:
    """Why ``schedule`` (parsed JSON or ``(min_batch, max_batch, K)`` tuples) is not a schedule
    to run, each problem with what to do; empty when it is. Bands are numbered from 1, in the
    order given.

    :param trained_k: the drafter's trained K; a larger band K is refused. None: not checked.
    :param drafts_at_batch_size_1: refuse K=0 at batch size 1 (the self-check's warm-up).
    """
    if not isinstance(schedule, list | tuple) or not schedule:
        return [f"must be a non-empty list of [min_batch, max_batch, K] bands; got {schedule!r}"]
    bands: list[tuple[int, ScheduleBand]] = []
    problems: list[str] = []
    for number, entry in enumerate(schedule, start=1):
        if (
            not isinstance(entry, list | tuple)
            or len(entry) != 3
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in entry)
        ):
            problems.append(f"band {number} {entry!r} is not [min_batch, max_batch, K] (three integers)")
        else:
            bands.append((number, (entry[0], entry[1], entry[2])))
    if problems:
        return problems
    for number, band in bands:
        low, high, k = band
        where = f"band {number} ({describe_band(band)})"
        if low < 1:
            problems.append(f"{where}: batch sizes start at 1; make min_batch >= 1")
        if low > high:
            problems.append(f"{where}: min_batch {low} is above max_batch {high}; swap them")
        if k < 0:
            problems.append(f"{where}: K is negative; use K=0 for no drafts at these batch sizes")
        if trained_k is not None and k > trained_k:
            problems.append(
                f"{where}: K={k} is above the {trained_k} tokens the drafter was trained for; drafts past that "
                f"position are rarely accepted and only cost compute. Use K <= {trained_k}"
            )
    ordered = sorted(bands, key=lambda item: item[1][0])
    first_number, first = ordered[0]
    if first[0] != 1:
        problems.append(
            f"the first band ({describe_band(first)}) starts at batch size {first[0]}; start it at 1, so every "
            "batch size has a K (vLLM refuses the schedule otherwise)"
        )
    for (a_number, a), (b_number, b) in zip(ordered, ordered[1:], strict=False):
        if b[0] <= a[1]:
            problems.append(
                f"bands {a_number} ({describe_band(a)}) and {b_number} ({describe_band(b)}) overlap at "
                f"{_batch_sizes(b[0], min(a[1], b[1]))}; start band {b_number} at {a[1] + 1}"
            )
        elif b[0] > a[1] + 1:
            problems.append(
                f"no band covers {_batch_sizes(a[1] + 1, b[0] - 1)}, between band {a_number} ({describe_band(a)}) "
                f"and band {b_number} ({describe_band(b)}); vLLM would silently use K={a[2]} there. Start band "
                f"{b_number} at {a[1] + 1} or add a band for them"
            )
    if all(band[2] <= 0 for _, band in bands):
        problems.append(
            "every band has K=0: nothing is drafted at any batch size, yet the drafter is loaded and run; "
            "turn speculation off instead (speculative_tokens: 0 in a deployment file; no speculative config "
            "in the container)"
        )
    elif drafts_at_batch_size_1 and first[0] == 1 and first[2] == 0:
        problems.append(
            f"band {first_number} ({describe_band(first)}) drafts nothing at batch size 1, but the start-up "
            "self-check sends its warm-up request alone (batch size 1) and would see no drafts and fail the "
            "start; give batch size 1 a K > 0 (speculation pays most at small batches)"
        )
    return problems


def schedule_coverage_problems(schedule: Sequence[ScheduleBand], max_num_seqs: int) -> list[str]:
    """Why a valid schedule (no schedule_problems) does not match a server running up to
    ``max_num_seqs`` requests at once; empty when its bands cover exactly 1..max_num_seqs
    (the last one may end past it)."""
    problems = []
    numbered = list(enumerate(schedule, start=1))
    for number, band in numbered:
        if band[0] > max_num_seqs:
            problems.append(
                f"band {number} ({describe_band(band)}) starts above max_num_seqs={max_num_seqs}, so it never "
                "applies; remove it"
            )
    number, last = max(((n, b) for n, b in numbered if b[0] <= max_num_seqs), key=lambda item: item[1][1])
    if last[1] < max_num_seqs:
        problems.append(
            f"the bands end at batch size {last[1]}, but the server runs up to max_num_seqs={max_num_seqs} requests "
            f"at once (vLLM would silently use K={last[2]} for {last[1] + 1}-{max_num_seqs}); end band {number} "
            f"({describe_band(last)}) at {max_num_seqs}"
        )
    return problems


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


# --- Acceptance in every response ---------------------------------------------------------
# With speculation on, the launcher starts vLLM with --per-request-spec-decode-metrics summary
# (launch_plan.py): "Include per-request speculative-decoding acceptance metrics in the response
# under `metrics.speculative_decoding`. [...] `summary` adds mean acceptance length, draft
# acceptance rate, and the step-by-draft-length histogram [...] Only reported for single-sequence
# requests (`n == 1`) [...] No effect unless speculative decoding is enabled."
# (vllm/config/observability.py, ObservabilityConfig.per_request_spec_decode_metrics, vLLM 0.32;
# vllm-project/vllm PR 48915). Without speculation vLLM refuses the option: "--per-request-spec-
# decode-metrics requires speculative decoding to be enabled (via --speculative-config)."
# (vllm/config/vllm.py). SageMaker does not pass /metrics through InvokeEndpoint, so this is how
# a client of an endpoint sees acceptance.
PER_REQUEST_SPEC_DECODE_METRICS_OPTION = "--per-request-spec-decode-metrics"
PER_REQUEST_SPEC_DECODE_METRICS_LEVEL = "summary"
# Where the answer carries it: the response object's (non-streamed), or the final usage chunk's
# (streamed; that chunk is sent only with stream_options.include_usage) ``metrics`` object, key
# ``speculative_decoding`` (vllm/entrypoints/openai/completion/serving.py and
# chat_completion/serving.py: "In streaming, metrics ride on this final usage chunk").
RESPONSE_METRICS_KEY = "metrics"
RESPONSE_SPEC_DECODE_KEY = "speculative_decoding"


# --- The KPI line ----------------------------------------------------------------------
# Every PEAGLE_KPI_INTERVAL_SECONDS the launcher prints one JSON object per line on stdout
# (kpi.py); the endpoint's log-group metric filters (peagle_cdk/kpi_metrics.py) match
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


# --- The request log line ----------------------------------------------------------------
# Opt-in (PEAGLE_REQUEST_LOG_SAMPLING_PERCENT > 0): a sampled share of the generation requests the
# container served, written to stdout by request_log.py, which SageMaker sends to the endpoint's
# CloudWatch Logs group like the KPI line; `peagle prompts --from-logs` reads the lines back
# (peagle/prompts_capture/request_log.py). The way to collect prompts where SageMaker Data Capture is
# not available (docs/production-loop.md). Only what a prompts file keeps is written: prompt or
# messages and the sampling and length parameters below; of every other body key only its name;
# never a header.
REQUEST_LOG_EVENT = "peagle_request"
# The routes whose bodies are generation requests: vLLM 0.32's /invocations (vllm/entrypoints/serve/
# sagemaker/api_router.py, which routes a body to the completion or chat handler by its shape),
# /v1/completions (vllm/entrypoints/openai/completion/api_router.py) and /v1/chat/completions
# (vllm/entrypoints/openai/chat_completion/api_router.py).
REQUEST_LOG_PATHS = ("/invocations", "/v1/completions", "/v1/chat/completions")
REQUEST_PROMPT_FIELDS = ("prompt", "messages")
# The sampling and length parameters a prompts file keeps with a prompt: fields of vLLM 0.32's
# CompletionRequest and ChatCompletionRequest (vllm/entrypoints/openai/completion/protocol.py,
# vllm/entrypoints/openai/chat_completion/protocol.py). Everything else (model, stream, stream_options,
# user, tools, ...) is transport or identity, not workload.
REQUEST_SAMPLING_FIELDS = (
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "min_tokens",
    "ignore_eos",
    "n",
)
# OpenAI's chat name for max_tokens; vLLM's ChatCompletionRequest takes both.
REQUEST_MAX_TOKENS_ALIASES = ("max_completion_tokens",)
REQUEST_LOG_KEPT_FIELDS = REQUEST_PROMPT_FIELDS + REQUEST_SAMPLING_FIELDS + REQUEST_MAX_TOKENS_ALIASES

# One request is one or more lines: its kept body as compact ASCII JSON text, cut into pieces of at
# most REQUEST_LOG_CHUNK_CHARS characters, each a line with the same ``id`` and ``part`` 1..``parts``.
# Why pieces: a line must arrive as one log event, and SageMaker does not document how it forwards a
# long stdout line. Docker's log drivers take a container's output in 16 KiB pieces, and with some
# settings CloudWatch Logs receives a longer line as several events ("awslogs" driver with
# "non-blocking" mode cause log events to split larger then 16k size", moby/moby#41794). So every
# line stays below REQUEST_LOG_LINE_BYTES: a piece's characters are printable ASCII, at most doubled
# by the line's own JSON escaping, plus the other keys (not_kept: at most 32 names of at most 64
# characters, on the first line only).
REQUEST_LOG_LINE_BYTES = 16 * 1024
REQUEST_LOG_CHUNK_CHARS = 6000
REQUEST_LOG_MAX_NOT_KEPT_NAMES = 32
REQUEST_LOG_MAX_NAME_CHARS = 64
# A request whose kept body is longer than PEAGLE_REQUEST_LOG_MAX_BODY_BYTES is logged as one line
# with ``body`` null, ``skipped`` REQUEST_LOG_TOO_LARGE and its size, so a reader counts it.
REQUEST_LOG_TOO_LARGE = "too_large"

# Every key of a line, in the order written (``not_kept`` on part 1 only; ``size_bytes`` and
# ``skipped`` on a too-large request's one line only).
REQUEST_LOG_LINE_KEYS: tuple[str, ...] = (
    "event",
    "id",
    "part",
    "parts",
    "time",
    "endpoint_name",
    "variant_name",
    "path",
    "body",
    "not_kept",
    "skipped",
    "size_bytes",
)
