"""Autoscaling of a variant's instance count, shaped like @aws-cdk/aws-sagemaker-alpha:
``endpoint.auto_scale_instance_count(...)`` returns this, then ``scale_on_*`` adds policies.

Facts behind the choices: the concurrency metric (ConcurrentRequestsPerModel) counts the
requests queued inside the container too, and a streamed request until its last token,
and is emitted every 10 seconds instead of every minute, so it scales out faster than
invocations per minute (SageMaker Developer Guide, "Define a scaling policy", section
"Specify a high-resolution predefined metric",
https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-add-code-define.html).
GPUUtilization is 0-100 and "is multiplied by the number of GPUs"; ModelLatency's unit is
microseconds ("Amazon SageMaker AI metrics in Amazon CloudWatch",
https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html).
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from constructs import Construct

SCALABLE_DIMENSION = "sagemaker:variant:DesiredInstanceCount"
MICROSECONDS_PER_SECOND = 1_000_000


class ScalableInstanceCount(appscaling.BaseScalableAttribute):
    """The DesiredInstanceCount of one production variant."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint_name: str,
        variant_name: str,
        min_capacity: int,
        max_capacity: int,
        role: iam.IRole,
    ) -> None:
        super().__init__(
            scope,
            id,
            service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
            resource_id=f"endpoint/{endpoint_name}/variant/{variant_name}",
            dimension=SCALABLE_DIMENSION,
            role=role,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
        )

    def scale_on_concurrency(
        self, id: str, *, target_requests_per_instance: float, scale_in_cooldown: Duration, scale_out_cooldown: Duration
    ) -> None:
        """Track in-flight requests per instance (queued and streaming included)."""
        self._do_scale_to_track_metric(
            id,
            target_value=target_requests_per_instance,
            predefined_metric=appscaling.PredefinedMetric.SAGEMAKER_VARIANT_CONCURRENT_REQUESTS_PER_MODEL_HIGH_RESOLUTION,
            scale_in_cooldown=scale_in_cooldown,
            scale_out_cooldown=scale_out_cooldown,
        )

    def scale_on_invocations(
        self,
        id: str,
        *,
        max_requests_per_second: float,
        safety_factor: float = 0.5,
        scale_in_cooldown: Duration,
        scale_out_cooldown: Duration,
    ) -> float:
        """Track invocations per instance per minute; target = max RPS x safety factor x 60. Returns the target."""
        target = max_requests_per_second * safety_factor * 60
        self._do_scale_to_track_metric(
            id,
            target_value=target,
            predefined_metric=appscaling.PredefinedMetric.SAGEMAKER_VARIANT_INVOCATIONS_PER_INSTANCE,
            scale_in_cooldown=scale_in_cooldown,
            scale_out_cooldown=scale_out_cooldown,
        )
        return target

    def scale_on_gpu_utilization(
        self,
        id: str,
        *,
        metric: cloudwatch.IMetric,
        target_percent_per_gpu: float,
        gpu_count: int,
        scale_in_cooldown: Duration,
        scale_out_cooldown: Duration,
    ) -> float:
        """Track GPUUtilization; the metric sums its GPUs, so the target is scaled by gpu_count."""
        target = target_percent_per_gpu * gpu_count
        self._do_scale_to_track_metric(
            id,
            target_value=target,
            custom_metric=metric,
            scale_in_cooldown=scale_in_cooldown,
            scale_out_cooldown=scale_out_cooldown,
        )
        return target

    def scale_on_model_latency(
        self, id: str, *, metric: cloudwatch.IMetric, threshold_seconds: float, cooldown: Duration
    ) -> None:
        """Step out while p90 ModelLatency (microseconds) stays over the SLA; never steps in.

        Scale-in is left to the target-tracking policies, which know the load.
        """
        threshold_us = threshold_seconds * MICROSECONDS_PER_SECOND
        self._do_scale_on_metric(
            id,
            metric=metric,
            adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
            scaling_steps=[
                appscaling.ScalingInterval(upper=threshold_us, change=0),
                appscaling.ScalingInterval(lower=threshold_us, change=+1),
                appscaling.ScalingInterval(lower=2 * threshold_us, change=+2),
            ],
            evaluation_periods=3,
            datapoints_to_alarm=3,
            cooldown=cooldown,
            metric_aggregation_type=appscaling.MetricAggregationType.MAXIMUM,
        )

    def scale_on_schedule(
        self, id: str, *, schedule: appscaling.Schedule, min_capacity: int, max_capacity: int, time_zone=None
    ) -> None:
        self._do_scale_on_schedule(
            id,
            schedule=schedule,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
            time_zone=time_zone,
        )

    def scale_on_backlog(
        self,
        id: str,
        *,
        metric: cloudwatch.IMetric,
        target_per_instance: float,
        scale_in_cooldown: Duration,
        scale_out_cooldown: Duration,
    ) -> None:
        """Async endpoints: track queued requests per instance."""
        self._do_scale_to_track_metric(
            id,
            target_value=target_per_instance,
            custom_metric=metric,
            scale_in_cooldown=scale_in_cooldown,
            scale_out_cooldown=scale_out_cooldown,
        )

    def scale_out_from_zero(self, id: str, *, metric: cloudwatch.IMetric, cooldown: Duration) -> None:
        """Async endpoints at zero instances: backlog tracking divides by zero, so add one on any backlog."""
        self._do_scale_on_metric(
            id,
            metric=metric,
            adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
            scaling_steps=[
                appscaling.ScalingInterval(upper=0.5, change=0),
                appscaling.ScalingInterval(lower=0.5, change=+1),
            ],
            evaluation_periods=2,
            datapoints_to_alarm=2,
            cooldown=cooldown,
        )
