"""The container's environment, built from a plan.

The names and encodings are the container contract's (``peagle_serve.contract``, which
the launcher reads with): ``SM_VLLM_<FLAG>`` variables carry vLLM flags, ``PEAGLE_*``
variables the launcher's own settings (inference_image/README.md lists them). Target
and drafter come from one S3 prefix mounted at /opt/ml/model, as target/ and drafter/
side by side.
"""

from __future__ import annotations

import json

from peagle.catalog.schema import Sampling
from peagle.planning import prefix_caching
from peagle.planning.planner import Plan
from peagle_serve import contract
from peagle_serve.contract import DRAFTER_DIR, SHUTDOWN_DRAIN_SECONDS, TARGET_DIR

# The production variant's name; keep it stable (autoscaling and rollouts key on it).
DEFAULT_VARIANT_NAME = "Primary"
# The A/B test's second variant: same target, another K (0 = no speculation).
BASELINE_VARIANT_NAME = "Baseline"


def model_locations(plan: Plan) -> tuple[str, str]:
    """(target, drafter) as vLLM gets them: mounted S3 directories, or hub ids downloaded at start-up."""
    if plan.weights_from_hub:
        return plan.pair.target.hf_id, plan.pair.drafter.hf_id
    return TARGET_DIR, DRAFTER_DIR


def override_generation_config(sampling: Sampling) -> str:
    """The profile's sampling as the server's default for requests that omit it (vLLM
    ``--override-generation-config``); the self-check's sampled warm-up reads it back.
    Not max_tokens: vLLM 0.32 turns an override's max_new_tokens into a cap on every
    request (min of it and the request's), so clients apply the profile's max_tokens."""
    return json.dumps({"temperature": sampling.temperature, "top_p": sampling.top_p}, separators=(",", ":"))


def vllm_flags(plan: Plan) -> dict[str, bool | int | float | str]:
    """Every vLLM flag the plan sets, by flag name; deployment vllm_args win."""
    sampling = plan.profile.sampling
    target, drafter = model_locations(plan)
    flags: dict[str, bool | int | float | str] = {
        "model": target,
        "served-model-name": plan.pair_id,
        "tensor-parallel-size": plan.tensor_parallel_size,
        "max-model-len": plan.max_model_len,
        "max-num-seqs": plan.max_num_seqs,
        "max-num-batched-tokens": plan.max_num_batched_tokens,
        "gpu-memory-utilization": plan.gpu_memory_utilization,
        "override-generation-config": override_generation_config(sampling),
    }
    if plan.kv_cache_dtype != "auto":
        flags["kv-cache-dtype"] = plan.kv_cache_dtype
    spec = contract.speculative_config(drafter, plan.speculative_tokens, plan.speculative_schedule)
    if spec is not None:
        flags["speculative-config"] = json.dumps(spec, separators=(",", ":"))
    flags.update(plan.pair.vllm_flags)
    flags.update(plan.vllm_args)
    # The plan's decision, written out whatever vLLM's default (peagle/planning/prefix_caching.py): the container says it.
    flags[prefix_caching.FLAG] = plan.prefix_caching
    return flags


def container_environment(
    plan: Plan, *, variant_name: str, endpoint_name: str, request_log_sampling_percentage: int = 0
) -> dict[str, str]:
    """All of the container's environment, from the plan (and the capture settings' request log). The endpoint
    and variant names go into every KPI line, where CloudWatch metric filters read them as dimensions.

    :param endpoint_name: the endpoint this Model serves (the real-time endpoint's; the asynchronous endpoint
        passes its own, so its KPI lines carry its name).
    :param request_log_sampling_percentage: the share of requests the container's request log writes
        (``capture.method: request_log``, peagle_serve/request_log.py); 0: off, and the variable is not set at all,
        so a deployment without it has the environment, and the template, it had before.
    """
    env = contract.encode_vllm_flags(vllm_flags(plan))
    env.update(plan.gpu_environment)  # the target's GPU-specific variables, only where the plan's GPU qualifies
    env.update(
        {
            contract.ENV_MODEL_PAIR: plan.pair_id,
            contract.ENV_ENDPOINT_NAME: endpoint_name,
            contract.ENV_VARIANT_NAME: variant_name,
            contract.ENV_DRAFTER_TRAINED_K: str(plan.pair.drafter.trained_k),
            contract.ENV_KPI_INTERVAL_SECONDS: str(plan.observability.kpi_interval_seconds),
            contract.ENV_SHUTDOWN_DRAIN_SECONDS: str(SHUTDOWN_DRAIN_SECONDS),
            # The whole start-up budget: the variant's ContainerStartupHealthCheckTimeoutInSeconds,
            # "The timeout value, in seconds, for your inference container to pass health check by
            # SageMaker Hosting" (API_ProductionVariant). The launcher splits it between engine
            # start and self-check, keeping a margin, so its own error comes before SageMaker's kill.
            contract.ENV_STARTUP_TIMEOUT_SECONDS: str(plan.container_startup_timeout_seconds),
            contract.ENV_SPECULATION_SELF_CHECK: "true" if plan.speculation_enabled else "false",
        }
    )
    if plan.hf_token_secret_arn:
        env[contract.ENV_HF_TOKEN_SECRET_ARN] = plan.hf_token_secret_arn  # the ARN, never the token
    if request_log_sampling_percentage > 0:
        env[contract.ENV_REQUEST_LOG_SAMPLING_PERCENT] = str(request_log_sampling_percentage)
    return dict(sorted(env.items()))
