"""Which of a stack's alarms `peagle smoke` judges: the smoked endpoint's own health alarms.

A stack may hold several endpoints (your app's, or the YAML app's with an asynchronous one), and alarms of two
kinds. Health alarms (EndpointMonitoring's, yours) notify someone; scaling alarms act on capacity, and ALARM is how
they ask for it: a scale-to-zero alarm sits in ALARM while its endpoint idles, a scale-in alarm while the load is
light. So an alarm is judged when it is a health alarm about the smoked endpoint, and skipped, with the reason, when
it is a scaling alarm or about another endpoint (or names none). What each alarm is comes from the stack's template:

- a scaling alarm's action is a scaling policy: "With step scaling policies, you create and manage the CloudWatch
  alarms that invoke the scaling process. When an alarm is breached, Application Auto Scaling initiates the scaling
  policy associated with that alarm" (Application Auto Scaling User Guide, "Step scaling policies",
  https://docs.aws.amazon.com/autoscaling/application/userguide/application-auto-scaling-step-scaling-policies.html);
  in a template the action refers to the policy resource, and deployed it is the policy's ARN,
  ``arn:aws:autoscaling:<region>:<account>:scalingPolicy:...`` (CloudWatch API reference, PutMetricAlarm
  AlarmActions, "Autoscaling action"; botocore 1.44.5 cloudwatch service-2.json). Target tracking's own alarms are
  not in the stack: "Application Auto Scaling creates and manages the CloudWatch alarms that trigger scaling events"
  (same guide, "Target tracking scaling policies"), so a stack listing never returns them;
- whose alarm it is comes from its metrics' dimensions (``Dimensions``, or each ``Metrics[].MetricStat.Metric``'s):
  ``EndpointName``, or ``InferenceComponentName`` and the endpoint that component is on; a composite alarm's from the
  alarms its rule names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from peagle.cloud_assembly import StackTemplate

ENDPOINT_DIMENSION = "EndpointName"
COMPONENT_DIMENSION = "InferenceComponentName"
# Resource types whose reference in AlarmActions makes the alarm a scaling alarm (Application Auto Scaling's policy,
# and EC2 Auto Scaling's, whose ARNs share the form above).
SCALING_POLICY_TYPES = frozenset({"AWS::ApplicationAutoScaling::ScalingPolicy", "AWS::AutoScaling::ScalingPolicy"})

SCALING_REASON = "scaling alarms (they act on capacity: in ALARM by design, e.g. scale to zero while idle)"
NO_ENDPOINT_REASON = "alarms that name no endpoint of the stack"


def _other_endpoints_reason(names: Iterable[str]) -> str:
    return f"other endpoints' alarms ({', '.join(sorted(names))})"


@dataclass(frozen=True)
class AlarmScope:
    """The stack's alarms (physical names) this endpoint's smoke judges, and those it skips by reason."""

    judged: tuple[str, ...]
    skipped: Mapping[str, tuple[str, ...]]  # reason -> alarm names
    note: str | None = None  # why the scope is wider than the endpoint's own alarms, when it is


def alarm_scope(template: StackTemplate, alarms: Mapping[str, str], endpoint_name: str) -> AlarmScope:
    """``alarms``: the stack's alarm resources, logical id -> alarm name (ListStackResources). An alarm the template
    does not hold (a stack updated since) cannot be told apart: it is judged. A template whose endpoints' names
    CloudFormation generates cannot say which alarms are whose: every health alarm is judged, and ``note`` says so
    (``missing_endpoint`` first refuses a stack that names its endpoints and not this one)."""
    known = endpoint_name in {endpoint.name for endpoint in template.endpoints()}
    owners = _Owners(template)
    judged: list[str] = []
    skipped: dict[str, list[str]] = {}
    for logical_id, name in alarms.items():
        reason = None
        if logical_id in template.resources:
            if _is_scaling(template, template.properties(logical_id)):
                reason = SCALING_REASON
            elif known:
                named = owners.of(logical_id)
                if not named:
                    reason = NO_ENDPOINT_REASON
                elif endpoint_name not in named:
                    reason = _other_endpoints_reason(named)
        if reason is None:
            judged.append(name)
        else:
            skipped.setdefault(reason, []).append(name)
    note = (
        None
        if known
        else f"the template's endpoint names are generated, not {endpoint_name}: every health alarm judged"
    )
    return AlarmScope(tuple(judged), {reason: tuple(names) for reason, names in skipped.items()}, note)


def missing_endpoint(template: StackTemplate, endpoint_name: str, stack_name: str) -> str | None:
    """What is wrong when the stack's template names every endpoint it holds, and none is ``endpoint_name`` (a
    --stack that is not the endpoint's); None otherwise."""
    names = [endpoint.name for endpoint in template.endpoints()]
    if endpoint_name in names or None in names:
        return None
    listed = ", ".join(sorted(name for name in names if name)) or "none"
    return (
        f"stack {stack_name} holds no endpoint {endpoint_name} (its endpoints: {listed}), so none of its alarms is "
        f"{endpoint_name}'s: pass --stack, the stack that holds it"
    )


def _is_scaling(template: StackTemplate, properties: Mapping[str, Any]) -> bool:
    for action in properties.get("AlarmActions") or []:
        if _referenced_type(template, action) in SCALING_POLICY_TYPES:
            return True
        text = template.resolve(action) or ""
        if ":autoscaling:" in text and ":scalingPolicy:" in text:
            return True
    return False


def _referenced_type(template: StackTemplate, value: Any) -> str | None:
    logical_id = _reference(value)
    return template.resources.get(logical_id, {}).get("Type") if logical_id else None


def _reference(value: Any) -> str | None:
    """The logical id a ``Ref`` or ``Fn::GetAtt`` names; None for anything else."""
    if not isinstance(value, Mapping) or len(value) != 1:
        return None
    ((function, argument),) = value.items()
    if function == "Ref" and isinstance(argument, str):
        return argument
    if function == "Fn::GetAtt":
        if isinstance(argument, list) and argument and isinstance(argument[0], str):
            return argument[0]
        if isinstance(argument, str):
            return argument.split(".", 1)[0]
    return None


class _Owners:
    """The endpoints each alarm is about, by the dimensions of its metrics (a composite: of the alarms it names)."""

    def __init__(self, template: StackTemplate) -> None:
        self._template = template
        self._component_endpoints = {
            component.name: component.endpoint_name for component in template.components() if component.name
        }
        self._alarm_types = {"AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm"}

    def of(self, logical_id: str, seen: frozenset[str] = frozenset()) -> set[str]:
        if logical_id in seen:
            return set()
        resource = self._template.resources.get(logical_id) or {}
        properties = resource.get("Properties") or {}
        if resource.get("Type") == "AWS::CloudWatch::CompositeAlarm":
            named: set[str] = set()
            for child in _references(properties.get("AlarmRule")):
                if (self._template.resources.get(child) or {}).get("Type") in self._alarm_types:
                    named |= self.of(child, seen | {logical_id})
            return named
        dimensions = list(properties.get("Dimensions") or [])
        for query in properties.get("Metrics") or []:
            metric = (query.get("MetricStat") or {}).get("Metric") or {} if isinstance(query, Mapping) else {}
            dimensions += metric.get("Dimensions") or []
        return {name for name in map(self._endpoint_of, dimensions) if name}

    def _endpoint_of(self, dimension: Any) -> str | None:
        if not isinstance(dimension, Mapping):
            return None
        value = self._template.resolve(dimension.get("Value"))
        if dimension.get("Name") == ENDPOINT_DIMENSION:
            return value
        if dimension.get("Name") == COMPONENT_DIMENSION and value:
            return self._component_endpoints.get(value)
        return None


def _references(value: Any) -> Iterable[str]:
    """Every logical id a ``Ref`` or ``Fn::GetAtt`` inside ``value`` names (an alarm rule's ``Fn::Join`` parts)."""
    found = _reference(value)
    if found:
        yield found
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _references(item)
    elif isinstance(value, list):
        for item in value:
            yield from _references(item)
