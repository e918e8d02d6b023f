"""Where the construct library meets the project's one settings model, and nowhere else.

A deployment file and PeagleEndpoint's props are two front doors to one validated model,
peagle.settings.DeploymentConfig: the file is parsed into it; the props build its sections themselves
(each value type's ``settings()``, with ``build``) and PeagleEndpoint assembles them
(peagle_cdk/endpoint_config.py); both are planned from it once. A message names a setting by reference
and is spelled for the caller's door from the field's own metadata (peagle/settings/words.py): the
construct's users read props (``Autoscaling(max_capacity=...)``, ``Duration.minutes(5)``). What the
library needs from the model, all here:

- ``DEFAULTS``: the defaults of every setting, written once (in peagle/settings/); the props' defaults
  are read from it, so a prop and its file key can never default differently;
- ``DeploymentConfig`` and its sections: what the props build, with the validation they share with the
  file (bounds, cross-field rules and their messages); ``build`` and ``whole`` turn a value that breaks a
  field's bounds, or a Duration that is not whole seconds or minutes, into a message in props words;
- the value types a prop takes whole, the sections a file holds made as props are (strictly, refused in
  the props' words, when made; ``_MadeByProps``): ``MeasuredCapacity`` (what `peagle capacity` writes),
  ``ProfileOverrides`` and ``SloSettings`` (every field optional, None: the profile's);
- ``ECR_IMAGE``: what the file accepts as an ECR image reference (image.base_mirror), which
  ``BaseImage.mirror_uri`` parses.

No other module of peagle_cdk imports peagle.settings: the scaling code reads the plan
(``Plan.autoscaling``, ``Plan.scaling``), the monitoring its AlarmThresholds.
"""

from __future__ import annotations

import re
from types import UnionType
from typing import Annotated, Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin

from aws_cdk import Duration
from pydantic import BaseModel, ConfigDict, ValidationError

from peagle.settings import (
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
    NetworkSettings,
    ObservabilitySettings,
    RollingSettings,
    RolloutSettings,
    RoutingSettings,
    ScheduledScaling,
    SpeculationBand,
    SpeculationSettings,
    TimeoutSettings,
    format_validation_error,
)
from peagle.settings import MeasuredCapacity as MeasuredCapacitySection
from peagle.settings import ProfileOverrides as ProfileOverridesSection
from peagle.settings import SloSettings as SloSection
from peagle.settings.errors import ConfigError
from peagle.settings.refs import Door, duration
from peagle.settings.words import field_words
from peagle_cdk import prop_types

DEFAULTS = DeploymentConfig()
Section = TypeVar("Section", bound=BaseModel)


# pydantic's strict-mode type errors, as peagle_cdk/prop_types.py words what a scalar prop allows.
_STRICT_TYPE_ERRORS = {
    "int_type": prop_types.WHOLE,
    "float_type": prop_types.NUMBER,
    "bool_type": prop_types.BOOLEAN,
    "string_type": prop_types.TEXT,
}


def build(section: type[Section], /, *, owner: str, path: str = "", strict: bool = True, **values: Any) -> Section:
    """A section of the settings model built straight from props (no file-shaped dict): a value outside the
    field's bounds raises ConfigError in props words, named by ``owner`` (e.g. "Autoscaling"); ``path``: where
    the section sits in DeploymentConfig, so each field is named as its prop.

    One strictness for the props door: the section is validated in pydantic's strict mode, so a string where a
    number or a boolean belongs ("0", "yes") and a float where a whole number belongs (4096.0) are refused, not
    coerced, with the TypeError every wrong prop type raises (prop_types.refused). A deployment file keeps
    pydantic's lax mode: YAML already gives typed values, and the CDK app's ``-c instanceCount=2`` is text.
    ``strict`` False: only to assemble sections built here already (a str for an enum field, ``profile``,
    is what the props pass and what strict mode refuses)."""
    if strict:
        _refuse_wrong_scalars(section, owner, path, values)
    values = {name: _as_section(value) for name, value in values.items()}
    try:
        return section.model_validate(values, strict=strict)
    except ValidationError as error:
        raise _refusal(owner, path, error) from None


def _refusal(owner: str, path: str, error: ValidationError) -> Exception:
    """A wrong type as the TypeError of every wrong prop type; a wrong value as ConfigError, in props words."""
    wrong = [item for item in error.errors() if item["type"] in _STRICT_TYPE_ERRORS]
    if wrong:
        item = wrong[0]
        name = _keyword(path, item["loc"])
        return TypeError(prop_types.refused(owner, name, item["input"], _STRICT_TYPE_ERRORS[item["type"]]))
    return ConfigError(format_validation_error(owner, error, door=Door.PROPS, prefix=path))


class _MadeByProps(BaseModel):
    """A settings section a construct user makes whole (``SloSettings(ttft_seconds=1.0)``), validated as ``build``
    validates: strictly, refusals in the props' words, when it is made. The deployment file reads the section itself,
    in pydantic's lax mode; both are the same section to the settings model (this is a subclass of it)."""

    model_config = ConfigDict(strict=True)
    PROPS_PATH: ClassVar[str] = ""  # where the section sits in DeploymentConfig, so each field is named as its prop

    def __init__(self, **values: Any) -> None:
        owner, path = type(self).__name__, self.PROPS_PATH
        _refuse_wrong_scalars(type(self), owner, path, values)
        try:
            super().__init__(**values)
        except ValidationError as error:
            raise _refusal(owner, path, error) from None


def _as_section(value: Any) -> Any:
    """A section a construct user made (``_MadeByProps``) as the settings model's own class, the fields they set kept:
    the model then holds what a deployment file gives it (equal to it, recorded the same)."""
    if not isinstance(value, _MadeByProps):
        return value
    section = type(value).__bases__[-1]  # the settings section this props-door class extends
    return section.model_validate(value.model_dump(exclude_unset=True))


class MeasuredCapacity(_MadeByProps, MeasuredCapacitySection):
    PROPS_PATH: ClassVar[str] = "autoscaling.measured_capacity"


class ProfileOverrides(_MadeByProps, ProfileOverridesSection):
    PROPS_PATH: ClassVar[str] = "profile_overrides"


class SloSettings(_MadeByProps, SloSection):
    PROPS_PATH: ClassVar[str] = "slo"


# A number or boolean field's type -> the Python types a prop may give it, and their words (a float field takes an int;
# bool, an int subclass, is no number).
_SCALARS: dict[Any, tuple[tuple[type, ...], str]] = {
    int: ((int,), prop_types.WHOLE),
    float: ((int, float), prop_types.NUMBER),
    bool: ((bool,), prop_types.BOOLEAN),
}


def _refuse_wrong_scalars(section: type[BaseModel], owner: str, path: str, values: dict[str, Any]) -> None:
    """A value of the wrong type for a number or boolean field, refused before the field's own validators run (a
    validator that reads the value first would word it as a bad value, not a wrong type)."""
    for name, value in values.items():
        field = section.model_fields.get(name)
        scalar = _SCALARS.get(_optional(field.annotation)) if field is not None else None
        if scalar is None or value is None:
            continue
        types, allowed = scalar
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise TypeError(prop_types.refused(owner, _keyword(path, (name,)), value, allowed))


def _optional(annotation: Any) -> Any:
    """``X`` of ``X | None`` and of ``Annotated[X, ...]`` (``PositiveInt``); any other annotation as it is."""
    arguments = [argument for argument in get_args(annotation) if argument is not type(None)]
    if len(arguments) == 1 and get_origin(annotation) in (Union, UnionType):
        annotation = arguments[0]
    return get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation


def _keyword(path: str, loc: tuple[int | str, ...]) -> str:
    """The argument that set the field at ``path`` + ``loc``, as its prop spelling names it
    (``Autoscaling(gpu_utilization_percent=...)`` -> gpu_utilization_percent, ``instance_count``), else the
    field's own name."""
    names = [str(part) for part in loc]
    words = field_words(".".join(part for part in [path, *names] if part))
    spelled = str(words["prop"] or "") if words["own"] else ""
    keyword = re.search(r"(\w+)=\.\.\.\)$", spelled)
    if keyword:
        return keyword[1]
    if re.fullmatch(r"\w+", spelled):
        return spelled
    return next((name for name in reversed(names) if not name.isdigit()), path)


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
    "MeasuredCapacitySection",
    "NetworkSettings",
    "ObservabilitySettings",
    "ProfileOverrides",
    "ProfileOverridesSection",
    "RollingSettings",
    "RolloutSettings",
    "RoutingSettings",
    "ScheduledScaling",
    "SloSection",
    "SloSettings",
    "SpeculationBand",
    "SpeculationSettings",
    "TimeoutSettings",
    "build",
    "whole",
]
