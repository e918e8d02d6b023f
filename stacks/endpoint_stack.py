"""The YAML app's endpoint stack: the validated deployment file handed to the construct library
(PeagleEndpoint.from_config: planned once, from the config itself), plus what only this app has: the
project's artifacts bucket by name, a new private VPC on request, batch-transform access, the alarm
thresholds and the outputs the CLI reads. Planning happens in the construct (peagle.planning.planner); nothing
here decides a number."""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from constructs import Construct

from peagle.settings import DeploymentConfig
from peagle_cdk import (
    EndpointMonitoring,
    ModelArtifactsLocation,
    ModelWeights,
    PeagleEndpoint,
)
from peagle_cdk.model_artifacts import artifacts_bucket_name, pair_prefix
from peagle_cdk.private_network import PrivateNetwork

TRANSFORM_JOBS_LOG_GROUP = "/aws/sagemaker/TransformJobs"


class EndpointStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: DeploymentConfig,
        artifacts_key: kms.IKey | None = None,
        **kwargs,
    ) -> None:
        """
        :param artifacts_key: KMS key of the project's artifacts bucket (ArtifactsStack); used when
            config.artifacts.s3_uri is unset and weights live in that bucket under models/<pair>/.
        """
        super().__init__(scope, id, **kwargs)
        self.config = config
        self.artifacts = self._artifacts_location(config, artifacts_key)
        vpc, subnets, security_groups = self._network(config)
        # "Default": the construct's children keep the logical ids they had as this stack's own children in
        # 0.1.0 (PeagleEndpoint's docstring says why), so deployed stacks update in place.
        self.endpoint = PeagleEndpoint.from_config(
            self,
            "Default",
            config=config,
            weights=(
                ModelWeights.from_hub(token_secret_arn=config.artifacts.hf_token_secret_arn)
                if config.artifacts.source == "hub"
                else ModelWeights.from_location(self.artifacts)
            ),
            vpc=vpc,
            vpc_subnets=subnets,
            security_groups=security_groups,
        )
        self.plan = self.endpoint.plan
        self.monitoring = self._monitoring(config)
        if config.batch.enabled:
            self._batch_access()
        if config.async_inference.enabled:
            settings = config.async_inference
            self.endpoint.add_async_endpoint(
                bucket_name=self.artifacts.bucket_name,
                bucket_key=self.artifacts.key,
                endpoint_name=config.async_endpoint_name,
                max_concurrent_invocations_per_instance=settings.max_concurrent_invocations_per_instance,
                min_instances=settings.min_instances,
                max_instances=settings.max_instances,
                target_backlog_per_instance=settings.target_backlog_per_instance,
                scale_in_cooldown=Duration.seconds(config.autoscaling.scale_in_cooldown_seconds),
                scale_out_cooldown=Duration.seconds(config.autoscaling.scale_out_cooldown_seconds),
            )
        self._outputs()

    def _artifacts_location(self, config: DeploymentConfig, artifacts_key: kms.IKey | None) -> ModelArtifactsLocation:
        if config.artifacts.s3_uri:
            key = (
                kms.Key.from_key_arn(self, "ArtifactsKey", config.artifacts.kms_key_arn)
                if config.artifacts.kms_key_arn
                else None
            )
            return ModelArtifactsLocation.from_s3_uri(config.artifacts.s3_uri, key=key)
        return ModelArtifactsLocation(
            bucket_name=artifacts_bucket_name(config.name), prefix=pair_prefix(config.model), key=artifacts_key
        )

    def _network(
        self, config: DeploymentConfig
    ) -> tuple[ec2.IVpc | None, ec2.SubnetSelection | None, list[ec2.ISecurityGroup] | None]:
        vpc = config.network.vpc
        if vpc is None:
            return None, None, None
        if vpc.create:
            self.network = PrivateNetwork(self, "PrivateNetwork", max_azs=vpc.max_azs)
            return (
                self.network.vpc,
                ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
                [self.network.security_group],
            )
        subnets = [ec2.Subnet.from_subnet_id(self, f"Subnet{subnet_id}", subnet_id) for subnet_id in vpc.subnet_ids]
        groups = [
            ec2.SecurityGroup.from_security_group_id(self, f"SecurityGroup{group_id}", group_id)
            for group_id in vpc.security_group_ids
        ]
        return None, ec2.SubnetSelection(subnets=subnets), groups

    def _monitoring(self, config: DeploymentConfig) -> EndpointMonitoring | None:
        alarms = config.alarms
        if not alarms.enabled:
            return None
        return EndpointMonitoring(
            self,
            "Monitoring",
            endpoint=self.endpoint,
            alarm_emails=alarms.emails,  # the thresholds: the plan's (the deployment file's alarms section)
        )

    def _batch_access(self) -> None:
        """Batch Transform jobs run the same Model with its execution role: read input, write output."""
        batch, bucket = self.config.batch, self.artifacts.bucket_name
        role = self.endpoint.execution_role
        role.grant_read_prefix(bucket, batch.input_prefix, sid="ReadBatchInput", why="the batch-transform input prefix")
        role.grant_write_prefix(
            bucket, batch.output_prefix, sid="WriteBatchOutput", why="the batch-transform output prefix"
        )
        role.grant_encrypt_with_bucket_key(self.artifacts.key)
        # Transform jobs log (and print their KPI lines) to one shared log group.
        role.grant_write_logs(TRANSFORM_JOBS_LOG_GROUP, sid="WriteTransformJobLogs")

    def _outputs(self) -> None:
        config = self.config
        CfnOutput(self, "EndpointName", value=config.endpoint_name, description="SageMaker endpoint to invoke")
        for index, name in enumerate(self.endpoint.inference_component_names):
            CfnOutput(
                self,
                # The output ids of 0.1.0: by position (outputs hold no state; renaming one is harmless).
                f"InferenceComponentName{index}" if index else "InferenceComponentName",
                value=name,
                description="pass to peagle invoke/bench/smoke as --inference-component",
            )
        CfnOutput(
            self, "ModelName", value=self.endpoint.model.model_name, description="for `peagle batch` transform jobs"
        )
        CfnOutput(self, "ExecutionRoleArn", value=self.endpoint.role.role_arn)
        CfnOutput(self, "ImageUri", value=self.endpoint.model.image.image_uri)
        CfnOutput(
            self,
            "ModelDataS3Uri",
            value=self.artifacts.s3_uri,
            description="Prefix the endpoint mounts at /opt/ml/model; stage target/ and drafter/ here before deploying",
        )
        if self.monitoring is not None:
            # _monitoring gives no alarm_action, so EndpointMonitoring made its own topic.
            assert self.monitoring.topic is not None, "EndpointMonitoring without alarm_action makes a topic"
            CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic.topic_arn)
            CfnOutput(self, "DashboardName", value=self.monitoring.dashboard.dashboard_name)
        if config.batch.enabled:
            bucket = self.artifacts.bucket_name
            CfnOutput(self, "BatchInputS3Uri", value=f"s3://{bucket}/{config.batch.input_prefix}")
            CfnOutput(self, "BatchOutputS3Uri", value=f"s3://{bucket}/{config.batch.output_prefix}")
        if self.endpoint.data_capture is not None:
            CfnOutput(
                self,
                "DataCaptureS3Uri",
                value=self.endpoint.data_capture.destination_s3_uri,
                description="where SageMaker Data Capture writes {endpoint}/{variant}/yyyy/mm/dd/hh/*.jsonl "
                "(read it with `peagle prompts`)",
            )
        if self.endpoint.async_endpoint is not None:
            CfnOutput(self, "AsyncEndpointName", value=config.async_endpoint_name)
            CfnOutput(
                self,
                "AsyncInputS3Uri",
                value=self.endpoint.async_endpoint.input_s3_uri,
                description="upload InvokeEndpointAsync inputs here (the model's role may read only this prefix)",
            )
            CfnOutput(self, "AsyncOutputS3Uri", value=self.endpoint.async_endpoint.output_s3_uri)
