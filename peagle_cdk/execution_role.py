"""The SageMaker execution role, least privilege: no managed FullAccess policies, no
Action '*'. Each wildcard resource left is acknowledged where it is granted.

SageMaker's own guide starts from AmazonSageMakerFullAccess and then says "If your use case
requires more granular permissions, use other sections on this page to create an execution
role that meets your business needs"; its section "CreateModel API: Execution Role
Permissions" lists what hosting needs (ECR image pull, CloudWatch Logs, PutMetricData,
S3 reads of the model data). SageMaker Developer Guide, "How to use SageMaker AI execution
roles", https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-roles.html; IAM's rule:
"Apply least-privilege permissions", https://docs.aws.amazon.com/IAM/latest/UserGuide/best-practices.html."""

from __future__ import annotations

from aws_cdk import Aws, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from peagle_cdk.model_artifacts import ModelArtifactsLocation
from peagle_cdk.nag import acknowledge


def _nag_rendering(text: str) -> str:
    """How cdk-nag prints account/region tokens inside a finding id."""
    return text.replace(Aws.ACCOUNT_ID, "<AWS::AccountId>").replace(Aws.REGION, "<AWS::Region>")


def trust_principal() -> iam.ServicePrincipal:
    """sagemaker.amazonaws.com, trusted only for requests SageMaker makes on behalf of this account and Region.

    SageMaker Developer Guide, "Cross-service confused deputy prevention", section "SageMaker AI Inference"
    (https://docs.aws.amazon.com/sagemaker/latest/dg/security-confused-deputy-prevention.html#security-confused-deputy-inference):
    the trust statement for "SageMaker AI real-time, serverless, and asynchronous inference" carries
    ``"ArnLike": {"aws:SourceArn": "arn:aws:sagemaker:us-west-2:123456789012:*"}``; "because the account number is
    part of the aws:SourceArn value, you do not need to specify an aws:SourceAccount value"; "Do not replace the
    aws:SourceArn in this template with the full ARN of a specific model or endpoint. The ARN must be in the format
    provided above." That value, with this stack's partition, Region and account, is the one used here.

    The operator is ``ArnLikeIfExists`` rather than the page's ``ArnLike``, because the same role also serves what
    that section does not name: inference components, and the batch transform jobs `peagle batch` runs on the
    endpoint's Model. For those no page says whether SageMaker sends aws:SourceArn, and a positive condition on a key
    that is absent fails ("If the key that you specify in a policy condition is not present in the request context,
    the values do not match and the condition is false", IAM User Guide, "IAM JSON policy elements: Condition
    operators"): the AssumeRole of every such deploy or job would be refused. With IfExists ("If the policy key is
    present in the context of the request, process the key as specified in the policy. If the key is not present,
    evaluate the condition element as true", same page), every request that carries aws:SourceArn, which the page
    says real-time and asynchronous inference do, is held to this account and Region exactly as with ArnLike, and a
    request without the key is not refused. aws:SourceAccount alone would have the same failure mode, so it is not
    added. A role you pass in (role=...) keeps its own trust policy.
    """
    source_arn = f"arn:{Aws.PARTITION}:sagemaker:{Aws.REGION}:{Aws.ACCOUNT_ID}:*"
    return iam.ServicePrincipal(
        "sagemaker.amazonaws.com", conditions={"ArnLikeIfExists": {"aws:SourceArn": source_arn}}
    )


class SageMakerExecutionRole(Construct):
    """Reads one model prefix and pulls one image; everything else is granted by ``grant_*``."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        artifacts: ModelArtifactsLocation | None,
        image_repository: ecr.IRepository,
        in_vpc: bool = False,
        role: iam.IRole | None = None,
    ) -> None:
        """
        :param artifacts: the prefix holding target/ and drafter/ (and its KMS key); only it is readable.
            None when the container downloads the weights from the hub itself.
        :param image_repository: the ECR repository of the serving image; only it is pullable.
        :param in_vpc: grant the ENI permissions SageMaker needs to attach to your subnets (default: no VPC).
        :param role: your own role for SageMaker to assume (it must trust sagemaker.amazonaws.com); the
            grants below go into a managed policy attached to it, and its trust policy is left as it is.
            Default: a new role.
        """
        super().__init__(scope, id)
        self.role = role or iam.Role(
            self,
            "Role",
            assumed_by=trust_principal(),  # pyright: ignore[reportArgumentType]
            description="P-EAGLE endpoint execution role: reads model weights, writes logs and metrics",
        )
        # A customer-managed policy rather than an inline one (NIST 800-53 IAMNoInlinePolicy).
        self.policy = iam.ManagedPolicy(self, "Policy", roles=[self.role])  # pyright: ignore[reportArgumentType]
        self._bucket_key = artifacts.key if artifacts is not None else None
        if artifacts is not None:
            self.grant_read_prefix(
                artifacts.bucket_name,
                artifacts.prefix,
                sid="ReadModelWeights",
                why="the objects under this model's weights prefix (target/ and drafter/)",
            )
        self.policy.add_statements(
            # PutMetricData has no resource type: it can only be granted on '*'.
            iam.PolicyStatement(sid="PublishMetrics", actions=["cloudwatch:PutMetricData"], resources=["*"]),
            iam.PolicyStatement(
                sid="PullServingImage",
                actions=["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"],
                resources=[image_repository.repository_arn],
            ),
            # GetAuthorizationToken has no resource type: it can only be granted on '*'.
            iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
        )
        if self._bucket_key is not None:
            self.policy.add_statements(
                iam.PolicyStatement(
                    sid="DecryptModelWeights", actions=["kms:Decrypt"], resources=[self._bucket_key.key_arn]
                )
            )
        if in_vpc:
            self._allow_vpc_attachment()
        acknowledge(
            self.policy,
            "AwsSolutions-IAM5[Resource::*]",
            "cloudwatch:PutMetricData, ecr:GetAuthorizationToken"
            + (" and the EC2 network-interface actions SageMaker uses for VPC attachment" if in_vpc else "")
            + " support no resource-level permissions.",
        )

    def _allow_vpc_attachment(self) -> None:
        """The network-interface actions "If you specify a private VPC for your model" (CreateModel's page)."""
        self.policy.add_statements(
            iam.PolicyStatement(
                sid="AttachToVpc",
                actions=[
                    "ec2:CreateNetworkInterface",
                    "ec2:CreateNetworkInterfacePermission",
                    "ec2:DeleteNetworkInterface",
                    "ec2:DeleteNetworkInterfacePermission",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeVpcs",
                    "ec2:DescribeDhcpOptions",
                    "ec2:DescribeSubnets",
                    "ec2:DescribeSecurityGroups",
                ],
                resources=["*"],
            )
        )

    def _bucket_arn(self, bucket_name: str) -> str:
        return f"arn:{Aws.PARTITION}:s3:::{bucket_name}"

    def _allow_listing(self, bucket_name: str, prefix: str, sid: str) -> None:
        self.policy.add_statements(
            iam.PolicyStatement(
                sid=sid,
                actions=["s3:ListBucket"],
                resources=[self._bucket_arn(bucket_name)],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
            )
        )

    def grant_read_prefix(self, bucket_name: str, prefix: str, *, sid: str, why: str) -> None:
        self.policy.add_statements(
            iam.PolicyStatement(
                sid=sid, actions=["s3:GetObject"], resources=[f"{self._bucket_arn(bucket_name)}/{prefix}*"]
            )
        )
        self._allow_listing(bucket_name, prefix, sid=f"List{sid}")
        self._acknowledge_prefix(
            bucket_name,
            prefix,
            f"Read-only access to {why}: the narrowest grant that still lets SageMaker read every file.",
        )

    def grant_write_prefix(self, bucket_name: str, prefix: str, *, sid: str, why: str) -> None:
        self.policy.add_statements(
            iam.PolicyStatement(
                sid=sid,
                actions=["s3:PutObject", "s3:AbortMultipartUpload"],
                resources=[f"{self._bucket_arn(bucket_name)}/{prefix}*"],
            )
        )
        self._acknowledge_prefix(
            bucket_name, prefix, f"Write access to {why} only: result object names are chosen by SageMaker at run time."
        )

    def grant_put_prefix(self, bucket_name: str, prefix: str, *, sid: str, why: str) -> None:
        """s3:PutObject under one prefix, nothing else: for a writer that only ever puts whole objects (SageMaker
        Data Capture, peagle_cdk/data_capture.py)."""
        self.policy.add_statements(
            iam.PolicyStatement(
                sid=sid, actions=["s3:PutObject"], resources=[f"{self._bucket_arn(bucket_name)}/{prefix}*"]
            )
        )
        self._acknowledge_prefix(
            bucket_name, prefix, f"Write access to {why} only: object names are chosen by SageMaker at run time."
        )

    def grant_encrypt(self, key: kms.IKey, *, sid: str) -> None:
        """Objects SageMaker writes SSE-KMS with ``key`` (peagle_cdk/data_capture.py quotes the rules)."""
        self.policy.add_statements(
            iam.PolicyStatement(sid=sid, actions=["kms:GenerateDataKey", "kms:Encrypt"], resources=[key.key_arn])
        )

    def grant_encrypt_with_bucket_key(self, key: kms.IKey | None = None) -> None:
        """Results written to a KMS-encrypted bucket need a data key from its key (default: the weights'), and
        inputs read from it need the key to decrypt."""
        given, key = key, key or self._bucket_key
        if key is not None:
            self.policy.add_statements(
                iam.PolicyStatement(sid="EncryptResults", actions=["kms:GenerateDataKey"], resources=[key.key_arn])
            )
        if given is not None and given is not self._bucket_key:
            # Inputs under that bucket are read with it too: "you need the permission to decrypt the AWS KMS
            # key" to download an SSE-KMS object ("Do I need to specify the AWS KMS key when I download a
            # KMS-encrypted object from Amazon S3?", https://repost.aws/knowledge-center/decrypt-kms-encrypted-
            # objects-s3). With weights from S3 DecryptModelWeights covers the same key; from the hub nothing does.
            self.policy.add_statements(
                iam.PolicyStatement(sid="DecryptInputs", actions=["kms:Decrypt"], resources=[given.key_arn])
            )

    def _acknowledge_prefix(self, bucket_name: str, prefix: str, reason: str) -> None:
        name = _nag_rendering(bucket_name)
        if Token.is_unresolved(name):
            # A bucket of the same app: its name is a Ref, which cdk-nag prints as <LogicalId>.
            resolved = Stack.of(self).resolve(bucket_name)
            if not (isinstance(resolved, dict) and set(resolved) == {"Ref"}):
                return  # no finding id to name: cdk-nag reports it, for you to acknowledge
            name = f"<{resolved['Ref']}>"
        finding = f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::{name}/{prefix}*]"
        acknowledge(self.policy, finding, reason)

    def grant_write_logs(self, log_group_name: str, *, sid: str = "WriteEndpointLogs") -> None:
        """Log streams of one log group (SageMaker creates one per instance or job at run time)."""
        streams = f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:{log_group_name}:*"
        self.policy.add_statements(
            iam.PolicyStatement(
                sid=sid,
                actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                resources=[streams],
            )
        )
        acknowledge(
            self.policy,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:"
            f"{log_group_name}:*]",
            "Log streams are created per instance (or per transform job) at run time; the grant covers this "
            "one log group only.",
        )

    def grant_publish(self, topic: sns.ITopic, key: kms.IKey, *, sid: str) -> None:
        """Async inference notifications are published with the execution role."""
        self.policy.add_statements(
            iam.PolicyStatement(sid=sid, actions=["sns:Publish"], resources=[topic.topic_arn]),
            iam.PolicyStatement(
                sid=f"{sid}Encrypt", actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=[key.key_arn]
            ),
        )

    def grant_describe_alarms(self, alarms: list[cloudwatch.IAlarm], *, sid: str = "ReadRollbackAlarms") -> None:
        """SageMaker reads the auto-rollback alarms with the execution role during an update.

        "Ensure that your IAM execution role has permission to perform the
        cloudwatch:DescribeAlarms action on the auto-rollback alarms you specify."
        (SageMaker developer guide, "Auto-Rollback Configuration and Monitoring",
        https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-configuration.html)
        """
        if alarms:
            self.policy.add_statements(
                iam.PolicyStatement(
                    sid=sid, actions=["cloudwatch:DescribeAlarms"], resources=[alarm.alarm_arn for alarm in alarms]
                )
            )

    def grant_read_secret(self, secret_arn: str, *, sid: str = "ReadHubToken") -> None:
        """The container reads one secret (a Hugging Face token) at start-up."""
        self.policy.add_statements(
            iam.PolicyStatement(sid=sid, actions=["secretsmanager:GetSecretValue"], resources=[secret_arn])
        )
