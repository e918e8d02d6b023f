"""The container's environment, built from a plan: the contract with inference_image/.

- ``SM_VLLM_<FLAG>``: vLLM flags in the form of vLLM's own SageMaker entrypoint
  (name upper-cased, '-' -> '_'); the launcher maps them back. "true" means a bare
  flag, "false" means ``--no-<flag>``.
- ``PEAGLE_*``: the launcher's own settings (inference_image/README.md lists them).

Target and drafter come from one S3 prefix mounted at /opt/ml/model (CloudFormation's
Model has no AdditionalModelDataSources), as target/ and drafter/ side by side.
"""

from __future__ import annotations

import json

from peagle.config import DeploymentConfig
from peagle.planner import Plan

MODEL_MOUNT = "/opt/ml/model"
TARGET_DIR = f"{MODEL_MOUNT}/target"
DRAFTER_DIR = f"{MODEL_MOUNT}/drafter"
# The production variant's name; keep it stable (autoscaling and rollouts key on it).
DEFAULT_VARIANT_NAME = "Primary"
# The A/B test's second variant: same target, another K (0 = no speculation).
BASELINE_VARIANT_NAME = "Baseline"
# SageMaker sends SIGKILL 30 s after SIGTERM: drain in-flight requests for less.
SHUTDOWN_DRAIN_SECONDS = 25


def sm_vllm_name(flag: str) -> str:
    return "SM_VLLM_" + flag.upper().replace("-", "_")


def _render(value: bool | int | float | str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def model_locations(plan: Plan, config: DeploymentConfig) -> tuple[str, str]:
    """(target, drafter) as vLLM gets them: mounted S3 directories, or hub ids downloaded at start-up."""
    if config.artifacts.source == "hub":
        return plan.pair.target.hf_id, plan.pair.drafter.hf_id
    return TARGET_DIR, DRAFTER_DIR


def speculative_config(plan: Plan, drafter_path: str = DRAFTER_DIR) -> dict | None:
    """vLLM's --speculative-config for P-EAGLE, or None when K=0.

    parallel_drafting must be explicit: vLLM does not turn it on for eagle3 heads.
    """
    if not plan.speculation_enabled:
        return None
    return {
        "method": "eagle3",
        "model": drafter_path,
        "num_speculative_tokens": plan.speculative_tokens,
        "parallel_drafting": True,
    }


def vllm_flags(plan: Plan, config: DeploymentConfig) -> dict[str, bool | int | float | str]:
    """Every vLLM flag the plan sets, by flag name; deployment vllm_args win."""
    sampling = plan.profile.sampling
    target, drafter = model_locations(plan, config)
    flags: dict[str, bool | int | float | str] = {
        "model": target,
        "served-model-name": plan.pair_id,
        "tensor-parallel-size": plan.tensor_parallel_size,
        "max-model-len": plan.max_model_len,
        "max-num-seqs": plan.max_num_seqs,
        "gpu-memory-utilization": plan.gpu_memory_utilization,
        # The profile's sampling becomes the server's default for requests that omit it.
        # Not max_tokens: vLLM 0.32 turns an override's max_new_tokens into a cap on every
        # request (min of it and the request's), so clients apply the profile's max_tokens.
        "override-generation-config": json.dumps(
            {"temperature": sampling.temperature, "top_p": sampling.top_p}, separators=(",", ":")
        ),
    }
    if plan.kv_cache_dtype != "auto":
        flags["kv-cache-dtype"] = plan.kv_cache_dtype
    spec = speculative_config(plan, drafter)
    if spec is not None:
        flags["speculative-config"] = json.dumps(spec, separators=(",", ":"))
    flags.update(plan.pair.vllm_flags)
    flags.update(config.vllm_args)
    return flags


def container_environment(
    plan: Plan, config: DeploymentConfig, *, variant_name: str, endpoint_name: str | None = None
) -> dict[str, str]:
    """All of the container's environment. The endpoint and variant names go into every
    KPI line, where CloudWatch metric filters read them as dimensions.

    :param endpoint_name: the endpoint this Model serves (default: the real-time endpoint;
        the asynchronous endpoint passes its own, so its KPI lines carry its name).
    """
    env = {sm_vllm_name(flag): _render(value) for flag, value in vllm_flags(plan, config).items()}
    env.update(
        {
            "PEAGLE_MODEL_PAIR": plan.pair_id,
            "PEAGLE_ENDPOINT_NAME": endpoint_name or config.endpoint_name,
            "PEAGLE_VARIANT_NAME": variant_name,
            "PEAGLE_DRAFTER_TRAINED_K": str(plan.pair.drafter.trained_k),
            "PEAGLE_KPI_INTERVAL_SECONDS": str(config.observability.kpi_interval_seconds),
            "PEAGLE_SHUTDOWN_DRAIN_SECONDS": str(SHUTDOWN_DRAIN_SECONDS),
            # The whole start-up budget: the variant's ContainerStartupHealthCheckTimeoutInSeconds,
            # "The timeout value, in seconds, for your inference container to pass health check by
            # SageMaker Hosting" (API_ProductionVariant). The launcher splits it between engine
            # start and self-check, keeping a margin, so its own error comes before SageMaker's kill.
            "PEAGLE_STARTUP_TIMEOUT_SECONDS": str(plan.container_startup_timeout_seconds),
            "PEAGLE_SPECULATION_SELF_CHECK": "true" if plan.speculation_enabled else "false",
        }
    )
    if config.artifacts.hf_token_secret_arn:
        env["PEAGLE_HF_TOKEN_SECRET_ARN"] = config.artifacts.hf_token_secret_arn  # the ARN, never the token
    return dict(sorted(env.items()))
