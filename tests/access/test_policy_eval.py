"""peagle.access.policy_eval against IAM's own documented examples.

Each test quotes the page and the example it is built from; the expected outcomes are the ones the
documentation states (its tables of "Match" / "No match", its prose), not what the engine happens to do.
"""

from __future__ import annotations

from typing import Any

import pytest

from peagle.access.policy_eval import Decision, NotDecidable, Policy, Request, arn_parts, evaluate, named_account

ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/ExecutionRole"
OTHER_ROLE = f"arn:aws:iam::{ACCOUNT}:role/SomeoneElse"


def identity(*statements: dict, source: str = "role policy") -> Policy:
    return Policy(source, {"Version": "2012-10-17", "Statement": list(statements)})


def resource_policy(*statements: dict, source: str = "bucket policy") -> Policy:
    return Policy(source, {"Version": "2012-10-17", "Statement": list(statements)})


def allow(action: str | list[str] = "*", resource: str | list[str] = "*", **extra) -> dict:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


def ask(action: str, resource: str, principal: str = ROLE, /, **context: Any) -> Request:
    """A request; ``principal`` is positional so that no context key can land in it."""
    return Request(principal, action, resource, context)


def sids(decision: Decision) -> list[str | None]:
    return [ref.sid for ref in decision.deciding]


# ---- Policy evaluation logic -------------------------------------------------------------------------

CARLOS = f"arn:aws:iam::{ACCOUNT}:user/carlossalazar"
CARLOS_POLICY = identity(
    {
        "Sid": "AllowS3ListRead",
        "Effect": "Allow",
        "Action": ["s3:ListAllMyBuckets", "s3:HeadBucket"],
        "Resource": "*",
    },
    {
        "Sid": "AllowS3Self",
        "Effect": "Allow",
        "Action": "s3:*",
        "Resource": ["arn:aws:s3:::carlossalazar/*", "arn:aws:s3:::carlossalazar"],
    },
    {
        "Sid": "DenyS3Logs",
        "Effect": "Deny",
        "Action": "s3:*",
        "Resource": ["arn:aws:s3:::*log*", "arn:aws:s3:::*log*/*"],
    },
    source="user policy of carlossalazar",
)
CARLOS_BUCKET_POLICY = resource_policy(
    {
        "Effect": "Allow",
        "Principal": {"AWS": CARLOS},
        "Action": "s3:*",
        "Resource": ["arn:aws:s3:::carlossalazar/*", "arn:aws:s3:::carlossalazar"],
    },
    source="bucket policy of carlossalazar",
)


# Carlos saving to his logs bucket (explicitly denied) is in the documented-case corpus (tests/access/iam_corpus.py,
# carlos-logs-bucket-denied); here only what the corpus does not assert: which statements decided.


def test_carlos_saving_to_his_own_bucket_is_allowed_by_both_policies():
    """Same example: "he tries to save the file to the carlossalazar bucket. AWS checks for a Deny statement
    and does not find one. It then checks the permissions policies. Both the identity-based policy and the
    resource-based policy allow the request. Therefore, AWS allows the request."
    """
    decision = evaluate(
        ask("s3:PutObject", "arn:aws:s3:::carlossalazar/notes.txt", CARLOS),
        [CARLOS_POLICY],
        CARLOS_BUCKET_POLICY,
    )
    assert decision.allowed and decision.reason == "allow"
    assert {ref.source for ref in decision.deciding} == {
        "user policy of carlossalazar",
        "bucket policy of carlossalazar",
    }


@pytest.mark.parametrize("which", ["identity only", "resource only"])
def test_either_policy_alone_allows_within_one_account(which):
    """Policy evaluation for requests within a single account, Important: "If either the identity-based
    policy or the resource-based policy within the same account allows the request and the other doesn't,
    the request is still allowed."
    """
    grant = allow("s3:GetObject", "arn:aws:s3:::bucket/*")
    bucket_grant = {**grant, "Principal": {"AWS": ROLE}}
    policies = ([identity(grant)], None) if which == "identity only" else ([identity()], resource_policy(bucket_grant))
    assert evaluate(ask("s3:GetObject", "arn:aws:s3:::bucket/k"), *policies).allowed


def test_deny_in_the_resource_policy_overrides_the_identity_allow():
    """Same page: "An explicit deny in any of the policies overrides the allow." """
    deny = {"Sid": "NoReads", "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": "*"}
    decision = evaluate(ask("s3:GetObject", "arn:aws:s3:::bucket/k"), [identity(allow())], resource_policy(deny))
    assert (decision.allowed, decision.reason, sids(decision)) == (False, "explicit-deny", ["NoReads"])


ALLOW_GET_LIST_DENY_REPORTS = identity(
    {"Sid": "AllowGetList", "Effect": "Allow", "Action": ["iam:Get*", "iam:List*"], "Resource": "*"},
    {"Sid": "DenyReports", "Effect": "Deny", "Action": "iam:*Report", "Resource": "*"},
)


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ("iam:GetUser", "allow"),
        ("iam:ListRoles", "allow"),
        ("iam:CreatePolicy", "implicit-deny"),
        ("iam:GetOrganizationsAccessReport", "explicit-deny"),
        ("iam:GenerateCredentialReport", "explicit-deny"),
    ],
)
def test_explicit_and_implicit_denies(action, reason):
    """Policy evaluation logic, "The difference between explicit and implicit denies": "The AllowGetList
    statement allows read-only access to IAM actions that begin with the prefixes Get and List. All other
    actions in IAM, such as iam:CreatePolicy are implicitly denied. The DenyReports statement explicitly
    denies access to IAM reports by denying access to actions that include the Report suffix, such as
    iam:GetOrganizationsAccessReport."
    """
    decision = evaluate(ask(action, "*"), [ALLOW_GET_LIST_DENY_REPORTS])
    assert decision.reason == reason
    assert decision.allowed is (reason == "allow")
    assert (decision.deciding == ()) is (reason == "implicit-deny")


def test_action_names_are_case_insensitive():
    """IAM JSON policy elements: Action: "Action names are case-insensitive" (and "iam:getuser" is
    "iam:GetUser")."""
    assert evaluate(ask("IAM:getuser", "*"), [ALLOW_GET_LIST_DENY_REPORTS]).allowed
    assert evaluate(ask("iam:GetUser", "*"), [identity(allow("IAM:GET*"))]).allowed


def test_no_policies_is_an_implicit_deny():
    """How AWS enforcement code logic evaluates requests: "By default, all requests are implicitly denied"."""
    decision = evaluate(ask("s3:GetObject", "arn:aws:s3:::bucket/k"))
    assert (decision.allowed, decision.reason, decision.deciding) == (False, "implicit-deny", ())


# ---- Action / NotAction -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "resource", "allowed"),
    [
        ("s3:GetObject", "arn:aws:s3:::bucket/key", True),
        ("s3:PutObject", "arn:aws:s3:::bucket/key", True),
        ("s3:DeleteBucket", "arn:aws:s3:::bucket", False),
        ("ec2:RunInstances", "arn:aws:ec2:us-east-1:123456789012:instance/*", False),
    ],
)
def test_notaction_allow_all_s3_but_deletebucket(action, resource, allowed):
    """IAM JSON policy elements: NotAction, "NotAction with Allow": "The following example allows users to
    access all of the Amazon S3 actions that can be performed on any S3 resource except for deleting a
    bucket. This policy also does not allow actions in other services, because other service actions are
    not applicable to the S3 resources." ("Effect": "Allow", "NotAction": "s3:DeleteBucket",
    "Resource": "arn:aws:s3:::*")
    """
    policy = identity({"Effect": "Allow", "NotAction": "s3:DeleteBucket", "Resource": "arn:aws:s3:::*"})
    assert evaluate(ask(action, resource), [policy]).allowed is allowed


@pytest.mark.parametrize(
    ("action", "allowed"),
    [("s3:GetObject", True), ("sagemaker:InvokeEndpoint", True), ("iam:PassRole", False), ("iam:CreateRole", False)],
)
def test_notaction_allow_everything_but_iam(action, allowed):
    """NotAction: "The following example allows users to access every action in every AWS service, except
    for IAM." ("Effect": "Allow", "NotAction": "iam:*", "Resource": "*")"""
    policy = identity({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"})
    assert evaluate(ask(action, "arn:aws:s3:::bucket/key"), [policy]).allowed is allowed


DENY_WITHOUT_MFA = {
    "Sid": "DenyAllUsersNotUsingMFA",
    "Effect": "Deny",
    "NotAction": "iam:*",
    "Resource": "*",
    "Condition": {"BoolIfExists": {"aws:MultiFactorAuthPresent": "false"}},
}


@pytest.mark.parametrize(
    ("action", "context", "reason"),
    [
        ("s3:GetObject", {}, "explicit-deny"),
        ("s3:GetObject", {"aws:MultiFactorAuthPresent": False}, "explicit-deny"),
        ("s3:GetObject", {"aws:MultiFactorAuthPresent": True}, "allow"),
        ("iam:ChangePassword", {}, "allow"),
    ],
)
def test_notaction_deny_denies_non_iam_actions_without_mfa(action, context, reason):
    """NotAction, "NotAction with Deny": "The following conditional example denies access to non-IAM actions
    if the user is not signed in using MFA. If the user is signed in with MFA, then the "Condition" test
    fails and the final "Deny" statement has no effect." The statement uses "BoolIfExists":
    {"aws:MultiFactorAuthPresent": "false"}; per ...IfExists, a request without the key matches it.
    """
    decision = evaluate(ask(action, "*", **context), [identity(allow(), DENY_WITHOUT_MFA)])
    assert decision.reason == reason


# ---- Resource / NotResource -------------------------------------------------------------------------

HR_PAYROLL = identity(
    allow("s3:*", "*"),
    {
        "Sid": "OnlyPayroll",
        "Effect": "Deny",
        "Action": "s3:*",
        "NotResource": ["arn:aws:s3:::HRBucket/Payroll", "arn:aws:s3:::HRBucket/Payroll/*"],
    },
)


@pytest.mark.parametrize(
    ("resource", "reason"),
    [
        ("arn:aws:s3:::HRBucket/Payroll", "allow"),
        ("arn:aws:s3:::HRBucket/Payroll/2024/march.csv", "allow"),
        ("arn:aws:s3:::HRBucket/Bonuses/2024.csv", "explicit-deny"),
        ("arn:aws:s3:::OtherBucket/x", "explicit-deny"),
    ],
)
def test_notresource_deny_everything_but_payroll(resource, reason):
    """IAM JSON policy elements: NotResource: "Members of HRPayroll should not be allowed to access any
    Amazon S3 resources except the Payroll folder in the HRBucket bucket. The following policy explicitly
    denies access to all Amazon S3 resources other than the listed resources." (Deny, "Action": "s3:*",
    "NotResource": ["arn:aws:s3:::HRBucket/Payroll", "arn:aws:s3:::HRBucket/Payroll/*"]); an Allow on
    s3:* is added, since "this policy does not grant the user access to any resources".
    """
    assert evaluate(ask("s3:GetObject", resource), [HR_PAYROLL]).reason == reason


@pytest.mark.parametrize(
    ("pattern", "resource", "matches"),
    [
        # "The asterisk (*) character can expand to replace everything within a segment, including
        # characters like a forward slash (/)"
        ("arn:aws:s3:::amzn-s3-demo-bucket/*", "arn:aws:s3:::amzn-s3-demo-bucket/a/b/c.json", True),
        ("arn:aws:iam::123456789012:user/accounting/*", "arn:aws:iam::123456789012:user/accounting/bob", True),
        ("arn:aws:iam::123456789012:user/accounting/*", "arn:aws:iam::123456789012:user/sales/bob", False),
        # "If the * wildcard is the last character of a resource ARN segment, it can expand to match beyond
        # the colon boundaries"
        (
            "arn:aws:logs:us-east-1:123456789012:log-group:*",
            "arn:aws:logs:us-east-1:123456789012:log-group:g:log-stream:s",
            True,
        ),
        ("arn:aws:kms:*:123456789012:key/*", "arn:aws:kms:us-west-2:123456789012:key/1234abcd", True),
        # "?" is any single character
        ("arn:aws:s3:::bucket/model-?.bin", "arn:aws:s3:::bucket/model-1.bin", True),
        ("arn:aws:s3:::bucket/model-?.bin", "arn:aws:s3:::bucket/model-12.bin", False),
        # "In the Resource element, the IAM user name is case sensitive."
        ("arn:aws:iam::123456789012:user/Bob", "arn:aws:iam::123456789012:user/bob", False),
        ("*", "arn:aws:anything:::at/all", True),
    ],
)
def test_resource_wildcards(pattern, resource, matches):
    """IAM JSON policy elements: Resource, "Using wildcards in resource ARNs": "You can use wildcard
    characters (* and ?) within the individual segments of an ARN (the parts separated by colons) to
    represent: Any combination of characters (*), Any single character (?)"."""
    assert evaluate(ask("s3:GetObject", resource), [identity(allow("s3:GetObject", pattern))]).allowed is matches


def test_resource_policy_statement_without_resource_applies_to_its_resource():
    """Amazon ECR, Private repository policy examples: the repository-policy statements carry no Resource
    ("Example: Allow one or more users" grants ecr:BatchGetImage etc. with only Principal and Action),
    and "They will not work properly if used with an IAM principal directly unless modified to specify the
    Amazon ECR repository as the resource": in a resource policy the resource is the one it is attached to.
    """
    repository_policy = resource_policy(
        {
            "Sid": "AllowPull",
            "Effect": "Allow",
            "Principal": {"AWS": [ROLE]},
            "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
        },
        source="repository policy of ServingImageRepo",
    )
    repository = f"arn:aws:ecr:us-east-1:{ACCOUNT}:repository/serving"
    assert evaluate(ask("ecr:BatchGetImage", repository), [], repository_policy).allowed
    assert not evaluate(ask("ecr:PutImage", repository), [], repository_policy).allowed


def test_identity_statement_without_resource_is_refused():
    """IAM JSON policy elements: Resource: "Statements must include either a Resource or a NotResource
    element." An identity policy has no attached resource to fall back on."""
    with pytest.raises(ValueError, match="needs Resource or NotResource"):
        evaluate(ask("s3:GetObject", "arn:aws:s3:::b/k"), [identity({"Effect": "Allow", "Action": "s3:*"})])


@pytest.mark.parametrize(
    "placeholder",
    [
        "${ArtifactsBucket.Arn}",
        "${PeagleEndpoint/ArtifactsBucket}",
        "${PeagleEndpoint/ArtifactsBucket.Arn}",
        "${AWS::Region}",
        "${AWS::AccountId}",
        "${Fn::ImportValue:shared-bucket}",
        "${?unresolved}",
    ],
)
def test_template_placeholders_stay_literal_text(placeholder):
    """The template's unresolved values (peagle/cloud_assembly/modes.py: "${<stack id>/<LogicalId>}",
    "${<stack>/<LogicalId>.Attr}", "${AWS::Region}", "${Fn::ImportValue:<name>}", "${?unresolved}") look like IAM
    policy variables but are none: IAM's are a condition key ("${aws:username}", a service prefix, one colon, a
    name). They stay literal text, in Resource and in condition values, so a placeholder matches only itself."""
    policy = identity(
        allow("s3:GetObject", f"arn:aws:s3:::{placeholder}/models/*"),
        allow("kms:Decrypt", "*", Condition={"StringEquals": {"kms:ViaService": f"s3.{placeholder}.amazonaws.com"}}),
    )
    assert evaluate(ask("s3:GetObject", f"arn:aws:s3:::{placeholder}/models/x/config.json"), [policy]).allowed
    assert not evaluate(ask("s3:GetObject", "arn:aws:s3:::${OtherBucket}/models/x/config.json"), [policy]).allowed
    via = {"kms:ViaService": f"s3.{placeholder}.amazonaws.com"}
    assert evaluate(ask("kms:Decrypt", "arn:aws:kms:us-east-1:123456789012:key/k", **via), [policy]).allowed


def test_policy_variable_is_substituted_in_resource():
    """IAM policy elements: Variables and tags: "When this policy is evaluated, IAM replaces the variable
    ${aws:username} with the friendly name of the actual current user." (the request's aws:username)"""
    home = identity(allow("s3:GetObject", "arn:aws:s3:::bucket/home/${aws:username}/*"))
    martha = {"aws:username": "martha"}
    assert evaluate(ask("s3:GetObject", "arn:aws:s3:::bucket/home/martha/x", **martha), [home]).allowed
    assert not evaluate(ask("s3:GetObject", "arn:aws:s3:::bucket/home/nikki/x", **martha), [home]).allowed
    assert not evaluate(ask("s3:GetObject", "arn:aws:s3:::bucket/home/${aws:username}/x", **martha), [home]).allowed


def test_iam_special_character_escapes():
    """IAM Policy variables, "Specifying special characters": "${*} - to represent an * (asterisk)
    character; ${?} - to represent a ? (question mark) character; ${$} - to represent a $ (dollar sign)
    character"."""
    policy = identity(allow("s3:GetObject", "arn:aws:s3:::bucket/literal${*}star${?}"))
    assert evaluate(ask("s3:GetObject", "arn:aws:s3:::bucket/literal*star?"), [policy]).allowed
    assert not evaluate(ask("s3:GetObject", "arn:aws:s3:::bucket/literalXstar?"), [policy]).allowed


# ---- Principal / NotPrincipal -----------------------------------------------------------------------

GET = ("s3:GetObject", "arn:aws:s3:::bucket/key")


@pytest.mark.parametrize("principal", ["*", {"AWS": "*"}, {"AWS": ROLE}, {"AWS": [OTHER_ROLE, ROLE]}])
def test_principals_that_name_the_role_grant_directly(principal):
    """AWS JSON policy elements: Principal: "Use the Principal element in a resource-based JSON policy to
    specify the principal that is allowed or denied access to a resource"; "Principal": "*" and
    {"AWS": "*"} are everyone, an IAM role ARN names that role."""
    bucket = resource_policy({"Effect": "Allow", "Principal": principal, "Action": "s3:GetObject", "Resource": "*"})
    decision = evaluate(ask(*GET), [], bucket)
    assert (decision.allowed, decision.reason) == (True, "allow")


@pytest.mark.parametrize(
    "principal",
    [
        {"AWS": OTHER_ROLE},
        {"Service": "cloudtrail.amazonaws.com"},
        {"AWS": "arn:aws:iam::123456789012:role/Execution*"},  # no partial wildcards in Principal
        {"AWS": "arn:aws:iam::999999999999:root"},
    ],
)
def test_principals_that_do_not_name_the_role(principal):
    """Principal element: a service principal ("Principal": {"Service": "cloudtrail.amazonaws.com"}, from the
    CloudTrail bucket-policy example) is the service, not a role; "You cannot use a wildcard to match part
    of a principal name or ARN"; another account's root names that account only."""
    bucket = resource_policy({"Effect": "Allow", "Principal": principal, "Action": "s3:GetObject", "Resource": "*"})
    assert evaluate(ask(*GET), [], bucket).reason == "implicit-deny"


def test_service_principal_matches_the_service_itself():
    """The same statement does apply when the caller is the service named."""
    bucket = resource_policy(
        {
            "Effect": "Allow",
            "Principal": {"Service": "cloudtrail.amazonaws.com"},
            "Action": "s3:PutObject",
            "Resource": "*",
        }
    )
    assert evaluate(
        ask("s3:PutObject", "arn:aws:s3:::bucket/AWSLogs/x", "cloudtrail.amazonaws.com"), [], bucket
    ).allowed


@pytest.mark.parametrize("account_principal", [f"arn:aws:iam::{ACCOUNT}:root", ACCOUNT])
def test_account_principal_delegates_to_identity_policies(account_principal):
    """Principal element, AWS account principals: "You can specify AWS account identifiers in the Principal
    element of a resource-based policy ... This delegates authority to the account." and "The account ARN
    and the shortened account ID behave the same way. Both delegate permissions to the account. Using the
    account ARN in the Principal element does not limit permissions to only the root user of the account."
    Delegation grants nothing by itself: the principal's identity policy must allow.
    """
    statement = {
        "Sid": "ToAccount",
        "Effect": "Allow",
        "Principal": {"AWS": account_principal},
        "Action": "s3:*",
        "Resource": "*",
    }
    bucket = resource_policy(statement)
    without = evaluate(ask(*GET), [identity()], bucket)
    assert (without.allowed, without.reason, without.deciding) == (False, "implicit-deny", ())
    assert [ref.sid for ref in without.delegated_by] == ["ToAccount"]
    assert evaluate(ask(*GET), [identity(allow("s3:GetObject"))], bucket).allowed


def test_deny_to_the_account_covers_its_roles():
    """A Deny naming the account applies to every principal of it, since an account principal "delegates
    authority to the account" (Principal element) and "An explicit deny in any of the policies overrides the
    allow" (Policy evaluation logic)."""
    bucket = resource_policy(
        {"Sid": "NoOne", "Effect": "Deny", "Principal": {"AWS": ACCOUNT}, "Action": "s3:*", "Resource": "*"}
    )
    decision = evaluate(ask(*GET), [identity(allow())], bucket)
    assert (decision.reason, sids(decision)) == ("explicit-deny", ["NoOne"])


def test_principal_account_can_be_given_for_placeholder_principals():
    """A principal that is still a template placeholder has no readable account; Request.principal_account
    supplies it, and a root ARN rendered with placeholders names that account."""
    root = "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"
    statement = {"Effect": "Allow", "Principal": {"AWS": root}, "Action": "kms:*", "Resource": "*"}
    request = Request("${ExecutionRole.Arn}", "kms:Decrypt", "${Key.Arn}", principal_account="${AWS::AccountId}")
    decision = evaluate(
        request, [identity(allow("kms:Decrypt"))], resource_policy(statement), resource_policy_must_allow=True
    )
    assert decision.allowed
    parts = arn_parts(root)
    assert named_account(root) == "${AWS::AccountId}" and parts is not None and parts[1] == "${AWS::Partition}"


NOT_PRINCIPAL_DENY = {
    "Effect": "Deny",
    "NotPrincipal": {
        "AWS": [
            "arn:aws:sts::444455556666:assumed-role/cross-account-read-only-role/cross-account-audit-app",
            "arn:aws:iam::444455556666:role/cross-account-read-only-role",
            "arn:aws:iam::444455556666:root",
        ]
    },
    "Action": "s3:*",
    "Resource": ["arn:aws:s3:::BUCKETNAME", "arn:aws:s3:::BUCKETNAME/*"],
}


@pytest.mark.parametrize(
    ("principal", "denied"),
    [
        ("arn:aws:iam::444455556666:role/cross-account-read-only-role", False),
        ("arn:aws:iam::444455556666:role/another-role", True),
        ("arn:aws:iam::123456789012:role/cross-account-read-only-role", True),
    ],
)
def test_notprincipal_deny_spares_only_the_listed_principal(principal, denied):
    """AWS JSON policy elements: NotPrincipal: "The NotPrincipal element uses "Effect":"Deny" to deny access
    to all principals except the principal specified in the NotPrincipal element." Example statement lists
    the assumed-role session, the role and the account root of 444455556666."""
    bucket = resource_policy(NOT_PRINCIPAL_DENY)
    decision = evaluate(ask("s3:GetObject", "arn:aws:s3:::BUCKETNAME/x", principal), [identity(allow())], bucket)
    assert (decision.reason == "explicit-deny") is denied


def test_notprincipal_without_the_account_still_denies():
    """NotPrincipal: "When you use NotPrincipal, you must also specify the account ARN of the not-denied
    principal. Otherwise, the policy might deny access to the entire account containing the principal." The
    engine takes the "might" as "does": a checker should not count on the lenient reading."""
    statement = {
        **NOT_PRINCIPAL_DENY,
        "NotPrincipal": {"AWS": "arn:aws:iam::444455556666:role/cross-account-read-only-role"},
    }
    principal = "arn:aws:iam::444455556666:role/cross-account-read-only-role"
    decision = evaluate(
        ask("s3:GetObject", "arn:aws:s3:::BUCKETNAME/x", principal),
        [identity(allow())],
        resource_policy(statement),
    )
    assert decision.reason == "explicit-deny"


def test_notprincipal_with_allow_is_refused():
    """NotPrincipal: "NotPrincipal must be used with "Effect":"Deny". Using it with "Effect":"Allow" is not
    supported." """
    statement = {**NOT_PRINCIPAL_DENY, "Effect": "Allow"}
    with pytest.raises(ValueError, match="NotPrincipal with Allow"):
        evaluate(ask("s3:GetObject", "arn:aws:s3:::BUCKETNAME/x"), [], resource_policy(statement))


# ---- Condition --------------------------------------------------------------------------------------

SSL_ONLY = resource_policy(
    {
        "Sid": "AllowSSLRequestsOnly",
        "Action": "s3:*",
        "Effect": "Deny",
        "Resource": ["arn:aws:s3:::DOC-EXAMPLE-BUCKET", "arn:aws:s3:::DOC-EXAMPLE-BUCKET/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        "Principal": "*",
    },
    source="bucket policy of DOC-EXAMPLE-BUCKET",
)


@pytest.mark.parametrize(
    ("context", "reason"),
    [
        ({"aws:SecureTransport": False}, "explicit-deny"),
        ({"aws:SecureTransport": "false"}, "explicit-deny"),
        ({"aws:SecureTransport": True}, "allow"),
        ({"aws:SecureTransport": "true"}, "allow"),
        ({}, "allow"),  # "No aws:SecureTransport in the request context." -> "No match"
    ],
)
def test_bool_secure_transport_deny(context, reason):
    """AWS Knowledge Center "s3-bucket-policy-for-config-rule": the compliant bucket policy "explicitly denies
    all actions on the bucket and objects when the request meets the condition "aws:SecureTransport":
    "false"" (Sid AllowSSLRequestsOnly). Condition operators, Boolean table: "aws:SecureTransport: false"
    Match, "true" No match, absent No match."""
    request = ask("s3:GetObject", "arn:aws:s3:::DOC-EXAMPLE-BUCKET/model.bin", **context)
    assert evaluate(request, [identity(allow("s3:GetObject"))], SSL_ONLY).reason == reason


@pytest.mark.parametrize(
    ("context", "matches"),
    [
        ({"aws:PrincipalTag/job-category": "iamuser-admin"}, True),
        ({"aws:PrincipalTag/job-category": "dev-ops"}, False),
        ({}, False),
        ({"AWS:PRINCIPALTAG/JOB-CATEGORY": "iamuser-admin"}, True),  # key names are not case-sensitive
        ({"aws:PrincipalTag/job-category": "IAMUSER-ADMIN"}, False),  # StringEquals is case-sensitive
    ],
)
def test_string_equals_principal_tag(context, matches):
    """Condition operators, "Example string condition operator" ("StringEquals":
    {"aws:PrincipalTag/job-category": "iamuser-admin"}): table rows iamuser-admin Match, dev-ops No match, no
    key No match; IAM Condition element: "Condition key names are not case-sensitive"; StringEquals: "Exact
    matching, case sensitive"."""
    policy = identity(
        allow(
            "iam:*AccessKey*",
            "arn:aws:iam::111122223333:user/*",
            Condition={"StringEquals": {"aws:PrincipalTag/job-category": "iamuser-admin"}},
        )
    )
    request = ask("iam:CreateAccessKey", "arn:aws:iam::111122223333:user/alice", **context)
    assert evaluate(request, [policy]).allowed is matches


@pytest.mark.parametrize(
    ("prefix", "matches"),
    [("", True), ("home/", True), ("home/other/", False), (None, False)],
)
def test_string_like_s3_prefix(prefix, matches):
    """Condition operators, "Example using a policy variable with a string condition operator": "The policy
    allows the specified actions on an S3 bucket as long as the s3:prefix matches any one of the specified
    patterns" ("StringLike": {"s3:prefix": ["", "home/", "home/${aws:username}/"]}, Action s3:ListBucket);
    with no s3:prefix in the context the values do not match."""
    policy = identity(
        allow(
            "s3:ListBucket",
            "arn:aws:s3:::amzn-s3-demo-bucket",
            Condition={"StringLike": {"s3:prefix": ["", "home/", "home/${aws:username}/"]}},
        )
    )
    context = {} if prefix is None else {"s3:prefix": prefix}
    assert evaluate(ask("s3:ListBucket", "arn:aws:s3:::amzn-s3-demo-bucket", **context), [policy]).allowed is matches


@pytest.mark.parametrize(
    ("prefix", "matches"), [("David/", True), ("David/reports/2024/", True), ("Maria/", False), ("david/", False)]
)
def test_string_like_wildcard_prefix(prefix, matches):
    """AWS Knowledge Center "iam-s3-user-specific-folder": statement AllowListingOfUserFolder, "Action":
    ["s3:ListBucket"], "Condition": {"StringLike": {"s3:prefix": ["David/*"]}}; StringLike is "Case-sensitive
    matching. The values can include multi-character match wildcards (*)"."""
    policy = identity(
        allow("s3:ListBucket", "arn:aws:s3:::vcompany", Condition={"StringLike": {"s3:prefix": ["David/*"]}})
    )
    assert evaluate(ask("s3:ListBucket", "arn:aws:s3:::vcompany", **{"s3:prefix": prefix}), [policy]).allowed is matches


CREATE_TAGS = identity(
    allow(
        "ec2:CreateTags",
        "arn:aws:ec2:*:*:instance/*",
        Condition={
            "StringEqualsIgnoreCase": {"aws:RequestTag/environment": ["preprod", "storage"]},
            "ForAnyValue:StringEquals": {"aws:TagKeys": "environment"},
        },
    )
)


@pytest.mark.parametrize(
    ("context", "matches"),
    [
        ({"aws:TagKeys": ["environment"], "aws:RequestTag/environment": "preprod"}, True),
        ({"aws:TagKeys": ["environment", "costcenter"], "aws:RequestTag/environment": "PreProd"}, True),
        ({"aws:TagKeys": ["Environment"], "aws:RequestTag/Environment": "preprod"}, False),
        ({"aws:TagKeys": ["costcenter"], "aws:RequestTag/environment": "preprod"}, False),
        ({"aws:RequestTag/environment": "storage"}, False),
        ({"aws:TagKeys": ["environment"]}, False),
        ({}, False),
    ],
)
def test_ignore_case_and_for_any_value_create_tags_table(context, matches):
    """Condition operators, "Example using ForAnyValue with a string condition operator", its seven-row
    table: a tag key "environment" with "preprod" Match; "environment, costcenter" with "PreProd" Match;
    "Environment" No match; only "costcenter" No match; no aws:TagKeys No match; no
    aws:RequestTag/environment No match; neither No match. (Two operators in one block AND.)"""
    request = ask("ec2:CreateTags", f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/i-1", **context)
    assert evaluate(request, [CREATE_TAGS]).allowed is matches


@pytest.mark.parametrize(("instance_type", "matches"), [("t1.micro", True), ("m2.micro", False), (None, True)])
def test_string_like_if_exists_instance_type_table(instance_type, matches):
    """Condition operators, "...IfExists condition operators": "If the key is not present, evaluate the
    condition element as true." Table for "StringLikeIfExists": {"ec2:InstanceType": ["t1.*", "t2.*",
    "m3.*"]}: t1.micro Match, m2.micro No match, no ec2:InstanceType Match."""
    policy = identity(
        allow(
            "ec2:RunInstances",
            "*",
            Sid="RunInstance",
            Condition={"StringLikeIfExists": {"ec2:InstanceType": ["t1.*", "t2.*", "m3.*"]}},
        )
    )
    context = {} if instance_type is None else {"ec2:InstanceType": instance_type}
    assert evaluate(ask("ec2:RunInstances", "*", **context), [policy]).allowed is matches


def test_without_if_exists_an_absent_key_does_not_match():
    """The same page's THISPOLICYDOESNOTWORK statement, plain "StringLike": the resources launched with the
    instance "do not have the ec2:InstanceType condition key, so the StringLike check fails"."""
    policy = identity(
        allow("ec2:RunInstances", "*", Condition={"StringLike": {"ec2:InstanceType": ["t1.*", "t2.*", "m3.*"]}})
    )
    assert not evaluate(ask("ec2:RunInstances", f"arn:aws:ec2:us-east-1:{ACCOUNT}:key-pair/k"), [policy]).allowed


@pytest.mark.parametrize(("context", "matches"), [({"aws:TokenIssueTime": "2024-01-01T00:00:00Z"}, True), ({}, False)])
def test_null_requires_temporary_credentials(context, matches):
    """Condition operators, "Condition operator to check existence of condition keys": "use either true (the
    key doesn't exist — it is null) or false (the key exists and its value is not null)"; example
    {"Null": {"aws:TokenIssueTime": "false"}}: "the user must be using temporary credentials (the key cannot
    be absent) for the user to use the Amazon EC2 API"."""
    policy = identity(allow("ec2:*", "*", Condition={"Null": {"aws:TokenIssueTime": "false"}}))
    assert evaluate(ask("ec2:DescribeInstances", "*", **context), [policy]).allowed is matches
    absent_policy = identity(allow("ec2:*", "*", Condition={"Null": {"aws:TokenIssueTime": True}}))
    assert evaluate(ask("ec2:DescribeInstances", "*", **context), [absent_policy]).allowed is not matches


@pytest.mark.parametrize(
    ("max_keys", "matches"), [("10", True), (5, True), ("11", False), (None, False), ("ten", False)]
)
def test_numeric_less_than_equals_max_keys(max_keys, matches):
    """Condition operators, Numeric: "NumericLessThanEquals" with "s3:max-keys": "10" "specif[ies] that the
    requester can list up to 10 objects"; "If the key that you specify in a policy condition is not present
    in the request context, the values do not match."""
    policy = identity(
        allow(
            "s3:ListBucket",
            "arn:aws:s3:::amzn-s3-demo-bucket",
            Condition={"NumericLessThanEquals": {"s3:max-keys": "10"}},
        )
    )
    context = {} if max_keys is None else {"s3:max-keys": max_keys}
    assert evaluate(ask("s3:ListBucket", "arn:aws:s3:::amzn-s3-demo-bucket", **context), [policy]).allowed is matches


@pytest.mark.parametrize(
    ("operator_name", "value", "matches"),
    [
        ("NumericEquals", "3", True),
        ("NumericNotEquals", "3", False),
        ("NumericNotEquals", "4", True),
        ("NumericLessThan", "2", True),
        ("NumericLessThan", "3", False),
        ("NumericGreaterThan", "4", True),
        ("NumericGreaterThanEquals", "3", True),
        ("NumericGreaterThanEquals", "2.5", False),
    ],
)
def test_numeric_operators(operator_name, value, matches):
    """Condition operators, Numeric table: NumericEquals "Matching", NumericNotEquals "Negated matching",
    LessThan / LessThanEquals / GreaterThan / GreaterThanEquals as named; policy value 3."""
    policy = identity(allow("s3:ListBucket", "*", Condition={operator_name: {"s3:max-keys": "3"}}))
    assert evaluate(ask("s3:ListBucket", "*", **{"s3:max-keys": value}), [policy]).allowed is matches


SNS_TOPIC = "arn:aws:sns:us-west-2:123456789012:TOPIC-ID"


@pytest.mark.parametrize(
    ("source_arn", "matches"),
    [(SNS_TOPIC, True), ("arn:aws:sns:us-west-2:777788889999:TOPIC-ID", False), (None, False)],
)
def test_arn_equals_source_arn_table(source_arn, matches):
    """Condition operators, "Example ARN condition operator" (SQS queue policy, Principal {"Service":
    "sns.amazonaws.com"}, "ArnEquals": {"aws:SourceArn": "arn:aws:sns:...:123456789012:TOPIC-ID"}): table
    rows same topic Match, account 777788889999 No match, no aws:SourceArn No match."""
    queue = f"arn:aws:sqs:us-west-2:{ACCOUNT}:QUEUE-ID"
    policy = resource_policy(
        {
            "Effect": "Allow",
            "Principal": {"Service": "sns.amazonaws.com"},
            "Action": "SQS:SendMessage",
            "Resource": queue,
            "Condition": {"ArnEquals": {"aws:SourceArn": SNS_TOPIC}},
        }
    )
    context = {} if source_arn is None else {"aws:SourceArn": source_arn}
    request = Request("sns.amazonaws.com", "sqs:SendMessage", queue, context)
    assert evaluate(request, [], policy).allowed is matches


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        ("arn:aws:sns:*:123456789012:*", SNS_TOPIC, True),
        ("arn:aws:sns:us-west-?:123456789012:TOPIC-ID", SNS_TOPIC, True),
        ("arn:aws:sns:us-west-2:*:TOPIC-ID", SNS_TOPIC, True),
        # each component on its own: the region's "*" does not swallow the account, so "log-group" is
        # compared with the account component (a whole-string match would say yes)
        ("arn:aws:logs:*:log-group:g1", "arn:aws:logs:us-east-1:123456789012:log-group:g1", False),
        ("arn:aws:logs:*:*:log-group:g1", "arn:aws:logs:us-east-1:123456789012:log-group:g1", True),
        ("arn:aws:sns:us-west-2:123456789012:topic-id", SNS_TOPIC, False),
    ],
)
def test_arn_like_checks_each_component(pattern, value, matches):
    """Condition operators, ARN: "Case-sensitive matching of the ARN. Each of the six colon-delimited
    components of the ARN is checked separately and each can include multi-character match wildcards (*) or
    single-character match wildcards (?)."""
    policy = identity(allow("sqs:SendMessage", "*", Condition={"ArnLike": {"aws:SourceArn": pattern}}))
    assert evaluate(ask("sqs:SendMessage", "*", **{"aws:SourceArn": value}), [policy]).allowed is matches


DISTRIBUTION = "arn:aws:cloudfront::123456789012:distribution/"


@pytest.mark.parametrize(
    ("arns", "matches"),
    [
        ([f"{DISTRIBUTION}costcenter"], True),
        ([f"{DISTRIBUTION}costcenter", f"{DISTRIBUTION}support2025"], True),
        (["arn:aws:cloudfront::777788889999:distribution/costcenter"], False),
        (None, True),
    ],
)
def test_for_all_values_arn_like_table(arns, matches):
    """Condition operators, "Example using ForAllValues with an ARN condition operator" ("ForAllValues:ArnLike":
    {"logs:LogGeneratingResourceArns": [".../distribution/*", ".../distribution/support*"]}), and "The
    ForAllValues qualifier returns true if there are no context keys in the request or if the context key
    value resolves to a null dataset"."""
    policy = resource_policy(
        {
            "Effect": "Allow",
            "Principal": "*",
            "Action": "logs:PutDeliverySource",
            "Resource": "arn:aws:logs:us-east-1:123456789012:delivery-source:*",
            "Condition": {
                "ForAllValues:ArnLike": {
                    "logs:LogGeneratingResourceArns": [f"{DISTRIBUTION}*", f"{DISTRIBUTION}support*"]
                }
            },
        }
    )
    context = {} if arns is None else {"logs:LogGeneratingResourceArns": arns}
    request = ask("logs:PutDeliverySource", "arn:aws:logs:us-east-1:123456789012:delivery-source:s", **context)
    assert evaluate(request, [], policy).allowed is matches


@pytest.mark.parametrize(
    ("tag_keys", "denied"),
    [(["key1:legal"], False), (["key1:hr", "key1:personnel"], False), (["key2:audit"], True), (None, True)],
)
def test_for_all_values_string_not_like_deny_table(tag_keys, denied):
    """Multivalued context keys examples, "Example: Deny policy with condition set operator ForAllValues"
    (DenyRestrictedTags, "ForAllValues:StringNotLike": {"aws:TagKeys": "key1*"}): key1:legal No match,
    key1:hr + key1:personnel No match, key2:audit Match, "No aws:TagKeys in the request context" Match."""
    deny = {
        "Sid": "DenyRestrictedTags",
        "Effect": "Deny",
        "Action": ["iam:Tag*", "iam:UnTag*"],
        "Resource": ["*"],
        "Condition": {"ForAllValues:StringNotLike": {"aws:TagKeys": "key1*"}},
    }
    context = {} if tag_keys is None else {"aws:TagKeys": tag_keys}
    decision = evaluate(ask("iam:TagRole", ROLE, **context), [identity(allow(), deny)])
    assert (decision.reason == "explicit-deny") is denied


@pytest.mark.parametrize(("tag_keys", "matches"), [(["team", "cost"], True), (["team"], False), (None, False)])
def test_for_any_value_negated_needs_one_unlisted_value(tag_keys, matches):
    """Condition operators, multivalued string table: "ForAnyValue:StringNotEquals" is "Negated matching. At
    least one context key value in the request must NOT match any of values in the context key in your
    policy"; ForAnyValue "For no matching context key or a null dataset, the condition returns false"."""
    policy = identity(allow("iam:TagRole", "*", Condition={"ForAnyValue:StringNotEquals": {"aws:TagKeys": "team"}}))
    context = {} if tag_keys is None else {"aws:TagKeys": tag_keys}
    assert evaluate(ask("iam:TagRole", ROLE, **context), [policy]).allowed is matches


@pytest.mark.parametrize(("vpce", "denied"), [("vpce-1a2b3c4d", False), ("vpce-ffffffff", True), (None, True)])
def test_negated_operator_with_absent_key_is_true(vpce, denied):
    """Condition operators, Important: "If the policy condition requires that the key is not matched, such as
    StringNotLike or ArnNotLike, and the right key is not present, the condition is true." So the S3
    "Restricting access to a specific VPC endpoint" Deny ("StringNotEquals": {"aws:SourceVpce":
    "vpce-1a2b3c4d"}) also denies a request that came through no endpoint at all."""
    deny = {
        "Sid": "Access-to-specific-VPCE-only",
        "Principal": "*",
        "Action": "s3:*",
        "Effect": "Deny",
        "Resource": ["arn:aws:s3:::awsexamplebucket1", "arn:aws:s3:::awsexamplebucket1/*"],
        "Condition": {"StringNotEquals": {"aws:SourceVpce": "vpce-1a2b3c4d"}},
    }
    context = {} if vpce is None else {"aws:SourceVpce": vpce}
    decision = evaluate(
        ask("s3:GetObject", "arn:aws:s3:::awsexamplebucket1/k", **context), [identity(allow())], resource_policy(deny)
    )
    assert (decision.reason == "explicit-deny") is denied


@pytest.mark.parametrize(("region", "matches"), [("us-east-1", False), ("eu-west-1", False), ("ap-south-1", True)])
def test_negated_operator_with_several_values_is_nor(region, matches):
    """Conditions with multiple context keys or values: "If a single negated matching condition operator
    includes multiple values for a context key, those values are evaluated using a logical NOR." """
    policy = identity(
        allow("s3:*", "*", Condition={"StringNotEquals": {"aws:RequestedRegion": ["us-east-1", "eu-west-1"]}})
    )
    assert evaluate(ask("s3:GetObject", "*", **{"aws:RequestedRegion": region}), [policy]).allowed is matches


@pytest.mark.parametrize(
    ("context", "matches"),
    [
        ({"aws:PrincipalTag/team": "ml", "aws:RequestedRegion": "us-east-1"}, True),
        ({"aws:PrincipalTag/team": "web", "aws:RequestedRegion": "us-east-1"}, False),
        ({"aws:PrincipalTag/team": "ml", "aws:RequestedRegion": "eu-west-1"}, False),
        ({"aws:PrincipalTag/team": "ml"}, False),
    ],
)
def test_several_keys_and_operators_are_anded(context, matches):
    """Conditions with multiple context keys or values: "If your policy statement has multiple condition
    operators, the condition operators are evaluated using a logical AND. If your policy statement has
    multiple context keys attached to a single condition operator, the context keys are evaluated using a
    logical AND." """
    condition = {
        "StringEquals": {"aws:PrincipalTag/team": "ml", "aws:RequestedRegion": "us-east-1"},
        "Bool": {"aws:SecureTransport": "true"},
    }
    policy = identity(allow("s3:*", "*", Condition=condition))
    assert evaluate(ask("s3:GetObject", "*", **{"aws:SecureTransport": True}, **context), [policy]).allowed is matches
    assert not evaluate(ask("s3:GetObject", "*", **{"aws:SecureTransport": False}, **context), [policy]).allowed


@pytest.mark.parametrize(
    "operator_name",
    [
        "StringEqualz",
        "DateLessThan",
        "IpAddress",
        "NullIfExists",
        "ForAllValues:Null",
        "ForSomeValues:StringEquals",
        "IfExists",
    ],
)
def test_unknown_or_unsupported_operator_is_named(operator_name):
    """An operator the engine cannot decide is refused with its name, never silently read as a miss (a miss
    on a Deny would read as a grant). Date*/IpAddress are IAM operators left out on purpose; "You can add
    IfExists to the end of any condition operator name except the Null condition"."""
    policy = identity(allow("s3:*", "*", Condition={operator_name: {"aws:CurrentTime": "2030-01-01T00:00:00Z"}}))
    with pytest.raises(ValueError, match=operator_name):
        evaluate(ask("s3:GetObject", "*"), [policy])


def test_unknown_operator_is_reported_even_when_the_action_misses():
    """The check runs on every statement, so a typo in a statement about another action is still found."""
    policy = identity(allow("ec2:*", "*", Condition={"StringEqualz": {"aws:username": "x"}}))
    with pytest.raises(ValueError, match="StringEqualz"):
        evaluate(ask("s3:GetObject", "*"), [policy])


# ---- KMS key policies -------------------------------------------------------------------------------

KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
ENABLE_IAM = {
    "Sid": "Enable IAM User Permissions",
    "Effect": "Allow",
    "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
    "Action": "kms:*",
    "Resource": "*",
}
KEY_USERS = {
    "Sid": "Allow use of the key",
    "Effect": "Allow",
    "Principal": {"AWS": ROLE},
    "Action": ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"],
    "Resource": "*",
}
ROLE_MAY_DECRYPT = identity(allow("kms:Decrypt", KEY, Sid="UseKey"))


def key_policy(*statements: dict) -> Policy:
    return Policy("key policy of ModelKey", {"Version": "2012-10-17", "Statement": list(statements)})


def test_default_key_policy_delegates_to_the_identity_policy():
    """AWS KMS, Default key policy: its one statement "gives the AWS account that owns the KMS key permission
    to use IAM policies to allow access to all AWS KMS operations on the KMS key" (Sid "Enable IAM User
    Permissions", Principal {"AWS": "arn:aws:iam::111122223333:root"}, "kms:*"). With it, the role's IAM
    Allow decides."""
    decision = evaluate(
        ask("kms:Decrypt", KEY), [ROLE_MAY_DECRYPT], key_policy(ENABLE_IAM), resource_policy_must_allow=True
    )
    assert (decision.allowed, sids(decision)) == (True, ["Enable IAM User Permissions", "UseKey"])


def test_default_key_policy_without_an_identity_allow_is_an_implicit_deny():
    """Same statement: delegation is permission "to use IAM policies"; with no IAM policy allowing
    kms:Decrypt the request is implicitly denied, and the message says the identity policy is missing."""
    decision = evaluate(ask("kms:Decrypt", KEY), [identity()], key_policy(ENABLE_IAM), resource_policy_must_allow=True)
    assert (decision.allowed, decision.reason) == (False, "implicit-deny")
    assert [ref.sid for ref in decision.delegated_by] == ["Enable IAM User Permissions"]
    assert "no identity policy allows it" in decision.explain()


def test_key_policy_naming_the_role_allows_without_iam():
    """AWS KMS, Key policies: "You can use the key policy alone to control access, which means the full scope
    of access to the KMS key is defined in a single document (the key policy)." (KMS key access and
    permissions); the console's "Allow use of the key" statement names the key users."""
    decision = evaluate(ask("kms:Decrypt", KEY), [identity()], key_policy(KEY_USERS), resource_policy_must_allow=True)
    assert (decision.allowed, sids(decision)) == (True, ["Allow use of the key"])


def test_key_policy_that_neither_allows_nor_delegates():
    """AWS KMS, Key policies in AWS KMS: "Unless the key policy explicitly allows it, you cannot use IAM
    policies to allow access to a KMS key. Without permission from the key policy, IAM policies that allow
    permissions have no effect." The key policy here names another role only; the role's IAM Allow on the
    key (and even on "*") does nothing."""
    others_only = {**KEY_USERS, "Principal": {"AWS": OTHER_ROLE}}
    identity_policies = [ROLE_MAY_DECRYPT, identity(allow("kms:*", "*"))]
    decision = evaluate(
        ask("kms:Decrypt", KEY), identity_policies, key_policy(others_only), resource_policy_must_allow=True
    )
    assert (decision.allowed, decision.reason, decision.deciding) == (False, "key-policy-does-not-allow", ())
    assert "key policy neither allows" in decision.explain()
    same_without_flag = evaluate(ask("kms:Decrypt", KEY), identity_policies, key_policy(others_only))
    assert same_without_flag.allowed  # what an ordinary resource would have done


def test_identity_deny_on_a_key_needs_no_key_policy_permission():
    """Key policies in AWS KMS: "(You can use an IAM policy to deny a permission to a KMS key without
    permission from a key policy.)" """
    deny = {"Sid": "NoDecrypt", "Effect": "Deny", "Action": "kms:Decrypt", "Resource": "*"}
    decision = evaluate(
        ask("kms:Decrypt", KEY), [identity(deny)], key_policy(KEY_USERS), resource_policy_must_allow=True
    )
    assert (decision.reason, sids(decision)) == ("explicit-deny", ["NoDecrypt"])


# ---- Messages and malformed input -------------------------------------------------------------------


def test_explain_names_principal_action_resource_and_the_deciding_statement():
    """A missing or refused grant is reported with who asked for what, and which statements decided."""
    request = ask("s3:GetObject", "arn:aws:s3:::DOC-EXAMPLE-BUCKET/model.bin", **{"aws:SecureTransport": False})
    denied = evaluate(request, [identity(allow("s3:GetObject", Sid="ReadModels"))], SSL_ONLY).explain()
    for part in (
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::DOC-EXAMPLE-BUCKET/model.bin",
        "AllowSSLRequestsOnly",
        "bucket policy of DOC-EXAMPLE-BUCKET",
        "aws:SecureTransport=false",
    ):
        assert part in denied
    assert denied.startswith("DENIED") and "\n" not in denied
    missing = evaluate(
        ask("s3:PutObject", "arn:aws:s3:::b/k"), [identity(allow("s3:GetObject", Sid="ReadModels"))]
    ).explain()
    assert missing.startswith("DENIED") and "s3:PutObject" in missing and "role policy" in missing
    allowed = evaluate(
        ask("s3:GetObject", "arn:aws:s3:::b/k"), [identity(allow("s3:GetObject", Sid="ReadModels"))]
    ).explain()
    assert allowed.startswith("ALLOWED") and "ReadModels" in allowed


def test_statement_may_be_a_single_mapping():
    """IAM JSON policy elements: Statement: "The Statement element can contain a single statement or an array
    of individual statements." """
    policy = Policy("role policy", {"Version": "2012-10-17", "Statement": allow("s3:GetObject", "*")})
    assert evaluate(ask("s3:GetObject", "arn:aws:s3:::b/k"), [policy]).allowed


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ({"Effect": "Allow", "Action": "s3:*", "NotAction": "iam:*", "Resource": "*"}, "both Action and NotAction"),
        ({"Effect": "Allow", "Resource": "*"}, "neither Action nor NotAction"),
        ({"Effect": "allow", "Action": "s3:*", "Resource": "*"}, "Effect must be"),
        ({"Effect": "Allow", "Action": {"Fn::Join": ["", ["s3:", "Get*"]]}, "Resource": "*"}, "render intrinsics"),
    ],
)
def test_malformed_statements_are_refused(statement, message):
    """IAM refuses these policies outright; the engine says which statement and why, rather than guess."""
    with pytest.raises(ValueError, match=message):
        evaluate(ask("s3:GetObject", "*"), [identity(statement)])


# ---- Policy variables, the keys every request carries, what IAM does not settle --------------------------------


def test_policy_variable_before_the_fifth_colon_is_refused():
    """Variables page, Resource element: "You can't use a variable to replace parts of the ARN before the fifth
    colon, such as the service or account." """
    policy = identity(allow("sqs:SendMessage", "arn:aws:sqs:us-east-2:${aws:PrincipalAccount}:queue"))
    with pytest.raises(ValueError, match="before the ARN's fifth colon"):
        evaluate(ask("ec2:RunInstances", "*"), [policy])  # refused whatever the request


def test_policy_variable_in_a_numeric_condition_is_refused():
    """Condition operators, Numeric: "Policy variables - Not supported"; Variables page: "You can't use a policy
    variable with other operators, such as Numeric, Date, Boolean, Binary, IP Address, or Null operators." """
    policy = identity(allow("s3:ListBucket", "*", Condition={"NumericLessThanEquals": {"s3:max-keys": "${aws:x}"}}))
    with pytest.raises(ValueError, match="takes no policy variable"):
        evaluate(ask("s3:ListBucket", "*", **{"s3:max-keys": 3}), [policy])


def test_policy_variable_in_bool_is_not_decidable():
    """The pages disagree: Condition operators says Boolean operators support policy variables, the Variables
    page says they do not; the evaluator refuses rather than pick one."""
    policy = identity(allow("s3:GetObject", "*", Condition={"Bool": {"aws:SecureTransport": "${aws:x}"}}))
    with pytest.raises(NotDecidable, match="disagree"):
        evaluate(ask("s3:GetObject", "arn:aws:s3:::b/k", **{"aws:x": "true", "aws:SecureTransport": True}), [policy])


@pytest.mark.parametrize(
    ("value", "message"),
    [(["a", "b"], "several values"), ("", "empty value"), ("team*", r"\* or \?")],
)
def test_variable_values_iam_does_not_define(value, message):
    """ "You can't use a multivalued condition key as a variable" (Variables page); whether an empty value is "no
    value", and whether * or ? in a substituted value are wildcards, no page says."""
    policy = identity(allow("s3:GetObject", "arn:aws:s3:::bucket/${aws:PrincipalTag/team}/*"))
    request = ask("s3:GetObject", "arn:aws:s3:::bucket/team1/x", **{"aws:PrincipalTag/team": value})
    with pytest.raises(NotDecidable, match=message):
        evaluate(request, [policy])


def test_policies_without_version_2012_10_17_keep_variables_and_escapes_literal():
    """IAM JSON policy elements: Version: "2008-10-17 ... variables such as ${aws:username} aren't recognized as
    variables and are instead treated as literal strings in the policy"; without Version "variables like
    ${aws:username} are treated as literal strings" (Variables page)."""
    for version in ("2008-10-17", None):
        document: dict[str, Any] = {"Statement": [allow("s3:GetObject", "arn:aws:s3:::bucket/${aws:username}/*")]}
        if version:
            document["Version"] = version
        policy = Policy("old policy", document)
        assert not evaluate(
            ask("s3:GetObject", "arn:aws:s3:::bucket/david/x", **{"aws:username": "david"}), [policy]
        ).allowed
        assert evaluate(ask("s3:GetObject", "arn:aws:s3:::bucket/${aws:username}/x"), [policy]).allowed


def test_escapes_in_exact_operators_are_the_characters():
    """Variables page, Special characters: "${*} - use where you need an * (asterisk) character"; "These
    predefined policy variables can be used in any string where you can use regular policy variables." """
    policy = identity(allow("s3:ListBucket", "*", Condition={"StringEquals": {"s3:prefix": "logs${*}"}}))
    assert evaluate(ask("s3:ListBucket", "*", **{"s3:prefix": "logs*"}), [policy]).allowed
    assert not evaluate(ask("s3:ListBucket", "*", **{"s3:prefix": "logs2026"}), [policy]).allowed


ROLE_ARN_ONLY = {"Condition": {"ArnEquals": {"aws:PrincipalArn": ROLE}}}


@pytest.mark.parametrize(
    ("principal", "key", "value"),
    [
        (ROLE, "aws:PrincipalArn", ROLE),
        (ROLE, "aws:PrincipalAccount", ACCOUNT),
        (ROLE, "aws:PrincipalType", "AssumedRole"),
        (ROLE, "aws:PrincipalIsAWSService", "false"),
        (f"arn:aws:iam::{ACCOUNT}:user/division_abc/Bob", "aws:username", "Bob"),
        (f"arn:aws:iam::{ACCOUNT}:user/division_abc/Bob", "aws:PrincipalType", "User"),
        (f"arn:aws:iam::{ACCOUNT}:root", "aws:PrincipalType", "Account"),
        (f"arn:aws:iam::{ACCOUNT}:root", "aws:userid", ACCOUNT),
        ("events.amazonaws.com", "aws:PrincipalIsAWSService", "true"),
        ("events.amazonaws.com", "aws:PrincipalServiceName", "events.amazonaws.com"),
    ],
)
def test_keys_every_request_carries(principal, key, value):
    """IAM User Guide, AWS global condition context keys (Availability of aws:PrincipalArn, aws:PrincipalAccount,
    aws:PrincipalIsAWSService, aws:PrincipalServiceName, aws:PrincipalType, aws:userid, aws:username) and the
    Variables page's "Principal key values" table."""
    bucket = resource_policy(
        {
            "Effect": "Allow",
            "Principal": "*",
            "Action": "s3:GetObject",
            "Resource": "*",
            "Condition": {"StringEquals": {key: value}},
        }
    )
    assert evaluate(Request(principal, "s3:GetObject", "arn:aws:s3:::b/k"), [], bucket).allowed


@pytest.mark.parametrize(
    ("principal", "absent"),
    [(ROLE, "aws:username"), (ROLE, "aws:PrincipalServiceName"), (f"arn:aws:iam::{ACCOUNT}:root", "aws:username")],
)
def test_keys_iam_says_are_not_present(principal, absent):
    """aws:username: "requests that are made using the AWS account root user or IAM roles do not include this
    key"; aws:PrincipalServiceName "is not present ... If the call is made directly by an IAM principal"."""
    bucket = resource_policy(
        {
            "Effect": "Allow",
            "Principal": "*",
            "Action": "s3:GetObject",
            "Resource": "*",
            "Condition": {"Null": {absent: "true"}},
        }
    )
    assert evaluate(Request(principal, "s3:GetObject", "arn:aws:s3:::b/k"), [], bucket).allowed


def test_the_callers_context_wins_over_the_implied_keys():
    """The keys are added "unless the caller gives them": a caller that knows better (another account for the
    same ARN text) is believed."""
    deny = {
        "Effect": "Deny",
        "Action": "*",
        "Resource": "*",
        "Condition": {"StringNotEquals": {"aws:PrincipalAccount": ACCOUNT}},
    }
    policies = [identity(allow(), deny)]
    assert evaluate(ask("s3:GetObject", "arn:aws:s3:::b/k"), policies).allowed
    assert not evaluate(
        ask("s3:GetObject", "arn:aws:s3:::b/k", **{"AWS:PRINCIPALACCOUNT": "999999999999"}), policies
    ).allowed


def test_kms_caller_account_only_on_kms_key_operations():
    """AWS KMS condition keys, kms:CallerAccount: API operations "KMS key resource operations"."""
    statement = {
        "Effect": "Allow",
        "Principal": "*",
        "Action": "*",
        "Resource": "*",
        "Condition": {"StringEquals": {"kms:CallerAccount": ACCOUNT}},
    }
    assert evaluate(
        ask("kms:Decrypt", f"arn:aws:kms:us-east-1:{ACCOUNT}:key/k"), [], resource_policy(statement)
    ).allowed
    assert not evaluate(ask("s3:GetObject", "arn:aws:s3:::b/k"), [], resource_policy(statement)).allowed


@pytest.mark.parametrize(
    ("principal", "key"),
    [
        ("events.amazonaws.com", "aws:PrincipalArn"),
        ("events.amazonaws.com", "aws:PrincipalAccount"),
        (f"arn:aws:sts::{ACCOUNT}:assumed-role/ExecutionRole/session", "aws:PrincipalArn"),
        (ROLE, "aws:userid"),
    ],
)
def test_a_key_iam_puts_in_the_request_with_an_unknown_value_is_not_decidable(principal, key):
    """aws:PrincipalArn and aws:PrincipalAccount are in every (signed) request, but no page gives their value for a
    service principal; a session's ARN does not carry its role's path; aws:userid holds IAM's unique ids. A Deny
    that consults one cannot be decided: NotDecidable names the key, never a guessed verdict."""
    deny = {
        "Sid": "Fence",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": "*",
        "Condition": {"StringNotEquals": {key: "x"}},
    }
    allow_all = {"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": "*"}
    with pytest.raises(NotDecidable, match=key):
        evaluate(Request(principal, "s3:GetObject", "arn:aws:s3:::b/k"), [], resource_policy(deny, allow_all))


def test_an_undecidable_statement_that_cannot_change_the_outcome_is_no_obstacle():
    """A Deny that certainly applies wins whatever an undecidable one says; an Allow that certainly applies
    allows whatever an undecidable Allow says."""
    unknown = {"Condition": {"StringEquals": {"aws:userid": "AIDAEXAMPLE"}}}
    undecidable_deny = {"Effect": "Deny", "Action": "s3:*", "Resource": "*", **unknown}
    certain_deny = {"Sid": "Certain", "Effect": "Deny", "Action": "s3:GetObject", "Resource": "*"}
    assert evaluate(ask(*GET), [identity(allow(), undecidable_deny, certain_deny)]).reason == "explicit-deny"
    undecidable_allow = {"Effect": "Allow", "Action": "s3:*", "Resource": "*", **unknown}
    assert evaluate(ask(*GET), [identity(allow(), undecidable_allow)]).allowed
    with pytest.raises(NotDecidable, match="aws:userid"):
        evaluate(ask(*GET), [identity(undecidable_allow)])


@pytest.mark.parametrize(("value", "null"), [(None, True), ("", True), ([], True), ("x", False), (["x"], False)])
def test_null_reads_an_empty_value_as_null(value, null):
    """Condition operators: "To prevent missing context keys or context keys with empty values from evaluating
    to true, you can include the Null condition operator in your policy with a false value to check if the
    context key exists and its value is not null." """
    policy = identity(allow("ec2:DeleteTags", "*", Condition={"Null": {"aws:TagKeys": "false"}}))
    context = {} if value is None else {"aws:TagKeys": value}
    assert evaluate(ask("ec2:DeleteTags", "*", **context), [policy]).allowed is not null


def test_key_policy_statement_without_resource_has_no_effect_but_other_resource_policies_do():
    """AWS KMS, Key policy elements: "A key policy statement without a Resource element doesn't apply to any KMS
    key." ECR repository policies name no Resource (test_resource_policy_statement_without_resource_...)."""
    statement = {"Effect": "Allow", "Principal": {"AWS": ROLE}, "Action": "kms:Decrypt"}
    key = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/k"
    assert evaluate(
        ask("kms:Decrypt", key), [], resource_policy(statement), resource_policy_must_allow=True
    ).reason == ("key-policy-does-not-allow")


def test_an_undecidable_identity_allow_does_not_matter_when_the_key_policy_allows_nothing():
    """Key policies in AWS KMS: "Without permission from the key policy, IAM policies that allow permissions have
    no effect": whatever an undecidable IAM Allow would say, the key refuses."""
    undecidable_allow = allow("kms:Decrypt", "*", Condition={"StringEquals": {"aws:userid": "AROAEXAMPLE:session"}})
    others_only = {**KEY_USERS, "Principal": {"AWS": OTHER_ROLE}}
    decision = evaluate(
        ask("kms:Decrypt", KEY), [identity(undecidable_allow)], key_policy(others_only), resource_policy_must_allow=True
    )
    assert decision.reason == "key-policy-does-not-allow"
    with pytest.raises(NotDecidable, match="aws:userid"):
        evaluate(
            ask("kms:Decrypt", KEY),
            [identity(undecidable_allow)],
            key_policy(ENABLE_IAM),
            resource_policy_must_allow=True,
        )


@pytest.mark.parametrize(
    ("key", "value"), [("aws:PrincipalTag/cost:center", "ml"), ("kms:EncryptionContext:project", "ml")]
)
def test_variables_whose_key_has_more_colons(key, value):
    """Condition keys may hold further colons or slashes after the service prefix (a tag key "cost:center",
    kms:EncryptionContext:context-key, AWS KMS condition keys); they are still variables."""
    policy = identity(allow("s3:GetObject", f"arn:aws:s3:::bucket/${{{key}}}/*"))
    assert evaluate(ask("s3:GetObject", "arn:aws:s3:::bucket/ml/x", **{key: value}), [policy]).allowed


def test_an_undecidable_part_is_no_obstacle_where_another_settles_the_statement():
    """Resource entries OR ("a resource that matches any"), condition operators AND (Conditions with multiple
    context keys or values): one certain match of Resource, or one certainly failing condition, settles the
    statement whatever an undecidable part would say."""
    resources = allow("s3:GetObject", ["arn:aws:s3:::b/k", "arn:aws:s3:::b/${aws:userid}/*"])
    assert evaluate(ask("s3:GetObject", "arn:aws:s3:::b/k"), [identity(resources)]).allowed
    with pytest.raises(NotDecidable, match="aws:userid"):
        evaluate(ask("s3:GetObject", "arn:aws:s3:::b/other"), [identity(resources)])
    conditions = {"StringEquals": {"aws:userid": "AIDAEXAMPLE", "aws:RequestedRegion": "us-east-1"}}
    decision = evaluate(
        ask("s3:GetObject", "arn:aws:s3:::b/k", **{"aws:RequestedRegion": "eu-west-1"}),
        [identity(allow("s3:GetObject", "*", Condition=conditions))],
    )
    assert decision.reason == "implicit-deny"
