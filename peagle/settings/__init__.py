"""The deployment settings: one validated model (DeploymentConfig), one module per section, the rules across sections
in peagle/settings/rules.py, the file's loading in peagle/settings/loading.py, and how a message names a setting at
each front door (peagle/settings/refs.py, peagle/settings/words.py). The package is laid out as vLLM's vllm/config/."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below, for the type checker and IDEs; at run time each loads on first use
    from peagle.settings.ab_testing import AbTestSettings
    from peagle.settings.alarms import AlarmSettings
    from peagle.settings.artifacts import ArtifactsSettings
    from peagle.settings.async_inference import AsyncInferenceSettings
    from peagle.settings.autoscaling import DEFAULT_HEADROOM, AutoscalingSettings, MeasuredCapacity, ScheduledScaling
    from peagle.settings.batch import BatchSettings
    from peagle.settings.capture import CaptureSettings
    from peagle.settings.deployment import DeploymentConfig
    from peagle.settings.endpoint import EndpointSettings
    from peagle.settings.errors import ConfigError
    from peagle.settings.image import ECR_IMAGE, ImageSettings
    from peagle.settings.inference_components import InferenceComponentSettings
    from peagle.settings.instance import InstanceSettings
    from peagle.settings.loading import (
        CONTEXT_OVERRIDES,
        DEFAULT_DEPLOYMENT_FILE,
        config_from_overrides,
        format_validation_error,
        load_deployment_config,
        parse_deployment_config,
    )
    from peagle.settings.network import NetworkSettings, VpcSettings
    from peagle.settings.observability import LOG_RETENTION_DAYS, ObservabilitySettings
    from peagle.settings.profile import ProfileOverrides, SloSettings
    from peagle.settings.refs import Door, setting, spelled
    from peagle.settings.rollout import BlueGreenSettings, RollingSettings, RolloutSettings
    from peagle.settings.routing import (
        CONCURRENCY_THRESHOLD_RANGE,
        PREFIX_LENGTH_RANGE,
        ROUTING_STRATEGIES,
        RoutingSettings,
    )
    from peagle.settings.speculation import SpeculationBand, SpeculationSettings
    from peagle.settings.timeouts import TimeoutSettings
    from peagle.settings.words import field_words, in_words

# Where each public name lives: `from peagle.settings.errors import ConfigError` (every command's error types)
# must not load the whole settings model, so the package's names load lazily (PEP 562 module __getattr__).
_HOME = {
    "AbTestSettings": "peagle.settings.ab_testing",
    "AlarmSettings": "peagle.settings.alarms",
    "ArtifactsSettings": "peagle.settings.artifacts",
    "AsyncInferenceSettings": "peagle.settings.async_inference",
    "DEFAULT_HEADROOM": "peagle.settings.autoscaling",
    "AutoscalingSettings": "peagle.settings.autoscaling",
    "MeasuredCapacity": "peagle.settings.autoscaling",
    "ScheduledScaling": "peagle.settings.autoscaling",
    "BatchSettings": "peagle.settings.batch",
    "CaptureSettings": "peagle.settings.capture",
    "DeploymentConfig": "peagle.settings.deployment",
    "EndpointSettings": "peagle.settings.endpoint",
    "ConfigError": "peagle.settings.errors",
    "ECR_IMAGE": "peagle.settings.image",
    "ImageSettings": "peagle.settings.image",
    "InferenceComponentSettings": "peagle.settings.inference_components",
    "InstanceSettings": "peagle.settings.instance",
    "CONTEXT_OVERRIDES": "peagle.settings.loading",
    "DEFAULT_DEPLOYMENT_FILE": "peagle.settings.loading",
    "config_from_overrides": "peagle.settings.loading",
    "format_validation_error": "peagle.settings.loading",
    "load_deployment_config": "peagle.settings.loading",
    "parse_deployment_config": "peagle.settings.loading",
    "NetworkSettings": "peagle.settings.network",
    "VpcSettings": "peagle.settings.network",
    "LOG_RETENTION_DAYS": "peagle.settings.observability",
    "ObservabilitySettings": "peagle.settings.observability",
    "ProfileOverrides": "peagle.settings.profile",
    "SloSettings": "peagle.settings.profile",
    "Door": "peagle.settings.refs",
    "setting": "peagle.settings.refs",
    "spelled": "peagle.settings.refs",
    "BlueGreenSettings": "peagle.settings.rollout",
    "RollingSettings": "peagle.settings.rollout",
    "RolloutSettings": "peagle.settings.rollout",
    "CONCURRENCY_THRESHOLD_RANGE": "peagle.settings.routing",
    "PREFIX_LENGTH_RANGE": "peagle.settings.routing",
    "ROUTING_STRATEGIES": "peagle.settings.routing",
    "RoutingSettings": "peagle.settings.routing",
    "SpeculationBand": "peagle.settings.speculation",
    "SpeculationSettings": "peagle.settings.speculation",
    "TimeoutSettings": "peagle.settings.timeouts",
    "field_words": "peagle.settings.words",
    "in_words": "peagle.settings.words",
}

__all__ = [
    "CONCURRENCY_THRESHOLD_RANGE",
    "CONTEXT_OVERRIDES",
    "DEFAULT_DEPLOYMENT_FILE",
    "DEFAULT_HEADROOM",
    "ECR_IMAGE",
    "LOG_RETENTION_DAYS",
    "PREFIX_LENGTH_RANGE",
    "ROUTING_STRATEGIES",
    "AbTestSettings",
    "AlarmSettings",
    "ArtifactsSettings",
    "AsyncInferenceSettings",
    "AutoscalingSettings",
    "BatchSettings",
    "BlueGreenSettings",
    "CaptureSettings",
    "ConfigError",
    "DeploymentConfig",
    "Door",
    "EndpointSettings",
    "ImageSettings",
    "InferenceComponentSettings",
    "InstanceSettings",
    "MeasuredCapacity",
    "NetworkSettings",
    "ObservabilitySettings",
    "ProfileOverrides",
    "RollingSettings",
    "RolloutSettings",
    "RoutingSettings",
    "ScheduledScaling",
    "SloSettings",
    "SpeculationBand",
    "SpeculationSettings",
    "TimeoutSettings",
    "VpcSettings",
    "config_from_overrides",
    "field_words",
    "format_validation_error",
    "in_words",
    "load_deployment_config",
    "parse_deployment_config",
    "setting",
    "spelled",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
