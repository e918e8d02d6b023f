#!/usr/bin/env python3
"""A CDK app of your own that adds a P-EAGLE endpoint beside the resources it already has.

The stack owns its network (a VPC with isolated subnets only), the bucket the weights are staged into,
the on-call SNS topic, the service's CloudWatch dashboard and the Lambda function that fronts the
model. peagle_cdk adds the endpoint into that stack, in those subnets, reading that bucket, alarming
to that topic and drawing on that dashboard. `cdk synth` needs no AWS credentials and no Docker.

cdk-nag's AWS Solutions rules run as the app synthesizes: the library's resources carry an acknowledgement for each
finding they accept, and the app's own resources pass every rule (each fix is commented where it is made).
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
from cdk_nag import AwsSolutionsChecks
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
        # cdk-nag AwsSolutions-VPC7, "The VPC does not have an associated Flow Log": its flow logs go to a log group.
        flow_logs = logs.LogGroup(self, "FlowLogs", retention=logs.RetentionDays.ONE_YEAR)
        vpc = ec2.Vpc(
            self,
            "Network",
            max_azs=2,
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="Models", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=22)
            ],
            restrict_default_security_group=True,
            flow_logs={"All": ec2.FlowLogOptions(destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs))},
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
                name,
                service=service,
                subnets=isolated,
                security_groups=[endpoints_sg],
                private_dns_enabled=True,
                # Ingress from the model's security group only (the rule above). CDK's default, open=True, would
                # also allow "all traffic to the endpoint from within the VPC ... based on the VPC's CIDR range"
                # (aws_ec2.InterfaceVpcEndpointOptions.open): wider than the model needs, and a CIDR that is a token
                # at synth, which cdk-nag's AwsSolutions-EC23 ("The Security Group allows for 0.0.0.0/0 or ::/0
                # inbound access") cannot resolve, so it fails the synth with "Rule threw an error during validation".
                open=False,
            )

        # cdk-nag AwsSolutions-S1, "The S3 Bucket has server access logs disabled": the weights bucket logs its
        # access here (CDK grants S3's log delivery write access to it). cdk-nag counts a bucket that is another's
        # access-log destination as logged (cdk-nag 3.0.2, rules/s3/S3BucketLoggingEnabled).
        access_logs = s3.Bucket(
            self,
            "WeightsAccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            removal_policy=RemovalPolicy.RETAIN,
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
            server_access_logs_bucket=access_logs,
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
        # Its own role writing to its own log group: CDK's default role carries the AWS-managed
        # AWSLambdaBasicExecutionRole policy, which cdk-nag AwsSolutions-IAM4 reports ("The IAM user, role, or group
        # uses AWS managed policies").
        api_logs = logs.LogGroup(self, "ChatApiLogs", retention=logs.RetentionDays.ONE_MONTH)
        api_role = iam.Role(self, "ChatApiRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        api_logs.grant_write(api_role)
        chat_api = lambda_.Function(
            self,
            "ChatApi",
            # cdk-nag AwsSolutions-L1: "The non-container Lambda function is not configured to use the latest runtime
            # version" (the newest of the family that this aws-cdk-lib knows).
            runtime=lambda_.Runtime.PYTHON_3_14,
            role=api_role,
            handler="handler.handler",
            code=lambda_.Code.from_asset(str(HERE / "chat_api")),
            timeout=Duration.seconds(60),
            memory_size=256,
            environment={"ENDPOINT_NAME": endpoint.endpoint_name},
            log_group=api_logs,
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
    # cdk-nag 3 runs as a policy-validation plugin (not an Aspect): a finding no acknowledgement covers fails the synth
    # with the rule and the resource. Beside it, the runtime-access check fails the synth if a role could not do at
    # runtime what AWS will ask of it (docs/library.md).
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app), RuntimeAccessChecks())
    app.synth()
