"""CloudWatch metrics of a serving unit, the same words in both endpoint modes: SageMaker's
AWS/SageMaker metrics (Invocations, ModelLatency, errors) and the instance metrics (GPU use), with the
dimensions that pick the unit filled in by the endpoint class that mixes ServingMetrics in.

Namespaces and dimensions: "Amazon SageMaker AI metrics in Amazon CloudWatch"
(https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html): endpoint invocation metrics
in AWS/SageMaker by EndpointName and VariantName (or InferenceComponentName); instance metrics (GPU,
CPU, memory, disk) in /aws/sagemaker/Endpoints, a component's copies' in /aws/sagemaker/InferenceComponents.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

SAGEMAKER_NAMESPACE = "AWS/SageMaker"
# Instance-level metrics (GPU, CPU, memory, disk) live in this namespace.
ENDPOINT_INSTANCE_NAMESPACE = "/aws/sagemaker/Endpoints"


class ServingMetrics:
    """CloudWatch metric helpers for a serving unit: a production variant (VariantEndpoint) or an
    inference component (ComponentEndpoint). ``unit_name`` names the unit, default the primary one.
    Each class that mixes it in defines ``_dimensions(unit_name) -> dict`` (the CloudWatch dimensions
    that pick the unit) and may move the GPU metrics (GPU_NAMESPACE and the two names)."""

    GPU_NAMESPACE = ENDPOINT_INSTANCE_NAMESPACE
    GPU_UTILIZATION = "GPUUtilization"  # 0-100 x number of GPUs per instance
    GPU_MEMORY_UTILIZATION = "GPUMemoryUtilization"

    def _dimensions(self, unit_name: str | None) -> dict[str, str]:
        raise NotImplementedError("the endpoint class that mixes ServingMetrics in names its unit's dimensions")

    def metric(
        self,
        metric_name: str,
        *,
        namespace: str = SAGEMAKER_NAMESPACE,
        statistic: str = "Average",
        period: Duration = Duration.minutes(1),
        unit_name: str | None = None,
        **options,
    ) -> cloudwatch.Metric:
        """``options``: the rest of cloudwatch.Metric's (label, color, unit, account, region)."""
        return cloudwatch.Metric(
            namespace=namespace,
            metric_name=metric_name,
            dimensions_map=self._dimensions(unit_name),
            statistic=statistic,
            period=period,
            **options,
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
        return self.metric(self.GPU_UTILIZATION, namespace=self.GPU_NAMESPACE, **kwargs)

    def metric_gpu_memory_utilization_percent(self, **kwargs) -> cloudwatch.Metric:
        return self.metric(self.GPU_MEMORY_UTILIZATION, namespace=self.GPU_NAMESPACE, **kwargs)
