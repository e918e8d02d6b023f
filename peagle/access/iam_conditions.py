"""IAM's Condition element, policy variables, wildcards and ARN matching: the part of the policy evaluator
(peagle/access/policy_eval.py, whose docstring lists the sources and what is left out) that decides whether one
statement's strings and conditions match one request.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


class NotDecidable(ValueError):
    """IAM's documentation does not settle the outcome: report the request as not checked."""


@dataclass(frozen=True)
class StatementRef:
    source: str
    sid: str | None
    index: int
    effect: str

    def __str__(self) -> str:
        name = f"Sid {self.sid!r}" if self.sid else f"statement #{self.index}"
        return f"{self.effect} {name} of {self.source}"


@dataclass(frozen=True)
class Scope:
    """One statement being decided for one request: where it is, the request context, its policy's Version."""

    ref: StatementRef
    context: Mapping[str, Any]  # lower-cased key -> value, or Unknown
    variables: bool


@dataclass(frozen=True)
class Unknown:
    """A key IAM documents in this request whose value cannot be known here."""

    why: str


# Principal element, AWS service principals: "The identifier for a service principal includes the service
# name, and is usually in the following format: service-name.amazonaws.com" (Regional ones add the Region).


# ---- Policy variables -----------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\$\{([^{}]*)\}")
# An IAM policy variable: a condition key (a service prefix, a colon, a name, then optionally "/" or ":" and
# more, as in "aws:PrincipalTag/team" or "kms:EncryptionContext:user") and an optional default. Variables page, Specifying default values: "surround the default value with
# single quotes (' '), and separate the variable text and the default value with a comma and space (, )":
# "${aws:PrincipalTag/team, 'company-wide'}". "${AWS::Region}", "${Fn::ImportValue:x}", "${stack/Id.Attr}" and
# "${?unresolved}" are not of this form and stay literal text.
_VARIABLE = re.compile(r"\s*(?P<key>[A-Za-z0-9-]+:[A-Za-z0-9_.-]+(?:[:/][^,']*)?)\s*(?:,\s*'(?P<default>[^']*)'\s*)?")
_ESCAPES = {"*": "*", "?": "?", "$": "$"}


def _variable(placeholder_body: str) -> re.Match[str] | None:
    return _VARIABLE.fullmatch(placeholder_body)


def check_resource_variables(ref: StatementRef, pattern: str) -> None:
    # Variables page, Resource element: "You can use a policy variable in the Resource element, but only in the
    # resource portion of the ARN. This portion of the ARN appears after the fifth colon (:). You can't use a
    # variable to replace parts of the ARN before the fifth colon, such as the service or account."
    parts = arn_parts(pattern)
    head = parts[:5] if parts else [pattern]
    if any(_has_variable(part) for part in head):
        raise ValueError(
            f"{ref}: Resource {pattern!r} uses a policy variable before the ARN's fifth colon; IAM allows one only "
            f"in the resource part (IAM policy elements: Variables, Resource element)"
        )


def substitute(scope: Scope, text: str, *, wildcards: bool) -> str | None:
    """``text`` with its policy variables replaced from the request; None when one has no value.

    Variables page, Policy variables with no value: "When policy variables reference a condition context key
    that has no value or is not present in an authorization context for a request, the value is effectively
    null. There is no equal or like value." Key names are case-insensitive ("aws:CurrentTime is equivalent to
    AWS:currenttime").
    """
    null = False

    def replace(match: re.Match[str]) -> str:
        nonlocal null
        variable = _variable(match.group(1))
        if variable is None:  # an escape (kept for the matcher) or a template placeholder: literal text
            return match.group(0)
        value = _variable_value(scope, variable.group("key"), wildcards)
        if value is None:
            value = variable.group("default")
        if value is None:
            null = True
            return ""
        return value

    substituted = _PLACEHOLDER.sub(replace, text)
    return None if null else substituted


def _variable_value(scope: Scope, key: str, wildcards: bool) -> str | None:
    value = scope.context.get(key.strip().lower())
    where = f"{scope.ref}: policy variable ${{{key}}}"
    if isinstance(value, Unknown):
        raise NotDecidable(f"{where}: {value.why}")
    if isinstance(value, list | tuple):
        # "You can use any single-valued condition key as a variable. You can't use a multivalued condition key
        # as a variable." (Variables page)
        raise NotDecidable(f"{where}: the request gives it several values, and a multivalued key is no variable")
    if value is None:
        return None
    text = text_of(value)
    if text == "":
        raise NotDecidable(f"{where}: the request gives it an empty value, which IAM does not say is 'no value'")
    if wildcards and re.search(r"[*?]", _PLACEHOLDER.sub("", text)):
        raise NotDecidable(
            f"{where}: its value {text!r} holds * or ?, and IAM does not say whether they match as wildcards"
        )
    return text


def _unescape(text: str) -> str:
    """IAM's predefined variables for special characters, as the characters (for exact comparisons)."""
    # Variables page, Special characters: "${*} - use where you need an * (asterisk) character. ${?} - ... a ?
    # (question mark) character. ${$} - ... a $ (dollar sign) character."
    return _PLACEHOLDER.sub(lambda match: _ESCAPES.get(match.group(1), match.group(0)), text)


# ---- Condition ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Condition:
    qualifier: str  # "", "ForAllValues", "ForAnyValue"
    base: str  # "StringEquals", "Null", ...
    if_exists: bool
    key: str
    values: tuple[str, ...]


def parse_conditions(ref: StatementRef, block: Any, variables: bool) -> list[_Condition]:
    # "Condition key names are not case-sensitive." (IAM, Condition element). Several operators, and several
    # keys under one operator, AND (Conditions with multiple context keys or values). Every operator is
    # parsed before any is decided, so an unknown one is reported even where an earlier one already fails.
    if not isinstance(block, Mapping) or not all(isinstance(keys, Mapping) for keys in block.values()):
        raise ValueError(f"{ref}: Condition must map operators to {{condition key: values}}: {block!r}")
    conditions = []
    for op_name, keys in block.items():
        qualifier, base, if_exists = _parse_operator(ref, op_name)
        for key, values in keys.items():
            texts = _condition_values(ref, op_name, values)
            if variables:
                _check_condition_variables(ref, op_name, base, texts)
            conditions.append(_Condition(qualifier, base, if_exists, str(key), tuple(texts)))
    return conditions


def _has_variable(text: str) -> bool:
    return any(_variable(body) for body in _PLACEHOLDER.findall(text))


def _check_condition_variables(ref: StatementRef, op_name: str, base: str, values: list[str]) -> None:
    # Variables page: "You can use a policy variable for Condition values in any condition that involves the
    # string operators or the ARN operators. ... You can't use a policy variable with other operators, such as
    # Numeric, Date, Boolean, Binary, IP Address, or Null operators." Condition operators agrees for Numeric
    # ("Policy variables - Not supported") but says Boolean "Policy variables - Supported": a Bool condition
    # with a variable is NotDecidable when it is evaluated (_policy_values).
    if base.startswith(("String", "Arn", "Bool")) or not any(_has_variable(value) for value in values):
        return
    raise ValueError(f"{ref}: {op_name} takes no policy variable (IAM: only String and ARN operators do)")


def condition_holds(scope: Scope, condition: _Condition) -> bool:
    raw = scope.context.get(condition.key.lower())
    if isinstance(raw, Unknown):
        if condition.base == "Null":  # present, whatever its value
            return any(value.lower() == "false" for value in condition.values)
        raise NotDecidable(f"{scope.ref}: condition key {condition.key}: {raw.why}")
    present = _context_values(raw)
    # Condition operators: "To prevent missing context keys or context keys with empty values from evaluating
    # to true, you can include the Null condition operator in your policy with a false value to check if the
    # context key exists and its value is not null." An empty value is null to Null and to the set operators
    # ("resolves to a null dataset, such as an empty string").
    null = raw is None or raw == "" or (isinstance(raw, list | tuple) and not raw)
    if condition.base == "Null":
        # "use either true (the key doesn't exist — it is null) or false (the key exists and its value is not
        # null)." (Condition operators, Condition operator to check existence of condition keys)
        return any((value.lower() == "true") == null for value in condition.values)
    # ...IfExists: "If the key is not present, evaluate the condition element as true."
    if present is None and condition.if_exists:
        return True
    policy_values = _policy_values(scope, condition)
    compare, negated = _OPERATORS[condition.base]
    escapes = scope.variables

    def holds_for(value: str) -> bool:
        # One context value against the policy's values: OR for a positive operator, NOR for a negated one
        # ("If a single negated matching condition operator includes multiple values for a context key,
        # those values are evaluated using a logical NOR."). A null policy value matches nothing.
        return any(p is not None and compare(p, value, escapes) for p in policy_values) != negated

    if condition.qualifier == "ForAllValues":
        # "The ForAllValues qualifier returns true if there are no context keys in the request or if the
        # context key value resolves to a null dataset, such as an empty string." (Condition operators)
        return null or all(holds_for(value) for value in present or [])
    if condition.qualifier == "ForAnyValue":
        # ForAnyValue: "The condition returns true if any one of the context key values in the request matches
        # any one of the context key values in the policy. For no matching context key or if the key does not
        # exist, the condition returns false." (Single-valued vs. multivalued context keys)
        return not null and any(holds_for(value) for value in present or [])
    if present is None:
        # "If the key that you specify in a policy condition is not present in the request context, the
        # values do not match and the condition is false. If the policy condition requires that the key is
        # not matched, such as StringNotLike or ArnNotLike, and the right key is not present, the condition
        # is true." (Condition operators, Important)
        return negated
    return any(p is not None and compare(p, v, escapes) for p in policy_values for v in present) != negated


def _policy_values(scope: Scope, condition: _Condition) -> list[str | None]:
    """The condition's values with their policy variables substituted (None: a variable without a value)."""
    if not scope.variables:
        return list(condition.values)
    if condition.base == "Bool" and any(_has_variable(value) for value in condition.values):
        raise NotDecidable(
            f"{scope.ref}: Bool with a policy variable: IAM's pages disagree (Condition operators: Boolean "
            f"operators support policy variables; Variables and tags: they do not)"
        )
    wildcards = condition.base in _WILDCARD_OPERATORS
    values = [substitute(scope, value, wildcards=wildcards) for value in condition.values]
    # Wildcard operators keep IAM's escapes for the matcher; exact ones compare the characters they stand for.
    return [value if value is None or wildcards else _unescape(value) for value in values]


def _parse_operator(ref: StatementRef, op_name: str) -> tuple[str, str, bool]:
    qualifier, _, base = op_name.rpartition(":")
    if_exists = base.endswith("IfExists")
    base = base.removesuffix("IfExists")
    if qualifier not in ("", "ForAllValues", "ForAnyValue") or (base not in _OPERATORS and base != "Null"):
        supported = ", ".join([*_OPERATORS, "Null"])
        raise ValueError(
            f"{ref}: condition operator {op_name!r} is not one this evaluator knows "
            f"(supported: {supported}; each with IfExists and ForAllValues:/ForAnyValue:)"
        )
    if base == "Null" and (qualifier or if_exists):
        # "You can add IfExists to the end of any condition operator name except the Null condition"
        raise ValueError(f"{ref}: condition operator {op_name!r}: Null takes no IfExists and no set qualifier")
    return qualifier, base, if_exists


def _condition_values(ref: StatementRef, op_name: str, values: Any) -> list[str]:
    listed = values if isinstance(values, list) else [values]
    texts = [text_of(value) for value in listed]
    if op_name == "Null" and any(text.lower() not in ("true", "false") for text in texts):
        raise ValueError(f"{ref}: Null takes true or false, not {values!r}")
    return texts


def _context_values(value: Any) -> list[str] | None:
    """The request's values for a key as text; None when the key is absent from the context."""
    if value is None:
        return None
    return [text_of(item) for item in value] if isinstance(value, list | tuple) else [text_of(value)]


def text_of(value: Any) -> str:
    """JSON scalars as IAM reads them: booleans "true"/"false", numbers as written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _numeric(compare: Callable[[float, float], bool]) -> Callable[[str, str, bool], bool]:
    def holds(policy_value: str, value: str, escapes: bool) -> bool:
        wanted, got = _number(policy_value), _number(value)
        if wanted is None:
            raise ValueError(f"numeric condition value {policy_value!r} is not a number")
        return got is not None and compare(got, wanted)

    return holds


def _arn_like(pattern: str, value: str, escapes: bool) -> bool:
    # ArnEquals/ArnLike: "Each of the six colon-delimited components of the ARN is checked separately and
    # each can include multi-character match wildcards (*) or single-character match wildcards (?)."
    pattern_parts, value_parts = arn_parts(pattern), arn_parts(value)
    if pattern_parts is None or value_parts is None:
        return wildcard_match(pattern, value, escapes=escapes)
    return all(wildcard_match(p, v, escapes=escapes) for p, v in zip(pattern_parts, value_parts, strict=True))


def _exact(policy_value: str, value: str, escapes: bool) -> bool:
    return policy_value == value


def _ignoring_case(policy_value: str, value: str, escapes: bool) -> bool:
    return policy_value.casefold() == value.casefold()


def _like(pattern: str, value: str, escapes: bool) -> bool:
    return wildcard_match(pattern, value, escapes=escapes)


def _bool(policy_value: str, value: str, escapes: bool) -> bool:
    return policy_value.lower() == value.lower()


# compare(policy_value, context_value, escapes), negated. "ArnEquals and ArnLike condition operators behave
# identically"; StringEquals is exact and case-sensitive, StringLike takes * and ? (Condition operators).
_OPERATORS: dict[str, tuple[Callable[[str, str, bool], bool], bool]] = {
    "StringEquals": (_exact, False),
    "StringNotEquals": (_exact, True),
    "StringEqualsIgnoreCase": (_ignoring_case, False),
    "StringNotEqualsIgnoreCase": (_ignoring_case, True),
    "StringLike": (_like, False),
    "StringNotLike": (_like, True),
    "ArnEquals": (_arn_like, False),
    "ArnLike": (_arn_like, False),
    "ArnNotEquals": (_arn_like, True),
    "ArnNotLike": (_arn_like, True),
    "Bool": (_bool, False),
    "NumericEquals": (_numeric(operator.eq), False),
    "NumericNotEquals": (_numeric(operator.eq), True),
    "NumericLessThan": (_numeric(operator.lt), False),
    "NumericLessThanEquals": (_numeric(operator.le), False),
    "NumericGreaterThan": (_numeric(operator.gt), False),
    "NumericGreaterThanEquals": (_numeric(operator.ge), False),
}
_WILDCARD_OPERATORS = {"StringLike", "StringNotLike", "ArnEquals", "ArnLike", "ArnNotEquals", "ArnNotLike"}


# ---- Wildcards and ARNs ------------------------------------------------------------------------------

# "*" any run of characters, "?" one character. In Resource "The asterisk (*) character can expand to
# replace everything within a segment, including characters like a forward slash (/)" and "If the * wildcard
# is the last character of a resource ARN segment, it can expand to match beyond the colon boundaries"
# (IAM, Resource element): here "*" crosses ":" wherever it stands, which only differs for a "*" in the
# middle of a non-final segment. "${*}", "${?}", "${$}" are IAM's escapes for the literal characters
# (IAM, Policy variables, Specifying special characters); every other "${...}" stays literal text.
_WILDCARD_TOKEN = re.compile(r"\$\{[*?$]\}|[*?]")
_BARE_WILDCARD = re.compile(r"[*?]")


@lru_cache(maxsize=4096)
def _wildcard_regex(pattern: str, escapes: bool) -> re.Pattern[str]:
    pieces, start = [], 0
    for token in (_WILDCARD_TOKEN if escapes else _BARE_WILDCARD).finditer(pattern):
        pieces.append(re.escape(pattern[start : token.start()]))
        text = token.group()
        pieces.append(".*" if text == "*" else "." if text == "?" else re.escape(text[2]))
        start = token.end()
    pieces.append(re.escape(pattern[start:]))
    return re.compile("".join(pieces), re.DOTALL)


def wildcard_match(pattern: str, value: str, *, escapes: bool = True) -> bool:
    """IAM's * and ? matching of the whole ``value``, case-sensitive (lower both sides for actions).

    ``escapes``: read ``${*}``, ``${?}``, ``${$}`` as the literal characters (policies of Version 2012-10-17).
    """
    return _wildcard_regex(pattern, escapes).fullmatch(value) is not None


def arn_parts(text: str) -> list[str] | None:
    """The six parts of an ARN (the resource keeps its own colons), or None if ``text`` is not an ARN.

    A "${...}" placeholder is one piece of text, colons and all: "arn:${AWS::Partition}:iam::..." splits as
    CloudFormation will resolve it.
    """
    parts, start, depth, index = [], 0, 0, 0
    while index < len(text) and len(parts) < 5:
        if text.startswith("${", index):
            depth, index = depth + 1, index + 2
            continue
        if text[index] == "}" and depth:
            depth -= 1
        elif text[index] == ":" and not depth:
            parts.append(text[start:index])
            start = index + 1
        index += 1
    parts.append(text[start:])
    return parts if len(parts) == 6 and parts[0] == "arn" else None
