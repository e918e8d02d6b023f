"""Requests and their outcomes as IAM's and KMS's documentation states them: the corpus test_iam_corpus.py runs.

Each case names the page it is taken from, quotes the sentence or example that decides it, and gives the
policies (identity policies; a resource policy, or a KMS key policy when ``key_policy``), the request (principal,
action, resource, context) and the outcome the page gives: "allow", "explicit-deny", "implicit-deny" or
"key-policy-does-not-allow". Where a page's example is one statement that "does not allow any actions", the
case adds ``ALLOW_ALL`` to the identity policies and says so in ``added``; where a page leaves a placeholder
(``service:*``, ``amzn-s3-demo-bucket``), the case fills it and says how. Pages were read in their stored
copies of 2025-2026 (the IAM User Guide's NotPrincipal page as fetched 2026-03-06) and checked against the
archived sources in github.com/awsdocs/iam-user-guide and github.com/awsdocs/aws-kms-developer-guide (2023).

Plain data (str, dict, list, bool) so that other evaluators can be scored on the same cases
(peagle/access/policy_eval.py's docstring gives their scores).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["allow", "explicit-deny", "implicit-deny", "key-policy-does-not-allow"]

IAM = "https://docs.aws.amazon.com/IAM/latest/UserGuide/"
EVALUATION = IAM + "reference_policies_evaluation-logic.html"
NOT_ACTION = IAM + "reference_policies_elements_notaction.html"
NOT_RESOURCE = IAM + "reference_policies_elements_notresource.html"
RESOURCE = IAM + "reference_policies_elements_resource.html"
PRINCIPAL = IAM + "reference_policies_elements_principal.html"
NOT_PRINCIPAL = IAM + "reference_policies_elements_notprincipal.html"
OPERATORS = IAM + "reference_policies_elements_condition_operators.html"
MULTIVALUED = IAM + "reference_policies_condition-single-vs-multi-valued-context-keys.html"
MULTIVALUED_EXAMPLES = IAM + "reference_policies_condition_examples-multi-valued-context-keys.html"
VARIABLES = IAM + "reference_policies_variables.html"
GLOBAL_KEYS = IAM + "reference_policies_condition-keys.html"
VERSION = IAM + "reference_policies_elements_version.html"
KMS = "https://docs.aws.amazon.com/kms/latest/developerguide/"
KMS_KEY_POLICIES = KMS + "key-policies.html"
KMS_DEFAULT = KMS + "key-policy-default.html"
KMS_OVERVIEW = KMS + "key-policy-overview.html"
KMS_CONDITIONS = KMS + "conditions-kms.html"
MANAGED_POLICY = "https://docs.aws.amazon.com/aws-managed-policy/latest/reference/SageMakerStudioFullAccess.html"


@dataclass(frozen=True)
class Case:
    id: str
    url: str
    quote: str
    expected: Outcome
    principal: str
    action: str
    resource: str
    context: dict[str, Any] = field(default_factory=dict)
    identity: tuple[dict[str, Any], ...] = ()
    resource_policy: dict[str, Any] | None = None
    key_policy: bool = False
    added: str = ""  # what the case adds to the page's example, and why


def policy(*statements: dict[str, Any], version: str | None = "2012-10-17") -> dict[str, Any]:
    document: dict[str, Any] = {"Statement": list(statements)}
    if version is not None:
        document["Version"] = version
    return document


ALLOW_ALL = {"Sid": "AllowAll", "Effect": "Allow", "Action": "*", "Resource": "*"}
ALLOWS_THE_REST = "an Allow on everything, since the page's policy 'does not allow any actions' by itself"

# ---- Policy evaluation logic -------------------------------------------------------------------------------

CARLOS = "arn:aws:iam::111122223333:user/carlossalazar"
CARLOS_POLICY = policy(
    {"Sid": "AllowS3ListRead", "Effect": "Allow", "Action": ["s3:ListAllMyBuckets", "s3:HeadBucket"], "Resource": "*"},
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
)
CARLOS_BUCKET_POLICY = policy({"Effect": "Allow", "Action": "s3:*", "Principal": {"AWS": CARLOS}, "Resource": "*"})
GET_LIST_DENY_REPORTS = policy(
    {"Sid": "AllowGetList", "Effect": "Allow", "Action": ["iam:Get*", "iam:List*"], "Resource": "*"},
    {"Sid": "DenyReports", "Effect": "Deny", "Action": "iam:*Report", "Resource": "*"},
)
ROLE = "arn:aws:iam::111122223333:role/ExampleRole"

EVALUATION_CASES = [
    Case(
        "carlos-logs-bucket-denied",
        EVALUATION,
        "When Carlos makes his request to save a file to the carlossalazar-logs bucket ... AWS first checks for a "
        "Deny statement that applies to the context of the request. It finds one ... Carlos is denied access.",
        "explicit-deny",
        CARLOS,
        "s3:PutObject",
        "arn:aws:s3:::carlossalazar-logs/today.log",
        identity=(CARLOS_POLICY,),
        resource_policy=CARLOS_BUCKET_POLICY,
    ),
    Case(
        "carlos-own-bucket-allowed",
        EVALUATION,
        "he then realizes his mistake and tries to save the file to the carlossalazar bucket ... Both the "
        "identity-based policy and the resource-based policy allow the request. Therefore, AWS allows the request.",
        "allow",
        CARLOS,
        "s3:PutObject",
        "arn:aws:s3:::carlossalazar/notes.txt",
        identity=(CARLOS_POLICY,),
        resource_policy=CARLOS_BUCKET_POLICY,
    ),
    Case(
        "implicit-deny-create-policy",
        EVALUATION + "#AccessPolicyLanguage_Interplay",
        "All other actions in IAM, such as iam:CreatePolicy are implicitly denied.",
        "implicit-deny",
        ROLE,
        "iam:CreatePolicy",
        "*",
        identity=(GET_LIST_DENY_REPORTS,),
    ),
    Case(
        "explicit-deny-report",
        EVALUATION + "#AccessPolicyLanguage_Interplay",
        "The DenyReports statement explicitly denies access to IAM reports by denying access to actions that "
        "include the Report suffix, such as iam:GetOrganizationsAccessReport.",
        "explicit-deny",
        ROLE,
        "iam:GetOrganizationsAccessReport",
        "*",
        identity=(GET_LIST_DENY_REPORTS,),
    ),
    Case(
        "explicit-deny-beats-another-policy",
        EVALUATION + "#AccessPolicyLanguage_Interplay",
        "If someone adds another policy to this principal to grant them access to IAM reports, such as "
        "iam:GenerateCredentialReport, report-related requests are still denied because of this explicit deny.",
        "explicit-deny",
        ROLE,
        "iam:GenerateCredentialReport",
        "*",
        identity=(
            GET_LIST_DENY_REPORTS,
            policy({"Effect": "Allow", "Action": "iam:GenerateCredentialReport", "Resource": "*"}),
        ),
    ),
    Case(
        "resource-policy-alone-allows",
        EVALUATION,
        "If an action is allowed by an identity-based policy, a resource-based policy, or both, then AWS allows "
        "the action.",
        "allow",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/report.csv",
        resource_policy=policy(
            {"Effect": "Allow", "Principal": {"AWS": ROLE}, "Action": "s3:GetObject", "Resource": "*"}
        ),
    ),
]

# ---- NotAction, NotResource, Resource ----------------------------------------------------------------------

HR_PAYROLL = {
    "Effect": "Deny",
    "Action": "s3:*",
    "NotResource": ["arn:aws:s3:::HRBucket/Payroll", "arn:aws:s3:::HRBucket/Payroll/*"],
}

ELEMENT_CASES = [
    Case(
        "notaction-allow-s3-not-deletebucket",
        NOT_ACTION,
        "The following example allows users to access all of the Amazon S3 actions that can be performed on any "
        'S3 resource except for deleting a bucket. ("NotAction": "s3:DeleteBucket", "Resource": "arn:aws:s3:::*")',
        "implicit-deny",
        ROLE,
        "s3:DeleteBucket",
        "arn:aws:s3:::amzn-s3-demo-bucket",
        identity=(policy({"Effect": "Allow", "NotAction": "s3:DeleteBucket", "Resource": "arn:aws:s3:::*"}),),
    ),
    Case(
        "notaction-allow-s3-getobject",
        NOT_ACTION,
        "allows users to access all of the Amazon S3 actions that can be performed on any S3 resource except for "
        "deleting a bucket.",
        "allow",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/key",
        identity=(policy({"Effect": "Allow", "NotAction": "s3:DeleteBucket", "Resource": "arn:aws:s3:::*"}),),
    ),
    Case(
        "notaction-allow-everything-but-iam",
        NOT_ACTION,
        'The following example allows users to access every action in every AWS service except for IAM. ("NotAction": '
        '"iam:*", "Resource": "*")',
        "implicit-deny",
        ROLE,
        "iam:CreateRole",
        "arn:aws:iam::111122223333:role/new",
        identity=(policy({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}),),
    ),
    Case(
        "notaction-deny-without-mfa",
        NOT_ACTION,
        "The following conditional example denies access to non-IAM actions if the user is not signed in using MFA. "
        '("NotAction": "iam:*", "Condition": {"BoolIfExists": {"aws:MultiFactorAuthPresent": "false"}})',
        "explicit-deny",
        "arn:aws:iam::111122223333:user/ExampleUser",
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/key",
        identity=(
            policy(
                ALLOW_ALL,
                {
                    "Sid": "DenyAllUsersNotUsingMFA",
                    "Effect": "Deny",
                    "NotAction": "iam:*",
                    "Resource": "*",
                    "Condition": {"BoolIfExists": {"aws:MultiFactorAuthPresent": "false"}},
                },
            ),
        ),
        added=ALLOWS_THE_REST + "; the request uses long-term keys, so it carries no aws:MultiFactorAuthPresent",
    ),
    Case(
        "notresource-deny-outside-payroll",
        NOT_RESOURCE,
        "The following policy explicitly denies access to all Amazon S3 resources other than the listed resources.",
        "explicit-deny",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::HRBucket/Bonuses/2024.csv",
        identity=(policy(ALLOW_ALL, HR_PAYROLL),),
        added=ALLOWS_THE_REST,
    ),
    Case(
        "notresource-payroll-not-denied",
        NOT_RESOURCE,
        "Members of HRPayroll should not be allowed to access any Amazon S3 resources except the Payroll folder in "
        "the HRBucket bucket.",
        "allow",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::HRBucket/Payroll/2024/march.csv",
        identity=(policy(ALLOW_ALL, HR_PAYROLL),),
        added=ALLOWS_THE_REST,
    ),
    Case(
        "resource-star-spans-slashes",
        RESOURCE,
        'The wildcards in the ARN apply to all of the following objects in the bucket ("arn:aws:s3:::DOC-EXAMPLE-'
        'BUCKET/*/test/*"): ... DOC-EXAMPLE-BUCKET/1///test///object.jpg',
        "allow",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::DOC-EXAMPLE-BUCKET/1///test///object.jpg",
        identity=(
            policy(
                {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::DOC-EXAMPLE-BUCKET/*/test/*"}
            ),
        ),
    ),
    Case(
        "resource-star-needs-its-slashes",
        RESOURCE,
        "The ARN would not match the following objects: ... DOC-EXAMPLE-BUCKET/test/object.jpg",
        "implicit-deny",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::DOC-EXAMPLE-BUCKET/test/object.jpg",
        identity=(
            policy(
                {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::DOC-EXAMPLE-BUCKET/*/test/*"}
            ),
        ),
    ),
    Case(
        "resource-user-name-case-sensitive",
        RESOURCE,
        'In the Resource element, the IAM user name is case sensitive. ("arn:aws:iam::account-ID-without-hyphens:'
        'user/Bob")',
        "implicit-deny",
        ROLE,
        "iam:GetUser",
        "arn:aws:iam::111122223333:user/bob",
        identity=(
            policy({"Effect": "Allow", "Action": "iam:GetUser", "Resource": "arn:aws:iam::111122223333:user/Bob"}),
        ),
    ),
]

# ---- Principal, NotPrincipal and its replacements ---------------------------------------------------------------

AUDIT_ROLE = "arn:aws:iam::444455556666:role/read-only-role"
DENY_CROSS_AUDIT = policy(
    {
        "Sid": "DenyCrossAuditAccess",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": ["arn:aws:s3:::Bucket_Account_Audit", "arn:aws:s3:::Bucket_Account_Audit/*"],
        "Condition": {"ArnNotEquals": {"aws:PrincipalArn": AUDIT_ROLE}},
    }
)
DENY_NOT_CODEBUILD = {
    "Sid": "DenyNotCodeBuildAccess",
    "Effect": "Deny",
    "Principal": "*",
    "Action": "s3:*",
    "Resource": ["arn:aws:s3:::BUCKETNAME", "arn:aws:s3:::BUCKETNAME/*"],
    "Condition": {"StringNotEqualsIfExists": {"aws:PrincipalServiceName": "codebuild.amazonaws.com"}},
}
CODEBUILD_MAY_READ = {
    "Sid": "AllowCodeBuild",
    "Effect": "Allow",
    "Principal": {"Service": "codebuild.amazonaws.com"},
    "Action": "s3:GetObject",
    "Resource": "arn:aws:s3:::BUCKETNAME/*",
}
NOT_PRINCIPAL_DENY = policy(
    {
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
)
TO_THE_ACCOUNT = policy(
    {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111122223333:root"}, "Action": "s3:*", "Resource": "*"}
)

PRINCIPAL_CASES = [
    Case(
        "account-principal-delegates-no-identity-allow",
        PRINCIPAL + "#principal-accounts",
        "You can specify AWS account identifiers in the Principal element of a resource-based policy ... This "
        "delegates authority to the account.",
        "implicit-deny",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/key",
        resource_policy=TO_THE_ACCOUNT,
        added="no identity policy: delegation to the account grants nothing by itself",
    ),
    Case(
        "account-principal-delegates-identity-allows",
        PRINCIPAL + "#principal-accounts",
        "The account ARN and the shortened account ID behave the same way. Both delegate permissions to the account.",
        "allow",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/key",
        identity=(policy({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}),),
        resource_policy=TO_THE_ACCOUNT,
    ),
    Case(
        "service-principal-is-not-a-role",
        PRINCIPAL + "#principal-services",
        "A service principal is an identifier for a service. ... usually in the following format: "
        "service-name.amazonaws.com",
        "implicit-deny",
        ROLE,
        "s3:PutObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/AWSLogs/x",
        resource_policy=policy(
            {
                "Effect": "Allow",
                "Principal": {"Service": "cloudtrail.amazonaws.com"},
                "Action": "s3:PutObject",
                "Resource": "*",
            }
        ),
    ),
    Case(
        "notprincipal-spares-role-and-account",
        NOT_PRINCIPAL,
        'The NotPrincipal element uses "Effect":"Deny" to deny access to all principals except the principal '
        "specified in the NotPrincipal element.",
        "allow",
        "arn:aws:iam::444455556666:role/cross-account-read-only-role",
        "s3:GetObject",
        "arn:aws:s3:::BUCKETNAME/x",
        identity=(policy(ALLOW_ALL),),
        resource_policy=NOT_PRINCIPAL_DENY,
        added=ALLOWS_THE_REST,
    ),
    Case(
        "arnnotequals-principalarn-spares-the-role",
        NOT_PRINCIPAL,
        "We recommend using a Deny statement with global condition context keys and the condition operator like "
        "ArnNotEquals to explicitly allow an IAM role access to your resources. The following example uses "
        "aws:PrincipalArn to explicitly allow the role read-only-role",
        "allow",
        AUDIT_ROLE,
        "s3:GetObject",
        "arn:aws:s3:::Bucket_Account_Audit/2026/q1.csv",
        identity=(policy(ALLOW_ALL),),
        resource_policy=DENY_CROSS_AUDIT,
        added=ALLOWS_THE_REST + "; the bucket is taken to be in the role's account (a cross-account case is out "
        "of the evaluator's scope)",
    ),
    Case(
        "arnnotequals-principalarn-denies-other-roles",
        NOT_PRINCIPAL,
        "You can use a resource-based policy with a Deny statement to prevent all IAM roles, except those specified "
        "in the Condition element, from accessing or manipulating your resources.",
        "explicit-deny",
        "arn:aws:iam::444455556666:role/another-role",
        "s3:GetObject",
        "arn:aws:s3:::Bucket_Account_Audit/2026/q1.csv",
        identity=(policy(ALLOW_ALL),),
        resource_policy=DENY_CROSS_AUDIT,
        added=ALLOWS_THE_REST,
    ),
    Case(
        "principalservicename-spares-codebuild",
        NOT_PRINCIPAL,
        "The following example uses aws:PrincipalServiceName to explicitly allow the AWS CodeBuild service "
        "principal to access Amazon S3 buckets in the BUCKETNAME folder.",
        "allow",
        "codebuild.amazonaws.com",
        "s3:GetObject",
        "arn:aws:s3:::BUCKETNAME/build/input.zip",
        resource_policy=policy(DENY_NOT_CODEBUILD, CODEBUILD_MAY_READ),
        added="a bucket-policy Allow for codebuild.amazonaws.com (a service principal has no identity policy)",
    ),
    Case(
        "principalservicename-denies-roles",
        NOT_PRINCIPAL,
        "You can use a Deny statement to prevent all service principals, except those specified in the Condition "
        "element, from accessing or manipulating your resources.",
        "explicit-deny",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::BUCKETNAME/build/input.zip",
        identity=(policy(ALLOW_ALL),),
        resource_policy=policy(DENY_NOT_CODEBUILD, CODEBUILD_MAY_READ),
        added=ALLOWS_THE_REST + "; aws:PrincipalServiceName 'is not present ... If the call is made directly by "
        "an IAM principal' (global condition keys), so ...IfExists holds",
    ),
]

# ---- Global condition keys every signed request carries ------------------------------------------------------

DENY_OTHER_ACCOUNTS = policy(
    ALLOW_ALL,
    {
        "Sid": "DenyAccessFromPrincipalNotInSpecificAccount",
        "Action": "s3:*",
        "Effect": "Deny",
        "Resource": ["arn:aws:s3:::amzn-s3-demo-bucket/*"],
        "Condition": {"StringNotEquals": {"aws:PrincipalAccount": ["123456789012"]}},
    },
)
EXPECTED_NETWORK = policy(
    {
        "Sid": "ExpectedNetworkServicePrincipal",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:PutObject",
        "Resource": "arn:aws:s3:::amzn-s3-demo-bucket1/AWSLogs/111122223333/*",
        "Condition": {
            "StringNotEqualsIfExists": {"aws:SourceVpc": "vpc-111bbb22"},
            "BoolIfExists": {"aws:PrincipalIsAWSService": "false"},
        },
    },
    {
        "Sid": "AllowCloudTrail",
        "Effect": "Allow",
        "Principal": {"Service": "cloudtrail.amazonaws.com"},
        "Action": "s3:PutObject",
        "Resource": "arn:aws:s3:::amzn-s3-demo-bucket1/AWSLogs/111122223333/*",
    },
)
EXPECTED_NETWORK_BY_NAME = policy(
    {
        "Sid": "ExpectedNetworkServicePrincipal",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:PutObject",
        "Resource": "arn:aws:s3:::amzn-s3-demo-bucket1/AWSLogs/111122223333/*",
        "Condition": {
            "StringNotEqualsIfExists": {
                "aws:SourceVpc": "vpc-111bbb22",
                "aws:PrincipalServiceName": "cloudtrail.amazonaws.com",
            }
        },
    },
    EXPECTED_NETWORK["Statement"][1],
)
TRAIL_LOG = "arn:aws:s3:::amzn-s3-demo-bucket1/AWSLogs/111122223333/CloudTrail/us-east-1/log.json.gz"
ROLE_NAMED_IN_DENY = policy(
    {
        "Sid": "DenyTheRole",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": "*",
        "Condition": {"ArnEquals": {"aws:PrincipalArn": "arn:aws:iam::123456789012:role/role-name"}},
    }
)

GLOBAL_KEY_CASES = [
    Case(
        "principalaccount-deny-spares-own-account",
        GLOBAL_KEYS + "#condition-keys-principalaccount",
        "aws:PrincipalAccount ... This key is included in the request context for all requests, including "
        "anonymous requests. ... In the following example, access is denied except to principals with the "
        "account number 123456789012.",
        "allow",
        "arn:aws:iam::123456789012:role/role-name",
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/key",
        identity=(DENY_OTHER_ACCOUNTS,),
        added=ALLOWS_THE_REST + '; the page\'s "service:*" and resource placeholders filled with S3',
    ),
    Case(
        "principalaccount-deny-other-account",
        GLOBAL_KEYS + "#condition-keys-principalaccount",
        "In the following example, access is denied except to principals with the account number 123456789012.",
        "explicit-deny",
        "arn:aws:iam::444455556666:role/role-name",
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/key",
        identity=(DENY_OTHER_ACCOUNTS,),
        added=ALLOWS_THE_REST,
    ),
    Case(
        "principalarn-deny-naming-the-role",
        GLOBAL_KEYS + "#condition-keys-principalarn",
        "aws:PrincipalArn ... For IAM roles, the request context returns the ARN of the role, not the ARN of the "
        "user that assumed the role. ... This key is included in the request context for all signed requests. ... "
        "IAM role - The request context contains the following value ... arn:aws:iam::123456789012:role/role-name",
        "explicit-deny",
        "arn:aws:iam::123456789012:role/role-name",
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/key",
        identity=(policy(ALLOW_ALL),),
        resource_policy=ROLE_NAMED_IN_DENY,
        added="a bucket-policy Deny naming the role by aws:PrincipalArn (the page gives the value, not this "
        "statement); " + ALLOWS_THE_REST,
    ),
    Case(
        "principalarn-is-not-the-session",
        GLOBAL_KEYS + "#condition-keys-principalarn",
        "Do not specify the assumed role session ARN as a value for this condition key.",
        "allow",
        "arn:aws:iam::123456789012:role/role-name",
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/key",
        identity=(policy(ALLOW_ALL),),
        resource_policy=policy(
            {
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": "*",
                "Condition": {
                    "ArnEquals": {"aws:PrincipalArn": "arn:aws:sts::123456789012:assumed-role/role-name/session"}
                },
            }
        ),
        added="a Deny naming the session ARN, which the request context never holds; " + ALLOWS_THE_REST,
    ),
    Case(
        "principalisawsservice-spares-cloudtrail",
        GLOBAL_KEYS + "#condition-keys-principalisawsservice",
        "In the following Amazon S3 bucket policy example, access to the bucket is restricted unless the request "
        "originates from vpc-111bbb22 or is from a service principal, such as CloudTrail. ... The request context "
        "key is set to true when a service uses a service principal to perform a direct action on your resources.",
        "allow",
        "cloudtrail.amazonaws.com",
        "s3:PutObject",
        TRAIL_LOG,
        resource_policy=EXPECTED_NETWORK,
        added="a bucket-policy Allow for cloudtrail.amazonaws.com",
    ),
    Case(
        "principalisawsservice-denies-role-outside-vpc",
        GLOBAL_KEYS + "#condition-keys-principalisawsservice",
        "The context key is set to false if the service uses the credentials of an IAM principal ... This key is "
        "present in the request context for all signed API requests that use AWS credentials.",
        "explicit-deny",
        ROLE,
        "s3:PutObject",
        TRAIL_LOG,
        identity=(policy(ALLOW_ALL),),
        resource_policy=EXPECTED_NETWORK,
        added=ALLOWS_THE_REST + "; the request comes from no VPC (no aws:SourceVpc)",
    ),
    Case(
        "principalisawsservice-role-in-the-vpc",
        GLOBAL_KEYS + "#condition-keys-principalisawsservice",
        "access to the bucket is restricted unless the request originates from vpc-111bbb22",
        "allow",
        ROLE,
        "s3:PutObject",
        TRAIL_LOG,
        context={"aws:SourceVpc": "vpc-111bbb22"},
        identity=(policy(ALLOW_ALL),),
        resource_policy=EXPECTED_NETWORK,
        added=ALLOWS_THE_REST,
    ),
    Case(
        "principalservicename-spares-cloudtrail",
        GLOBAL_KEYS + "#condition-keys-principalservicename",
        "When a service principal makes a direct request to your resource, the aws:PrincipalServiceName key "
        "contains the name of the service principal. ... access to the bucket is restricted unless the request "
        "originates from vpc-111bbb22 or is from a service principal, such as CloudTrail.",
        "allow",
        "cloudtrail.amazonaws.com",
        "s3:PutObject",
        TRAIL_LOG,
        resource_policy=EXPECTED_NETWORK_BY_NAME,
        added="a bucket-policy Allow for cloudtrail.amazonaws.com",
    ),
]

# ---- Condition operators ---------------------------------------------------------------------------------------

JOB_CATEGORY = policy(
    {
        "Effect": "Allow",
        "Action": "iam:*AccessKey*",
        "Resource": "arn:aws:iam::111122223333:user/*",
        "Condition": {"StringEquals": {"aws:PrincipalTag/job-category": "iamuser-admin"}},
    }
)
HOME_DIRECTORY = policy(
    {"Effect": "Allow", "Action": ["s3:ListAllMyBuckets", "s3:GetBucketLocation"], "Resource": "arn:aws:s3:::*"},
    {
        "Effect": "Allow",
        "Action": "s3:ListBucket",
        "Resource": "arn:aws:s3:::amzn-s3-demo-bucket",
        "Condition": {"StringLike": {"s3:prefix": ["", "home/", "home/${aws:username}/"]}},
    },
    {
        "Effect": "Allow",
        "Action": "s3:*",
        "Resource": [
            "arn:aws:s3:::amzn-s3-demo-bucket/home/${aws:username}",
            "arn:aws:s3:::amzn-s3-demo-bucket/home/${aws:username}/*",
        ],
    },
)
CREATE_TAGS = policy(
    {
        "Effect": "Allow",
        "Action": "ec2:CreateTags",
        "Resource": "arn:aws:ec2:*:*:instance/*",
        "Condition": {
            "StringEqualsIgnoreCase": {"aws:RequestTag/environment": ["preprod", "storage"]},
            "ForAnyValue:StringEquals": {"aws:TagKeys": "environment"},
        },
    }
)
INSTANCE = "arn:aws:ec2:us-east-1:111122223333:instance/i-1234567890abcdef0"
DELIVERY_SOURCE = policy(
    {
        "Effect": "Allow",
        "Principal": "*",
        "Action": "logs:PutDeliverySource",
        "Resource": "arn:aws:logs:us-east-1:123456789012:delivery-source:*",
        "Condition": {
            "ForAllValues:ArnLike": {
                "logs:LogGeneratingResourceArns": [
                    "arn:aws:cloudfront::123456789012:distribution/*",
                    "arn:aws:cloudfront::123456789012:distribution/support*",
                ]
            }
        },
    }
)
SQS_FROM_TOPIC = policy(
    {
        "Effect": "Allow",
        "Principal": {"Service": "sns.amazonaws.com"},
        "Action": "SQS:SendMessage",
        "Resource": "arn:aws:sqs:us-west-2:123456789012:QUEUE-ID",
        "Condition": {"ArnEquals": {"aws:SourceArn": "arn:aws:sns:us-west-2:123456789012:TOPIC-ID"}},
    }
)
ORG_BOUNDARY = policy(
    ALLOW_ALL,
    {
        "Sid": "DenyS3AccessOutsideMyBoundary",
        "Effect": "Deny",
        "Action": ["s3:*"],
        "Resource": "*",
        "Condition": {
            "ForAllValues:StringNotLike": {
                "aws:ResourceOrgPaths": [
                    "o-acorg/r-acroot/ou-acroot-mediaou/",
                    "o-acorg/r-acroot/ou-acroot-sportsou/*",
                ]
            }
        },
    },
)
WILDCARD_TABLE = (
    " (The page's table for this example labels the in-boundary path Match and the others No match: its Result "
    "column says whether the resource is inside the boundary, the reverse of the condition's value that the "
    "page's other tables give; read by outcome, all three rows agree with the operators' definitions.)"
)

OPERATOR_CASES = [
    Case(
        "stringequals-principal-tag",
        OPERATORS + "#Conditions_String",
        "the following statement contains a Condition element that uses aws:PrincipalTag key to specify that the "
        'principal making the request must be tagged with the iamuser-admin job category. (table: "iamuser-admin" '
        "Match)",
        "allow",
        "arn:aws:iam::111122223333:user/alice",
        "iam:CreateAccessKey",
        "arn:aws:iam::111122223333:user/alice",
        context={"aws:PrincipalTag/job-category": "iamuser-admin"},
        identity=(JOB_CATEGORY,),
    ),
    Case(
        "stringequals-principal-tag-absent",
        OPERATORS + "#Conditions_String",
        "If a user without the tag attempts to view or edit an access key, the condition returns false and the "
        "request is implicitly denied by this statement.",
        "implicit-deny",
        "arn:aws:iam::111122223333:user/alice",
        "iam:CreateAccessKey",
        "arn:aws:iam::111122223333:user/alice",
        identity=(JOB_CATEGORY,),
    ),
    Case(
        "stringlike-username-variable",
        OPERATORS + "#Conditions_String",
        'Example using a policy variable with a string condition operator ... ("StringLike": {"s3:prefix": ["", '
        '"home/", "home/${aws:username}/"]}); table: aws:username martha_rivera -> "home/martha_rivera/"',
        "allow",
        "arn:aws:iam::111122223333:user/martha_rivera",
        "s3:ListBucket",
        "arn:aws:s3:::amzn-s3-demo-bucket",
        context={"aws:username": "martha_rivera", "s3:prefix": "home/martha_rivera/"},
        identity=(HOME_DIRECTORY,),
    ),
    Case(
        "username-variable-in-resource",
        OPERATORS + "#Conditions_String",
        'the same policy\'s "Resource": ["arn:aws:s3:::amzn-s3-demo-bucket/home/${aws:username}", '
        '".../home/${aws:username}/*"] with "Action": "s3:*" (a user managing their own home directory)',
        "allow",
        "arn:aws:iam::111122223333:user/martha_rivera",
        "s3:PutObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/home/martha_rivera/notes.txt",
        identity=(HOME_DIRECTORY,),
        added="aws:username taken from the caller: the Variables page's Principal key values give an IAM user's "
        "aws:username as its name",
    ),
    Case(
        "stringlike-username-variable-absent",
        OPERATORS + "#Conditions_String",
        'table: "No aws:username in the request context." -> No match (a role: aws:username "(not present)", '
        "Variables page, Principal key values)",
        "implicit-deny",
        ROLE,
        "s3:ListBucket",
        "arn:aws:s3:::amzn-s3-demo-bucket",
        context={"s3:prefix": "home/ExampleRole/"},
        identity=(HOME_DIRECTORY,),
    ),
    Case(
        "foranyvalue-ignorecase-createtags",
        OPERATORS + "#Conditions_String",
        'Example using ForAnyValue with a string condition operator: table row aws:TagKeys "environment, '
        'costcenter" with aws:RequestTag/environment "PreProd" -> Match',
        "allow",
        ROLE,
        "ec2:CreateTags",
        INSTANCE,
        context={"aws:TagKeys": ["environment", "costcenter"], "aws:RequestTag/environment": "PreProd"},
        identity=(CREATE_TAGS,),
    ),
    Case(
        "foranyvalue-createtags-wrong-case",
        OPERATORS + "#Conditions_String",
        "ForAnyValue comparison is case sensitive, which stops users from using the incorrect case for the tag key, "
        'such as using Environment instead of environment. (table: aws:TagKeys "Environment" -> No match)',
        "implicit-deny",
        ROLE,
        "ec2:CreateTags",
        INSTANCE,
        context={"aws:TagKeys": ["Environment"], "aws:RequestTag/Environment": "preprod"},
        identity=(CREATE_TAGS,),
    ),
    Case(
        "stringlikeifexists-absent-key",
        OPERATORS + "#Conditions_IfExists",
        '"If the key is not present, evaluate the condition element as true." (table: "No ec2:InstanceType in the '
        'request context." -> Match)',
        "allow",
        ROLE,
        "ec2:RunInstances",
        "arn:aws:ec2:us-east-1:111122223333:key-pair/k",
        identity=(
            policy(
                {
                    "Sid": "RunInstance",
                    "Effect": "Allow",
                    "Action": "ec2:RunInstances",
                    "Resource": "*",
                    "Condition": {"StringLikeIfExists": {"ec2:InstanceType": ["t1.*", "t2.*", "m3.*"]}},
                }
            ),
        ),
    ),
    Case(
        "bool-securetransport-false-denied",
        OPERATORS + "#Conditions_Boolean",
        "uses the Bool condition operator with the aws:SecureTransport key to deny replicating objects ... if the "
        'request is not over SSL. (table: "aws:SecureTransport: false" -> Match)',
        "explicit-deny",
        ROLE,
        "s3:ReplicateObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/key",
        context={"aws:SecureTransport": False},
        identity=(
            policy(
                ALLOW_ALL,
                {
                    "Sid": "BooleanExample",
                    "Action": "s3:ReplicateObject",
                    "Effect": "Deny",
                    "Resource": ["arn:aws:s3:::amzn-s3-demo-bucket", "arn:aws:s3:::amzn-s3-demo-bucket/*"],
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                },
            ),
        ),
        added=ALLOWS_THE_REST,
    ),
    Case(
        "arnequals-sourcearn-topic",
        OPERATORS + "#Conditions_ARN",
        "It gives Amazon SNS permission to send messages to the queue ... but only if the service is sending the "
        "messages on behalf of a particular Amazon SNS topic (table: same topic ARN -> Match)",
        "allow",
        "sns.amazonaws.com",
        "sqs:SendMessage",
        "arn:aws:sqs:us-west-2:123456789012:QUEUE-ID",
        context={"aws:SourceArn": "arn:aws:sns:us-west-2:123456789012:TOPIC-ID"},
        resource_policy=SQS_FROM_TOPIC,
    ),
    Case(
        "arnequals-sourcearn-other-account",
        OPERATORS + "#Conditions_ARN",
        'table: "aws:SourceArn: arn:aws:sns:us-west-2:777788889999:TOPIC-ID" -> No match',
        "implicit-deny",
        "sns.amazonaws.com",
        "sqs:SendMessage",
        "arn:aws:sqs:us-west-2:123456789012:QUEUE-ID",
        context={"aws:SourceArn": "arn:aws:sns:us-west-2:777788889999:TOPIC-ID"},
        resource_policy=SQS_FROM_TOPIC,
    ),
    Case(
        "forallvalues-arnlike-absent-key",
        OPERATORS + "#Conditions_ARN",
        "The ForAllValues qualifier returns true if there are no context keys in the request (table: No "
        "logs:LogGeneratingResourceArns in the request context -> Match)",
        "allow",
        "arn:aws:iam::123456789012:role/log-delivery",
        "logs:PutDeliverySource",
        "arn:aws:logs:us-east-1:123456789012:delivery-source:cf",
        resource_policy=DELIVERY_SOURCE,
    ),
    Case(
        "forallvalues-empty-string-is-null-dataset",
        OPERATORS + "#Conditions_ARN",
        "The ForAllValues qualifier returns true if there are no context keys in the request or if the context key "
        "value resolves to a null dataset, such as an empty string.",
        "allow",
        "arn:aws:iam::123456789012:role/log-delivery",
        "logs:PutDeliverySource",
        "arn:aws:logs:us-east-1:123456789012:delivery-source:cf",
        context={"logs:LogGeneratingResourceArns": ""},
        resource_policy=DELIVERY_SOURCE,
    ),
    Case(
        "foranyvalue-empty-list-is-false",
        MULTIVALUED,
        "ForAnyValue ... The condition returns true if any one of the context key values in the request matches any "
        "one of the context key values in the policy. For no matching context key or if the key does not exist, "
        "the condition returns false.",
        "implicit-deny",
        ROLE,
        "ec2:DeleteTags",
        INSTANCE,
        context={"aws:TagKeys": []},
        identity=(
            policy(
                {
                    "Effect": "Allow",
                    "Action": "ec2:DeleteTags",
                    "Resource": "arn:aws:ec2:us-east-1:111122223333:instance/*",
                    "Condition": {"ForAnyValue:StringEquals": {"aws:TagKeys": ["environment", "cost-center"]}},
                }
            ),
        ),
        added="an empty tag list: no value in the request matches",
    ),
    Case(
        "numeric-max-keys-over-limit",
        OPERATORS + "#Conditions_Numeric",
        "uses the NumericLessThanEquals condition operator with the s3:max-keys key to specify that the requester can "
        "list up to 10 objects in amzn-s3-demo-bucket at a time.",
        "implicit-deny",
        ROLE,
        "s3:ListBucket",
        "arn:aws:s3:::amzn-s3-demo-bucket",
        context={"s3:max-keys": "11"},
        identity=(
            policy(
                {
                    "Effect": "Allow",
                    "Action": "s3:ListBucket",
                    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket",
                    "Condition": {"NumericLessThanEquals": {"s3:max-keys": "10"}},
                }
            ),
        ),
    ),
    Case(
        "null-tokenissuetime-long-term-keys",
        OPERATORS + "#Conditions_Null",
        "the user must be using temporary credentials (the key cannot be absent) for the user to use the Amazon EC2 "
        'API ({"Null": {"aws:TokenIssueTime": "false"}})',
        "implicit-deny",
        "arn:aws:iam::111122223333:user/ExampleUser",
        "ec2:DescribeInstances",
        "*",
        identity=(
            policy(
                {
                    "Action": "ec2:*",
                    "Effect": "Allow",
                    "Resource": "*",
                    "Condition": {"Null": {"aws:TokenIssueTime": "false"}},
                }
            ),
        ),
    ),
    Case(
        "forallvalues-stringnotlike-inside-boundary",
        OPERATORS + "#Conditions_String-wildcard",
        "The condition in this policy denies access to Amazon S3 actions unless the resource being accessed is in a "
        "specific set of organizational units (OUs)" + WILDCARD_TABLE,
        "allow",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/key",
        context={"aws:ResourceOrgPaths": ["o-acorg/r-acroot/ou-acroot-sportsou/costcenter/"]},
        identity=(ORG_BOUNDARY,),
        added=ALLOWS_THE_REST,
    ),
    Case(
        "forallvalues-stringnotlike-outside-boundary",
        OPERATORS + "#Conditions_String-wildcard",
        "denies access to Amazon S3 actions unless the resource being accessed is in a specific set of "
        "organizational units (OUs) (mediaou/ is listed without a wildcard, so mediaou/costcenter/ is outside)"
        + WILDCARD_TABLE,
        "explicit-deny",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/key",
        context={"aws:ResourceOrgPaths": ["o-acorg/r-acroot/ou-acroot-mediaou/costcenter/"]},
        identity=(ORG_BOUNDARY,),
        added=ALLOWS_THE_REST,
    ),
    Case(
        "forallvalues-stringnotlike-no-org-path",
        OPERATORS + "#Conditions_String-wildcard",
        "The ForAllValues qualifier returns true if there are no context keys in the request" + WILDCARD_TABLE,
        "explicit-deny",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/key",
        identity=(ORG_BOUNDARY,),
        added=ALLOWS_THE_REST,
    ),
]

# ---- Multivalued context keys ------------------------------------------------------------------------------------

DENY_RESTRICTED_TAGS = policy(
    ALLOW_ALL,
    {
        "Sid": "DenyRestrictedTags",
        "Effect": "Deny",
        "Action": ["iam:Tag*", "iam:UnTag*"],
        "Resource": ["*"],
        "Condition": {"ForAllValues:StringNotLike": {"aws:TagKeys": "key1*"}},
    },
)
DELETE_TAGS_ALL = policy(
    {
        "Effect": "Allow",
        "Action": "ec2:DeleteTags",
        "Resource": "arn:aws:ec2:us-east-1:111122223333:instance/*",
        "Condition": {
            "ForAllValues:StringEquals": {"aws:TagKeys": ["environment", "cost-center"]},
            "Null": {"aws:TagKeys": "false"},
        },
    }
)
DENY_SNAPSHOT_TAGS = policy(
    ALLOW_ALL,
    {
        "Effect": "Deny",
        "Action": ["ec2:CreateSnapshot", "ec2:CreateSnapshots"],
        "Resource": "arn:aws:ec2:us-west-2::snapshot/*",
        "Condition": {"ForAnyValue:StringEquals": {"aws:TagKeys": "webserver"}},
    },
)
SNAPSHOT = "arn:aws:ec2:us-west-2::snapshot/snap-1234567890abcdef0"

MULTIVALUED_CASES = [
    Case(
        "forallvalues-deny-key2",
        MULTIVALUED_EXAMPLES,
        'Example Deny a single policy condition value for a multivalued context key (table: aws:TagKeys "key2:audit" '
        "-> Match; For a Deny statement, Match is Denied)",
        "explicit-deny",
        ROLE,
        "iam:TagRole",
        ROLE,
        context={"aws:TagKeys": ["key2:audit"]},
        identity=(DENY_RESTRICTED_TAGS,),
        added=ALLOWS_THE_REST,
    ),
    Case(
        "forallvalues-deny-no-tag-keys",
        MULTIVALUED_EXAMPLES,
        "The ForAllValues set operator also returns true if there are no context keys in the request. (table: No "
        "aws:TagKeys in the request context. -> Match)",
        "explicit-deny",
        ROLE,
        "iam:TagRole",
        ROLE,
        identity=(DENY_RESTRICTED_TAGS,),
        added=ALLOWS_THE_REST,
    ),
    Case(
        "forallvalues-deny-key1-not-denied",
        MULTIVALUED_EXAMPLES,
        'table: aws:TagKeys "key1:hr", "key1:personnel" -> No match, May be allowed by another statement.',
        "allow",
        ROLE,
        "iam:TagRole",
        ROLE,
        context={"aws:TagKeys": ["key1:hr", "key1:personnel"]},
        identity=(DENY_RESTRICTED_TAGS,),
        added=ALLOWS_THE_REST,
    ),
    Case(
        "forallvalues-null-check-absent-key",
        MULTIVALUED,
        'Note that in the last example, the result is "No Match" because the Null condition check prevents '
        "matching when the context key is missing.",
        "implicit-deny",
        ROLE,
        "ec2:DeleteTags",
        INSTANCE,
        identity=(DELETE_TAGS_ALL,),
    ),
    Case(
        "forallvalues-extra-tag-key",
        MULTIVALUED,
        'table: aws:TagKeys "environment", "dept" -> No match (The tag-keys in the request must match exactly the '
        "specified keys in the policy.)",
        "implicit-deny",
        ROLE,
        "ec2:DeleteTags",
        INSTANCE,
        context={"aws:TagKeys": ["environment", "dept"]},
        identity=(DELETE_TAGS_ALL,),
    ),
    Case(
        "foranyvalue-deny-snapshot-tag",
        MULTIVALUED_EXAMPLES,
        "If your tagging request includes any one of the tag key values specified in the policy, the aws:TagKeys "
        'context key returns true invoking the deny policy effect. (table: "environment, webserver, test" -> Match)',
        "explicit-deny",
        ROLE,
        "ec2:CreateSnapshot",
        SNAPSHOT,
        context={"aws:TagKeys": ["environment", "webserver", "test"]},
        identity=(DENY_SNAPSHOT_TAGS,),
        added=ALLOWS_THE_REST,
    ),
    Case(
        "foranyvalue-deny-no-tag-keys",
        MULTIVALUED_EXAMPLES,
        'table: "No aws:TagKeys in the request context." -> No match, May be allowed by another statement.',
        "allow",
        ROLE,
        "ec2:CreateSnapshot",
        SNAPSHOT,
        identity=(DENY_SNAPSHOT_TAGS,),
        added=ALLOWS_THE_REST,
    ),
]

# ---- Policy variables --------------------------------------------------------------------------------------------

DEPT_PREFIX = policy(
    {
        "Sid": "AllowOnlyDeptS3Prefix",
        "Effect": "Allow",
        "Action": ["s3:GetObject"],
        "Resource": ["arn:aws:s3:::amzn-s3-demo-bucket/${aws:PrincipalTag/dept}/*"],
    }
)
TEAM_BUCKET = policy(
    {
        "Effect": "Allow",
        "Action": "s3:ListBucket",
        "Resource": "arn:aws:s3:::amzn-s3-demo-bucket-${aws:PrincipalTag/team, 'company-wide'}",
    }
)
TEAM_MATCHES_OBJECT = policy(
    ALLOW_ALL,
    {
        "Effect": "Deny",
        "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
        "Condition": {"StringNotEquals": {"s3:ExistingObjectTag/Team": "${aws:PrincipalTag/Team}"}},
    },
)
PRODUCT_MANAGER = "arn:aws:iam::111122223333:role/ProductManager"
STUDIO_USER = "arn:aws:iam::111122223333:role/StudioUser"
STUDIO_STATEMENTS = policy(
    {
        "Sid": "ReadManagedBlueprintTemplatesStatement",
        "Effect": "Allow",
        "Action": "s3:GetObject",
        "Resource": [
            "arn:aws:s3:::default-env-blueprint-*/*",
            "arn:aws:s3:*:*:accesspoint/env-blueprint-accesspoint*",
        ],
        "Condition": {
            "ArnLike": {"s3:DataAccessPointArn": "arn:aws:s3:*:*:accesspoint/env-blueprint-accesspoint"},
            "StringNotEquals": {"aws:ResourceAccount": "${aws:PrincipalAccount}"},
        },
    },
    {
        "Sid": "PutObjectStatement",
        "Effect": "Allow",
        "Action": ["s3:PutObject", "s3:GetObject"],
        "Resource": ["arn:aws:s3:::amazon-sagemaker*/*"],
        "Condition": {"StringEquals": {"aws:ResourceAccount": "${aws:PrincipalAccount}"}},
    },
)

VARIABLE_CASES = [
    Case(
        "principaltag-variable-in-resource",
        VARIABLES + "#policy-vars-using-variables",
        "When a user makes a request to add an Amazon S3 object, IAM substitutes the dept tag value from the "
        'current request for the ${aws:PrincipalTag} variable and evaluates the policy. ("Resource": '
        '["arn:aws:s3:::amzn-s3-demo-bucket/${aws:PrincipalTag/dept}/*"])',
        "allow",
        PRODUCT_MANAGER,
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/product/roadmap.pdf",
        context={"aws:PrincipalTag/dept": "product"},
        identity=(DEPT_PREFIX,),
    ),
    Case(
        "principaltag-variable-other-prefix",
        VARIABLES + "#policy-vars-using-variables",
        "IAM substitutes the dept tag value from the current request for the ${aws:PrincipalTag} variable",
        "implicit-deny",
        PRODUCT_MANAGER,
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/finance/ledger.csv",
        context={"aws:PrincipalTag/dept": "product"},
        identity=(DEPT_PREFIX,),
    ),
    Case(
        "variable-without-value-matches-no-resource",
        VARIABLES + "#policy-vars-no-value",
        "If a variable that has no value in the authorization context is used as part of the Resource or "
        "NotResource element of a policy, the resource that includes a policy variable with no value will not "
        "match any resource.",
        "implicit-deny",
        PRODUCT_MANAGER,
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/product/roadmap.pdf",
        identity=(DEPT_PREFIX,),
    ),
    Case(
        "default-value-without-tag",
        VARIABLES + "#policy-vars-default-values",
        "For users without team tags, it sets a default value of company-wide for the bucket name. These users can "
        "access only the amzn-s3-demo-bucket-company-wide bucket",
        "allow",
        ROLE,
        "s3:ListBucket",
        "arn:aws:s3:::amzn-s3-demo-bucket-company-wide",
        identity=(TEAM_BUCKET,),
        added="Action s3:ListBucket (the page gives only the Resource element, a bucket ARN)",
    ),
    Case(
        "default-value-with-tag",
        VARIABLES + "#policy-vars-default-values",
        "if a principal is tagged with team=yellow, they can access ExampleCorp's Amazon S3 bucket named "
        "amzn-s3-demo-bucket-yellow.",
        "allow",
        ROLE,
        "s3:ListBucket",
        "arn:aws:s3:::amzn-s3-demo-bucket-yellow",
        context={"aws:PrincipalTag/team": "yellow"},
        identity=(TEAM_BUCKET,),
        added="Action s3:ListBucket (the page gives only the Resource element, a bucket ARN)",
    ),
    Case(
        "default-value-not-other-teams",
        VARIABLES + "#policy-vars-default-values",
        "A policy with this resource allows team members to access their team bucket, but not those of other teams.",
        "implicit-deny",
        ROLE,
        "s3:ListBucket",
        "arn:aws:s3:::amzn-s3-demo-bucket-company-wide",
        context={"aws:PrincipalTag/team": "yellow"},
        identity=(TEAM_BUCKET,),
        added="Action s3:ListBucket (the page gives only the Resource element, a bucket ARN)",
    ),
    Case(
        "variable-in-condition-owner-tag",
        VARIABLES + "#policy-vars-using-variables",
        "The following policy allows a user to get objects from an Amazon S3 bucket if the tag-key value for "
        "aws:PrincipalTag matches the tag-key owner value passed in the request. (AllowUnlessOwnedBySomeoneElse)",
        "allow",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/owned.txt",
        context={"aws:PrincipalTag/owner": "marymajor", "s3:ExistingObjectTag/owner": "marymajor"},
        identity=(
            policy(
                {
                    "Sid": "AllowUnlessOwnedBySomeoneElse",
                    "Effect": "Allow",
                    "Action": ["s3:GetObject"],
                    "Resource": ["*"],
                    "Condition": {"StringEquals": {"s3:ExistingObjectTag/owner": "${aws:PrincipalTag/owner}"}},
                }
            ),
        ),
    ),
    Case(
        "variable-no-value-denied",
        VARIABLES + "#policy-vars-no-value",
        "Access is explicitly denied when aws:principaltag/Team is not set. ... Inverted condition operators like "
        "StringNotEquals or StringNotLike do match against a null value",
        "explicit-deny",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/plan.txt",
        context={"s3:ExistingObjectTag/Team": "blue"},
        identity=(TEAM_MATCHES_OBJECT,),
        added=ALLOWS_THE_REST,
    ),
    Case(
        "variable-same-team-not-denied",
        VARIABLES + "#policy-vars-no-value",
        "aws:principaltag/Team must be equal to s3:ExistingObjectTag/Team to allow access.",
        "allow",
        ROLE,
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/plan.txt",
        context={"aws:PrincipalTag/Team": "blue", "s3:ExistingObjectTag/Team": "blue"},
        identity=(TEAM_MATCHES_OBJECT,),
        added=ALLOWS_THE_REST,
    ),
    Case(
        "principalaccount-variable-same-account",
        MANAGED_POLICY,
        'PutObjectStatement: "Condition": {"StringEquals": {"aws:ResourceAccount": "${aws:PrincipalAccount}"}}; '
        "IAM User Guide, Variables: IAM substitutes the value of the request's context key for the variable",
        "allow",
        STUDIO_USER,
        "s3:PutObject",
        "arn:aws:s3:::amazon-sagemaker-projects/notebook.ipynb",
        context={"aws:ResourceAccount": "111122223333"},
        identity=(STUDIO_STATEMENTS,),
        added="the AWS managed policy SageMakerStudioFullAccess v15's statements; the bucket is in the caller's "
        "account",
    ),
    Case(
        "principalaccount-variable-negated-same-account",
        MANAGED_POLICY,
        'ReadManagedBlueprintTemplatesStatement: "StringNotEquals": {"aws:ResourceAccount": '
        '"${aws:PrincipalAccount}"}: blueprint templates are read from other accounts only',
        "implicit-deny",
        STUDIO_USER,
        "s3:GetObject",
        "arn:aws:s3:::default-env-blueprint-111122223333/template.yaml",
        context={
            "aws:ResourceAccount": "111122223333",
            "s3:DataAccessPointArn": "arn:aws:s3:us-east-1:111122223333:accesspoint/env-blueprint-accesspoint",
        },
        identity=(STUDIO_STATEMENTS,),
        added="the AWS managed policy SageMakerStudioFullAccess v15's statements; the bucket is in the caller's "
        "account, so the negated condition does not hold",
    ),
    Case(
        "version-2008-variables-are-literal",
        VERSION,
        "2008-10-17 ... Newer features, such as policy variables, will not work with your policy. For example, "
        "variables such as ${aws:username} aren't recognized as variables and are instead treated as literal "
        "strings in the policy.",
        "implicit-deny",
        "arn:aws:iam::111122223333:user/David",
        "s3:GetObject",
        "arn:aws:s3:::amzn-s3-demo-bucket/David/report.csv",
        context={"aws:username": "David"},
        identity=(
            policy(
                {
                    "Effect": "Allow",
                    "Action": "s3:GetObject",
                    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/${aws:username}/*",
                },
                version="2008-10-17",
            ),
        ),
    ),
]

# ---- KMS key policies --------------------------------------------------------------------------------------------

KEY = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
ENABLE_IAM = {
    "Sid": "Enable IAM policies",
    "Effect": "Allow",
    "Principal": {"AWS": "arn:aws:iam::111122223333:root"},
    "Action": "kms:*",
    "Resource": "*",
}
MAY_DECRYPT = policy({"Effect": "Allow", "Action": "kms:Decrypt", "Resource": KEY})
EBS_MANAGED_KEY = policy(
    {
        "Sid": "Allow access through EBS for all principals in the account that are authorized to use EBS",
        "Effect": "Allow",
        "Principal": {"AWS": "*"},
        "Condition": {
            "StringEquals": {"kms:CallerAccount": "111122223333", "kms:ViaService": "ec2.us-west-2.amazonaws.com"}
        },
        "Action": [
            "kms:Encrypt",
            "kms:Decrypt",
            "kms:ReEncrypt*",
            "kms:GenerateDataKey*",
            "kms:CreateGrant",
            "kms:DescribeKey",
        ],
        "Resource": "*",
    }
)
EXAMPLE_USER = "arn:aws:iam::111122223333:user/ExampleUser"
VIA_SERVICE = policy(
    {
        "Effect": "Allow",
        "Principal": {"AWS": EXAMPLE_USER},
        "Action": [
            "kms:Encrypt",
            "kms:Decrypt",
            "kms:ReEncrypt*",
            "kms:GenerateDataKey*",
            "kms:CreateGrant",
            "kms:ListGrants",
            "kms:DescribeKey",
        ],
        "Resource": "*",
        "Condition": {
            "StringEquals": {"kms:ViaService": ["ec2.us-west-2.amazonaws.com", "rds.us-west-2.amazonaws.com"]}
        },
    },
    {
        "Effect": "Deny",
        "Principal": {"AWS": EXAMPLE_USER},
        "Action": ["kms:Encrypt"],
        "Resource": "*",
        "Condition": {"StringEquals": {"kms:ViaService": ["lambda.us-west-2.amazonaws.com"]}},
    },
)
CALLER_ACCOUNT = (
    "kms:CallerAccount ... You can use this condition key to allow or deny access to all identities (IAM users and "
    "roles) in an AWS account. ... It combines a Principal element that specifies all AWS identities with the "
    "kms:CallerAccount condition key to effectively allow access to all identities in AWS account 111122223333."
)

KMS_CASES = [
    Case(
        "default-key-policy-iam-allows",
        KMS_DEFAULT,
        "The key policy statement shown above gives the AWS account that owns the key permission to use IAM "
        "policies, as well as key policies, to allow all actions (kms:*) on the KMS key.",
        "allow",
        ROLE,
        "kms:Decrypt",
        KEY,
        identity=(MAY_DECRYPT,),
        resource_policy=policy(ENABLE_IAM),
        key_policy=True,
    ),
    Case(
        "default-key-policy-no-iam-allow",
        KMS_DEFAULT,
        "When the principal in a key policy statement is the account principal, the policy statement doesn't give "
        "any IAM users or roles permission to use the KMS key. Instead, it allows the account to use IAM policies to "
        "delegate the permissions",
        "implicit-deny",
        ROLE,
        "kms:Decrypt",
        KEY,
        resource_policy=policy(ENABLE_IAM),
        key_policy=True,
    ),
    Case(
        "iam-allow-without-key-policy",
        KMS_KEY_POLICIES,
        "Unless the key policy explicitly allows it, you cannot use IAM policies to allow access to a KMS key. "
        "Without permission from the key policy, IAM policies that allow permissions have no effect.",
        "key-policy-does-not-allow",
        ROLE,
        "kms:Decrypt",
        KEY,
        identity=(MAY_DECRYPT, policy({"Effect": "Allow", "Action": "kms:*", "Resource": "*"})),
        resource_policy=policy(
            {
                "Effect": "Allow",
                "Principal": {"AWS": "arn:aws:iam::111122223333:role/SomeoneElse"},
                "Action": "kms:Decrypt",
                "Resource": "*",
            }
        ),
        key_policy=True,
    ),
    Case(
        "iam-deny-without-key-policy",
        KMS_KEY_POLICIES,
        "(You can use an IAM policy to deny a permission to a KMS key without permission from a key policy.)",
        "explicit-deny",
        ROLE,
        "kms:Decrypt",
        KEY,
        identity=(policy({"Effect": "Deny", "Action": "kms:Decrypt", "Resource": "*"}),),
        resource_policy=policy({**ENABLE_IAM, "Principal": {"AWS": ROLE}}),
        key_policy=True,
    ),
    Case(
        "calleraccount-viaservice-ebs",
        KMS_CONDITIONS + "#conditions-kms-caller-account",
        CALLER_ACCOUNT,
        "allow",
        ROLE,
        "kms:Decrypt",
        KEY,
        context={"kms:ViaService": "ec2.us-west-2.amazonaws.com"},
        resource_policy=EBS_MANAGED_KEY,
        key_policy=True,
        added="a role of account 111122223333 reading an EBS volume (kms:ViaService ec2.us-west-2.amazonaws.com)",
    ),
    Case(
        "calleraccount-other-account",
        KMS_CONDITIONS + "#conditions-kms-caller-account",
        CALLER_ACCOUNT + " (and no other account: because each API call can originate from only one AWS account, "
        "kms:CallerAccount is a single valued condition key)",
        "key-policy-does-not-allow",
        "arn:aws:iam::444455556666:role/ExampleRole",
        "kms:Decrypt",
        KEY,
        context={"kms:ViaService": "ec2.us-west-2.amazonaws.com"},
        resource_policy=EBS_MANAGED_KEY,
        key_policy=True,
    ),
    Case(
        "calleraccount-not-through-ebs",
        KMS_CONDITIONS + "#conditions-kms-caller-account",
        "It contains an additional AWS KMS condition key (kms:ViaService) to further limit the permissions by only "
        "allowing requests that come through Amazon EBS.",
        "key-policy-does-not-allow",
        ROLE,
        "kms:Decrypt",
        KEY,
        resource_policy=EBS_MANAGED_KEY,
        key_policy=True,
        added="a direct call to KMS (no kms:ViaService)",
    ),
    Case(
        "viaservice-rds-allowed",
        KMS_CONDITIONS + "#conditions-kms-via-service",
        "the following key policy statement uses the kms:ViaService condition key to allow a customer managed key "
        "to be used for the specified actions only when the request comes from Amazon EC2 or Amazon RDS in the US "
        "West (Oregon) region on behalf of ExampleUser.",
        "allow",
        EXAMPLE_USER,
        "kms:GenerateDataKey",
        KEY,
        context={"kms:ViaService": "rds.us-west-2.amazonaws.com"},
        resource_policy=VIA_SERVICE,
        key_policy=True,
    ),
    Case(
        "viaservice-lambda-denied",
        KMS_CONDITIONS + "#conditions-kms-via-service",
        "the following policy statement from a key policy uses a kms:ViaService condition key to prevent a "
        "customer managed key from being used for Encrypt operations when the request comes from AWS Lambda on "
        "behalf of ExampleUser.",
        "explicit-deny",
        EXAMPLE_USER,
        "kms:Encrypt",
        KEY,
        context={"kms:ViaService": "lambda.us-west-2.amazonaws.com"},
        identity=(policy({"Effect": "Allow", "Action": "kms:*", "Resource": "*"}),),
        resource_policy=policy(*VIA_SERVICE["Statement"], ENABLE_IAM),
        key_policy=True,
        added="the default key policy's statement and an IAM Allow, so that only the Deny can refuse it",
    ),
    Case(
        "key-policy-statement-without-resource",
        KMS_OVERVIEW,
        "If the required Resource element is missing from a key policy statement, the policy statement has no "
        "effect. A key policy statement without a Resource element doesn't apply to any KMS key.",
        "key-policy-does-not-allow",
        ROLE,
        "kms:Decrypt",
        KEY,
        resource_policy=policy({"Effect": "Allow", "Principal": {"AWS": ROLE}, "Action": "kms:Decrypt"}),
        key_policy=True,
    ),
    Case(
        "key-policy-principal-star",
        KMS_OVERVIEW,
        "An asterisk gives every identity in every AWS account permission to use the KMS key, unless another policy "
        "statement explicitly denies it.",
        "allow",
        ROLE,
        "kms:Decrypt",
        KEY,
        resource_policy=policy({"Effect": "Allow", "Principal": "*", "Action": "kms:Decrypt", "Resource": "*"}),
        key_policy=True,
    ),
]

CASES: list[Case] = (
    EVALUATION_CASES
    + ELEMENT_CASES
    + PRINCIPAL_CASES
    + GLOBAL_KEY_CASES
    + OPERATOR_CASES
    + MULTIVALUED_CASES
    + VARIABLE_CASES
    + KMS_CASES
)

# The seven kinds of wrong verdict issue 43 names, each by the cases that show it.
NAMED_IN_ISSUE_43 = {
    "policy variables never substituted: false DENYs on Allows": (
        "stringlike-username-variable",
        "username-variable-in-resource",
        "principaltag-variable-in-resource",
        "default-value-without-tag",
        "default-value-with-tag",
        "variable-in-condition-owner-tag",
        "principalaccount-variable-same-account",
    ),
    # No IAM or KMS page has a Deny whose variable sits in Resource or a positive operator (every documented
    # Deny with a variable uses StringNotEquals, where literal text made a false DENY); the false ALLOW shows on
    # an AWS managed policy's Allow with StringNotEquals.
    "policy variables never substituted: a false ALLOW": ("principalaccount-variable-negated-same-account",),
    "policy variables never substituted: a false DENY on a Deny's StringNotEquals": ("variable-same-team-not-denied",),
    "aws:PrincipalArn missing: false DENY on ArnNotEquals aws:PrincipalArn": (
        "arnnotequals-principalarn-spares-the-role",
    ),
    "aws:PrincipalArn missing: false ALLOW on a Deny naming the role": ("principalarn-deny-naming-the-role",),
    "aws:PrincipalAccount missing: false DENY on StringNotEquals aws:PrincipalAccount": (
        "principalaccount-deny-spares-own-account",
    ),
    'kms:CallerAccount missing: false DENY on Principal "*" + kms:CallerAccount + kms:ViaService': (
        "calleraccount-viaservice-ebs",
    ),
    "ForAllValues over an empty value": ("forallvalues-empty-string-is-null-dataset",),
}
