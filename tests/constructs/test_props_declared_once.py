"""PeagleEndpoint's props declared once (peagle_cdk/peagle_endpoint_props.py), and one strictness for every prop
and every value type's argument: a string where a number or a boolean belongs, or a float where a whole number
belongs, is refused when the value is made, in one message shape, never coerced."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import fields

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_s3 as s3
from pydantic import BaseModel

from peagle_cdk import (
    AbBaseline,
    AlarmThresholds,
    Autoscaling,
    DataCapture,
    EndpointMode,
    MeasuredCapacity,
    ModelWeights,
    PeagleEndpoint,
    ProfileOverrides,
    Rollout,
    Routing,
    ScheduledCapacity,
    SloSettings,
    Speculation,
)
from peagle_cdk import peagle_endpoint as peagle_endpoint_module
from peagle_cdk.endpoint_props import AUTOSCALING_IMPLIED, AUTOSCALING_RENAMED
from peagle_cdk.peagle_endpoint_props import PROPS, REQUIRED, file_key, settings_props
from peagle_cdk.settings_model import DEFAULTS, AutoscalingSettings, InferenceComponentSettings

# --- the signature, the docstring and the settings props follow the declaration ---------------------------------


def _keywords() -> list[inspect.Parameter]:
    parameters = inspect.signature(PeagleEndpoint.__init__).parameters.values()
    return [p for p in parameters if p.kind is p.KEYWORD_ONLY and p.name != "_config"]


def _same_default(given: object, declared: object) -> bool:
    if isinstance(given, Duration) and isinstance(declared, Duration):
        return given.to_milliseconds() == declared.to_milliseconds()
    return given == declared


def test_the_signature_is_the_declared_props_names_annotations_and_defaults():
    signature = [(p.name, p.annotation) for p in _keywords()]
    assert signature == [(prop.name, prop.annotation) for prop in PROPS]
    for parameter, prop in zip(_keywords(), PROPS, strict=True):
        default = REQUIRED if parameter.default is inspect.Parameter.empty else parameter.default
        assert _same_default(default, prop.default), f"{prop.name}: signature {default!r}, declared {prop.default!r}"


def test_the_docstring_has_one_param_per_declared_prop_in_order():
    documented = re.findall(r"^\s*:param (\w+):", PeagleEndpoint.__doc__ or "", flags=re.MULTILINE)
    assert documented == [prop.name for prop in PROPS]


def test_the_settings_props_are_those_a_settings_field_spells():
    assert settings_props() == peagle_endpoint_module.SETTINGS_PROPS
    assert {"instance_count", "autoscaling", "routing", "latency_sla"} <= set(settings_props())
    assert file_key(next(p for p in PROPS if p.name == "instance_count")) == "instance.count"
    assert file_key(next(p for p in PROPS if p.name == "routing")) == "endpoint.routing"


def test_autoscaling_takes_the_autoscaling_sections_fields_with_their_defaults():
    """Autoscaling repeats no field of AutoscalingSettings by hand: its keywords are the section's (renamed only where
    the prop is a Duration or a shorter name) and its defaults the section's."""
    keywords = [f.name for f in fields(Autoscaling) if f.name != "safety_factor"]
    section = [name for name in AutoscalingSettings.model_fields if name not in AUTOSCALING_IMPLIED]
    assert sorted(AUTOSCALING_RENAMED.get(k, k) for k in keywords) == sorted(section)
    made, default = Autoscaling().settings(), DEFAULTS.autoscaling
    assert {name: getattr(made, name) for name in section} == {name: getattr(default, name) for name in section}


# --- one strictness ---------------------------------------------------------------------------------------------

_ALLOWED = {"int": "a whole number", "float": "a number", "bool": "True or False"}
# Each value type's constructor or factory, with the arguments it needs besides the one made wrong.
_VALUE_TYPES: dict[str, tuple[Callable[..., object], dict[str, object]]] = {
    "Autoscaling": (Autoscaling, {}),
    "ScheduledCapacity": (
        ScheduledCapacity,
        {"name": "Night", "schedule": "cron(0 20 * * ? *)", "min_capacity": 0, "max_capacity": 1},
    ),
    "AbBaseline": (AbBaseline, {}),
    "DataCapture": (DataCapture, {}),
    "Routing.prefix_aware": (Routing.prefix_aware, {"prefix_length": 4096}),
    "EndpointMode.inference_components": (EndpointMode.inference_components, {}),
    "Rollout.blue_green": (Rollout.blue_green, {}),
    "Rollout.rolling": (Rollout.rolling, {}),
    "Speculation.fixed": (Speculation.fixed, {"speculative_tokens": 3}),
    "AlarmThresholds": (AlarmThresholds, {}),
    "MeasuredCapacity": (
        MeasuredCapacity,
        {"requests_per_second": 1.0, "concurrency": 4.0, "headroom": 0.8, "slo": "95%", "source": "test"},
    ),
    "SloSettings": (SloSettings, {}),
    "ProfileOverrides": (ProfileOverrides, {}),
}


def _scalar(annotation: object) -> str | None:
    """int, float or bool for an argument of that type (or optional), from a signature's text or a field's type."""
    if not isinstance(annotation, str):
        arguments = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = arguments[0] if len(arguments) == 1 else annotation
        if typing.get_origin(annotation) is typing.Annotated:  # PositiveInt
            annotation = typing.get_args(annotation)[0]
        annotation = getattr(annotation, "__name__", str(annotation))
    name = str(annotation).removesuffix(" | None")
    return name if name in _ALLOWED else None


def _arguments(make: Callable[..., object]) -> dict[str, str]:
    """A value type's scalar arguments: its signature's, a settings model's fields, and the section fields
    ``EndpointMode.inference_components(**settings)`` takes by name."""
    if isinstance(make, type) and issubclass(make, BaseModel):
        found = {name: _scalar(info.annotation) for name, info in make.model_fields.items()}
    else:
        found = {name: _scalar(p.annotation) for name, p in inspect.signature(make).parameters.items()}
    if make is EndpointMode.inference_components:
        for name, info in InferenceComponentSettings.model_fields.items():
            found.setdefault(name, _scalar(info.annotation))
        found.pop("scale_to_zero_after_idle_minutes", None)  # scale_to_zero_after, a Duration
    for deprecated in ("safety_factor", "latency_p90_seconds"):  # old names of headroom and latency_sla
        found.pop(deprecated, None)
    return {name: kind for name, kind in found.items() if kind is not None}


def _cases() -> list[tuple[str, str, str, object]]:
    cases: list[tuple[str, str, str, object]] = [(owner, name, kind, "2" if kind != "bool" else "yes") for owner, (make, _) in _VALUE_TYPES.items()
             for name, kind in _arguments(make).items()]  # fmt: skip
    cases += [(owner, name, kind, 2.0) for owner, name, kind, _ in list(cases) if kind == "int"]
    cases += [("PeagleEndpoint", prop.name, kind, "2" if kind != "bool" else "yes") for prop in PROPS
              if (kind := _scalar(prop.annotation))]  # fmt: skip
    return cases


_REFUSAL = re.compile(r"^(?P<owner>[^:]+): (?P<name>\w+) must be (?P<allowed>[\w ]+), not (?P<given>\w+ \S+)$")


@pytest.mark.parametrize(("owner", "name", "kind", "wrong"), _cases(), ids=lambda v: str(v))
def test_a_string_or_a_float_where_a_number_or_a_boolean_belongs_is_refused_the_same_way(owner, name, kind, wrong):
    """Before: data_cache="yes" became True, min_instances="0" 0, while prefix_length=4096.0 was refused."""
    with pytest.raises(TypeError) as refused:
        if owner == "PeagleEndpoint":
            stack = Stack(App(), "Consumer")
            weights = ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/")
            PeagleEndpoint(stack, "Chat", weights=weights, **{name: wrong})
        else:
            make, needed = _VALUE_TYPES[owner]
            make(**{**needed, name: wrong})
    found = _REFUSAL.match(str(refused.value))
    assert found, str(refused.value)
    assert (found["name"], found["allowed"], found["given"]) == (
        name,
        _ALLOWED[kind],
        f"{type(wrong).__name__} {wrong!r}",
    )


def test_every_scalar_argument_is_covered():
    """The cases above reach the arguments the issue found coerced or refused, so a value type's list cannot
    silently lose them."""
    covered = {(owner, name) for owner, name, _, _ in _cases()}
    assert {
        ("EndpointMode.inference_components", "data_cache"),
        ("EndpointMode.inference_components", "min_instances"),
        ("Routing.prefix_aware", "prefix_length"),
        ("Autoscaling", "latency_step_scaling"),
        ("Rollout.rolling", "auto_rollback"),
        ("PeagleEndpoint", "instance_count"),
        ("PeagleEndpoint", "network_isolation"),
        ("SloSettings", "ttft_seconds"),
    } <= covered


def test_a_speculation_schedule_band_is_refused_the_same_way():
    with pytest.raises(TypeError, match=r"^Speculation\.by_batch_size: min_batch must be a whole number, not str '1'$"):
        Speculation.by_batch_size([("1", 8, 4)])  # type: ignore[list-item]


def test_a_deployment_file_keeps_its_own_reading_of_typed_yaml():
    """The file door is unchanged: YAML gives typed values, and the CDK app's -c keys are text."""
    from peagle_cdk.settings_model import DeploymentConfig

    config = DeploymentConfig.model_validate({"instance": {"count": "2"}})
    assert config.instance.count == 2


# --- the reference pages follow the declaration --------------------------------------------------------------------


def test_the_library_reference_names_every_argument_of_inference_components():
    """Before: docs/library.md's EndpointMode.inference_components(...) lacked data_cache, a section field it takes."""
    from peagle.reference_docs import library_value_types

    (row,) = [line for line in library_value_types().splitlines() if line.startswith("| `EndpointMode`")]
    fields = set(InferenceComponentSettings.model_fields) - {"scale_to_zero_after_idle_minutes"}
    assert all(f"{field}=" in row for field in fields), row
    assert "scale_to_zero_after=None" in row and "data_cache=True" in row


def test_the_library_props_table_has_one_row_per_declared_prop():
    from peagle.reference_docs import library_props

    rows = library_props().splitlines()[2:]
    assert [row.split("|")[1].strip().strip("`") for row in rows] == [prop.name for prop in PROPS]
