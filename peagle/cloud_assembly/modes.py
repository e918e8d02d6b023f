"""The two modes of the one intrinsic-function resolver (peagle/cloud_assembly/intrinsics.py): what a value the
template cannot fix before a deploy turns into.

``SymbolicMode`` (`peagle access`, the CDK plugin): every such value is one named symbol, and names and ARNs are
derived from the resource table (peagle/cloud_assembly/resource_kinds.py), so values written in different
intrinsic forms compare equal:

- ``AWS::Partition`` is ``aws`` and ``AWS::URLSuffix`` ``amazonaws.com``: this assumes the standard partition
  (China and GovCloud stacks would resolve to ARNs of the wrong partition). ``AWS::AccountId``/``AWS::Region``
  are the stack's environment from the manifest when concrete, else the literal placeholders
  ``${AWS::AccountId}``/``${AWS::Region}`` (one unknown account and region shared by every env-agnostic stack).
- A value CloudFormation only knows at deploy time is a placeholder: ``${<stack id>/<LogicalId>}`` for a
  resource's physical id or generated name, ``${<stack id>/<LogicalId>.<Attribute>}`` for an attribute the
  table does not derive, ``${<stack id>/<Parameter>}`` for a parameter without a usable default,
  ``${Fn::ImportValue:<name>}`` for an export no stack of the assembly makes.
- A Secrets Manager secret's ARN ends in ``-??????``: Secrets Manager appends six random characters that no
  template knows, and ``?`` is IAM's one-character wildcard, so a policy resolved from ``Ref`` matches the
  real secret, and a derived request matches grants of ``name-??????`` or ``name-*``.
- ``AWS::NotificationARNs`` is undecided.
- Not modelled: ``AWS::StackId``'s UUID (a placeholder inside the stack ARN), IAM unique ids (``RoleId``,
  ``PolicyId``), SageMaker's lower-casing of names in some ARNs (CloudFormation's examples show
  ``model/mymodel`` for a model named ``MyModel``; names are kept as written), rules on a custom event bus
  (their Ref and Arn are placeholders).

``ConcreteMode`` (preflight, simulate, smoke: peagle/cloud_assembly/template.py): a value is the text the template
itself fixes. Pseudo parameters are the ones the caller knows; a Ref or Fn::GetAtt of a resource is its physical
name where the table says the reference returns the name and the template sets it (``Fn::GetAtt [Model,
ModelName]`` of a Model whose ModelName is written); everything else (other attributes, parameters, exports,
unknown pseudo parameters) is what the caller's ``unresolved(name)`` says: None (undecided), or a stand-in such
as ``${Name}`` to show or compare it as written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from peagle.cloud_assembly.intrinsics import NO_VALUE, NoValue, Resolver, resource_of
from peagle.cloud_assembly.manifest import AssemblyStack
from peagle.cloud_assembly.resource_kinds import PARTITION, URL_SUFFIX, ResourceKind, kind_of


class SymbolicMode:
    """Deploy-time values as named placeholders; names and ARNs derived per the resource table (module docstring)."""

    def pseudo(self, stack: AssemblyStack, name: str) -> str | NoValue | None:
        # CFN pseudo-parameter-reference: "AWS::StackId: Returns the ID of the stack ..., such as
        # arn:aws:cloudformation:us-west-2:123456789012:stack/teststack/51af3dc0-da77-11e4-872e-1234567db123";
        # "AWS::StackName: Returns the name of the stack"; "AWS::NotificationARNs: Returns the list of notification
        # Amazon Resource Names (ARNs) for the current stack" (set at deploy time: undecided).
        if name == "AWS::NoValue":
            return NO_VALUE
        stack_id = f"arn:{PARTITION}:cloudformation:{_region(stack)}:{_account(stack)}:stack/{stack.stack_name}/"
        return {
            "AWS::Partition": PARTITION,
            "AWS::URLSuffix": URL_SUFFIX,
            "AWS::AccountId": _account(stack),
            "AWS::Region": _region(stack),
            "AWS::StackName": stack.stack_name,
            "AWS::StackId": stack_id + stack.placeholder("AWS::StackId"),
        }.get(name)

    def parameter(self, stack: AssemblyStack, name: str, parameter: Mapping[str, Any]) -> str | list[str] | None:
        # CFN parameters-section-structure: SSM parameter types: "You specify a Systems Manager parameter key as the
        # value of the SSM parameter, and AWS CloudFormation fetches the latest value from Parameter Store" (so the
        # Default of CDK's BootstrapVersion, "/cdk-bootstrap/hnb659fds/version", is a key, not the value: a
        # placeholder); "CommaDelimitedList ... users could specify "test,dev,prod", and a Ref would result in
        # ["test","dev","prod"] ... each member string is space trimmed"; "List<Number> ... the parameter value
        # becomes a list of strings".
        kind = str(parameter.get("Type", "String"))
        default = parameter.get("Default")
        is_list = kind == "CommaDelimitedList" or kind.startswith("List<")
        if kind.startswith("AWS::SSM::Parameter::Value<") or default is None:
            return None if is_list else stack.placeholder(name)
        text = default if isinstance(default, str) else json.dumps(default)
        return [item.strip() for item in text.split(",")] if is_list else text

    def resource(self, resolver: Resolver, stack: AssemblyStack, logical_id: str, attribute: str | None) -> str | None:
        """Per the resource table, else a placeholder."""
        resource = resource_of(stack, logical_id) or {}
        kind = kind_of(resource)
        pattern = (kind.ref if attribute is None else kind.attributes.get(attribute)) if kind else None
        if kind is None or pattern is None:
            return stack.placeholder(logical_id if attribute is None else f"{logical_id}.{attribute}")
        fields = _fields(resolver, stack, logical_id, resource, kind)
        return pattern.format(**fields) if fields is not None else None

    def unknown(self, stack: AssemblyStack, name: str) -> str | None:
        return None

    def imported(self, name: str) -> str | None:
        # One opaque value, the same symbol wherever it is imported.
        return "${Fn::ImportValue:" + name + "}"


@dataclass(frozen=True)
class ConcreteMode:
    """The text the template fixes; the caller's pseudo parameters; ``unresolved(name)`` for the rest."""

    known: Mapping[str, str] = field(default_factory=dict)  # pseudo parameters the caller knows (AWS::Region ...)
    unresolved: Callable[[str], str | None] = lambda name: None

    def pseudo(self, stack: AssemblyStack, name: str) -> str | NoValue | None:
        # CFN pseudo-parameter-reference: AWS::NoValue "Removes the corresponding resource property".
        if name == "AWS::NoValue":
            return NO_VALUE
        return self.known[name] if name in self.known else self.unresolved(name)

    def parameter(self, stack: AssemblyStack, name: str, parameter: Mapping[str, Any]) -> str | list[str] | None:
        return self.unresolved(name)  # the value given at deploy time, not the template's

    def resource(self, resolver: Resolver, stack: AssemblyStack, logical_id: str, attribute: str | None) -> str | None:
        """The resource's name where the table says this reference returns it and the template writes it."""
        resource = resource_of(stack, logical_id) or {}
        kind = kind_of(resource)
        pattern = (kind.ref if attribute is None else kind.attributes.get(attribute)) if kind else None
        properties = resource.get("Properties") or {}
        if kind is not None and pattern == "{name}" and kind.name_property in properties:
            named = resolver.value(stack, properties[kind.name_property])
            return named if isinstance(named, str) else None
        return self.unresolved(logical_id if attribute is None else f"{logical_id}.{attribute}")

    def unknown(self, stack: AssemblyStack, name: str) -> str | None:
        return self.unresolved(name)

    def imported(self, name: str) -> str | None:
        return self.unresolved(f"Fn::ImportValue:{name}")


def _account(stack: AssemblyStack) -> str:
    return stack.account or "${AWS::AccountId}"


def _region(stack: AssemblyStack) -> str:
    return stack.region or "${AWS::Region}"


def _fields(
    resolver: Resolver, stack: AssemblyStack, logical_id: str, resource: Mapping, kind: ResourceKind
) -> dict[str, str] | None:
    properties = resource.get("Properties") or {}
    name = resolver.value(stack, properties.get(kind.name_property)) if kind.name_property else None
    # CFN aws-resource-iam-role, Path: "a forward slash (/) by itself or a string that must begin and end with
    # forward slashes"; "If it is not included, it defaults to a slash (/)".
    path = resolver.value(stack, properties.get("Path", "/")) if kind.has_path else "/"
    if not (isinstance(path, str) and path.startswith("/")):
        return None
    return {
        "name": name if isinstance(name, str) else stack.placeholder(logical_id),  # generated, or undecidable
        "path": path[1:],
        "partition": PARTITION,
        "suffix": URL_SUFFIX,
        "region": _region(stack),
        "account": _account(stack),
    }
