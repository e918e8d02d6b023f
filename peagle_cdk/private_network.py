"""A private network for the model: isolated subnets (no NAT, no internet route), a
security group without ingress, and the VPC endpoints of what the model reaches from inside
the VPC: S3 for the weights, ECR, CloudWatch Logs and metrics, STS. PeagleEndpoint checks a VPC
of your own for them at synth (peagle_cdk/model_placement.py says which are needed, how surely)."""

from __future__ import annotations

from typing import cast

from aws_cdk import CfnResource, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from peagle_cdk.nag import acknowledge

# What the model's containers call from isolated subnets (no NAT, no internet route), each through an
# interface endpoint: ECR, CloudWatch Logs and metrics, STS. S3 goes through the gateway endpoint below:
# "If you configure your VPC so that model containers don't have access to the internet, they can't
# connect to the Amazon S3 buckets that contain your data unless you create a VPC endpoint that allows
# access" (SageMaker Developer Guide, "Give SageMaker AI Hosted Endpoints Access to Resources in Your
# Amazon VPC", https://docs.aws.amazon.com/sagemaker/latest/dg/host-vpc.html). A CDK app with its own
# VPC adds the same ones (examples/own-cdk-app/app.py uses this table).
INTERFACE_ENDPOINTS = {
    "EcrApi": ec2.InterfaceVpcEndpointAwsService.ECR,
    "EcrDocker": ec2.InterfaceVpcEndpointAwsService.ECR_DOCKER,
    "Logs": ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS,
    "Monitoring": ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_MONITORING,
    "Sts": ec2.InterfaceVpcEndpointAwsService.STS,
}


class PrivateNetwork(Construct):
    """A VPC a model runs in without internet: ``vpc`` (isolated subnets in ``max_azs`` zones, flow logs to a
    KMS-encrypted log group), ``security_group`` for the model (no ingress, HTTPS out), the S3 gateway
    endpoint and the INTERFACE_ENDPOINTS, reachable from that group only. Pass
    ``vpc=network.vpc, security_groups=[network.security_group]`` to PeagleEndpoint."""

    def __init__(self, scope: Construct, id: str, *, max_azs: int = 2) -> None:
        super().__init__(scope, id)
        flow_log_key = kms.Key(self, "FlowLogKey", enable_key_rotation=True, description="P-EAGLE VPC flow logs")
        flow_log_key.grant_encrypt_decrypt(_logs_principal(self))
        flow_logs = logs.LogGroup(
            self,
            "FlowLogs",
            encryption_key=flow_log_key,
            retention=logs.RetentionDays.ONE_YEAR,
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=max_azs,
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="Model", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=22)
            ],
            restrict_default_security_group=True,
            flow_logs={"All": ec2.FlowLogOptions(destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs))},
        )
        self.security_group = ec2.SecurityGroup(
            self,
            "ModelSecurityGroup",
            vpc=self.vpc,
            description="P-EAGLE model instances: no ingress; HTTPS to the VPC endpoints only",
            allow_all_outbound=False,
        )
        # Isolated subnets route nowhere but the VPC: HTTPS can only reach the interface
        # endpoints and, through the gateway endpoint's route, S3.
        self.security_group.add_egress_rule(
            ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS to the VPC endpoints (the only routes out)"
        )
        endpoint_sg = ec2.SecurityGroup(
            self,
            "EndpointSecurityGroup",
            vpc=self.vpc,
            description="VPC interface endpoints: HTTPS from the model instances",
            allow_all_outbound=False,
        )
        endpoint_sg.add_ingress_rule(self.security_group, ec2.Port.tcp(443), "HTTPS from the model instances")
        subnets = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
        self.vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3, subnets=[subnets])
        for name, service in INTERFACE_ENDPOINTS.items():
            self.vpc.add_interface_endpoint(
                name,
                service=service,
                subnets=subnets,
                security_groups=[endpoint_sg],
                private_dns_enabled=True,
                open=False,  # ingress only from the model's security group, not the whole VPC CIDR
            )
        # CDK's custom resource that strips the default security group's rules declares a
        # DependsOn its Role that a GetAtt already implies; cfn-lint warns about that (W3005).
        provider = Stack.of(self).node.try_find_child("Custom::VpcRestrictDefaultSGCustomResourceProvider")
        if provider is not None:
            cast(CfnResource, provider.node.find_child("Handler")).add_metadata(
                "cfn-lint", {"config": {"ignore_checks": ["W3005"]}}
            )
        flow_log_policy = self.vpc.node.find_child("All").node.find_child("IAMRole").node.find_child("DefaultPolicy")
        acknowledge(
            flow_log_policy,
            "NIST.800.53.R5-IAMNoInlinePolicy",
            "CDK's VPC flow-log construct writes its role's grant inline; it only allows writing to the "
            "flow-log group of this VPC.",
        )

    @property
    def subnet_ids(self) -> list[str]:
        return self.vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED).subnet_ids

    @property
    def security_group_ids(self) -> list[str]:
        return [self.security_group.security_group_id]


def _logs_principal(scope: Construct) -> iam.ServicePrincipal:
    return iam.ServicePrincipal(f"logs.{Stack.of(scope).region}.amazonaws.com")
