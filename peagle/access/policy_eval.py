"""IAM policy evaluation for one same-account request: may this principal do this action on this resource?

The runtime-access check derives requests from a synthesized template (the SageMaker execution role
reading ``s3:GetObject`` on a model file over TLS, pulling from ECR, decrypting with a KMS key) and asks
``evaluate`` whether the role's identity policies and the resource's policy allow each one, the way IAM
decides a request within one account. A refused request comes back as a ``Decision`` whose ``explain()``
names the principal, action, resource and the statements that decided.

Why not a library: none of the PyPI candidates evaluates a request against a context (each read from a
scratch download, outside the project venv): policyuniverse 1.5.1.20231109 parses, expands and summarises
policies (``whos_allowed``, ``is_internet_accessible``) but has no request evaluation; parliament 1.6.4
is a linter whose ``get_allowed_resources`` skips every Deny that has a Condition, never evaluates a
condition, and reads only ``Action`` (a ``NotAction`` statement raises KeyError in
``get_allowed_actions``); policy_sentry 0.15.2 writes policies from the IAM action database;
cloudsplaining 0.9.1 flags risky expanded actions; policyglass 0.8.0 (last release January 2022) computes
effective-permission shards with conditions kept as symbols, never decided against values, and matches
with ``fnmatch`` (``[...]`` becomes a character class, which IAM does not have); iam-ape 1.1.6 (GPL-3.0,
needs boto3, requests, bs4) merges an account authorization report into one effective policy, conditions
merged not evaluated; aws-iam-tester 1.1.0 calls the live ``SimulatePrincipalPolicy`` API, which needs
credentials and a deployed account. So this is written here, small, each rule with its primary source
quoted beside it.

What it implements (sources beside the code):
- Explicit Deny in any policy wins; within one account an Allow in the identity policies OR the resource
  policy suffices; nothing allowing is an implicit deny.
- ``resource_policy_must_allow`` (KMS keys): the key policy must allow the principal, or allow its account
  (``arn:aws:iam::<acct>:root`` or ``<acct>``), which delegates to IAM: then an identity policy must allow.
- Action/NotAction (case-insensitive), Resource/NotResource (case-sensitive), ``*`` and ``?`` wildcards;
  a resource-policy statement with neither Resource nor NotResource applies to its own resource.
- Principal/NotPrincipal in resource policies: ``*``, ``{"AWS": "*"}``, exact ARNs, accounts (which delegate
  to identity policies for an Allow, and cover every principal of that account for a Deny), and any other
  kind (``Service``, ``Federated``...) compared as exact text, so a service never matches a role.
- Condition: String*, Arn*, Bool, Null, Numeric* with ``IfExists`` and ``ForAllValues:``/``ForAnyValue:``.

Deliberately left out: cross-account requests (an account other than the principal's is simply not
matched), permission boundaries, SCPs/RCPs, session policies, KMS grants, VPC endpoint policies; Date*,
IpAddress, NotIpAddress and BinaryEquals (each raises ValueError naming it). Policy variables such as
``${aws:username}`` are NOT substituted: every ``${...}`` stays literal text, which is exactly what the
template's unresolved placeholders (``${ArtifactsBucket.Arn}``) need; only IAM's escapes ``${*}``, ``${?}``,
``${$}`` stand for the literal character. The principal is taken as given (a role ARN): an assumed-role
session ARN is not derived from it.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

Reason = Literal["explicit-deny", "allow", "implicit-deny", "key-policy-does-not-allow"]
PrincipalMatch = Literal["direct", "account"] | None


@dataclass(frozen=True)
class Request:
    principal: str  # caller's ARN; placeholders such as "${Role.Arn}" are literal text
    action: str  # "s3:GetObject"; IAM action names are case-insensitive
    resource: str  # ARN, matched case-sensitively; placeholders are literal text
    context: Mapping[str, Any] = field(default_factory=dict)  # condition key -> str | bool | number | list
    principal_account: str | None = None  # for resource policies that name "<acct>" or its root ARN

    def account(self) -> str | None:
        """The principal's account: the one given, else the account field of its ARN."""
        if self.principal_account is not None:
            return self.principal_account
        parts = arn_parts(self.principal)
        return parts[4] if parts and parts[4] else None


@dataclass(frozen=True)
class Policy:
    source: str  # for messages: "AWS::IAM::Policy RolePolicyABC", "bucket policy of ArtifactsBucket"
    document: Mapping[str, Any]  # IAM policy JSON; Statement a dict or a list


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
class Decision:
    allowed: bool
    reason: Reason
    deciding: tuple[StatementRef, ...]  # the matching Denies, or the matching Allows; () for implicit deny
    request: Request | None = None
    delegated_by: tuple[StatementRef, ...] = ()  # resource-policy Allows to the principal's account
    consulted: tuple[str, ...] = ()  # sources of every policy evaluated, for an implicit deny's message

    def explain(self) -> str:
        """One line saying who was refused (or allowed) what, why, and what to change."""
        request = self.request or Request("<principal>", "<action>", "<resource>")
        asked = f"{request.principal} -> {request.action} on {request.resource}{_context_text(request.context)}"
        statements = "; ".join(str(ref) for ref in self.deciding)
        if self.reason == "allow":
            return f"ALLOWED: {asked}, by {statements}"
        if self.reason == "explicit-deny":
            return f"DENIED: {asked}: explicitly denied by {statements}; a Deny wins over every Allow"
        if self.reason == "key-policy-does-not-allow":
            return (
                f"DENIED: {asked}: the key policy neither allows this principal nor its account "
                f"(arn:aws:iam::<account>:root), so IAM policies cannot grant it (consulted: {', '.join(self.consulted)}): "
                f"add it to the key policy"
            )
        consulted = ", ".join(self.consulted) or "no policy"
        if self.delegated_by:
            delegating = "; ".join(str(ref) for ref in self.delegated_by)
            return (
                f"DENIED: {asked}: {delegating} delegates to IAM, but no identity policy allows it "
                f"(consulted: {consulted}): add an Allow to the principal's policy"
            )
        return f"DENIED: {asked}: no statement allows it (consulted: {consulted}): add an Allow for it"


def evaluate(
    request: Request,
    identity_policies: Sequence[Policy] = (),
    resource_policy: Policy | None = None,
    *,
    resource_policy_must_allow: bool = False,
) -> Decision:
    """Decide ``request`` as IAM does within one account (see the module docstring for the scope)."""
    identity = [
        ref
        for policy in identity_policies
        for ref, statement in _statements(policy)
        if _statement_applies(ref, statement, request, in_resource_policy=False)
    ]
    resource: list[tuple[StatementRef, PrincipalMatch]] = []
    for ref, statement in _statements(resource_policy) if resource_policy else []:
        principal = _principal_match(ref, statement, request)
        applies = _statement_applies(ref, statement, request, in_resource_policy=True)
        if principal and applies:
            resource.append((ref, principal))
    consulted = tuple(policy.source for policy in identity_policies) + (
        (resource_policy.source,) if resource_policy else ()
    )
    # "An explicit deny in any of the policies overrides the allow." (IAM User Guide, Policy evaluation
    # for requests within a single account). A Deny naming the account covers every principal in it.
    denies = tuple(ref for ref in identity if ref.effect == "Deny")
    denies += tuple(ref for ref, _ in resource if ref.effect == "Deny")
    if denies:
        return Decision(False, "explicit-deny", denies, request, consulted=consulted)
    identity_allows = tuple(identity)
    direct = tuple(ref for ref, match in resource if match == "direct")
    delegating = tuple(ref for ref, match in resource if match == "account")
    if resource_policy_must_allow:
        return _key_policy_decision(request, identity_allows, direct, delegating, consulted)
    # "If either the identity-based policy or the resource-based policy within the same account allows the
    # request and the other doesn't, the request is still allowed." (same page). An Allow to the account
    # only delegates to the identity policies, so it adds nothing of its own here.
    if identity_allows or direct:
        return Decision(True, "allow", identity_allows + direct, request, consulted=consulted)
    return Decision(False, "implicit-deny", (), request, delegating, consulted)


def _key_policy_decision(
    request: Request,
    identity_allows: tuple[StatementRef, ...],
    direct: tuple[StatementRef, ...],
    delegating: tuple[StatementRef, ...],
    consulted: tuple[str, ...],
) -> Decision:
    # AWS KMS, Key policies in AWS KMS: "Unless the key policy explicitly allows it, you cannot use IAM
    # policies to allow access to a KMS key. Without permission from the key policy, IAM policies that allow
    # permissions have no effect." Default key policy: its one statement "gives the AWS account that owns
    # the KMS key permission to use IAM policies to allow access to all AWS KMS operations on the KMS key".
    if direct:
        return Decision(True, "allow", direct, request, consulted=consulted)
    if not delegating:
        return Decision(False, "key-policy-does-not-allow", (), request, consulted=consulted)
    if identity_allows:
        return Decision(True, "allow", delegating + identity_allows, request, consulted=consulted)
    return Decision(False, "implicit-deny", (), request, delegating, consulted)


def _statements(policy: Policy) -> list[tuple[StatementRef, Mapping[str, Any]]]:
    raw = policy.document.get("Statement", [])
    statements = [raw] if isinstance(raw, Mapping) else list(raw)
    refs = []
    for index, statement in enumerate(statements):
        effect = statement.get("Effect")
        if effect not in ("Allow", "Deny"):
            raise ValueError(f'{policy.source} statement #{index}: Effect must be "Allow" or "Deny", not {effect!r}')
        refs.append((StatementRef(policy.source, statement.get("Sid"), index, effect), statement))
    return refs


def _statement_applies(
    ref: StatementRef, statement: Mapping[str, Any], request: Request, *, in_resource_policy: bool
) -> bool:
    actions = _element(ref, statement, "Action", "NotAction")
    if actions is None:
        raise ValueError(f"{ref}: has neither Action nor NotAction")
    resources = _element(ref, statement, "Resource", "NotResource")
    if resources is None and not in_resource_policy:
        # "Statements must include either a Resource or a NotResource element." (IAM, Resource element)
        raise ValueError(f"{ref}: an identity-policy statement needs Resource or NotResource")
    # Conditions are decided even when the action or resource already misses, so that a policy's unknown
    # operator is reported whatever the request.
    conditions_hold = _conditions_hold(ref, statement.get("Condition", {}), request.context)
    # NotAction "explicitly matches everything except the specified list of actions"; NotResource
    # "explicitly matches every resource except those specified" (IAM, NotAction / NotResource elements).
    patterns, negated = actions
    action_matches = any(wildcard_match(p.lower(), request.action.lower()) for p in patterns) != negated
    resource_matches = True  # no Resource/NotResource: only in a resource policy, meaning the resource it is on
    if resources is not None:
        patterns, negated = resources
        resource_matches = any(wildcard_match(p, request.resource) for p in patterns) != negated
    return action_matches and resource_matches and conditions_hold


def _element(
    ref: StatementRef, statement: Mapping[str, Any], name: str, not_name: str
) -> tuple[list[str], bool] | None:
    """(values, negated) of ``name`` or ``not_name``; None when the statement has neither."""
    if name in statement and not_name in statement:
        raise ValueError(f"{ref}: has both {name} and {not_name}; a statement takes one")
    if name in statement:
        return _strings(ref, name, statement[name]), False
    if not_name in statement:
        return _strings(ref, not_name, statement[not_name]), True
    return None


def _strings(ref: StatementRef, name: str, value: Any) -> list[str]:
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{ref}: {name} must be a string or a list of strings (render intrinsics first): {value!r}")
    return values


# ---- Principal / NotPrincipal ------------------------------------------------------------------------


def _principal_match(ref: StatementRef, statement: Mapping[str, Any], request: Request) -> PrincipalMatch:
    if "Principal" in statement:
        return _named_principal(ref, statement["Principal"], request)
    if "NotPrincipal" not in statement:
        raise ValueError(f"{ref}: a resource-policy statement needs Principal or NotPrincipal")
    # "NotPrincipal must be used with "Effect":"Deny". Using it with "Effect":"Allow" is not supported."
    if ref.effect != "Deny":
        raise ValueError(f"{ref}: NotPrincipal with Allow is not supported by IAM")
    return None if _spared_by_not_principal(ref, statement["NotPrincipal"], request) else "direct"


def _named_principal(ref: StatementRef, element: Any, request: Request) -> PrincipalMatch:
    if element == "*":  # "Principal": "*" is everyone, like {"AWS": "*"}
        return "direct"
    if not isinstance(element, Mapping):
        raise ValueError(f"{ref}: Principal must be \"*\" or a mapping such as {{'AWS': ...}}: {element!r}")
    found: PrincipalMatch = None
    for kind, values in element.items():
        for value in _strings(ref, f"Principal {kind}", values):
            match = (
                _aws_principal(value, request) if kind == "AWS" else ("direct" if value == request.principal else None)
            )
            if match == "direct":
                return "direct"
            found = found or match
    return found


def _aws_principal(value: str, request: Request) -> PrincipalMatch:
    # Principal element, AWS account principals: "you can use the account ARN (arn:aws:iam::account-ID:root),
    # or a shortened form ... The account ARN and the shortened account ID behave the same way. Both delegate
    # permissions to the account. Using the account ARN in the Principal element does not limit permissions
    # to only the root user of the account." Wildcards are not patterns here: only "*" alone.
    if value in ("*", request.principal):
        return "direct"
    account = named_account(value)
    return "account" if account is not None and account == request.account() else None


def _spared_by_not_principal(ref: StatementRef, element: Any, request: Request) -> bool:
    # NotPrincipal: "When you use NotPrincipal, you must also specify the account ARN of the not-denied
    # principal. Otherwise, the policy might deny access to the entire account containing the principal."
    # So a principal is spared only when its ARN and its account are both listed.
    if element == "*":
        return True
    if not isinstance(element, Mapping):
        raise ValueError(f'{ref}: NotPrincipal must be "*" or a mapping: {element!r}')
    listed = {value for kind, values in element.items() for value in _strings(ref, f"NotPrincipal {kind}", values)}
    if "*" in listed:
        return True
    if request.principal not in listed:
        return False
    if not request.principal.startswith("arn:"):  # a service or other non-ARN principal has no account
        return True
    account = request.account()
    return account is not None and any(named_account(value) == account for value in listed)


def named_account(value: str) -> str | None:
    """The account a principal value names: "123456789012" or "arn:<partition>:iam::123456789012:root"."""
    if re.fullmatch(r"\d{12}", value):
        return value
    parts = arn_parts(value)
    if parts and parts[2] == "iam" and parts[5] == "root" and parts[4]:
        return parts[4]
    return None


# ---- Condition ---------------------------------------------------------------------------------------


def _conditions_hold(ref: StatementRef, block: Mapping[str, Any], context: Mapping[str, Any]) -> bool:
    # "Condition key names are not case-sensitive." (IAM, Condition element). Several operators, and several
    # keys under one operator, AND (Conditions with multiple context keys or values). Every operator is
    # parsed before any is decided, so an unknown one is reported even where an earlier one already fails.
    if not isinstance(block, Mapping) or not all(isinstance(keys, Mapping) for keys in block.values()):
        raise ValueError(f"{ref}: Condition must map operators to {{condition key: values}}: {block!r}")
    by_key = {str(key).lower(): value for key, value in context.items()}
    results = [
        _condition_holds(ref, op_name, _condition_values(ref, op_name, values), _context_values(by_key, key))
        for op_name, keys in block.items()
        for key, values in keys.items()
    ]
    return all(results)


def _condition_holds(ref: StatementRef, op_name: str, policy_values: list[str], present: list[str] | None) -> bool:
    qualifier, base, if_exists = _parse_operator(ref, op_name)
    if base == "Null":
        # "use either true (the key doesn't exist — it is null) or false (the key exists and its value is
        # not null)." (Condition operators, Condition operator to check existence of condition keys)
        return any((value.lower() == "true") == (present is None) for value in policy_values)
    # ...IfExists: "If the key is not present, evaluate the condition element as true."
    if present is None and if_exists:
        return True
    compare, negated = _OPERATORS[base]

    def holds_for(value: str) -> bool:
        # One context value against the policy's values: OR for a positive operator, NOR for a negated one
        # ("If a single negated matching condition operator includes multiple values for a context key,
        # those values are evaluated using a logical NOR.")
        return any(compare(policy_value, value) for policy_value in policy_values) != negated

    if qualifier == "ForAllValues":
        # "The ForAllValues qualifier returns true if there are no context keys in the request or if the
        # context key value resolves to a null dataset, such as an empty string." (Condition operators; the
        # same page's wildcard table shows one ForAllValues:StringNotLike row the other way, the multivalued
        # examples page agrees with this sentence, which is what is implemented)
        return all(holds_for(value) for value in present or [])
    if qualifier == "ForAnyValue":
        # ForAnyValue: "For no matching context key or a null dataset, the condition returns false."
        return any(holds_for(value) for value in present or [])
    if present is None:
        # "If the key that you specify in a policy condition is not present in the request context, the
        # values do not match and the condition is false. If the policy condition requires that the key is
        # not matched, such as StringNotLike or ArnNotLike, and the right key is not present, the condition
        # is true." (Condition operators, Important)
        return negated
    return any(compare(p, v) for p in policy_values for v in present) != negated


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
    texts = [_text(value) for value in listed]
    if op_name == "Null" and any(text.lower() not in ("true", "false") for text in texts):
        raise ValueError(f"{ref}: Null takes true or false, not {values!r}")
    return texts


def _context_values(by_key: Mapping[str, Any], key: str) -> list[str] | None:
    """The request's values for ``key`` as text; None when the key is absent from the context."""
    value = by_key.get(key.lower())
    if value is None:
        return None
    return [_text(item) for item in value] if isinstance(value, list | tuple) else [_text(value)]


def _text(value: Any) -> str:
    """JSON scalars as IAM reads them: booleans "true"/"false", numbers as written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _numeric(compare: Callable[[float, float], bool]) -> Callable[[str, str], bool]:
    def holds(policy_value: str, value: str) -> bool:
        wanted, got = _number(policy_value), _number(value)
        if wanted is None:
            raise ValueError(f"numeric condition value {policy_value!r} is not a number")
        return got is not None and compare(got, wanted)

    return holds


def _arn_like(pattern: str, value: str) -> bool:
    # ArnEquals/ArnLike: "Each of the six colon-delimited components of the ARN is checked separately and
    # each can include multi-character match wildcards (*) or single-character match wildcards (?)."
    pattern_parts, value_parts = arn_parts(pattern), arn_parts(value)
    if pattern_parts is None or value_parts is None:
        return wildcard_match(pattern, value)
    return all(wildcard_match(p, v) for p, v in zip(pattern_parts, value_parts, strict=True))


# compare(policy_value, context_value), negated. "ArnEquals and ArnLike condition operators behave
# identically"; StringEquals is exact and case-sensitive, StringLike takes * and ? (Condition operators).
_OPERATORS: dict[str, tuple[Callable[[str, str], bool], bool]] = {
    "StringEquals": (operator.eq, False),
    "StringNotEquals": (operator.eq, True),
    "StringEqualsIgnoreCase": (lambda p, v: p.casefold() == v.casefold(), False),
    "StringNotEqualsIgnoreCase": (lambda p, v: p.casefold() == v.casefold(), True),
    "StringLike": (lambda p, v: wildcard_match(p, v), False),
    "StringNotLike": (lambda p, v: wildcard_match(p, v), True),
    "ArnEquals": (_arn_like, False),
    "ArnLike": (_arn_like, False),
    "ArnNotEquals": (_arn_like, True),
    "ArnNotLike": (_arn_like, True),
    "Bool": (lambda p, v: p.lower() == v.lower(), False),
    "NumericEquals": (_numeric(operator.eq), False),
    "NumericNotEquals": (_numeric(operator.eq), True),
    "NumericLessThan": (_numeric(operator.lt), False),
    "NumericLessThanEquals": (_numeric(operator.le), False),
    "NumericGreaterThan": (_numeric(operator.gt), False),
    "NumericGreaterThanEquals": (_numeric(operator.ge), False),
}


# ---- Wildcards and ARNs ------------------------------------------------------------------------------

# "*" any run of characters, "?" one character. In Resource "The asterisk (*) character can expand to
# replace everything within a segment, including characters like a forward slash (/)" and "If the * wildcard
# is the last character of a resource ARN segment, it can expand to match beyond the colon boundaries"
# (IAM, Resource element): here "*" crosses ":" wherever it stands, which only differs for a "*" in the
# middle of a non-final segment. "${*}", "${?}", "${$}" are IAM's escapes for the literal characters
# (IAM, Policy variables, Specifying special characters); every other "${...}" stays literal text.
_WILDCARD_TOKEN = re.compile(r"\$\{[*?$]\}|[*?]")


@lru_cache(maxsize=4096)
def _wildcard_regex(pattern: str) -> re.Pattern[str]:
    pieces, start = [], 0
    for token in _WILDCARD_TOKEN.finditer(pattern):
        pieces.append(re.escape(pattern[start : token.start()]))
        text = token.group()
        pieces.append(".*" if text == "*" else "." if text == "?" else re.escape(text[2]))
        start = token.end()
    pieces.append(re.escape(pattern[start:]))
    return re.compile("".join(pieces), re.DOTALL)


def wildcard_match(pattern: str, value: str) -> bool:
    """IAM's * and ? matching of the whole ``value``, case-sensitive (lower both sides for actions)."""
    return _wildcard_regex(pattern).fullmatch(value) is not None


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


def _context_text(context: Mapping[str, Any]) -> str:
    if not context:
        return ""
    shown = ", ".join(f"{key}={_text(value)}" for key, value in context.items())
    return f" with context {{{shown}}}"
