"""Requests the templates cannot decide, and what to verify by hand for each (peagle.access.check uses these).

Two kinds:

- The resource's policy is not in the assembly: a key, bucket, repository, secret, topic or function the app names
  by ARN (``kms.Key.from_key_arn``, ``s3.Bucket.from_bucket_name``, the CDK bootstrap's asset bucket, a
  pull-through cache's repository that ECR creates at the first pull). For a KMS key the key policy must allow:
  "Unless the key policy explicitly allows it, you cannot use IAM policies to allow access to a KMS key" (AWS KMS
  Developer Guide, "Key policies in AWS KMS"), so an unknown key policy leaves every such request open. For the
  other kinds, within one account "If either the identity-based policy or the resource-based policy within the same
  account allows the request and the other doesn't, the request is still allowed", and "An explicit deny in any of
  the policies overrides the allow" (IAM User Guide, "Policy evaluation for requests within a single account"): an
  unknown resource policy may deny what the role's policies allow, or allow what they do not. So these come out
  "not checked", with what the role's own policies say, except one case the templates decide for certain: an
  explicit Deny in the role's policies refuses the request whatever the resource's policy says.
- The caller is not in the assembly: whoever deploys the stack (Need.deployer). Only the resource's side can be
  read; it decides for certain only when no statement of its key policy allows the action to anyone.

A bucket outside the app may also encrypt its objects with a KMS key the templates cannot see (default encryption,
SSE-KMS): reading an object then needs kms:Decrypt on that key ("you need the permission to decrypt the AWS KMS
key", https://repost.aws/knowledge-center/decrypt-kms-encrypted-objects-s3) and writing one kms:GenerateDataKey
("To upload an object encrypted with an AWS KMS key to Amazon S3, you need kms:GenerateDataKey permissions on the
key", Amazon S3 User Guide, "Using server-side encryption with AWS KMS keys (SSE-KMS)"); the report says so, with
the keys the role's policies let it use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from peagle.access.policy_eval import Decision, Policy, Request, arn_parts, evaluate, wildcard_match
from peagle.access.requirements import FIXES, Need

# The KMS action S3 asks of the caller for an object action on an SSE-KMS object (module docstring).
_S3_KEY_ACTION = {"s3:getobject": "kms:Decrypt", "s3:putobject": "kms:GenerateDataKey"}
# A bucket name at the start of an S3 resource, where a placeholder may hold a '/' ("${Stack/Bucket}").
_BUCKET = re.compile(r"^(?:\$\{[^}]*\}|[^/$])+")
# With `cdk deploy` CloudFormation runs as the bootstrap's CloudFormationExecutionRole, whose policies default to
# "arn:${AWS::Partition}:iam::aws:policy/AdministratorAccess" when none are given (aws-cdk 2.x
# lib/api/bootstrap/bootstrap-template.yaml, CloudFormationExecutionPolicies; node_modules/aws-cdk here).
# The CDK bootstrap's file-asset bucket (the default synthesizer's): "cdk-${Qualifier}-assets-${AWS::AccountId}-
# ${AWS::Region}" (bootstrap-template.yaml, StagingBucket BucketName).
_BOOTSTRAP_BUCKET = re.compile(r"^arn:aws:s3:::cdk-[a-z0-9]+-assets-")
BOOTSTRAP_NOTE = (
    "; with the default `cdk bootstrap` template neither stands in the way: its bucket policy denies only requests "
    "without TLS (StagingBucketPolicy, Sid AllowSSLRequestsOnly) and its key allows kms:Decrypt to every principal "
    'of the account through S3 (FileAssetsBucketEncryptionKey: Principal AWS "*" with kms:CallerAccount and '
    "kms:ViaService s3.<region>.amazonaws.com; aws-cdk lib/api/bootstrap/bootstrap-template.yaml); look again if the "
    "account was bootstrapped with --bootstrap-kms-key-id, a custom template or a bucket policy of its own"
)
DEPLOYER_ROLES = (
    "CloudFormation's service role for the stack, if it has one, else the credentials that run the deploy; with "
    "`cdk deploy`, the bootstrap's CloudFormation execution role (cdk-<qualifier>-cfn-exec-role-<account>-<region>, "
    "AdministratorAccess unless bootstrapped with --cloudformation-execution-policies)"
)


@dataclass(frozen=True)
class Holder:
    """The resource whose policy also decides a request, named by the policy's kind."""

    policy: str  # "key policy", "bucket policy", ...
    resource: str  # its ARN (a bucket's, for an object)


@dataclass(frozen=True)
class Verdict:
    decision: Decision | None  # set only when the templates decide for certain
    verify: str | None = None  # what to check by hand
    found: str | None = None  # what the templates say


def policy_holder(need: Need) -> Holder | None:
    """The resource whose policy also decides ``need`` (for an S3 object, its bucket), if its kind has one."""
    if need.key_policy:
        return Holder("key policy", need.resource)
    parts = arn_parts(need.resource)
    if parts is None:
        return None  # "*": an action without resource-level permissions has no resource policy
    service, resource = parts[2], parts[5]
    if service == "s3":
        bucket = _BUCKET.match(resource)
        return Holder("bucket policy", f"arn:aws:s3:::{bucket.group(0) if bucket else resource}")
    if service == "ecr" and resource.startswith("repository/"):
        if need.action.lower() == "ecr:createrepository":
            # A repository that does not exist yet has no repository policy to consult: its creation is decided by
            # the caller's own policies, on the ARN the repository will have (the Service Authorization Reference
            # for Amazon ECR, https://docs.aws.amazon.com/service-authorization/latest/reference/
            # list_amazonelasticcontainerregistry.html, lists CreateRepository on the repository resource type).
            return None
        return Holder("repository policy", need.resource)
    kinds = {"secretsmanager": "resource policy", "sns": "topic policy", "lambda": "resource-based policy"}
    return Holder(kinds[service], need.resource) if service in kinds else None


def outside_verdict(
    need: Need, request: Request, policies: Sequence[Policy], unknown: Sequence[str], holder: Holder
) -> Verdict:
    """What the role's side decides of a request whose resource policy is not in the assembly."""
    identity = evaluate(request, policies)
    if identity.reason == "explicit-deny":
        # A Deny in the role's own policies refuses the request whatever the policy outside the app allows ("An
        # explicit deny in any of the policies overrides the allow"): the one certain answer here.
        return Verdict(identity)
    found = (
        f"this role's policies allow it ({'; '.join(str(ref) for ref in identity.deciding)})"
        if identity.allowed
        else "this role's policies do not allow it"
    ) + (f" ({', '.join(unknown)} not read)" if unknown else "")
    via = f" via {need.context['kms:ViaService']}" if "kms:ViaService" in need.context else ""
    account = f"arn:aws:iam::{request.account()}:root"
    outside = f"the {holder.policy} of {holder.resource} (not in this app)"
    if holder.policy == "key policy" and identity.allowed:
        verify = f"{outside} must allow {request.principal} (or its account, {account}, with this role's policy "
        verify += f"granting it) {need.action}{via}"
    elif holder.policy == "key policy":
        verify = f"{outside} must allow {request.principal} itself {need.action}{via}: this role's policies do not, "
        verify += "so allowing its account is not enough"
    elif identity.allowed:
        verify = f"{outside} must not deny {request.principal} {need.action} (a Deny there wins over this role's "
        verify += "Allow); if it is in another account, it must allow it too"
    else:
        verify = f"only {outside} could allow it, by naming {request.principal}; or allow {need.action} on "
        verify += f"{need.resource} in this role's policy"
    key_action = _S3_KEY_ACTION.get(need.action.lower()) if holder.policy == "bucket policy" else None
    if key_action is not None:
        keys = _granted_resources(policies, key_action)
        verify += (
            f"; and {holder.resource} may encrypt its objects with a KMS key of its own (SSE-KMS), not in this app: "
            f"then {key_action} on that key is needed too (this role's policies allow {key_action} on "
            f"{', '.join(keys) or 'no key'})"
        )
        if _BOOTSTRAP_BUCKET.match(holder.resource) and need.action.lower() == "s3:getobject":
            verify += BOOTSTRAP_NOTE
        elif need.fix == "weights":
            verify += f"; to grant it: {FIXES['weights-key']}"
    return Verdict(None, verify, found)


def deployer_verdict(need: Need, key_policy: Policy | None) -> Verdict:
    """What the key's side decides of a request by whoever deploys the stack (Need.deployer)."""
    if key_policy is None:
        return Verdict(
            None,
            f"the key policy of {need.resource} (not in this app) must allow {need.action} to the identity that "
            f"deploys the stack ({DEPLOYER_ROLES}), or allow its account and that identity's IAM policy allow it",
            "neither the key's policy nor the deploying identity is in this app",
        )
    allowing = _allow_statements(key_policy, need.action)
    if not allowing:
        # No statement allows the action to anyone, and only the key policy can open a key: certain.
        request = Request("the identity that deploys the stack", need.action, need.resource)
        return Verdict(Decision(False, "key-policy-does-not-allow", (), request, consulted=(key_policy.source,)))
    return Verdict(
        None,
        f"the identity that deploys the stack ({DEPLOYER_ROLES}) must be one these statements allow: named there, "
        f"or of an account they allow, with its IAM policy allowing {need.action} on {need.resource}",
        f"{key_policy.source} allows {need.action} in {'; '.join(allowing)}",
    )


def _statements(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = document.get("Statement", [])
    return [raw] if isinstance(raw, Mapping) else list(raw)


def _listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [item for item in value or [] if isinstance(item, str)]


def _covers(statement: Mapping[str, Any], action: str) -> bool:
    if "NotAction" in statement:
        return not any(wildcard_match(p.lower(), action.lower()) for p in _listed(statement["NotAction"]))
    return any(wildcard_match(p.lower(), action.lower()) for p in _listed(statement.get("Action")))


def _allow_statements(policy: Policy, action: str) -> list[str]:
    """The Allow statements of a resource policy whose actions cover ``action`` (any principal, any condition),
    each with the principals it names."""
    found = []
    for index, statement in enumerate(_statements(policy.document)):
        if statement.get("Effect") == "Allow" and _covers(statement, action):
            name = f"Sid {statement['Sid']!r}" if statement.get("Sid") else f"statement #{index}"
            found.append(f"{name} (Principal {statement.get('Principal', statement.get('NotPrincipal'))})")
    return found


def _granted_resources(policies: Sequence[Policy], action: str) -> list[str]:
    """The resources the identity policies' Allow statements name for ``action``, each with its statement."""
    found = []
    for policy in policies:
        for index, statement in enumerate(_statements(policy.document)):
            if statement.get("Effect") == "Allow" and _covers(statement, action):
                name = f"Sid {statement['Sid']!r}" if statement.get("Sid") else f"statement #{index}"
                found += [f"{resource} ({name})" for resource in _listed(statement.get("Resource"))]
    return found
