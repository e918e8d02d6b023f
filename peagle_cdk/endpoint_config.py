"""PeagleEndpoint's props as the deployment file they amount to (keys as in deployments/*.yaml):
the construct validates and plans them as peagle.config.DeploymentConfig, so a construct and a file
share every rule and message (peagle_cdk/prop_errors.py words a message in props for the construct).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration

from peagle_cdk.endpoint_props import Autoscaling, EndpointMode, seconds


def deployment_data(*, mode: EndpointMode, autoscaling: Autoscaling | None, **props: Any) -> dict[str, Any]:
    """The deployment file PeagleEndpoint's props amount to (keys as in deployments/*.yaml)."""
    data: dict[str, Any] = {
        "name": props["name"],
        "model": props["model"],
        "instance": {"type": props["instance_type"], "count": props["instance_count"]},
        "endpoint": {"mode": mode.mode},
        "profile": props["profile"],
        "speculation": props["speculation"].settings(),
        "artifacts": props["weights"].settings(),
        "network": {"isolation": props["network_isolation"]},
        "timeouts": {
            "container_startup_seconds": seconds(props["container_startup_timeout"]),
            "model_download_seconds": seconds(props["model_download_timeout"]),
        },
        "observability": {
            "log_retention_days": props["log_retention_days"],
            "kpi_interval_seconds": seconds(props["kpi_interval"]),
            "metric_publish_frequency_seconds": seconds(props["metric_publish_frequency"]),
            "detailed_observability": props["detailed_observability"],
        },
        "alarms": {"latency_sla_p90_seconds": _seconds_float(props["latency_sla"])},
        "vllm_args": dict(props["vllm_args"] or {}),
    }
    if props["custom_pair"] is not None:
        data["custom_pairs"] = {props["model"]: props["custom_pair"].model_dump()}
    if props["instance_facts"] is not None:
        data["custom_instances"] = {props["instance_type"]: props["instance_facts"].model_dump()}
    if props["inference_ami_version"]:
        data["instance"]["ami_version"] = props["inference_ami_version"]
    if props["price_per_hour_usd"] is not None:
        data["instance"]["price_per_hour_usd"] = props["price_per_hour_usd"]
    if props["profile_overrides"] is not None:
        data["profile_overrides"] = props["profile_overrides"].model_dump(exclude_none=True)
    if props["slo"] is not None:
        data["slo"] = props["slo"].model_dump(exclude_none=True)
    unit: dict[str, Any] = {}
    if autoscaling is None:
        data["autoscaling"] = {"enabled": False}
        # Fixed capacity: the copies the deploy starts stay (no copy count of 0 without a policy to wake it).
        unit = {"min_copies": mode.components.get("initial_copies", 1)}
    else:
        data["autoscaling"], unit = autoscaling.settings(mode.mode)
    if mode.mode == "inference_components":
        data["endpoint"]["inference_components"] = {**mode.components, **unit}
    if props["rollout"] is not None:
        data["rollout"] = props["rollout"].settings()
    if props["ab_baseline"] is not None:
        data["ab_test"] = props["ab_baseline"].settings()
    return data


def _seconds_float(duration: Duration | None) -> float | None:
    """Seconds, fractions kept (Duration.to_seconds() refuses 4.5 s: its ``integral`` option defaults to true)."""
    return None if duration is None else duration.to_milliseconds() / 1000
