"""The endpoint's CloudWatch log group, owned by the stack rather than left to SageMaker,
so it has a retention period and a KMS key, and KPI metric filters can attach to it."""

from __future__ import annotations

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct


def endpoint_log_group_name(endpoint_name: str) -> str:
    """Where SageMaker writes a real-time endpoint's container logs."""
    return f"/aws/sagemaker/Endpoints/{endpoint_name}"


def component_log_group_name(component_name: str) -> str:
    """Where an inference component's container logs go (not stated by an AWS page we found;
    public tooling that reads component logs uses it: see peagle_cdk/component_endpoint.py)."""
    return f"/aws/sagemaker/InferenceComponents/{component_name}"


class EndpointLogGroup(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint_name: str,
        retention_days: int,
        log_group_name: str | None = None,
    ) -> None:
        """:param log_group_name: default: the endpoint's (endpoint_log_group_name); an inference component's
        group is component_log_group_name."""
        super().__init__(scope, id)
        stack = Stack.of(self)
        name = log_group_name or endpoint_log_group_name(endpoint_name)
        self.log_group_name = name
        described = f"Logs of {log_group_name}" if log_group_name else f"Logs of endpoint {endpoint_name}"
        self.key = kms.Key(self, "Key", enable_key_rotation=True, description=described)
        # CloudWatch Logs encrypts with the key on the log group's behalf.
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowCloudWatchLogs",
                principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],  # pyright: ignore[reportArgumentType]
                actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
                resources=["*"],  # in a key policy, '*' means this key
                conditions={
                    "ArnLike": {
                        # log-group ARNs use ':' before the name (arn:...:log-group:/aws/...)
                        "kms:EncryptionContext:aws:logs:arn": stack.format_arn(
                            service="logs",
                            resource="log-group",
                            resource_name=name,
                            arn_format=ArnFormat.COLON_RESOURCE_NAME,
                        )
                    }
                },
            )
        )
        # L1: retention is given in days (validated against CloudWatch's list in peagle.settings).
        self.resource = logs.CfnLogGroup(
            self,
            "LogGroup",
            log_group_name=name,
            retention_in_days=retention_days,
            kms_key_id=self.key.key_arn,
        )
        self.resource.apply_removal_policy(RemovalPolicy.RETAIN)
        self.log_group = logs.LogGroup.from_log_group_name(self, "Imported", name)
        self.log_group.node.add_dependency(self.resource)
