"""Where the construct library meets the project's one settings model, and nowhere else.

A deployment file and PeagleEndpoint's props are two front doors to one validated model,
peagle.config.DeploymentConfig: the file is parsed into it; the props build its sections themselves
(each value type's ``settings()``, with ``build``) and PeagleEndpoint assembles them
(peagle_cdk/endpoint_config.py); both are planned from it once. A message names a setting by reference
and is spelled for the caller's door from the field's own metadata (peagle/setting_refs.py): the
construct's users read props (``Autoscaling(max_capacity=...)``, ``Duration.minutes(5)``). What the
library needs from the model, all here:

- ``DEFAULTS``: the defaults of every setting, written once (in peagle/config.py); the props' defaults
  are read from it, so a prop and its file key can never default differently;
- ``DeploymentConfig`` and its sections: what the props build, with the validation they share with the
  file (bounds, cross-field rules and their messages); ``build`` and ``whole`` turn a value that breaks a
  field's bounds, or a Duration that is not whole seconds or minutes, into a message in props words;
- the value types a prop takes whole, the same objects a file's section holds: ``MeasuredCapacity``
  (what `peagle capacity` writes), ``ProfileOverrides`` and ``SloSettings`` (every field optional, None:
  the profile's);
- ``ECR_IMAGE``: what the file accepts as an ECR image reference (image.base_mirror), which
  ``BaseImage.mirror_uri`` parses.

No other module of peagle_cdk imports peagle.config: the scaling code reads the plan
(``Plan.autoscaling``, ``Plan.scaling``), the monitoring its AlarmThresholds.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from aws_cdk import Duration
from pydantic import BaseModel, ValidationError

from peagle.config import (
    ECR_IMAGE,
    AbTestSettings,
    AlarmSettings,
    ArtifactsSettings,
    AutoscalingSettings,
    BlueGreenSettings,
    CaptureSettings,
    DeploymentConfig,
    EndpointSettings,
    InferenceComponentSettings,
    InstanceSettings,
    MeasuredCapacity,
    NetworkSettings,
    ObservabilitySettings,
    ProfileOverrides,
    RollingSettings,
    RolloutSettings,
    RoutingSettings,
    ScheduledScaling,
    SloSettings,
    SpeculationBand,
    SpeculationSettings,
    TimeoutSettings,
    format_validation_error,
)
from peagle.errors import ConfigError
from peagle.setting_refs import Door, duration

DEFAULTS = DeploymentConfig()
Section = TypeVar("Section", bound=BaseModel)


def build(section: type[Section], /, *, owner: str, path: str = "", **values: Any) -> Section:
    """A section of the settings model built straight from props (no file-shaped dict): a value outside the
    field's bounds raises ConfigError in props words, named by ``owner`` (e.g. "Autoscaling"); ``path``: where
    the section sits in DeploymentConfig, so each field is named as its prop."""
    try:
        return section(**values)
    except ValidationError as error:
        raise ConfigError(format_validation_error(owner, error, door=Door.PROPS, prefix=path)) from None


def whole(owner: str, name: str, value: Duration | None, unit: Literal["seconds", "minutes", "days"]) -> int | None:
    """A Duration prop as the whole seconds, minutes or days its field holds; a fraction is refused in the prop's
    words (jsii's own ``to_minutes()`` would raise CannotConvertedIntoWhole)."""
    if value is None:
        return None
    milliseconds = value.to_milliseconds(integral=False)
    per = {"seconds": 1000, "minutes": 60_000, "days": 86_400_000}[unit]
    if milliseconds % per:
        below, above = int(milliseconds // per), int(milliseconds // per) + 1
        raise ConfigError(
            f"{owner}: {name} is {milliseconds / 1000:g} s, not a whole number of {unit}; pass "
            f"{duration(below, unit)} or {duration(above, unit)}"
        )
    return int(milliseconds // per)


__all__ = [
    "DEFAULTS",
    "ECR_IMAGE",
    "AbTestSettings",
    "AlarmSettings",
    "ArtifactsSettings",
    "AutoscalingSettings",
    "BlueGreenSettings",
    "CaptureSettings",
    "DeploymentConfig",
    "EndpointSettings",
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
    "build",
    "whole",
]
