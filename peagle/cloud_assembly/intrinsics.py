"""CloudFormation's intrinsic functions, resolved in one place, in one of two modes.

A template value may be written as intrinsic functions: ``{"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"},
":s3:::", {"Ref": "Bucket"}, "/models/*"]]}``. ``Resolver`` evaluates Ref, Fn::GetAtt, Fn::Join, Fn::Sub,
Fn::Select, Fn::Split, Fn::ImportValue, Fn::FindInMap, Fn::If and Fn::Base64 as CloudFormation does (each with its
source, below), over the stacks of one assembly. What it cannot know before a deploy (pseudo parameters, a
resource's physical id and attributes, parameters, exports made elsewhere) is the mode's to say
(peagle/cloud_assembly/modes.py):

- the symbolic mode (``SymbolicMode``, `peagle access`): every such value is a named placeholder
  (``${<stack id>/<LogicalId>}``) and names and ARNs are derived per resource type, so a grant and a request
  written in different forms read the same: ``arn:aws:s3:::${Stack/Bucket}/models/*``;
- the concrete mode (``ConcreteMode``, preflight, simulate and smoke through peagle.cloud_assembly.template): a
  value is the text the template itself fixes, with the pseudo parameters the caller knows, and whatever else the
  caller's ``unresolved(name)`` says (None: undecided; ``${Name}``: shown as written).

What a value turns into, in both modes:

- Literals as written; numbers and booleans as their JSON text where a string is needed.
- ``resolve`` returns None when a value cannot be decided: ``Fn::GetAZs``, ``Fn::Cidr``, ``Fn::Transform`` and
  the AWS::LanguageExtensions functions, ``Fn::If`` on a condition that depends on something unknown (unless
  both branches agree), ``Fn::Base64`` of anything but literal text, dynamic references (``{{resolve:...}}``),
  out-of-range ``Fn::Select``, ``Fn::FindInMap`` keys not in the Mappings. ``resolve_document`` writes
  ``UNRESOLVED`` (``${?unresolved}``) there instead: literal text to IAM matching (its ``?`` a wildcard for one
  character), so it matches no real ARN, principal or value.
- A placeholder (``${...}``) is one opaque token: ``Fn::Split`` never cuts through it, and
  peagle.access.policy_eval matches it as literal text.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from peagle.cloud_assembly.manifest import AssemblyError, AssemblyStack

UNRESOLVED = "${?unresolved}"
# CFN intrinsic-function-reference-sub: "Write variables as ${MyVarName}" ... "To write a dollar sign and curly
# braces (${}) literally, add an exclamation point (!) after the open curly brace, such as ${!Literal}.
# CloudFormation resolves this text as ${Literal}."
_SUB_VARIABLE = re.compile(r"\$\{(!?)([^}]*)\}")


class NoValue:
    """``Ref: AWS::NoValue``: CFN pseudo-parameter-reference, "Removes the corresponding resource property when
    specified as a return value in the Fn::If intrinsic function"; dropped from lists and documents."""


NO_VALUE = NoValue()


Value = str | list[str] | NoValue | None


class Mode(Protocol):
    """What the values a template cannot fix before a deploy turn into (peagle/cloud_assembly/modes.py)."""

    def pseudo(self, stack: AssemblyStack, name: str) -> str | NoValue | None: ...

    def parameter(self, stack: AssemblyStack, name: str, parameter: Mapping[str, Any]) -> str | list[str] | None: ...

    def resource(self, resolver: Resolver, stack: AssemblyStack, logical_id: str, attribute: str | None) -> str | None:
        """Ref (``attribute`` None) or Fn::GetAtt of a resource of ``stack``."""
        ...

    def unknown(self, stack: AssemblyStack, name: str) -> str | None:
        """A Ref or Fn::GetAtt (``Logical.Attribute``) of something the template does not declare."""
        ...

    def imported(self, name: str) -> str | None:
        """An Fn::ImportValue of an export no stack of the assembly makes."""
        ...


class Resolver:
    """Template values of the ``stacks`` as strings, in one mode (module docstring)."""

    def __init__(self, stacks: Sequence[AssemblyStack], mode: Mode) -> None:
        ids = [stack.id for stack in stacks]
        duplicates = sorted({stack_id for stack_id in ids if ids.count(stack_id) > 1})
        if duplicates:
            # Placeholders are named by stack id, so two stacks of one id would share them.
            raise AssemblyError(f"the cloud assembly has two stacks with the id {', '.join(duplicates)}")
        self.stacks = list(stacks)
        self.mode = mode
        self._busy: set[tuple[str, ...]] = set()  # values being resolved: a template referring to itself
        self._exports: dict[str, list[tuple[AssemblyStack, Mapping[str, Any]]]] | None = None
        self._functions: dict[str, Callable[[AssemblyStack, Any], Any]] = {
            "Ref": self._ref,
            "Fn::GetAtt": self._get_att,
            "Fn::Join": self._join,
            "Fn::Sub": self._sub,
            "Fn::Select": self._select,
            "Fn::Split": self._split,
            "Fn::ImportValue": self._import_value,
            "Fn::FindInMap": self._find_in_map,
            "Fn::If": self._if,
            "Fn::Base64": self._base64,
        }

    def stack(self, id_or_name: str) -> AssemblyStack:
        """The stack of that artifact id, else the only one of that stack name."""
        by_id = [stack for stack in self.stacks if stack.id == id_or_name]
        by_name = [stack for stack in self.stacks if stack.stack_name == id_or_name]
        found = by_id or by_name
        if len(found) != 1:
            known = ", ".join(f"{stack.id} ({stack.stack_name})" for stack in self.stacks)
            how = "two stacks are named" if found else "no stack is"
            raise AssemblyError(f"{how} {id_or_name!r} in the cloud assembly; its stacks: {known}")
        return found[0]

    # --- resolution ----------------------------------------------------------------------------------------------

    def resolve(self, stack: AssemblyStack | str, value: Any) -> str | None:
        """``value`` as one string, or None when it cannot be decided (module docstring)."""
        result = self._value(self._as_stack(stack), value)
        return result if isinstance(result, str) else None

    def resolve_list(self, stack: AssemblyStack | str, value: Any) -> list[str] | None:
        """A list-valued ``value`` (a literal list, Fn::Split, a CommaDelimitedList parameter) as strings; a single
        string as a list of one; None when any element cannot be decided."""
        result = self._value(self._as_stack(stack), value)
        return [result] if isinstance(result, str) else result if isinstance(result, list) else None

    def resolve_document(self, stack: AssemblyStack | str, document: Any) -> dict[str, Any]:
        """A policy document (a mapping, or JSON text as ECR repository policies may be) with every intrinsic
        resolved: strings and lists of strings, ``UNRESOLVED`` where undecidable, AWS::NoValue removed; literal
        numbers and booleans as written. Anything but a mapping gives {}."""
        if isinstance(document, str):
            try:
                document = json.loads(document)
            except ValueError:
                return {}
        result = self._document_value(self._as_stack(stack), document)
        return result if isinstance(result, dict) else {}

    def value(self, stack: AssemblyStack, node: Any) -> Value:
        """``node`` resolved: a string, a list of strings, NO_VALUE, or None when undecidable (for the modes)."""
        return self._value(stack, node)

    # --- values --------------------------------------------------------------------------------------------------

    def _as_stack(self, stack: AssemblyStack | str) -> AssemblyStack:
        return self.stack(stack) if isinstance(stack, str) else stack

    def _value(self, stack: AssemblyStack, node: Any) -> Value:
        if isinstance(node, str):
            # CFN dynamic-references: "'{{resolve:service-name:reference-key}}'": deploy-time values.
            return None if "{{resolve:" in node else node
        if isinstance(node, bool):
            return "true" if node else "false"
        if isinstance(node, int | float):
            return json.dumps(node)
        if isinstance(node, list):
            items = [item for item in (self._value(stack, item) for item in node) if item is not NO_VALUE]
            texts = [item for item in items if isinstance(item, str)]
            return texts if len(texts) == len(items) else None
        if isinstance(node, Mapping) and len(node) == 1:
            ((name, argument),) = node.items()
            function = self._functions.get(name)
            return function(stack, argument) if function else None
        return None

    def _list(self, stack: AssemblyStack, node: Any) -> list[str] | None:
        result = self._value(stack, node)
        return result if isinstance(result, list) else None

    def _document_value(self, stack: AssemblyStack, node: Any) -> Any:
        if _is_intrinsic(node):
            result = self._value(stack, node)
            return UNRESOLVED if result is None else result
        if isinstance(node, Mapping):
            resolved = {key: self._document_value(stack, value) for key, value in node.items()}
            return {key: value for key, value in resolved.items() if value is not NO_VALUE}
        if isinstance(node, list):
            items: list[Any] = []
            for item in (self._document_value(stack, item) for item in node):
                # An intrinsic giving a list inside a list (Fn::Split in a Resource list) adds its elements.
                items += item if isinstance(item, list) else [] if item is NO_VALUE else [item]
            return items
        return node

    # --- Ref, parameters, pseudo parameters ----------------------------------------------------------------------

    def _ref(self, stack: AssemblyStack, name: Any) -> Value:
        # CFN intrinsic-function-reference-ref: "When you specify a parameter's logical name, it returns the value
        # of the parameter"; for a resource, "the documentation for that resource" (the mode's to derive).
        if not isinstance(name, str):
            return None
        if name.startswith("AWS::"):  # parameter names are alphanumeric, so "AWS::" is always a pseudo parameter
            return self.mode.pseudo(stack, name)
        parameter = (stack.template.get("Parameters") or {}).get(name)
        if parameter is not None:
            return self.mode.parameter(stack, name, parameter)
        return self._attribute(stack, name, None) if resource_of(stack, name) else self.mode.unknown(stack, name)

    # --- Fn::GetAtt ------------------------------------------------------------------------------------------------

    def _get_att(self, stack: AssemblyStack, argument: Any) -> str | None:
        # CFN intrinsic-function-reference-getatt: { "Fn::GetAtt" : [ "logicalNameOfResource", "attributeName" ] };
        # YAML's short form "!GetAtt logicalNameOfResource.attributeName" may arrive as one string.
        if isinstance(argument, str):
            logical_id, _, attribute = argument.partition(".")
        elif isinstance(argument, list) and len(argument) == 2:
            logical_id, attribute = argument[0], self._value(stack, argument[1])
        else:
            return None
        if not (isinstance(logical_id, str) and isinstance(attribute, str) and attribute):
            return None
        if not resource_of(stack, logical_id):
            return self.mode.unknown(stack, f"{logical_id}.{attribute}")
        return self._attribute(stack, logical_id, attribute)

    def _attribute(self, stack: AssemblyStack, logical_id: str, attribute: str | None) -> str | None:
        """Ref (attribute None) or Fn::GetAtt of a resource of ``stack``, as the mode derives it."""
        key = (stack.id, logical_id, attribute or "")
        if key in self._busy:  # a name built from its own resource's ARN: CloudFormation would refuse the cycle
            return None
        self._busy.add(key)
        try:
            return self.mode.resource(self, stack, logical_id, attribute)
        finally:
            self._busy.discard(key)

    # --- Fn::Join, Fn::Sub, Fn::Select, Fn::Split ----------------------------------------------------------------

    def _join(self, stack: AssemblyStack, argument: Any) -> str | None:
        # CFN intrinsic-function-reference-join: { "Fn::Join" : [ "delimiter", [ comma-delimited list of values ] ] },
        # "For the Fn::Join delimiter, you can't use any functions. You must specify a string value."
        if not (isinstance(argument, list) and len(argument) == 2 and isinstance(argument[0], str)):
            return None
        items = self._list(stack, argument[1])
        return argument[0].join(items) if items is not None else None

    def _sub(self, stack: AssemblyStack, argument: Any) -> str | None:
        # CFN intrinsic-function-reference-sub: { "Fn::Sub" : [ String, { Var1Name: Var1Value, ... } ] } or
        # { "Fn::Sub" : String }.
        if isinstance(argument, str):
            text, variables = argument, {}
        elif (
            isinstance(argument, list)
            and len(argument) == 2
            and isinstance(argument[0], str)
            and isinstance(argument[1], Mapping)
        ):
            text, variables = argument
        else:
            return None
        pieces, start = [], 0
        for variable in _SUB_VARIABLE.finditer(text):
            literal, name = variable.groups()
            value = "${" + name + "}" if literal else self._sub_variable(stack, name, variables)
            if not isinstance(value, str):
                return None
            pieces += [text[start : variable.start()], value]
            start = variable.end()
        return "".join(pieces) + text[start:]

    def _sub_variable(self, stack: AssemblyStack, name: str, variables: Mapping[str, Any]) -> Any:
        # CFN intrinsic-function-reference-sub: "If you specify template parameter names or resource logical IDs,
        # such as ${InstanceTypeParameter}, CloudFormation returns the same values as if you used the Ref intrinsic
        # function. If you specify resource attributes, such as ${MyInstance.PublicIp}, CloudFormation returns the
        # same values as if you used the Fn::GetAtt intrinsic function."
        if name in variables:
            return self._value(stack, variables[name])
        logical_id, dot, attribute = name.partition(".")
        if dot and resource_of(stack, logical_id):
            return self._attribute(stack, logical_id, attribute)
        return self._ref(stack, name)

    def _select(self, stack: AssemblyStack, argument: Any) -> str | None:
        # CFN intrinsic-function-reference-select: { "Fn::Select" : [ index, listOfObjects ] }, "This must be a value
        # from zero to N-1"; out of bounds "will result in a stack error".
        if not (isinstance(argument, list) and len(argument) == 2):
            return None
        index, items = self._value(stack, argument[0]), self._list(stack, argument[1])
        if not (isinstance(index, str) and index.isdigit() and items is not None and int(index) < len(items)):
            return None
        return items[int(index)]

    def _split(self, stack: AssemblyStack, argument: Any) -> list[str] | None:
        # CFN intrinsic-function-reference-split: { "Fn::Split" : [ "delimiter", "source string" ] }, "If you split a
        # string with consecutive delimiters, the resulting list will include an empty string"; the delimiter
        # "can't use any functions". Placeholders are not cut: "${AWS::AccountId}" holds "::".
        if not (isinstance(argument, list) and len(argument) == 2 and isinstance(argument[0], str) and argument[0]):
            return None
        source = self._value(stack, argument[1])
        return _split_outside_placeholders(source, argument[0]) if isinstance(source, str) else None

    # --- Fn::ImportValue, Fn::FindInMap, Fn::If, Fn::Base64 ------------------------------------------------------

    def _import_value(self, stack: AssemblyStack, argument: Any) -> str | list[str] | None:
        # CFN intrinsic-function-reference-importvalue: "returns the value of an output exported by another stack";
        # "For each AWS account, Export names must be unique within a region." An export no stack of the assembly
        # makes is the mode's to say.
        name = self._value(stack, argument)
        if not isinstance(name, str):
            return None
        exporter = self._exporter(stack, name)
        if exporter is None:
            return self.mode.imported(name)
        value = self._value(exporter[0], exporter[1].get("Value"))
        return value if isinstance(value, str | list) else None

    def _exporter(self, importer: AssemblyStack, name: str) -> tuple[AssemblyStack, Mapping[str, Any]] | None:
        """The (stack, output) exporting ``name``: in the importer's account and Region when several do."""
        if self._exports is None:
            self._exports = {}
            for stack in self.stacks:
                for output in (stack.template.get("Outputs") or {}).values():
                    export = self.resolve(stack, (output.get("Export") or {}).get("Name"))
                    if export is not None:
                        self._exports.setdefault(export, []).append((stack, output))
        candidates = self._exports.get(name, [])
        same_env = [
            found for found in candidates if (found[0].account, found[0].region) == (importer.account, importer.region)
        ]
        return (same_env or candidates or [None])[0]

    def _find_in_map(self, stack: AssemblyStack, argument: Any) -> str | list[str] | None:
        # CFN intrinsic-function-reference-findinmap: { "Fn::FindInMap" : [ "MapName", "TopLevelKey",
        # "SecondLevelKey"] } "returns the value corresponding to keys in a two-level map that's declared in the
        # Mappings section". (The four-argument DefaultValue form needs AWS::LanguageExtensions: undecided.)
        if not (isinstance(argument, list) and len(argument) == 3):
            return None
        keys = [self._value(stack, key) for key in argument]
        value: Any = stack.template.get("Mappings") or {}
        for key in keys:
            value = value.get(key) if isinstance(key, str) and isinstance(value, Mapping) else None
        result = self._value(stack, value) if value is not None else None
        return result if isinstance(result, str | list) else None

    def _if(self, stack: AssemblyStack, argument: Any) -> Any:
        # CFN intrinsic-function-reference-conditions: "Fn::If": [condition_name, value_if_true, value_if_false].
        if not (isinstance(argument, list) and len(argument) == 3 and isinstance(argument[0], str)):
            return None
        decided = self._condition(stack, argument[0])
        if decided is not None:
            return self._value(stack, argument[1] if decided else argument[2])
        when_true, when_false = self._value(stack, argument[1]), self._value(stack, argument[2])
        return when_true if when_true == when_false else None

    def _condition(self, stack: AssemblyStack, name: str) -> bool | None:
        key = (stack.id, "Conditions", name)
        if key in self._busy:
            return None
        self._busy.add(key)
        try:
            return self._truth(stack, (stack.template.get("Conditions") or {}).get(name))
        finally:
            self._busy.discard(key)

    def _truth(self, stack: AssemblyStack, node: Any) -> bool | None:
        """A condition, True/False when decidable from known text, None otherwise (three-valued And/Or/Not)."""
        if not (isinstance(node, Mapping) and len(node) == 1):
            return None
        ((function, argument),) = node.items()
        if function == "Condition":
            return self._condition(stack, argument) if isinstance(argument, str) else None
        if not isinstance(argument, list):
            return None
        if function == "Fn::Equals" and len(argument) == 2:
            return _equals(self._value(stack, argument[0]), self._value(stack, argument[1]))
        values = [self._truth(stack, item) for item in argument]
        if function == "Fn::Not" and len(values) == 1:
            return None if values[0] is None else not values[0]
        if function == "Fn::And":
            return False if False in values else True if all(values) else None
        if function == "Fn::Or":
            return True if True in values else False if values and all(v is False for v in values) else None
        return None

    def _base64(self, stack: AssemblyStack, argument: Any) -> str | None:
        # CFN Fn::Base64 "returns the Base64 representation of the input string": decidable for literal text only.
        text = self._value(stack, argument)
        return base64.b64encode(text.encode()).decode() if isinstance(text, str) and "${" not in text else None


# --- helpers ---------------------------------------------------------------------------------------------------------


def _is_intrinsic(node: Any) -> bool:
    # CFN intrinsic function reference: every function is written { "Fn::<Name>" : ... } or { "Ref" : ... }.
    return (
        isinstance(node, Mapping)
        and len(node) == 1
        and (next(iter(node)) == "Ref" or next(iter(node)).startswith("Fn::"))
    )


def resource_of(stack: AssemblyStack, logical_id: str) -> Mapping[str, Any] | None:
    resource = (stack.template.get("Resources") or {}).get(logical_id)
    return resource if isinstance(resource, Mapping) else None


def _equals(left: Any, right: Any) -> bool | None:
    # Equal text is the same value; different text is only different when no placeholder could be either.
    if not (isinstance(left, str) and isinstance(right, str)):
        return None
    if left == right:
        return True
    return None if "${" in left or "${" in right else False


def _split_outside_placeholders(text: str, delimiter: str) -> list[str]:
    parts, current, index = [], "", 0
    while index < len(text):
        end = text.find("}", index) if text.startswith("${", index) else -1
        if end != -1:
            current, index = current + text[index : end + 1], end + 1
        elif text.startswith(delimiter, index):
            parts, current, index = [*parts, current], "", index + len(delimiter)
        else:
            current, index = current + text[index], index + 1
    return [*parts, current]
