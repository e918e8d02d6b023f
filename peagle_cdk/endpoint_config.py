"""PeagleEndpoint's props as the one settings model, peagle.settings.DeploymentConfig, built from the sections
the value types build themselves (no file-shaped dict, no re-parse): the construct and a deployment file
share every rule, and a rule's message names the prop that sets what it is about (peagle/settings/words.py).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration

from peagle_cdk.endpoint_props import Autoscaling, EndpointMode, Routing
from peagle_cdk.settings_model import (
    AlarmSettings,
    AutoscalingSettings,
    DeploymentConfig,
    InstanceSettings,
    NetworkSettings,
    ObservabilitySettings,
    TimeoutSettings,
    build,
    whole,
)


def endpoint_settings(
    *, owner: str, mode: EndpointMode, autoscaling: Autoscaling | None, routing: Routing | None, **props: Any
) -> DeploymentConfig:
    """The settings model PeagleEndpoint's props amount to; ConfigError in props words if they break a rule."""
    instance = {"type": props["instance_type"], "count": props["instance_count"]}
    if props["inference_ami_version"]:
        instance["ami_version"] = props["inference_ami_version"]
    if props["price_per_hour_usd"] is not None:
        instance["price_per_hour_usd"] = props["price_per_hour_usd"]
    if props["fallback_instance_types"] is not None:
        instance["fallback_types"] = list(props["fallback_instance_types"])
    provision = whole(owner, "instance_provision_timeout", props["instance_provision_timeout"], "seconds")
    if provision is not None:
        instance["provision_timeout_seconds"] = provision
    if props["ml_reservation_arn"] is not None:
        instance["ml_reservation_arn"] = props["ml_reservation_arn"]
    sections: dict[str, Any] = {
        "name": props["name"],
        "model": props["model"],
        "instance": build(InstanceSettings, owner=owner, path="instance", **instance),
        # Routing is its own prop (it applies in either mode) and part of the file's endpoint section.
        "endpoint": mode.section
        if routing is None
        else mode.section.model_copy(update={"routing": routing.settings()}),
        "profile": props["profile"],
        "speculation": props["speculation"].settings(),
        "artifacts": props["weights"].settings(),
        "network": build(NetworkSettings, owner=owner, path="network", isolation=props["network_isolation"]),
        "timeouts": build(
            TimeoutSettings,
            owner=owner,
            path="timeouts",
            container_startup_seconds=whole(
                owner, "container_startup_timeout", props["container_startup_timeout"], "seconds"
            ),
            model_download_seconds=whole(owner, "model_download_timeout", props["model_download_timeout"], "seconds"),
        ),
        "observability": build(
            ObservabilitySettings,
            owner=owner,
            path="observability",
            log_retention_days=props["log_retention_days"],
            kpi_interval_seconds=whole(owner, "kpi_interval", props["kpi_interval"], "seconds"),
            metric_publish_frequency_seconds=whole(
                owner, "metric_publish_frequency", props["metric_publish_frequency"], "seconds"
            ),
            detailed_observability=props["detailed_observability"],
        ),
        "vllm_args": dict(props["vllm_args"] or {}),
        # Fixed capacity: None turns autoscaling off; the floor is then the units the deploy starts.
        "autoscaling": autoscaling.settings() if autoscaling is not None else AutoscalingSettings(enabled=False),
    }
    latency_sla = _seconds_float(props["latency_sla"])
    if latency_sla is not None:
        sections["alarms"] = build(AlarmSettings, owner=owner, path="alarms", latency_sla_p90_seconds=latency_sla)
    if props["custom_pair"] is not None:
        sections["custom_pairs"] = {props["model"]: props["custom_pair"]}
    if props["instance_facts"] is not None:
        sections["custom_instances"] = {props["instance_type"]: props["instance_facts"]}
    for name in ("profile_overrides", "slo"):
        if props[name] is not None:
            sections[name] = props[name]
    if props["rollout"] is not None:
        sections["rollout"] = props["rollout"].settings()
    if props["ab_baseline"] is not None:
        sections["ab_test"] = props["ab_baseline"].settings()
    if props["capture"] is not None:
        sections["capture"] = props["capture"].settings()
    # Lax only here: every section above was built strictly; ``profile`` is an enum given as its value.
    return build(DeploymentConfig, owner=owner, strict=False, **sections)


def _seconds_float(duration: Duration | None) -> float | None:
    """Seconds, fractions kept (Duration.to_seconds() refuses 4.5 s: its ``integral`` option defaults to true)."""
    return None if duration is None else duration.to_milliseconds() / 1000
