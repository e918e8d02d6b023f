#!/usr/bin/env python3
"""A CDK app of your own that adds a P-EAGLE endpoint beside the resources it already has.

The stack owns its network (a VPC with isolated subnets only), the bucket the weights are staged into,
the on-call SNS topic, the service's CloudWatch dashboard and the Lambda function that fronts the
model. peagle_cdk adds the endpoint into that stack, in those subnets, reading that bucket, alarming
to that topic and drawing on that dashboard. `cdk synth` needs no AWS credentials and no Docker.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct

from peagle_cdk import (
    INTERFACE_ENDPOINTS,  # what the containers reach from isolated subnets (S3: a gateway endpoint)
    Autoscaling,
    EndpointMonitoring,
    InstanceTypes,
    ModelPairs,
    ModelWeights,
    PeagleEndpoint,
    Profiles,
    RuntimeAccessChecks,
    Speculation,
)

HERE = Path(__file__).resolve().parent
# Where the pair is staged: `peagle stage --model gpt-oss-20b --s3-uri s3://<WeightsBucket>/models/gpt-oss-20b/`.
WEIGHTS_PREFIX = "models/gpt-oss-20b/"


class ChatServiceStack(Stack):
    def __init__(self, scope: Construct, id: str, **kwargs) -> None:
        super().__init__(scope, id, **kwargs)

        # --- what the app already had -------------------------------------------------------------
        vpc = ec2.Vpc(
            self,
            "Network",
            max_azs=2,
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="Models", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=22)
            ],
            restrict_default_security_group=True,
        )
        isolated = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
        vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3, subnets=[isolated])
        model_sg = ec2.SecurityGroup(
            self,
            "ModelSecurityGroup",
            vpc=vpc,
            description="Model instances: no ingress; HTTPS to the VPC endpoints only",
            allow_all_outbound=False,
        )
        # Isolated subnets route only inside the VPC and, through the gateway endpoint, to S3: that is
        # all "any address on 443" reaches.
        model_sg.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS to the VPC endpoints and S3")
        endpoints_sg = ec2.SecurityGroup(
            self,
            "VpcEndpointSecurityGroup",
            vpc=vpc,
            description="VPC interface endpoints: HTTPS from the model instances",
            allow_all_outbound=False,
        )
        endpoints_sg.add_ingress_rule(model_sg, ec2.Port.tcp(443), "HTTPS from the model instances")
        for name, service in INTERFACE_ENDPOINTS.items():
            vpc.add_interface_endpoint(
                name, service=service, subnets=isolated, security_groups=[endpoints_sg], private_dns_enabled=True
            )

        weights_key = kms.Key(self, "WeightsKey", enable_key_rotation=True, description="chat service model weights")
        weights = s3.Bucket(
            self,
            "Weights",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=weights_key,
            bucket_key_enabled=True,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            versioned=True,
            removal_policy=RemovalPolicy.RETAIN,
        )

        alerts_key = kms.Key(self, "AlertsKey", enable_key_rotation=True, description="chat service alerts")
        alerts_key.grant_encrypt_decrypt(iam.ServicePrincipal("cloudwatch.amazonaws.com"))  # alarms publish
        alerts = sns.Topic(self, "OnCall", display_name="chat service on-call", master_key=alerts_key, enforce_ssl=True)
        dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name="chat-service")
        dashboard.add_widgets(cloudwatch.TextWidget(markdown="# Chat service", width=24, height=1))

        # --- the P-EAGLE endpoint, beside them ------------------------------------------------------
        endpoint = PeagleEndpoint(
            self,
            "Chat",
            model=ModelPairs.GPT_OSS_20B,
            instance_type=InstanceTypes.G6E_XLARGE,
            profile=Profiles.CHATBOT,
            speculation=Speculation.recommended(),
            # Read access to the prefix, and kms:Decrypt with the bucket's own key (weights.encryption_key).
            weights=ModelWeights.from_bucket(weights, WEIGHTS_PREFIX),
            name="chat",
            endpoint_name="chat-endpoint",
            vpc=vpc,
            vpc_subnets=isolated,
            security_groups=[model_sg],
            autoscaling=Autoscaling(min_capacity=1, max_capacity=2),
        )
        EndpointMonitoring(
            self, "ChatMonitoring", endpoint=endpoint, alarm_action=cw_actions.SnsAction(alerts), dashboard=dashboard
        )

        # --- the app's front door: a function that invokes the endpoint -------------------------------
        chat_api = lambda_.Function(
            self,
            "ChatApi",
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="handler.handler",
            code=lambda_.Code.from_asset(str(HERE / "chat_api")),
            timeout=Duration.seconds(60),
            memory_size=256,
            environment={"ENDPOINT_NAME": endpoint.endpoint_name},
            log_group=logs.LogGroup(self, "ChatApiLogs", retention=logs.RetentionDays.ONE_MONTH),
        )
        endpoint.grant_invoke(chat_api)
        api_errors = cloudwatch.Alarm(
            self,
            "ChatApiErrors",
            metric=chat_api.metric_errors(period=Duration.minutes(5)),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description="the chat API function failed",
        )
        api_errors.add_alarm_action(cw_actions.SnsAction(alerts))
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Chat API",
                left=[chat_api.metric_invocations(), chat_api.metric_errors()],
                right=[chat_api.metric_duration(statistic="p90")],
                width=24,
            )
        )

        cdk.CfnOutput(self, "EndpointName", value=endpoint.endpoint_name)
        cdk.CfnOutput(self, "WeightsBucket", value=weights.bucket_name)
        cdk.CfnOutput(self, "SpeculativeTokens", value=str(endpoint.plan.speculative_tokens))


if __name__ == "__main__":
    # The output directory is CDK's own: `cdk synth` sets CDK_OUTDIR (default cdk.out), and so can you.
    app = cdk.App()
    ChatServiceStack(app, "ChatService", description="Chat service: a P-EAGLE endpoint beside its own resources")
    # Fails the synth if a role could not do at runtime what AWS will ask of it (docs/library.md).
    cdk.Validations.of(app).add_plugins(RuntimeAccessChecks())
    app.synth()
