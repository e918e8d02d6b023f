"""Messages in the caller's words: a PeagleEndpoint (or EndpointMonitoring) user reads the props they
passed, not the deployment-file fields the planner and SageMaker's rules name.

PeagleEndpoint validates and plans its props as the deployment file they amount to (endpoint_config.py),
so every rule has one message, written in the file's words. ``in_props`` rewrites a message for the
construct: each file field becomes the prop (or value type) that sets it, and advice meant for the file
or the CDK app's context keys goes. FIELD_PROPS must name every field endpoint_config.py writes
(tests/constructs/test_prop_errors.py checks it against the schema).
"""

from __future__ import annotations

import re

# Deployment-file field -> how a construct user sets it. Longest paths are replaced first.
FIELD_PROPS: dict[str, str] = {
    "name": "name",
    "model": "model",
    "custom_pairs": "custom_pair",
    "custom_instances": "instance_facts",
    "instance.type": "instance_type",
    "instance.count": "instance_count",
    "instance.ami_version": "inference_ami_version",
    "instance.price_per_hour_usd": "price_per_hour_usd",
    "profile": "profile",
    "profile_overrides": "profile_overrides",
    "slo": "slo",
    "speculation.speculative_tokens": "Speculation.fixed(k)",
    "speculation.schedule": "Speculation.by_batch_size(bands)",
    "speculation": "speculation",
    "artifacts.source": "weights",
    "artifacts.hf_token_secret_arn": "ModelWeights.from_hub(token_secret_arn=...)",
    "artifacts": "weights",
    "network.isolation": "network_isolation",
    "timeouts.container_startup_seconds": "container_startup_timeout",
    "timeouts.model_download_seconds": "model_download_timeout",
    "observability.log_retention_days": "log_retention_days",
    "observability.kpi_interval_seconds": "kpi_interval",
    "observability.metric_publish_frequency_seconds": "metric_publish_frequency",
    "observability.detailed_observability": "detailed_observability",
    "alarms.latency_sla_p90_seconds": "latency_sla",
    "vllm_args": "vllm_args",
    "endpoint.mode": "mode",
    "endpoint.inference_components.min_instances": "EndpointMode.inference_components(min_instances=...)",
    "endpoint.inference_components.max_instances": "EndpointMode.inference_components(max_instances=...)",
    "endpoint.inference_components.initial_copies": "EndpointMode.inference_components(initial_copies=...)",
    "endpoint.inference_components.accelerators_per_copy": (
        "EndpointMode.inference_components(accelerators_per_copy=...)"
    ),
    "endpoint.inference_components.scale_to_zero_after_idle_minutes": (
        "EndpointMode.inference_components(scale_to_zero_after=...)"
    ),
    "endpoint.inference_components.min_copies": "Autoscaling(min_capacity=...)",
    "endpoint.inference_components.max_copies": "Autoscaling(max_capacity=...)",
    "endpoint.inference_components.target_concurrency_per_copy": "Autoscaling(target_concurrency=...)",
    "endpoint.inference_components": "mode=EndpointMode.inference_components(...)",
    "autoscaling.min_instances": "Autoscaling(min_capacity=...)",
    "autoscaling.max_instances": "Autoscaling(max_capacity=...)",
    "autoscaling.target_concurrency_per_instance": "Autoscaling(target_concurrency=...)",
    "autoscaling.max_rps_per_instance": "Autoscaling(max_requests_per_second=...)",
    "autoscaling.target": "Autoscaling(max_requests_per_second=...)",
    "autoscaling.headroom": "Autoscaling(headroom=...)",
    "autoscaling.measured_capacity": "Autoscaling(measured_capacity=...)",
    "autoscaling.gpu_utilization_target_percent": "Autoscaling(gpu_utilization_percent=...)",
    "autoscaling.latency_step_scaling": "Autoscaling(latency_step_scaling=...)",
    "autoscaling.scale_in_cooldown_seconds": "Autoscaling(scale_in_cooldown=...)",
    "autoscaling.scale_out_cooldown_seconds": "Autoscaling(scale_out_cooldown=...)",
    "autoscaling.schedules": "Autoscaling(schedules=...)",
    "autoscaling.enabled": "autoscaling",
    "autoscaling": "autoscaling",
    "rollout.strategy": "rollout",
    "rollout.blue_green": "Rollout.blue_green(...)",
    "rollout.rolling": "Rollout.rolling(...)",
    "rollout.auto_rollback": "Rollout...(auto_rollback=...)",
    "rollout": "rollout",
    "ab_test.baseline_speculative_tokens": "AbBaseline(speculative_tokens=...)",
    "ab_test.baseline_traffic_percent": "AbBaseline(traffic_percent=...)",
    "ab_test.baseline_instance_count": "AbBaseline(instance_count=...)",
    "ab_test": "ab_baseline",
}

# Advice that only a deployment-file or CDK-context user can follow, and what a construct user does instead.
PHRASES: tuple[tuple[str, str], ...] = (
    (r"\(or set autoscaling\.enabled: false\)", "(or pass autoscaling=None)"),
    (r"autoscaling\.enabled: false", "autoscaling=None"),
    (r"endpoint\.mode: inference_components", "mode=EndpointMode.inference_components(...)"),
    (r"endpoint\.inference_components\.min_copies: 0", "Autoscaling(min_capacity=0)"),
    (r"under custom_instances", "with instance_facts"),
    # observability.metric_publish_frequency_seconds in seconds; the prop metric_publish_frequency is a Duration.
    (
        r"set 10, 30 or 60 \(the default\)",
        "pass Duration.seconds(10), Duration.seconds(30) or Duration.minutes(1) (the default)",
    ),
    (r"(?<![\w.])custom_instances(?!\w)", "instance_facts"),
    (r"(?<![\w.])custom_pairs(?!\w)", "custom_pair"),
    (r"(?<![\w.])profile_overrides\.(\w+)", r"ProfileOverrides(\1=...)"),
    (r"(?<![\w.])slo\.(\w+)", r"SloSettings(\1=...)"),
    (r"\s+or pass -c \w+=\S+", ""),
    (r",?\s+or -c \w+=\S+", ""),
    (r"\s+in the deployment file", ""),
    (r"\s*\(see docs/deployment-file\.md[^)]*\)", ""),
)

_DOTTED = sorted((path for path in FIELD_PROPS if "." in path), key=len, reverse=True)
# A dotted field anywhere (with a list index and sub-fields it names: autoscaling.schedules[0].min_instances).
_FIELD = re.compile(r"(?<![\w.=(])(" + "|".join(map(re.escape, _DOTTED)) + r")(?![\w(])(?:\[[^\]]*\])?(?:\.[a-z_]+)*")
# A top-level field only where a validation error names it ("  - model: ..."): as a word it is prose.
_TOP_LEVEL = re.compile(r"^(\s*- )([a-z_]+)((?:\[[^\]]*\])?(?:\.[a-z_]+)*):", re.MULTILINE)


def _top_level(match: re.Match) -> str:
    prop = FIELD_PROPS.get(match.group(2))
    return f"{match.group(1)}{prop}:" if prop else match.group(0)


def in_props(message: str, *, owner: str) -> str:
    """``message`` (the planner's, the config's or a SageMaker rule's) in the words of the construct's props.
    ``owner`` (e.g. "PeagleEndpoint Stack/Chat") names where it came from."""
    for pattern, replacement in PHRASES:
        message = re.sub(pattern, replacement, message)
    message = _FIELD.sub(lambda match: FIELD_PROPS[match.group(1)], message)
    message = _TOP_LEVEL.sub(_top_level, message)
    return message.replace("invalid deployment config", "invalid props")
