"""IAM policy evaluation for one same-account request: may this principal do this action on this resource?

The runtime-access check derives requests from a synthesized template (the SageMaker execution role
reading ``s3:GetObject`` on a model file over TLS, pulling from ECR, decrypting with a KMS key) and asks
``evaluate`` whether the role's identity policies and the resource's policy allow each one, the way IAM
decides a request within one account. A refused request comes back as a ``Decision`` whose ``explain()``
names the principal, action, resource and the statements that decided. A request whose outcome IAM's
documentation does not settle raises ``NotDecidable`` (a ValueError naming what is missing): the caller
reports it as not checked, never as granted or denied.

Tested against 80 cases taken from IAM's and KMS's documentation (tests/access/iam_corpus.py, each citing
its page): the evaluator before issue 43 (commit ffe975c) decided 62 of them right; this one decides all 80.

Libraries compared (each installed in a scratch environment outside the project venv and, where it can
decide a request offline, run on the same corpus; "right" means the same allowed/denied answer):
- @cloud-copilot/iam-simulate 0.1.173 (npm, released 2026, AGPL-3.0-or-later), a full offline simulator
  (identity, resource, SCP/RCP policies, boundaries, every operator): 67/80. It puts none of the keys every
  request carries in the context (its README: "Coming Soon ... Automatically populating context keys from the
  request such as aws:PrincipalServiceName"), so 9 cases on aws:PrincipalArn, aws:PrincipalAccount,
  aws:PrincipalIsAWSService, aws:PrincipalServiceName, aws:username and kms:CallerAccount go wrong; it also
  reads ForAllValues over "" as false, does not let StringNotEquals match a variable without a value ("Inverted
  condition operators like StringNotEquals or StringNotLike do match against a null value"), substitutes
  variables in Version 2008-10-17 policies, and applies a key-policy statement without Resource.
  Not used: AGPL-3.0, and a Node runtime in the check's path.
- principalmapper 1.1.5 (PyPI, last release January 2022, AGPL-3.0): as shipped it does not import on Python
  3.10+ ("cannot import name 'Mapping' from 'collections'"); with that patched in a scratch copy,
  ``local_check_authorization_full`` decides 66/80: it infers aws:PrincipalArn, aws:PrincipalAccount and
  aws:username, but matches Resource case-insensitively, substitutes no variable in conditions and takes no
  default value, adds no service-principal key nor kms:CallerAccount, ignores Version, and applies a
  key-policy statement without Resource. Not used: unmaintained, AGPL-3.0.
- iam-explorer 0.2.0 (PyPI, June 2025, Apache-2.0): ``fnmatch`` on Action and Resource, no Condition,
  NotAction, NotResource or Principal: 44/80.
- aws-why 0.5.0 (PyPI, September 2026, MIT) is a Rust CLI whose ``can`` calls the live
  ``iam:SimulatePrincipalPolicy``; aws-iam-tester 1.1.0 (June 2026) likewise; iamspy 0.0.1 is an empty
  placeholder: none decides a request offline, none was scored.
- policyuniverse 1.5.1.20231109, parliament 1.6.4, policy_sentry 0.15.2, cloudsplaining 0.9.1,
  policyglass 0.8.0 and iam-ape 1.1.6 parse, lint, generate or summarise policies and decide no request
  against a context (parliament's ``get_allowed_resources`` skips every Deny that has a Condition;
  policyglass keeps conditions as symbols; iam-ape merges them unevaluated): not scored.
So the project keeps its own evaluator, small, each rule with its primary source quoted beside it.

What it implements (sources beside the code):
- Explicit Deny in any policy wins; within one account an Allow in the identity policies OR the resource
  policy suffices; nothing allowing is an implicit deny.
- ``resource_policy_must_allow`` (KMS keys): the key policy must allow the principal, or allow its account
  (``arn:aws:iam::<acct>:root`` or ``<acct>``), which delegates to IAM: then an identity policy must allow.
  A key-policy statement without Resource has no effect.
- Action/NotAction (case-insensitive), Resource/NotResource (case-sensitive), ``*`` and ``?`` wildcards;
  a resource-policy statement with neither Resource nor NotResource applies to its own resource.
- Principal/NotPrincipal in resource policies: ``*``, ``{"AWS": "*"}``, exact ARNs, accounts (which delegate
  to identity policies for an Allow, and cover every principal of that account for a Deny), and any other
  kind (``Service``, ``Federated``...) compared as exact text, so a service never matches a role.
- The keys IAM documents in every request, added unless the caller gives them: for an IAM principal
  aws:PrincipalArn (a role's ARN, never its session's), aws:PrincipalAccount, aws:PrincipalIsAWSService
  false, aws:PrincipalType, aws:username for an IAM user and kms:CallerAccount for a KMS key operation; for a
  service principal aws:PrincipalIsAWSService true and aws:PrincipalServiceName. A key IAM documents as
  present whose value cannot be known here (aws:userid, a session's aws:PrincipalArn, a service's
  aws:PrincipalAccount) makes a statement that consults it NotDecidable.
- Policy variables in Version 2012-10-17 policies: ``${key}`` and ``${key, 'default'}`` in the resource part
  of Resource/NotResource ARNs and in String*/Arn* condition values, a key without a value matching nothing;
  IAM's escapes ``${*}``, ``${?}``, ``${$}``. Every other ``${...}`` (the template's unresolved placeholders,
  ``${AWS::Region}``, ``${<stack>/<LogicalId>.Attr}``, ``${Fn::ImportValue:name}``, ``${?unresolved}``) is
  literal text, and so is everything in a policy of another Version. A variable whose request value is a list
  ("You can't use a multivalued condition key as a variable"), empty, or holds * or ? where wildcards match is
  NotDecidable: no page says what IAM does with it.
- Condition: String*, Arn*, Bool, Null, Numeric* with ``IfExists`` and ``ForAllValues:``/``ForAnyValue:``,
  a missing key or an empty value being the "null dataset" of the set operators and Null.

Where IAM's pages disagree: Boolean operators take policy variables by the Condition operators page
("Policy variables - Supported") and not by the Variables page ("You can't use a policy variable with ...
Boolean ... operators"): a Bool condition with a variable is NotDecidable. The Condition operators page's
wildcard table (ForAllValues:StringNotLike on aws:ResourceOrgPaths) labels its rows by whether the resource is
inside the boundary, the reverse of its other tables; read by outcome it agrees with the operator definitions.
Its ForAllValues:ArnLike table marks ".../distribution/costcenter" with ".../distribution/admin" No match though
both match ".../distribution/*": that row is not in the corpus. The ForAllValues sentence ("returns true if
there are no context keys in the request or if the context key value resolves to a null dataset") is followed.

Deliberately left out: cross-account requests (an account other than the principal's is simply not
matched), permission boundaries, SCPs/RCPs, session policies, KMS grants, VPC endpoint policies, anonymous
requests; Date*, IpAddress, NotIpAddress and BinaryEquals (each raises ValueError naming it). The principal
is taken as given (a role ARN stands for its sessions). A ``*`` in the middle of a non-final ARN segment
crosses colons here (IAM's Resource page: only a ``*`` that ends a segment "can expand to match beyond the
colon boundaries").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from peagle.access.iam_conditions import (
    NotDecidable,
    Scope,
    StatementRef,
    Unknown,
    arn_parts,
    check_resource_variables,
    condition_holds,
    parse_conditions,
    substitute,
    text_of,
    wildcard_match,
)

__all__ = [
    "Decision",
    "NotDecidable",
    "Policy",
    "Request",
    "StatementRef",
    "arn_parts",
    "evaluate",
    "named_account",
    "wildcard_match",
]

Reason = Literal["explicit-deny", "allow", "implicit-deny", "key-policy-does-not-allow"]
PrincipalMatch = Literal["direct", "account"] | None


@dataclass(frozen=True)
class Request:
    # The caller: an IAM role, user, account root or STS session ARN, or a service principal such as
    # "events.amazonaws.com"; a placeholder such as "${Role.Arn}" is literal text standing for an ARN.
    principal: str
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


@dataclass(frozen=True)
class _Matches:
    """The statements that apply to one request, and those whose applying the documentation cannot settle."""

    identity: tuple[StatementRef, ...] = ()
    resource: tuple[tuple[StatementRef, PrincipalMatch], ...] = ()
    undecided_identity: tuple[tuple[StatementRef, str], ...] = ()  # (statement, why) for NotDecidable ones
    undecided_resource: tuple[tuple[StatementRef, str], ...] = ()


def evaluate(
    request: Request,
    identity_policies: Sequence[Policy] = (),
    resource_policy: Policy | None = None,
    *,
    resource_policy_must_allow: bool = False,
) -> Decision:
    """Decide ``request`` as IAM does within one account (see the module docstring for the scope)."""
    matches = _matching_statements(request, identity_policies, resource_policy, resource_policy_must_allow)
    consulted = tuple(policy.source for policy in identity_policies) + (
        (resource_policy.source,) if resource_policy else ()
    )
    # "An explicit deny in any of the policies overrides the allow." (IAM User Guide, Policy evaluation
    # for requests within a single account). A Deny naming the account covers every principal in it.
    denies = tuple(ref for ref in matches.identity if ref.effect == "Deny")
    denies += tuple(ref for ref, _ in matches.resource if ref.effect == "Deny")
    if denies:
        return Decision(False, "explicit-deny", denies, request, consulted=consulted)
    _refuse_if_undecided(request, matches.undecided_identity + matches.undecided_resource, "Deny")
    identity_allows = matches.identity
    direct = tuple(ref for ref, match in matches.resource if match == "direct")
    delegating = tuple(ref for ref, match in matches.resource if match == "account")
    if resource_policy_must_allow:
        decision = _key_policy_decision(request, identity_allows, direct, delegating, consulted)
    # "If either the identity-based policy or the resource-based policy within the same account allows the
    # request and the other doesn't, the request is still allowed." (same page). An Allow to the account
    # only delegates to the identity policies, so it adds nothing of its own here.
    elif identity_allows or direct:
        decision = Decision(True, "allow", identity_allows + direct, request, consulted=consulted)
    else:
        decision = Decision(False, "implicit-deny", (), request, delegating, consulted)
    if not decision.allowed:
        # With a key policy that neither allows nor delegates, no identity-policy Allow could change the outcome.
        key_refuses = decision.reason == "key-policy-does-not-allow"
        undecided = (() if key_refuses else matches.undecided_identity) + matches.undecided_resource
        _refuse_if_undecided(request, undecided, "Allow")
    return decision


def _matching_statements(
    request: Request, identity_policies: Sequence[Policy], resource_policy: Policy | None, key_policy: bool
) -> _Matches:
    context = _request_context(request)
    identity: list[StatementRef] = []
    resource: list[tuple[StatementRef, PrincipalMatch]] = []
    undecided_identity: list[tuple[StatementRef, str]] = []
    undecided_resource: list[tuple[StatementRef, str]] = []
    for policy in identity_policies:
        for ref, statement in _statements(policy):
            scope = Scope(ref, context, _supports_variables(policy))
            try:
                if _statement_applies(scope, statement, request, in_resource_policy=False):
                    identity.append(ref)
            except NotDecidable as error:
                undecided_identity.append((ref, str(error)))
    resource_variables = resource_policy is not None and _supports_variables(resource_policy)
    for ref, statement in _statements(resource_policy) if resource_policy else []:
        scope = Scope(ref, context, resource_variables)
        principal = _principal_match(ref, statement, request)
        try:
            applies = _statement_applies(scope, statement, request, in_resource_policy=True, key_policy=key_policy)
        except NotDecidable as error:
            if principal:
                undecided_resource.append((ref, str(error)))
            continue
        if principal and applies:
            resource.append((ref, principal))
    return _Matches(tuple(identity), tuple(resource), tuple(undecided_identity), tuple(undecided_resource))


def _refuse_if_undecided(request: Request, undecided: tuple[tuple[StatementRef, str], ...], effect: str) -> None:
    """A statement of ``effect`` that might apply but cannot be decided would change the outcome: refuse."""
    reasons = [why for ref, why in undecided if ref.effect == effect]
    if reasons:
        raise NotDecidable(
            f"{request.principal} -> {request.action} on {request.resource}: {'; '.join(reasons)}; IAM's "
            f"documentation does not settle whether that {effect} applies: check this grant by hand"
        )


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


def _supports_variables(policy: Policy) -> bool:
    # IAM JSON policy elements: Version: "2012-10-17. This is the current version of the policy language ...
    # Otherwise, you cannot use features such as policy variables"; "2008-10-17 ... variables such as
    # ${aws:username} aren't recognized as variables and are instead treated as literal strings in the policy."
    # The Variables page: "If you don't include the Version element ..., variables like ${aws:username} are
    # treated as literal strings in the policy." The escapes ${*} ${?} ${$} are predefined variables: "These
    # predefined policy variables can be used in any string where you can use regular policy variables."
    return policy.document.get("Version") == "2012-10-17"


def _statement_applies(
    scope: Scope,
    statement: Mapping[str, Any],
    request: Request,
    *,
    in_resource_policy: bool,
    key_policy: bool = False,
) -> bool:
    ref = scope.ref
    actions = _element(ref, statement, "Action", "NotAction")
    if actions is None:
        raise ValueError(f"{ref}: has neither Action nor NotAction")
    resources = _element(ref, statement, "Resource", "NotResource")
    if resources is None and not in_resource_policy:
        # "Statements must include either a Resource or a NotResource element." (IAM, Resource element)
        raise ValueError(f"{ref}: an identity-policy statement needs Resource or NotResource")
    # Conditions and resource variables are checked even when the action already misses, so that a policy's
    # unknown operator or misplaced variable is reported whatever the request.
    conditions = parse_conditions(ref, statement.get("Condition", {}), scope.variables)
    if resources is not None and scope.variables:
        for pattern in resources[0]:
            check_resource_variables(ref, pattern)
    # NotAction "explicitly matches everything except the specified list of actions"; NotResource
    # "explicitly matches every resource except those specified" (IAM, NotAction / NotResource elements).
    patterns, negated = actions
    if (any(wildcard_match(p.lower(), request.action.lower(), escapes=False) for p in patterns) == negated) or (
        not _resource_matches(scope, resources, request.resource, key_policy=key_policy)
    ):
        return False
    # Conditions AND: one that certainly fails decides, whatever an undecidable one would say.
    return _settled(all, [lambda condition=condition: condition_holds(scope, condition) for condition in conditions])


def _settled(combine: Callable[[list[bool]], bool], checks: list[Callable[[], bool]]) -> bool:
    """``combine`` (all or any) of ``checks``, raising NotDecidable only where an undecidable check matters."""
    results, undecided = [], None
    for check in checks:
        try:
            results.append(check())
        except NotDecidable as error:
            undecided = error
    settling = combine is any  # one True settles any(), one False settles all()
    if undecided is None or settling in results:
        return combine(results)
    raise undecided


def _resource_matches(
    scope: Scope, resources: tuple[list[str], bool] | None, resource: str, *, key_policy: bool
) -> bool:
    if resources is None:
        # AWS KMS, Key policy elements: "If the required Resource element is missing from a key policy statement,
        # the policy statement has no effect. A key policy statement without a Resource element doesn't apply to
        # any KMS key." Other resource policies name no Resource where the policy's own resource is meant (ECR,
        # Private repository policy examples: statements with only Principal and Action).
        return not key_policy
    patterns, negated = resources

    def matches(pattern: str) -> bool:
        # Variables page: "If a variable that has no value in the authorization context is used as part of the
        # Resource or NotResource element of a policy, the resource that includes a policy variable with no
        # value will not match any resource."
        text = substitute(scope, pattern, wildcards=True) if scope.variables else pattern
        return text is not None and wildcard_match(text, resource, escapes=scope.variables)

    return _settled(any, [lambda pattern=pattern: matches(pattern) for pattern in patterns]) != negated


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


# ---- The request context: what every signed request carries -------------------------------------------------


_SERVICE_PRINCIPAL = re.compile(r"[a-z0-9][a-z0-9.-]*\.amazonaws\.com(\.cn)?")


def _request_context(request: Request) -> dict[str, Any]:
    """The request's condition keys, lower-cased: the caller's, over the keys IAM puts in every request."""
    if _SERVICE_PRINCIPAL.fullmatch(request.principal):
        implied = _service_principal_keys(request)
    else:
        implied = _iam_principal_keys(request)
    if request.action.lower().startswith("kms:") and _is_kms_key(request.resource):
        # AWS KMS condition keys, kms:CallerAccount: String, Single-valued, API operations "KMS key resource
        # operations"; "You can use this condition key to allow or deny access to all identities (IAM users and
        # roles) in an AWS account"; "because each API call can originate from only one AWS account,
        # kms:CallerAccount is a single valued condition key".
        implied["kms:CallerAccount"] = implied["aws:PrincipalAccount"]  # an Unknown says why it is not known
    context = {key.lower(): value for key, value in implied.items()}
    context.update({str(key).lower(): value for key, value in request.context.items()})
    return context


def _is_kms_key(resource: str) -> bool:
    parts = arn_parts(resource)
    return parts is None or (parts[2] == "kms" and parts[5].startswith("key/"))  # None: a placeholder for one


def _service_principal_keys(request: Request) -> dict[str, Any]:
    # IAM User Guide, AWS global condition context keys: aws:PrincipalIsAWSService "The request context key is
    # set to true when a service uses a service principal to perform a direct action on your resources";
    # aws:PrincipalServiceName "When a service principal makes a direct request to your resource, the
    # aws:PrincipalServiceName key contains the name of the service principal." aws:PrincipalAccount and
    # aws:PrincipalType are "included in the request context for all requests", aws:PrincipalArn "for all
    # signed requests", but no page gives their value for a service principal.
    undocumented = "IAM documents no value of this key for a service principal"
    return {
        "aws:PrincipalIsAWSService": True,
        "aws:PrincipalServiceName": request.principal,
        "aws:PrincipalServiceNamesList": Unknown("the Regional service principal names are not known here"),
        "aws:PrincipalArn": Unknown(undocumented),
        "aws:PrincipalAccount": Unknown(undocumented),
        "aws:PrincipalType": Unknown(undocumented),
        "aws:userid": Unknown(undocumented),
        "aws:username": Unknown(undocumented),
    }


def _iam_principal_keys(request: Request) -> dict[str, Any]:
    # AWS global condition context keys: aws:PrincipalArn "is included in the request context for all signed
    # requests ... For IAM roles, the request context returns the ARN of the role, not the ARN of the user that
    # assumed the role"; aws:PrincipalAccount "is included in the request context for all requests";
    # aws:PrincipalIsAWSService "is present in the request context for all signed API requests that use AWS
    # credentials ... set to false if the service uses the credentials of an IAM principal"; aws:PrincipalType
    # and aws:userid "for all requests"; aws:username "always included in the request context for IAM users.
    # ... requests that are made using the AWS account root user or IAM roles do not include this key".
    # aws:PrincipalServiceName is "not present ... If the call is made directly by an IAM principal".
    principal_type, principal_arn, username = _principal_kind(request.principal)
    account = request.account()
    keys: dict[str, Any] = {
        "aws:PrincipalArn": principal_arn,
        "aws:PrincipalAccount": account if account else Unknown("the principal's account is not known"),
        "aws:PrincipalIsAWSService": False,
        "aws:PrincipalType": principal_type,
        # Variables page, Principal key values: aws:userid is the account ID for the root user, an IAM user's
        # unique ID, "role-id:caller-specified-role-name" for a role: unique ids are not in the templates.
        "aws:userid": account if principal_type == "Account" and account else Unknown("IAM unique ids are not known"),
    }
    if username is not None:
        keys["aws:username"] = username
    return keys


def _principal_kind(principal: str) -> tuple[Any, Any, Any]:
    """aws:PrincipalType, aws:PrincipalArn and aws:username (None: not in the request) for an IAM principal."""
    # Variables page, Principal key values (aws:PrincipalType): root user "Account", IAM user "User", STS
    # federated user "FederatedUser", assumed role and a role assigned to an EC2 instance "AssumedRole" (a
    # role's requests are made by its sessions); aws:username "(not present)" for all but an IAM user.
    parts = arn_parts(principal)
    resource = parts[5] if parts else ""
    if parts and parts[2] == "iam" and resource.startswith("role/"):
        return "AssumedRole", principal, None
    if parts and parts[2] == "iam" and resource.startswith("user/"):
        return "User", principal, resource.rsplit("/", 1)[-1]
    if parts and parts[2] == "iam" and resource == "root":
        return "Account", principal, None
    if parts and parts[2] == "sts" and resource.startswith("federated-user/"):
        return "FederatedUser", principal, None
    if parts and parts[2] == "sts" and resource.startswith("assumed-role/"):
        # The role's ARN carries its path, which the session's ARN does not: the role ARN is not derivable.
        return "AssumedRole", Unknown("the role ARN of an assumed-role session (its path) is not known"), None
    # A template placeholder standing for an ARN: the ARN is this text, its kind is not known.
    unknown_kind = Unknown(f"the kind of principal {principal!r} is not known")
    return unknown_kind, principal, unknown_kind


def _context_text(context: Mapping[str, Any]) -> str:
    if not context:
        return ""
    shown = ", ".join(f"{key}={text_of(value)}" for key, value in context.items())
    return f" with context {{{shown}}}"
