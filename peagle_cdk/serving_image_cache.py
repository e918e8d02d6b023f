"""The repositories an ECR pull-through cache creates for the in-account build (peagle_cdk/serving_image_build.py),
given a lifecycle and the stack's encryption by a repository creation template for the cache rule's prefix.

ECR creates a cache's repositories itself, at the first pull through the rule, outside CloudFormation: with no
template they have no lifecycle and stay when the stack is deleted, holding the several-GB vLLM base. A repository
creation template sets what such repositories get: "You can create a repository creation template to define the
settings to use for repositories created by Amazon ECR on your behalf during pull through cache or replication
actions. Once the repository creation template is created, all new repositories created will have the settings
applied. This doesn't have any effect on any previously created repositories" (Amazon ECR User Guide, "Creating a
repository creation template in Amazon ECR",
https://docs.aws.amazon.com/AmazonECR/latest/userguide/repository-creation-templates-create.html). Its prefix is the
rule's: "When using a pull through cache rule, the repository prefix you specify during rule creation is what you
should specify as your repository creation template prefix as well" (botocore ecr service-2.json,
CreateRepositoryCreationTemplateRequest.prefix). AWS::ECR::RepositoryCreationTemplate (aws-cdk-lib 2.275
``ecr.CfnRepositoryCreationTemplate``): Prefix and AppliedFor required, AppliedFor from "REPLICATION |
PULL_THROUGH_CACHE | CREATE_ON_PUSH", Prefix the primary identifier and create-only (the resource schema as cfn-lint
ships it): a rule's prefix is derived from the stack and its secret, so the template's is unique too.

The lifecycle cannot expire an image a build still needs. A build needs the base only while it pulls it (then the
layers are on the build host), and every pull refreshes the image's last recorded pull ("Amazon ECR refreshes the
lastRecordedPullTime timestamp at least once every 24 hours", botocore ecr service-2.json, ImageDetail), so one rule
expires what no build pulled for CACHE_UNPULLED_DAYS: ``countType`` ``sinceImagePulled`` with ``tagStatus`` ``any``
(Amazon ECR User Guide, "Examples of lifecycle policies in Amazon ECR", the policy template: "countType":
"imageCountMoreThan"|"sinceImagePushed"|"sinceImagePulled"|"sinceImageTransitioned"; "A rule with a tagStatus value
of any must have the highest value for rulePriority", "Lifecycle policy properties in Amazon ECR"). ``any`` also
selects the untagged platform manifests of a multi-platform base, which are pulled with it, so no untagged-only rule
can expire a manifest a tagged index still points to. An expired base is pulled through the cache again by the next
build that needs it. After the stack is deleted the rule no longer imports, and the repositories empty themselves
within CACHE_UNPULLED_DAYS of the last build; the empty repositories stay (docs/deployment.md, "Deleting").

Encryption as the stack's own repository: KMS with ECR's AWS managed key (EncryptionType "KMS" without KmsKey: "If no
key is specified, the default AWS managed KMS key for Amazon ECR will be used", the resource schema). A template that
uses KMS needs a role of the account's own: "When setting up a repository with templates, you have the option to
specify KMS keys and resource tags. If you intend to use KMS keys, resource tags, or a combination of both in one or
more templates, you need to" create a custom role (the same page), whose documented policy is "ecr:CreateRepository,
ecr:ReplicateImage, ecr:TagResource" and "kms:CreateGrant, kms:RetireGrant, kms:DescribeKey" ("Create a custom
policy for repository creation templates"), trusted by ecr.amazonaws.com with no condition ("Create an IAM role for
repository creation templates"). Here: ecr:CreateRepository under the template's prefix only (no ReplicateImage: the
template is for PULL_THROUGH_CACHE only; no TagResource: it sets no tags), and the KMS actions on this account's keys
in this region (the AWS managed key's id is not known at synth). "When this field isn't specified, Amazon ECR will use
the service-linked role for the repository creation template" (CustomRoleArn): without KMS that would do, with it the
page asks for this role. Deploying the template also needs iam:PassRole on the role (the resource's create handler
permissions in its schema list "iam:PassRole"): with `cdk deploy` that is the bootstrap's CloudFormation execution
role, AdministratorAccess unless bootstrapped with other policies (peagle/access/unchecked.py quotes the bootstrap
template).
"""

from __future__ import annotations

import json

from aws_cdk import Stack, Token
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from constructs import Construct

from peagle_cdk.nag import acknowledge

CACHE_UNPULLED_DAYS = 30
CACHE_LIFECYCLE = {
    "rules": [
        {
            "rulePriority": 1,
            "description": f"expire what no build pulled for {CACHE_UNPULLED_DAYS} days: the next build pulls it again",
            "selection": {
                "tagStatus": "any",
                "countType": "sinceImagePulled",
                "countUnit": "days",
                "countNumber": CACHE_UNPULLED_DAYS,
            },
            "action": {"type": "expire"},
        }
    ]
}


class CacheRepositories(Construct):
    """The role ECR assumes to create a cache's repositories, and one creation template per cache rule prefix."""

    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        self.role = iam.Role(
            self,
            "CreationRole",
            description="ECR creates the serving image's pull-through cache repositories with it (KMS encryption)",
            assumed_by=iam.ServicePrincipal("ecr.amazonaws.com"),  # pyright: ignore[reportArgumentType]
        )
        keys = stack.format_arn(service="kms", resource="key", resource_name="*")
        self.role.add_to_policy(
            iam.PolicyStatement(actions=["kms:CreateGrant", "kms:RetireGrant", "kms:DescribeKey"], resources=[keys])
        )
        self.templates: dict[str, ecr.CfnRepositoryCreationTemplate] = {}
        self._acknowledge()

    def template_for(self, prefix: str) -> ecr.CfnRepositoryCreationTemplate:
        """The creation template for the repositories under ``prefix`` (one per prefix)."""
        if prefix in self.templates:
            return self.templates[prefix]
        repositories = Stack.of(self).format_arn(service="ecr", resource="repository", resource_name=f"{prefix}/*")
        self.role.add_to_policy(iam.PolicyStatement(actions=["ecr:CreateRepository"], resources=[repositories]))
        template = ecr.CfnRepositoryCreationTemplate(
            self,
            "Template" + (str(len(self.templates) + 1) if self.templates else ""),
            prefix=prefix,
            applied_for=["PULL_THROUGH_CACHE"],
            description="The serving image's pull-through cache: KMS, and what no build pulled for 30 days expires",
            encryption_configuration=ecr.CfnRepositoryCreationTemplate.EncryptionConfigurationProperty(
                encryption_type="KMS"
            ),
            lifecycle_policy=json.dumps(CACHE_LIFECYCLE),
            custom_role_arn=self.role.role_arn,
        )
        # ECR creates a repository with the role at the first pull: the role's policy must exist by then (the role
        # itself is ordered by the GetAtt above).
        template.node.add_dependency(self.role.node.find_child("DefaultPolicy"))
        acknowledge(
            self.role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ecr:{nag_place(self)}:repository/{prefix}/*]",
            "ECR creates one repository per upstream image under the cache's prefix; the role may create there only.",
        )
        self.templates[prefix] = template
        return template

    def _acknowledge(self) -> None:
        acknowledge(
            self.role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:kms:{nag_place(self)}:key/*]",
            "The repositories use ECR's AWS managed key, whose id is not known at synth; ECR User Guide, 'Create a "
            "custom policy for repository creation templates', grants these KMS actions on '*'.",
        )
        acknowledge(
            self.role,
            "NIST.800.53.R5-IAMNoInlinePolicy",
            "The creation role's grants, made by aws-cdk-lib as the role's default policy, scoped to the cache's "
            "repositories and this account's keys.",
        )


def nag_place(scope: Construct) -> str:
    """ "<region>:<account>" as cdk-nag prints them in a finding id: the stack's, or its pseudo parameters."""
    stack = Stack.of(scope)
    region = "<AWS::Region>" if Token.is_unresolved(stack.region) else stack.region
    account = "<AWS::AccountId>" if Token.is_unresolved(stack.account) else stack.account
    return f"{region}:{account}"
