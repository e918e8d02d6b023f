"""EndpointConfig + Endpoint for a PeagleModel, with grant and metric helpers that
fill the EndpointName/VariantName dimensions in one place."""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from cdk_constructs.endpoint_logs import EndpointLogGroup
from cdk_constructs.endpoint_scaling import ScalableInstanceCount
from cdk_constructs.peagle_model import PeagleModel
from peagle.container_env import DEFAULT_VARIANT_NAME

SAGEMAKER_NAMESPACE = "AWS/SageMaker"
# Instance-level metrics (GPU, CPU, memory, disk) live in this namespace.
ENDPOINT_INSTANCE_NAMESPACE = "/aws/sagemaker/Endpoints"
INVOKE_ACTIONS = (
    "sagemaker:InvokeEndpoint",
    "sagemaker:InvokeEndpointWithResponseStream",
    "sagemaker:InvokeEndpointAsync",
)


class PeagleEndpoint(Construct):
    """A real-time endpoint with one production variant serving ``model``."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        model: PeagleModel,
        endpoint_name: str,
        instance_type: str,
        instance_count: int,
        container_startup_timeout_seconds: int,
        model_download_timeout_seconds: int,
        variant_name: str = DEFAULT_VARIANT_NAME,
        volume_key: kms.IKey | None = None,
        log_retention_days: int = 365,
        detailed_observability: bool = True,
        metric_publish_frequency_seconds: int = 60,
    ) -> None:
        """
        :param endpoint_name: a physical name, so the log group (and with it the KPI metric filters)
            can exist before the endpoint starts logging. Changing it replaces the endpoint.
        :param variant_name: keep it stable across updates (autoscaling and rollouts key on it).
        :param log_retention_days: retention of the endpoint's log group (default one year).
        :param detailed_observability: SageMaker scrapes the container's Prometheus /metrics (default on).
        :param volume_key: KMS key for the ML storage volume (default: none; instance types with
            local NVMe storage reject one).
        """
        super().__init__(scope, id)
        self.variant_name = variant_name
        self._endpoint_name = endpoint_name
        self.log_group = EndpointLogGroup(self, "Logs", endpoint_name=endpoint_name, retention_days=log_retention_days)
        self.endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "EndpointConfig",
            kms_key_id=volume_key.key_arn if volume_key else None,
            metrics_config=sagemaker.CfnEndpointConfig.MetricsConfigProperty(
                enable_detailed_observability=detailed_observability,
                enable_enhanced_metrics=True,
                metric_publish_frequency_in_seconds=metric_publish_frequency_seconds,
            ),
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name=variant_name,
                    model_name=model.model_name,
                    instance_type=instance_type,
                    initial_instance_count=instance_count,
                    initial_variant_weight=1.0,
                    container_startup_health_check_timeout_in_seconds=container_startup_timeout_seconds,
                    model_data_download_timeout_in_seconds=model_download_timeout_seconds,
                    # LLM requests vary 100x in length: route to the least busy instance.
                    routing_config=sagemaker.CfnEndpointConfig.RoutingConfigProperty(
                        routing_strategy="LEAST_OUTSTANDING_REQUESTS"
                    ),
                )
            ],
        )
        self.endpoint = sagemaker.CfnEndpoint(
            self,
            "Endpoint",
            endpoint_name=endpoint_name,
            endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
        )
        # The container logs from its first second; the group must exist (with our retention and key) first.
        self.endpoint.node.add_dependency(self.log_group)

    @property
    def endpoint_name(self) -> str:
        return self._endpoint_name

    def auto_scale_instance_count(self, *, min_capacity: int, max_capacity: int) -> ScalableInstanceCount:
        """Register the variant's instance count with Application Auto Scaling; add policies on the result."""
        stack = Stack.of(self)
        role = iam.Role.from_role_arn(
            self,
            "AutoScalingRole",
            stack.format_arn(
                service="iam",
                region="",
                resource="role/aws-service-role/sagemaker.application-autoscaling.amazonaws.com",
                resource_name="AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint",
            ),
        )
        scaling = ScalableInstanceCount(
            self,
            "InstanceCount",
            endpoint_name=self.endpoint_name,
            variant_name=self.variant_name,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
            role=role,
        )
        scaling.node.add_dependency(self.endpoint)
        return scaling

    @property
    def endpoint_arn(self) -> str:
        return Stack.of(self).format_arn(service="sagemaker", resource="endpoint", resource_name=self.endpoint_name)

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow real-time, streaming and async invocation of this endpoint only."""
        return iam.Grant.add_to_principal(grantee=grantee, actions=list(INVOKE_ACTIONS), resource_arns=[self.endpoint_arn])

    def metric(
        self,
        metric_name: str,
        *,
        namespace: str = SAGEMAKER_NAMESPACE,
        statistic: str = "Average",
        period: Duration = Duration.minutes(1),
        label: str | None = None,
    ) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace=namespace,
            metric_name=metric_name,
            dimensions_map={"EndpointName": self.endpoint_name, "VariantName": self.variant_name},
            statistic=statistic,
            period=period,
            label=label,
        )

    def metric_model_latency_microseconds(self, statistic: str = "p90", **kwargs) -> cloudwatch.Metric:
        return self.metric("ModelLatency", statistic=statistic, **kwargs)

    def metric_invocations(self, **kwargs) -> cloudwatch.Metric:
        return self.metric("Invocations", statistic="Sum", **kwargs)

    def metric_invocation_5xx_errors(self, **kwargs) -> cloudwatch.Metric:
        return self.metric("Invocation5XXErrors", statistic="Sum", **kwargs)

    def metric_invocation_4xx_errors(self, **kwargs) -> cloudwatch.Metric:
        return self.metric("Invocation4XXErrors", statistic="Sum", **kwargs)

    def metric_gpu_utilization_percent(self, **kwargs) -> cloudwatch.Metric:
        """0-100 x number of GPUs per instance."""
        return self.metric("GPUUtilization", namespace=ENDPOINT_INSTANCE_NAMESPACE, **kwargs)

    def metric_gpu_memory_utilization_percent(self, **kwargs) -> cloudwatch.Metric:
        """0-100 x number of GPUs per instance."""
        return self.metric("GPUMemoryUtilization", namespace=ENDPOINT_INSTANCE_NAMESPACE, **kwargs)
