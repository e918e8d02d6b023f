"""One request AWS will make at runtime (``Need``), and what the modules that derive needs share: the patterns that
read image and S3 references in a template, the ECR actions, the HTTPS condition, and the helpers that place an ARN in
a stack and find a bucket's default key. The needs themselves: peagle/access/requirements.py (the models'),
peagle/access/endpoint_needs.py (the endpoints') and peagle/access/build_needs.py (the image build's)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from peagle.cloud_assembly import Assembly, AssemblyStack

# <account>.dkr.ecr.<region>.<suffix>/<repository>[:tag|@digest]; any part may hold placeholders ("${AWS::Region}").
_PART = r"(?:\$\{[^}]*\}|[^.$])+"
ECR_IMAGE = re.compile(
    rf"^(?P<account>{_PART})\.dkr\.ecr\.(?P<region>{_PART})\.[^/]+/(?P<repository>(?:\$\{{[^}}]*\}}|[^:@$])+)"
)
# s3://<bucket>/<key>, where the bucket may be a placeholder with a '/' of its own ("${Stack/LogicalId}").
S3_URI = re.compile(r"^s3://(?P<bucket>(?:\$\{[^}]*\}|[^/$])+)/?(?P<key>.*)$")
# Written from their sources (above, and peagle/access/requirements.py), not imported from the constructs that grant
# them: a need shared with its grant could never find the grant wrong.
ECR_PULL = ("ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage")
ECR_PUSH = (
    "ecr:CompleteLayerUpload",
    "ecr:UploadLayerPart",
    "ecr:InitiateLayerUpload",
    "ecr:BatchCheckLayerAvailability",
    "ecr:PutImage",
    "ecr:BatchGetImage",
)
HTTPS = {"aws:SecureTransport": True}


@dataclass(frozen=True)
class Need:
    """One request AWS will make at runtime, and what it is for."""

    stack: AssemblyStack  # where the principal is named
    principal: Any  # the template value naming the role (a Ref/GetAtt/ARN), or a service principal string
    action: str
    resource: str  # the symbolic ARN (peagle.cloud_assembly)
    why: str
    fix: str  # a FIXES key
    context: dict[str, Any] = field(default_factory=dict)
    # The resource whose policy also decides (a bucket, key, repository, secret, topic, function), if in the app.
    resource_in: tuple[AssemblyStack, str] | None = None
    key_policy: bool = False  # a KMS key: its policy must allow (directly or through the account)
    service_principal: bool = False  # the caller is an AWS service principal, decided by resource policy alone
    # The caller is whoever deploys the stack (CloudFormation's service role, or the deployer's own credentials): not
    # in the templates, so only the resource's side can be read (peagle.access.check says what it decides).
    deployer: bool = False


def bucket_key(assembly: Assembly, bucket: tuple[AssemblyStack, str] | None) -> tuple[AssemblyStack, Any] | None:
    """The KMS key a bucket of the app encrypts objects with by default (its template value), if any."""
    if bucket is None:
        return None
    stack, logical_id = bucket
    encryption = stack.template["Resources"][logical_id].get("Properties", {}).get("BucketEncryption") or {}
    for rule in encryption.get("ServerSideEncryptionConfiguration", []):
        default = rule.get("ServerSideEncryptionByDefault") or {}
        if default.get("SSEAlgorithm") in ("aws:kms", "aws:kms:dsse") and default.get("KMSMasterKeyID"):
            return stack, default["KMSMasterKeyID"]
    return None


def in_stack(stack: AssemblyStack, arn_prefix: str) -> str:
    return arn_prefix.replace("${AWS::Region}", stack.region or "${AWS::Region}").replace(
        "${AWS::AccountId}", stack.account or "${AWS::AccountId}"
    )
