"""The runtime-access check: every need (peagle.access.requirements) decided against the app's own policies.

For each need the principal's identity policies (its role's inline policies, the AWS::IAM::Policy and
AWS::IAM::ManagedPolicy resources attached to it in any stack of the app, the AWS managed policies it names that
this module knows) and the resource's policy (bucket policy, key policy, repository policy, secret and topic
policies, a function's permissions) are evaluated as IAM evaluates a request within one account
(peagle.access.policy_eval). A need the templates cannot decide is reported as not checked, with what was found
and what to verify by hand, never as granted or denied: its principal is not in the app (a role passed in by ARN,
whoever deploys the stack), or the policy that also decides it is not (a key, bucket, repository, secret or topic
named by ARN; peagle/access/unchecked.py says which answers the templates still give for certain).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from peagle.access.policy_eval import Decision, NotDecidable, Policy, Request, evaluate
from peagle.access.requirements import FIXES, Need, runtime_needs
from peagle.access.unchecked import Holder, deployer_verdict, outside_verdict, policy_holder
from peagle.cloud_assembly import Assembly, AssemblyStack

# AWS managed policies the app's roles attach, as the AWS Managed Policy Reference Guide gives them
# (https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AWSLambdaBasicExecutionRole.html: "logs:
# CreateLogGroup, logs:CreateLogStream, logs:PutLogEvents" on "*"). One not listed is reported as not evaluated.
AWS_MANAGED_POLICIES = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": "*",
            }
        ],
    }
}
# "If you don't specify a key policy, AWS KMS applies a default key policy": it "gives the AWS account that owns
# the KMS key permission to use IAM policies to allow access to all AWS KMS operations on the KMS key" (AWS KMS
# Developer Guide, "Default key policy"; AWS::KMS::Key KeyPolicy: "If you don't specify a value, CloudFormation
# applies the default key policy").
DEFAULT_KEY_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::${AWS::AccountId}:root"},
            "Action": "kms:*",
            "Resource": "*",
        }
    ],
}


@dataclass(frozen=True)
class Outcome:
    need: Need
    principal: str  # "<stack>/<logical id>" of the role, or the service principal
    decision: Decision | None
    not_checked: str | None = None  # what to verify by hand, when the templates cannot decide it
    found: str | None = None  # what the templates do say about a request not checked

    @property
    def granted(self) -> bool:
        return self.decision is not None and self.decision.allowed

    @property
    def missing(self) -> bool:
        return self.decision is not None and not self.decision.allowed


def check_runtime_access(assembly: Assembly) -> list[Outcome]:
    """Every runtime need of the app, decided (or marked not checked)."""
    return [_decide_or_not_checked(assembly, need) for need in runtime_needs(assembly)]


def _decide_or_not_checked(assembly: Assembly, need: Need) -> Outcome:
    """A need decided, or not checked where IAM's documentation does not settle the answer (NotDecidable: a key
    IAM says every request carries whose value the templates cannot know, a variable in a Bool condition...)."""
    try:
        return _decide(assembly, need)
    except NotDecidable as undecided:
        principal = assembly.resolve(need.stack, need.principal) or str(need.principal)
        return Outcome(
            need,
            principal,
            None,
            f"that {principal} may {need.action} on {need.resource}: the IAM policy simulator in the account can tell",
            f"the policies involved cannot be decided from the templates: {undecided}",
        )


def _decide(assembly: Assembly, need: Need) -> Outcome:
    resource_in, outside = _policy_resource(assembly, need)
    resource_policy = _resource_policy(assembly, resource_in)
    if need.deployer:
        verdict = deployer_verdict(need, resource_policy)
        return Outcome(
            need, f"the identity that deploys {need.stack.stack_name}", verdict.decision, verdict.verify, verdict.found
        )
    if need.service_principal:
        request = Request(need.principal, need.action, need.resource, need.context)
        decision = evaluate(request, (), resource_policy)
        return Outcome(need, need.principal, decision)
    role = _role(assembly, need.stack, need.principal)
    if role is None:
        shown = assembly.resolve(need.stack, need.principal) or str(need.principal)
        return Outcome(
            need,
            shown,
            None,
            f"{shown} must be allowed {need.action} on {need.resource}",
            f"the role {shown} is not in this app: its policies are not in the templates",
        )
    role_stack, role_id = role
    arn = assembly.resolve(role_stack, {"Fn::GetAtt": [role_id, "Arn"]}) or f"${{{role_stack.id}/{role_id}}}"
    account = role_stack.account or "${AWS::AccountId}"
    policies, unknown = _identity_policies(assembly, role_stack, role_id)
    request = Request(arn, need.action, need.resource, need.context, principal_account=account)
    shown = f"{role_stack.id}/{role_id}"
    if outside is not None:
        verdict = outside_verdict(need, request, policies, unknown, outside)
        found = verdict.found and verdict.found + _created_by_template(assembly, outside)
        return Outcome(need, shown, verdict.decision, verdict.verify, found)
    decision = evaluate(request, policies, resource_policy, resource_policy_must_allow=need.key_policy)
    if not decision.allowed and unknown:
        verify = f"{', '.join(unknown)} (not read here) must allow {need.action} on {need.resource}"
        return Outcome(need, shown, None, verify, "the policies of this app attached to the role do not allow it")
    return Outcome(need, shown, decision)


def _policy_resource(assembly: Assembly, need: Need) -> tuple[tuple[AssemblyStack, str] | None, Holder | None]:
    """The resource of the app whose policy also decides ``need`` (the need's own, else found by its ARN), or the
    holder of that policy when it is not in the assembly (peagle/access/unchecked.py)."""
    if need.resource_in is not None:
        return need.resource_in, None
    holder = policy_holder(need)
    if holder is None:
        return None, None
    found = assembly.find_resource(need.stack, holder.resource)
    return (found, None) if found is not None else (None, holder)


def _created_by_template(assembly: Assembly, holder: Holder) -> str:
    """What the app's repository creation template says of a repository ECR creates under its prefix (a pull-through
    cache's), or "". Still not checked: "Once the repository creation template is created, all new repositories
    created will have the settings applied. This doesn't have any effect on any previously created repositories"
    (Amazon ECR User Guide, "Creating a repository creation template in Amazon ECR"), and a repository created before
    it may have had an account-wide ROOT template's policy ("To apply a template to all repositories in your registry
    that don't have an associated creation template, you can use ROOT as the prefix", CreateRepositoryCreationTemplate,
    botocore ecr service-2.json)."""
    if holder.policy != "repository policy":
        return ""
    name = holder.resource.partition(":repository/")[2]
    for stack in assembly.stacks:
        for template in stack.resources("AWS::ECR::RepositoryCreationTemplate").values():
            properties = template.get("Properties", {})
            prefix = assembly.resolve(stack, properties.get("Prefix"))
            if (
                prefix
                and name.startswith(prefix.rstrip("/") + "/")
                and "PULL_THROUGH_CACHE" in (properties.get("AppliedFor") or [])
            ):
                policy = "a repository policy" if properties.get("RepositoryPolicy") else "no repository policy"
                return (
                    f"; this app's repository creation template for {prefix}/ gives the repositories ECR creates from "
                    f"now on {policy}; one created before it (by an earlier deploy) keeps what it was given then: "
                    f"`aws ecr get-repository-policy --repository-name {name}` shows it"
                )
    return ""


def _role(assembly: Assembly, stack: AssemblyStack, value: Any) -> tuple[AssemblyStack, str] | None:
    found = assembly.find_resource(stack, value)
    if found is None or found[0].template["Resources"][found[1]].get("Type") != "AWS::IAM::Role":
        return None
    return found


def _identity_policies(assembly: Assembly, stack: AssemblyStack, role_id: str) -> tuple[list[Policy], list[str]]:
    """The role's policies in the app, and the names of attached policies this check cannot read."""
    role = stack.template["Resources"][role_id].get("Properties", {})
    policies = [
        Policy(
            f"inline policy {inline.get('PolicyName')} of {role_id}",
            assembly.resolve_document(stack, inline["PolicyDocument"]),
        )
        for inline in role.get("Policies", [])
    ]
    unknown = []
    for value in role.get("ManagedPolicyArns", []):
        found = assembly.find_resource(stack, value)
        if found is not None:
            continue  # an AWS::IAM::ManagedPolicy of the app: collected below through its Roles
        arn = (assembly.resolve(stack, value) or str(value)).replace("arn:aws-cn:", "arn:aws:")
        if arn in AWS_MANAGED_POLICIES:
            policies.append(Policy(f"AWS managed policy {arn.rsplit('/', 1)[-1]}", AWS_MANAGED_POLICIES[arn]))
        else:
            unknown.append(f"managed policy {arn}")
    for policy_stack, policy_id, document in _attached(assembly, stack, role_id):
        policies.append(Policy(f"{policy_stack.id}/{policy_id}", assembly.resolve_document(policy_stack, document)))
    return policies, unknown


def _attached(assembly: Assembly, stack: AssemblyStack, role_id: str) -> Iterator[tuple[AssemblyStack, str, dict]]:
    """AWS::IAM::Policy and AWS::IAM::ManagedPolicy resources whose Roles name this role (by reference or name)."""
    name = assembly.resolve(stack, {"Ref": role_id})
    for policy_stack in assembly.stacks:
        for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            for policy_id, policy in policy_stack.resources(kind).items():
                properties = policy.get("Properties", {})
                roles = properties.get("Roles", [])
                if any(_names_role(assembly, policy_stack, value, stack, role_id, name) for value in roles):
                    yield policy_stack, policy_id, properties["PolicyDocument"]


def _names_role(assembly, policy_stack, value, stack, role_id, name) -> bool:
    found = assembly.find_resource(policy_stack, value)
    if found is not None:
        return found[0] is stack and found[1] == role_id
    return name is not None and assembly.resolve(policy_stack, value) == name


# --- resource policies ---------------------------------------------------------------------------------------------


def _resource_policy(assembly: Assembly, resource: tuple[AssemblyStack, str] | None) -> Policy | None:
    if resource is None:
        return None
    stack, logical_id = resource
    definition = stack.template["Resources"][logical_id]
    kind, properties = definition.get("Type"), definition.get("Properties", {})
    where = f"{stack.id}/{logical_id}"
    if kind == "AWS::KMS::Key":
        document = properties.get("KeyPolicy") or DEFAULT_KEY_POLICY
        return Policy(f"key policy of {where}", assembly.resolve_document(stack, document))
    if kind == "AWS::ECR::Repository" and properties.get("RepositoryPolicyText"):
        return Policy(
            f"repository policy of {where}", assembly.resolve_document(stack, properties["RepositoryPolicyText"])
        )
    if kind == "AWS::Lambda::Function":
        return _function_policy(assembly, stack, logical_id)
    attached = {
        "AWS::S3::Bucket": ("AWS::S3::BucketPolicy", "Bucket", "PolicyDocument"),
        "AWS::SecretsManager::Secret": ("AWS::SecretsManager::ResourcePolicy", "SecretId", "ResourcePolicy"),
        "AWS::SNS::Topic": ("AWS::SNS::TopicPolicy", "Topics", "PolicyDocument"),
    }.get(kind)
    if attached is None:
        return None
    policy_type, target_key, document_key = attached
    statements, versions = [], set()
    for policy in stack.resources(policy_type).values():
        policy_properties = policy.get("Properties", {})
        targets = policy_properties.get(target_key)
        targets = targets if isinstance(targets, list) else [targets]
        if any(assembly.find_resource(stack, target) == (stack, logical_id) for target in targets):
            document = assembly.resolve_document(stack, policy_properties[document_key])
            statements += _statement_list(document)
            versions.add(document.get("Version"))
    if not statements:
        return None
    # The statements of every policy attached to the resource, as one document of their shared Version: policy
    # variables are substituted only under "Version": "2012-10-17" (IAM User Guide, IAM JSON policy elements:
    # Version, "If you do not include a Version element, the value defaults to 2008-10-17, and newer features, such
    # as policy variables, will not work"); documents of different Versions read as the older (no variables).
    version = versions.pop() if len(versions) == 1 else None
    return Policy(
        f"{policy_type} of {where}",
        {"Version": version, "Statement": statements} if version else {"Statement": statements},
    )


def _function_policy(assembly: Assembly, stack: AssemblyStack, function_id: str) -> Policy | None:
    """A function's AWS::Lambda::Permission resources as the statements of its resource-based policy."""
    arn = assembly.resolve(stack, {"Fn::GetAtt": [function_id, "Arn"]})
    statements = []
    for permission in stack.resources("AWS::Lambda::Permission").values():
        properties = permission.get("Properties", {})
        if assembly.find_resource(stack, properties.get("FunctionName")) != (stack, function_id):
            continue
        principal = assembly.resolve(stack, properties.get("Principal")) or ""
        statement = {
            "Effect": "Allow",
            "Principal": {"Service": principal} if principal.endswith(".amazonaws.com") else {"AWS": principal},
            "Action": assembly.resolve(stack, properties.get("Action")),
            "Resource": arn,
        }
        if "SourceArn" in properties:
            statement["Condition"] = {"ArnLike": {"aws:SourceArn": assembly.resolve(stack, properties["SourceArn"])}}
        statements.append(statement)
    # Lambda writes the function's resource-based policy itself, as "Version": "2012-10-17" (Lambda Developer Guide,
    # "Viewing resource-based IAM policies in Lambda", its example policy: { "Version":"2012-10-17", "Id": "default", ...}).
    document = {"Version": "2012-10-17", "Statement": statements}
    return Policy(f"permissions of {stack.id}/{function_id}", document) if statements else None


def _statement_list(document: dict) -> list[dict]:
    statements = document.get("Statement", [])
    return [statements] if isinstance(statements, dict) else list(statements)


# --- reporting ---------------------------------------------------------------------------------------------------


def fix_for(outcome: Outcome) -> str:
    """What to change, in the caller's words: the Deny that refuses it, or the prop or key that grants it."""
    decision = outcome.decision
    if decision is not None and decision.reason == "explicit-deny":
        denies = "; ".join(str(ref) for ref in decision.deciding)
        return f"narrow or remove {denies}: an explicit Deny wins over every Allow (the grant itself is there)"
    return FIXES[outcome.need.fix]


def report_lines(outcomes: Sequence[Outcome]) -> list[str]:
    """Each missing grant (principal, action, resource, what it is for, what decided, the fix), then each request
    not checked (what was found, what to verify by hand), then a summary line."""
    lines = []
    for outcome in outcomes:
        if outcome.missing:
            need = outcome.need
            assert outcome.decision is not None, "a missing grant is a decision that denies"
            lines += [
                f"MISSING  {outcome.principal} may not {need.action} on {need.resource}",
                f"  needed: {need.why}",
                f"  decided: {outcome.decision.explain()}",
                f"  fix: {fix_for(outcome)}",
            ]
    for outcome in outcomes:
        if outcome.not_checked:
            need = outcome.need
            lines += [f"not checked: {outcome.principal} {need.action} on {need.resource}", f"  needed: {need.why}"]
            lines += [f"  found: {outcome.found}"] if outcome.found else []
            lines.append(f"  verify: {outcome.not_checked}")
    missing = sum(outcome.missing for outcome in outcomes)
    unchecked = sum(bool(outcome.not_checked) for outcome in outcomes)
    principals = len({outcome.principal for outcome in outcomes})
    lines.append(
        f"runtime access: {len(outcomes)} requests by {principals} principal{'' if principals == 1 else 's'}: "
        f"{len(outcomes) - missing - unchecked} granted, {missing} missing, {unchecked} not checked"
    )
    return lines
