"""The SageMaker execution role, least privilege (facts.md §9): no managed FullAccess
policies, no Action '*'. Every wildcard left is acknowledged with the reason."""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_ecr as ecr
from constructs import Construct

from cdk_constructs.nag import acknowledge

from cdk_constructs.model_artifacts import ModelArtifactsLocation


class SageMakerExecutionRole(Construct):
    """Reads one model prefix, writes endpoint logs and metrics; image pulls are granted by the image owner."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        artifacts: ModelArtifactsLocation,
        image_repository: ecr.IRepository,
        log_group_name: str,
        in_vpc: bool = False,
    ) -> None:
        """
        :param artifacts: the prefix holding target/ and drafter/ (and its KMS key); only it is readable.
        :param image_repository: the ECR repository of the serving image; only it is pullable.
        :param log_group_name: the endpoint's log group; only its streams are writable.
        :param in_vpc: grant the ENI permissions SageMaker needs to attach to your subnets (default: no VPC).
        """
        super().__init__(scope, id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="P-EAGLE endpoint execution role: reads model weights, writes logs and metrics",
        )
        # A customer-managed policy rather than an inline one (NIST 800-53 IAMNoInlinePolicy).
        policy = iam.ManagedPolicy(self, "Policy", roles=[self.role])
        self.policy = policy

        bucket_arn = f"arn:{Aws.PARTITION}:s3:::{artifacts.bucket_name}"
        object_arn = f"{bucket_arn}/{artifacts.prefix}*"
        policy.add_statements(
            iam.PolicyStatement(sid="ReadModelWeights", actions=["s3:GetObject"], resources=[object_arn]),
            iam.PolicyStatement(
                sid="ListModelPrefix",
                actions=["s3:ListBucket"],
                resources=[bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{artifacts.prefix}*"]}},
            ),
        )

        log_streams = f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:{log_group_name}:*"
        policy.add_statements(
            iam.PolicyStatement(
                sid="WriteEndpointLogs",
                actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                resources=[log_streams],
            ),
            # PutMetricData has no resource type: it can only be granted on '*'.
            iam.PolicyStatement(sid="PublishMetrics", actions=["cloudwatch:PutMetricData"], resources=["*"]),
        )
        policy.add_statements(
            iam.PolicyStatement(
                sid="PullServingImage",
                actions=["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"],
                resources=[image_repository.repository_arn],
            ),
            # GetAuthorizationToken has no resource type: it can only be granted on '*'.
            iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
        )
        if artifacts.key is not None:
            policy.add_statements(
                iam.PolicyStatement(sid="DecryptModelWeights", actions=["kms:Decrypt"], resources=[artifacts.key.key_arn])
            )
        if in_vpc:
            policy.add_statements(
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
        self._acknowledge_wildcards(artifacts, log_group_name, in_vpc)

    def _acknowledge_wildcards(self, artifacts: ModelArtifactsLocation, log_group_name: str, in_vpc: bool) -> None:
        bucket = artifacts.bucket_name.replace(Aws.ACCOUNT_ID, "<AWS::AccountId>").replace(Aws.REGION, "<AWS::Region>")
        findings = {
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:"
            f"log-group:{log_group_name}:*]": "Log streams are created per instance at run time; the grant "
            "covers the streams of this endpoint's log group only.",
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::{bucket}/{artifacts.prefix}*]": "Read-only "
            "access to the objects under this model's weights prefix (target/ and drafter/): the narrowest grant "
            "that still lets SageMaker copy every file.",
            "AwsSolutions-IAM5[Resource::*]": "cloudwatch:PutMetricData, ecr:GetAuthorizationToken"
            + (" and the EC2 network-interface actions SageMaker uses for VPC attachment" if in_vpc else "")
            + " support no resource-level permissions.",
        }
        for finding, reason in findings.items():
            acknowledge(self.policy, finding, reason)
