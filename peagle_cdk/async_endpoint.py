"""An asynchronous inference endpoint: requests queue, results land in S3, SNS says when each
succeeded or failed, and the fleet scales on the queue, down to zero when it is empty."""

from __future__ import annotations

from dataclasses import replace

from aws_cdk import Duration
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from peagle.planning.plan_record import ASYNC_INPUT_METADATA_KEY
from peagle_cdk.endpoint_alarms import EncryptedTopic
from peagle_cdk.endpoint_logs import endpoint_log_group_name
from peagle_cdk.execution_role import SageMakerExecutionRole
from peagle_cdk.variant_endpoint import VariantEndpoint, VariantSpec

INPUT_PREFIX = "async/input/"
OUTPUT_PREFIX = "async/output/"
FAILURE_PREFIX = "async/failure/"


class AsyncInferenceEndpoint(Construct):
    """One variant behind an async endpoint, with its topics, S3 grants and queue-based scaling."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint_name: str,
        variant: VariantSpec,
        execution_role: SageMakerExecutionRole,
        bucket_name: str,
        bucket_key: kms.IKey | None = None,
        max_concurrent_invocations_per_instance: int,
        min_instances: int,
        max_instances: int,
        target_backlog_per_instance: float,
        scale_in_cooldown: Duration,
        scale_out_cooldown: Duration,
        wake_cooldown: Duration,
        volume_key: kms.IKey | None = None,
        log_retention_days: int,
        detailed_observability: bool,
        metric_publish_frequency_seconds: int,
    ) -> None:
        """
        :param variant: the model and instance type; the endpoint starts with one instance whatever
            its instance_count says, and autoscaling takes it from there.
        :param execution_role: the variant's Model role: it reads inputs, writes results and publishes
            the notifications, so this construct grants it exactly that.
        :param bucket_name: the bucket of the ``async/input/``, ``async/output/`` and ``async/failure/``
            prefixes; ``bucket_key``: its KMS key, if any (default: the weights' key).
        :param min_instances: 0 (the default) scales to zero on an empty queue; a request then waits
            for an instance to start (a GPU instance takes minutes).
        :param wake_cooldown: how long the scale-out-from-zero step waits before it adds another instance:
            an instance's whole start. Its alarm stays in ALARM while the backlog waits and acts every minute,
            so a shorter cooldown adds an instance per cooldown during the first one's start
            (peagle_cdk/endpoint_scaling.py, ScalableCopyCount.scale_out_on_refused_requests, quotes the rules).
        :param detailed_observability: stated in the endpoint config's MetricsConfig, with
            ``metric_publish_frequency_seconds``: left out, SageMaker turns detailed observability on for a new config
            (peagle_cdk/endpoint_metrics_config.py).
        """
        super().__init__(scope, id)
        self.input_s3_uri = f"s3://{bucket_name}/{INPUT_PREFIX}"
        self.output_s3_uri = f"s3://{bucket_name}/{OUTPUT_PREFIX}"
        self.success = EncryptedTopic(self, "SuccessTopic", display_name="P-EAGLE async inference succeeded")
        self.failure = EncryptedTopic(self, "FailureTopic", display_name="P-EAGLE async inference failed")
        self._grant_async_io(execution_role, endpoint_name, bucket_name, bucket_key)
        self.endpoint = VariantEndpoint(
            self,
            "Endpoint",
            endpoint_name=endpoint_name,
            variants=[replace(variant, initial_instances=1, weight=1.0)],
            volume_key=volume_key,
            log_retention_days=log_retention_days,
            detailed_observability=detailed_observability,
            metric_publish_frequency_seconds=metric_publish_frequency_seconds,
            async_inference=self._async_inference_config(bucket_name, max_concurrent_invocations_per_instance),
        )
        # Each InvokeEndpointAsync names its own input object: the template records where this endpoint's callers
        # put them (and the role may read), so the runtime-access check can ask for that read (peagle/access).
        self.endpoint.endpoint_config.add_metadata(ASYNC_INPUT_METADATA_KEY, self.input_s3_uri)
        self.scaling = self.endpoint.auto_scale(min_capacity=min_instances, max_capacity=max_instances)
        self.scaling.scale_on_backlog(
            "BacklogPerInstance",
            metric=self.endpoint.metric_backlog_per_instance(period=Duration.minutes(1)),
            target_per_instance=target_backlog_per_instance,
            scale_in_cooldown=scale_in_cooldown,
            scale_out_cooldown=scale_out_cooldown,
        )
        if min_instances == 0:
            self.scaling.scale_out_on_backlog_without_capacity(
                "ScaleOutFromZero",
                metric=self.endpoint.metric_has_backlog_without_capacity(period=Duration.minutes(1)),
                cooldown=wake_cooldown,
            )

    def _grant_async_io(
        self, role: SageMakerExecutionRole, endpoint_name: str, bucket_name: str, bucket_key: kms.IKey | None
    ) -> None:
        """The Model role publishes the notifications, reads the inputs, writes results, failures and logs."""
        role.grant_publish(self.success.topic, self.success.key, sid="PublishAsyncSuccess")  # pyright: ignore[reportArgumentType]
        role.grant_publish(self.failure.topic, self.failure.key, sid="PublishAsyncFailure")  # pyright: ignore[reportArgumentType]
        # InvokeEndpointAsync names an S3 input object; SageMaker reads it with this role.
        role.grant_read_prefix(bucket_name, INPUT_PREFIX, sid="ReadAsyncInput", why="the async-inference input prefix")
        role.grant_write_prefix(
            bucket_name, OUTPUT_PREFIX, sid="WriteAsyncOutput", why="the async-inference output prefix"
        )
        role.grant_write_prefix(
            bucket_name, FAILURE_PREFIX, sid="WriteAsyncFailures", why="the async-inference failure prefix"
        )
        role.grant_encrypt_with_bucket_key(bucket_key)
        role.grant_write_logs(endpoint_log_group_name(endpoint_name), sid="WriteAsyncEndpointLogs")

    def _async_inference_config(
        self, bucket_name: str, max_concurrent_invocations_per_instance: int
    ) -> sagemaker.CfnEndpointConfig.AsyncInferenceConfigProperty:
        """Where results and failures go, which topics hear of them, and how many requests an instance takes."""
        return sagemaker.CfnEndpointConfig.AsyncInferenceConfigProperty(
            output_config=sagemaker.CfnEndpointConfig.AsyncInferenceOutputConfigProperty(
                s3_output_path=self.output_s3_uri,
                s3_failure_path=f"s3://{bucket_name}/{FAILURE_PREFIX}",
                notification_config=sagemaker.CfnEndpointConfig.AsyncInferenceNotificationConfigProperty(
                    success_topic=self.success.topic.topic_arn, error_topic=self.failure.topic.topic_arn
                ),
            ),
            client_config=sagemaker.CfnEndpointConfig.AsyncInferenceClientConfigProperty(
                max_concurrent_invocations_per_instance=max_concurrent_invocations_per_instance
            ),
        )
