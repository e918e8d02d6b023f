"""The settings an app recorded (peagle/planning/plan_record.py), written back as the PeagleEndpoint props that make them.

A suggestion for an app made with props (`peagle simulate`'s changes, `peagle preflight`'s safe sequences) is pasted
over the prop it names. ``Autoscaling(max_capacity=5)`` pasted over ``Autoscaling(min_capacity=1, max_capacity=4,
target_concurrency=12)`` would also drop the floor and the target back to their defaults, silently. So a suggestion
names the whole prop: the section as the app recorded it, the changed setting changed
(``autoscaling=Autoscaling(min_capacity=1, max_capacity=5, target_concurrency=12)``), written in the prop types'
own keywords (peagle_cdk/endpoint_props.py). A setting left at its default is left out (the default keeps it);
the bounds are always written, so the reader sees what is kept. Each writer is checked in tests by evaluating what
it writes and comparing the prop's settings with the recorded section (tests/simulate/test_printed_snippets_run.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from pydantic import BaseModel

from peagle.settings.autoscaling import AutoscalingSettings
from peagle.settings.inference_components import InferenceComponentSettings
from peagle.settings.refs import duration
from peagle.settings.rollout import RolloutSettings
from peagle.settings.routing import RoutingSettings


class RecordedUnits(Protocol):
    """A plan's serving units (peagle/planning/unit_plan.py): an inference-component pool's settings, or None for variants."""

    @property
    def component_settings(self) -> InferenceComponentSettings | None: ...


class RecordedProps(Protocol):
    """What a recorded plan holds of the props a suggestion writes whole (peagle.planning.planner.Plan is one): the settings
    are the plan's, read back from the template (peagle/planning/plan_record.py)."""

    @property
    def autoscaling(self) -> AutoscalingSettings | None: ...
    @property
    def units(self) -> RecordedUnits: ...
    @property
    def rollout(self) -> RolloutSettings: ...
    @property
    def routing(self) -> RoutingSettings: ...


# (the section's field, the prop's keyword, how the value is written); None: the field's value as Python writes it.
_Keyword = tuple[str, str, Callable[[Any], str] | None]


def _seconds(value: Any) -> str:
    return duration(value, "seconds")


def _minutes(value: Any) -> str:
    return duration(value, "minutes")


def _measured(value: Any) -> str:
    return (
        "MeasuredCapacity(" + ", ".join(f"{name}={getattr(value, name)!r}" for name in type(value).model_fields) + ")"
    )


def _schedules(value: Any) -> str:
    items = []
    for action in value:
        zone = f", time_zone=TimeZone.of({action.time_zone!r})" if action.time_zone else ""
        items.append(
            f"ScheduledCapacity(name={action.name!r}, schedule={action.schedule!r}, "
            f"min_capacity={action.min_capacity}, max_capacity={action.max_capacity}{zone})"
        )
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


# Autoscaling(...) (peagle_cdk.endpoint_props.Autoscaling.settings is the inverse). ``enabled`` is the prop's presence
# and ``target`` follows from max_requests_per_second, so neither is a keyword.
AUTOSCALING: tuple[_Keyword, ...] = (
    ("min_capacity", "min_capacity", None),
    ("max_capacity", "max_capacity", None),
    ("target_concurrency", "target_concurrency", None),
    ("measured_capacity", "measured_capacity", _measured),
    ("max_requests_per_second", "max_requests_per_second", None),
    ("headroom", "headroom", None),
    ("gpu_utilization_target_percent", "gpu_utilization_percent", None),
    ("scale_on_queue", "scale_on_queue", None),
    ("target_requests_waiting", "target_requests_waiting", None),
    ("latency_step_scaling", "latency_step_scaling", None),
    ("scale_in_cooldown_seconds", "scale_in_cooldown", _seconds),
    ("scale_out_cooldown_seconds", "scale_out_cooldown", _seconds),
    ("schedules", "schedules", _schedules),
)
# EndpointMode.inference_components(...): its named keywords, then the section's other fields by their own names.
COMPONENTS: tuple[_Keyword, ...] = (
    ("min_instances", "min_instances", None),
    ("max_instances", "max_instances", None),
    ("initial_copies", "initial_copies", None),
    ("accelerators_per_copy", "accelerators_per_copy", None),
    ("scale_to_zero_after_idle_minutes", "scale_to_zero_after", _minutes),
    ("data_cache", "data_cache", None),
    ("placement", "placement", None),
)
BLUE_GREEN: tuple[_Keyword, ...] = (
    ("traffic", "traffic", None),
    ("canary_percent", "canary_percent", None),
    ("linear_step_percent", "linear_step_percent", None),
    ("wait_seconds", "wait", _seconds),
    ("termination_wait_seconds", "termination_wait", _seconds),
    ("max_execution_seconds", "max_execution", _seconds),
)
ROLLING: tuple[_Keyword, ...] = (
    ("batch_percent", "batch_percent", None),
    ("wait_seconds", "wait", _seconds),
    ("rollback_batch_percent", "rollback_batch_percent", None),
    ("max_execution_seconds", "max_execution", _seconds),
)
ALWAYS_WRITTEN = frozenset({"min_capacity", "max_capacity"})  # the bounds a suggestion keeps, shown


def _call(callee: str, section: BaseModel, keywords: tuple[_Keyword, ...], extra: str = "") -> str:
    """``callee(keyword=value, ...)`` for the fields of ``section`` that differ from their defaults (and the bounds)."""
    fields = type(section).model_fields
    written = []
    for name, keyword, write in keywords:
        value = getattr(section, name)
        if name not in ALWAYS_WRITTEN and value == fields[name].get_default(call_default_factory=True):
            continue
        if name in ALWAYS_WRITTEN and value is None:
            continue
        written.append(f"{keyword}={write(value) if write and value is not None else repr(value)}")
    return f"{callee}({', '.join([*written, *([extra] if extra else [])])})"


def autoscaling_value(section: BaseModel | None) -> str:
    """The autoscaling prop (``Autoscaling(...)``, or None for autoscaling off) that makes ``section``."""
    return (
        "None"
        if section is None or not getattr(section, "enabled", True)
        else _call("Autoscaling", section, AUTOSCALING)
    )


def components_value(section: BaseModel) -> str:
    """``EndpointMode.inference_components(...)`` that makes the inference_components ``section``."""
    return _call("EndpointMode.inference_components", section, COMPONENTS)


def rollout_value(section: Any) -> str:
    """``Rollout.blue_green(...)``, ``Rollout.rolling(...)`` or ``Rollout.none()`` that makes the rollout ``section``."""
    if section.strategy == "none":
        return "Rollout.none()"
    rollback = "" if section.auto_rollback else "auto_rollback=False"
    if section.strategy == "rolling":
        return _call("Rollout.rolling", section.rolling, ROLLING, rollback)
    return _call("Rollout.blue_green", section.blue_green, BLUE_GREEN, rollback)


def routing_value(section: Any) -> str:
    """``Routing.least_outstanding_requests()``, ``Routing.random()`` or ``Routing.prefix_aware(...)``."""
    if section.strategy == "PREFIX_AWARE":
        threshold = f", concurrency_threshold={section.concurrency_threshold}" if section.concurrency_threshold else ""
        return f"Routing.prefix_aware(prefix_length={section.prefix_length}{threshold})"
    return f"Routing.{section.strategy.lower()}()"


def _changed(section: BaseModel, changes: Mapping[str, Any]) -> BaseModel:
    """``section`` with ``changes`` (field -> value), validated as the settings model validates them."""
    return type(section).model_validate({**section.model_dump(), **changes})


def whole_prop(changes: Mapping[str, Any], plan: RecordedProps) -> str | None:
    """The PeagleEndpoint keyword argument that sets each setting in ``changes`` (the deployment file's key -> its
    value, all of one prop) and keeps everything else ``plan`` records of that prop; None where the record does not
    hold the prop (the caller spells the setting alone)."""
    sections = {path.rsplit(".", 1)[0] for path in changes}
    if len(sections) != 1:
        raise ValueError(f"one prop at a time: {sorted(changes)}")
    (section,) = sections
    fields = {path.rsplit(".", 1)[1]: value for path, value in changes.items()}
    if section == "autoscaling":
        if "enabled" in fields and not fields["enabled"]:
            return "autoscaling=None"
        recorded = plan.autoscaling or AutoscalingSettings()
        return f"autoscaling={autoscaling_value(_changed(recorded, {**fields, 'enabled': True}))}"
    components = plan.units.component_settings
    if section == "endpoint.inference_components" and components is not None:
        return f"mode={components_value(_changed(components, fields))}"
    if section == "rollout" and set(fields) == {"strategy"}:
        return f"rollout={rollout_value(_changed(plan.rollout, fields))}"
    return None


def current_prop(path: str, plan: RecordedProps) -> str | None:
    """The PeagleEndpoint keyword argument holding the setting at ``path`` as ``plan`` records it, for a message that
    names a prop without changing it; None where the record does not hold the prop."""
    if path == "endpoint.routing" or path.startswith("endpoint.routing."):
        return f"routing={routing_value(plan.routing)}"
    return None
