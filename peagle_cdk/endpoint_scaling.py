"""Autoscaling of a serving unit's capacity (a variant's instance count, a component's copy count), shaped
like @aws-cdk/aws-sagemaker-alpha: ``endpoint.auto_scale(unit)`` returns one, then ``scale_on_*`` adds
policies.

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

from typing import cast

from aws_cdk import Duration, Stack
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from constructs import Construct

SCALABLE_DIMENSION = "sagemaker:variant:DesiredInstanceCount"
# botocore 1.44.5, application-autoscaling ScalableDimension: "sagemaker:inference-component:DesiredCopyCount
# - The number of copies across an endpoint for a SageMaker inference component."
COPY_COUNT_DIMENSION = "sagemaker:inference-component:DesiredCopyCount"
MICROSECONDS_PER_SECOND = 1_000_000


def autoscaling_service_role(scope: Construct, id: str) -> iam.IRole:
    """Application Auto Scaling's service-linked role for SageMaker endpoints and components
    (AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint), referenced, not created.

    Its trust policy is not the app's to write, so it carries no confused-deputy condition from here: "Application
    Auto Scaling creates service-linked roles for you", "Each service-linked role trusts the specified service
    principal to assume it", and "only the linked service can assume a service-linked role" (Application Auto
    Scaling User Guide, "Service-linked roles for Application Auto Scaling",
    https://docs.aws.amazon.com/autoscaling/application/userguide/application-auto-scaling-service-linked-roles.html);
    of editing one, "You can edit the description of the service-linked roles created for Application Auto Scaling"
    (Application Auto Scaling API Reference, same topic)."""
    return iam.Role.from_role_arn(
        scope,
        id,
        Stack.of(scope).format_arn(
            service="iam",
            region="",
            resource="role/aws-service-role/sagemaker.application-autoscaling.amazonaws.com",
            resource_name="AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint",
        ),
    )


class _SageMakerCapacity(appscaling.BaseScalableAttribute):
    """Policies that a variant's instance count and a component's copy count share."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        resource_id: str,
        dimension: str,
        min_capacity: int,
        max_capacity: int,
        role: iam.IRole,
    ) -> None:
        super().__init__(
            scope,
            id,
            service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
            resource_id=resource_id,
            dimension=dimension,
            role=role,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
        )

    def scale_on_model_latency(
        self, id: str, *, metric: cloudwatch.IMetric, threshold_seconds: float, cooldown: Duration
    ) -> None:
        """Step out while p90 ModelLatency (microseconds) stays over the SLA; never steps in.

        Scale-in is left to the target-tracking policies, which know the load. ``cooldown`` should be the
        unit's start budget: ModelLatency stays over the SLA until the added unit serves, and the alarm
        acts every minute it stays in ALARM, so a shorter cooldown adds a unit per cooldown meanwhile.
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

    # The predefined high-resolution concurrency metric of the unit (instance or copy).
    CONCURRENCY_METRIC: appscaling.PredefinedMetric

    def scale_on_concurrency(
        self,
        id: str,
        *,
        target_requests_per_unit: float,
        scale_in_cooldown: Duration,
        scale_out_cooldown: Duration,
        disable_scale_in: bool = False,
    ) -> None:
        """Track in-flight requests per unit (an instance, or a copy), queued and streaming ones included."""
        self._do_scale_to_track_metric(
            id,
            target_value=target_requests_per_unit,
            predefined_metric=self.CONCURRENCY_METRIC,
            scale_in_cooldown=scale_in_cooldown,
            scale_out_cooldown=scale_out_cooldown,
            disable_scale_in=disable_scale_in or None,
        )

    def scale_on_gpu_utilization(
        self,
        id: str,
        *,
        metric: cloudwatch.IMetric,
        target_percent_per_gpu: float,
        gpu_count: int = 1,
        scale_in_cooldown: Duration,
        scale_out_cooldown: Duration,
        disable_scale_in: bool = False,
    ) -> float:
        """Track GPU utilization. ``gpu_count``: the GPUs the metric sums (a variant's GPUUtilization "is
        multiplied by the number of GPUs"; a copy's GPUUtilizationNormalized is already per GPU: 1). Returns
        the target."""
        target = target_percent_per_gpu * gpu_count
        self._do_scale_to_track_metric(
            id,
            target_value=target,
            custom_metric=metric,
            scale_in_cooldown=scale_in_cooldown,
            scale_out_cooldown=scale_out_cooldown,
            disable_scale_in=disable_scale_in or None,
        )
        return target

    def scale_on_requests_waiting(
        self,
        id: str,
        *,
        metric: cloudwatch.IMetric,
        target_per_unit: float,
        scale_in_cooldown: Duration,
        scale_out_cooldown: Duration,
        disable_scale_in: bool = False,
    ) -> None:
        """Track vLLM's queue, requests waiting per unit (``metric``, the KPI lines' Average), beside the concurrency
        (or invocations) policy.

        Application Auto Scaling asks of a customized metric: "Choose a metric that changes proportionally with
        capacity. The value of the metric should increase or decrease in inverse proportion to the number of
        capacity units" (API reference, CustomizedMetricSpecification; botocore 1.44.5). The queue falls as units
        are added, but not in proportion: it is 0 on every unit that is not full, however light the load, so on its
        own this policy would always be ready to scale in, to the floor. Beside another target-tracking policy that
        scales in, that is harmless and useful: Application Auto Scaling "will scale in only if all of the target
        tracking policies (with the scale-in portion enabled) are ready to scale in", and then "scales based on the
        policy that provides the largest capacity for both scale in and scale out" (Application Auto Scaling User
        Guide, "How target tracking scaling for Application Auto Scaling works", Multiple scaling policies,
        https://docs.aws.amazon.com/autoscaling/application/userguide/target-tracking-scaling-policy-overview.html):
        the other policy decides how far in, and this one holds it back while requests wait. With its scale-in off,
        the concurrency policy removed, a minute later, the unit this one had just added for a queue (its metric had
        been under 90 % of its target all along: `peagle simulate`, docs/scaling.md). ``disable_scale_in`` where no
        other target-tracking policy scales in (a component that scales to zero: its step policies do), or this one
        would scale in alone whenever nothing waits ("If the value is true, scale in is disabled and the target
        tracking scaling policy won't remove capacity from the scalable target",
        TargetTrackingScalingPolicyConfiguration.DisableScaleIn)."""
        self._do_scale_to_track_metric(
            id,
            target_value=target_per_unit,
            custom_metric=metric,
            scale_in_cooldown=scale_in_cooldown,
            scale_out_cooldown=scale_out_cooldown,
            disable_scale_in=disable_scale_in or None,
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


class ScalableInstanceCount(_SageMakerCapacity):
    """The DesiredInstanceCount of one production variant."""

    CONCURRENCY_METRIC = appscaling.PredefinedMetric.SAGEMAKER_VARIANT_CONCURRENT_REQUESTS_PER_MODEL_HIGH_RESOLUTION

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
            resource_id=f"endpoint/{endpoint_name}/variant/{variant_name}",
            dimension=SCALABLE_DIMENSION,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
            role=role,
        )

    def scale_on_invocations(
        self,
        id: str,
        *,
        max_requests_per_second: float,
        headroom: float,
        scale_in_cooldown: Duration,
        scale_out_cooldown: Duration,
    ) -> float:
        """Track invocations per instance per minute; target = max RPS x headroom x 60. Returns the target."""
        target = max_requests_per_second * headroom * 60
        self._do_scale_to_track_metric(
            id,
            target_value=target,
            predefined_metric=appscaling.PredefinedMetric.SAGEMAKER_VARIANT_INVOCATIONS_PER_INSTANCE,
            scale_in_cooldown=scale_in_cooldown,
            scale_out_cooldown=scale_out_cooldown,
        )
        return target

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

    def scale_out_on_backlog_without_capacity(self, id: str, *, metric: cloudwatch.IMetric, cooldown: Duration) -> None:
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


class ScalableCopyCount(_SageMakerCapacity):
    """The copy count of one inference component (Application Auto Scaling ResourceId
    "inference-component/<name>": botocore 1.44.5, RegisterScalableTarget ResourceId, "SageMaker
    inference component - The resource type is inference-component and the unique identifier is the
    resource ID. Example: inference-component/my-inference-component.").

    MinCapacity may be 0 ("For the following resources, the minimum value allowed is 0. ... SageMaker
    inference components", same operation). How the copies move, when they may reach zero:

    - out with load: target tracking on concurrent requests per copy (high resolution, 10 s);
    - out from zero: copies on NoCapacityInvocationFailures (the endpoint answers "no capacity" while it
      has none, and no per-copy metric exists to track), one, and more as the refused requests grow;
    - in with load: with a floor of zero, target tracking would also remove the last copy after its
      own fixed ~15 minutes of low load; so its scale-in is off and a step policy removes the copies the
      load no longer needs, in one step, while at least two copies serve, keeping the rest under 90 % of
      the target (target tracking's own scale-in share);
    - in to zero: after ``idle_minutes`` without a single request, served or refused, a step policy sets
      the count to zero; the window outlasts a copy's start (peagle/planning/deployment_rules.py).

    Step policies that add capacity wait for it before they add more: their cooldown is the unit's
    whole start budget (``Plan.unit_start_budget_seconds``), or they add a copy every cooldown while the
    first one still starts.
    """

    # SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution (botocore 1.44.5,
    # application-autoscaling MetricType; "Specify a high-resolution predefined metric",
    # https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-add-code-define.html).
    CONCURRENCY_METRIC = (
        appscaling.PredefinedMetric.SAGEMAKER_INFERENCE_COMPONENT_CONCURRENT_REQUESTS_PER_COPY_HIGH_RESOLUTION
    )

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        component_name: str,
        min_capacity: int,
        max_capacity: int,
        role: iam.IRole,
    ) -> None:
        super().__init__(
            scope,
            id,
            resource_id=f"inference-component/{component_name}",
            dimension=COPY_COUNT_DIMENSION,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
            role=role,
        )
        self.component_name = component_name

    def _scalable_target(self) -> appscaling.ScalableTarget:
        # BaseScalableAttribute keeps its ScalableTarget as the child "Target" (aws-cdk-lib
        # aws-applicationautoscaling/lib/base-scalable-attribute.ts); the step actions below need it.
        return cast(appscaling.ScalableTarget, self.node.find_child("Target"))

    def scale_out_on_refused_requests(
        self,
        id: str,
        *,
        no_capacity_failures: cloudwatch.IMetric,
        cooldown: Duration,
        refused_per_copy: float,
        most_copies: int,
    ) -> None:
        """Add copies when invocations found none: one, and one more for each ``refused_per_copy`` refused
        sends a minute, up to ``most_copies``.

        SageMaker Developer Guide, "Scale an endpoint to zero instances"
        (https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-zero-instances.html): a step
        policy with "AdjustmentType": "ChangeInCapacity", "MetricAggregationType": "Maximum", "Cooldown": 60,
        "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}], on an alarm on
        NoCapacityInvocationFailures (AWS/SageMaker, dimension InferenceComponentName), which "SageMaker AI
        emits ... when an endpoint receives an inference request, but the endpoint has no active instances
        to serve the request". The guide's alarm is Sum over 60 s > 1; AWS's launch post ("Unlock cost
        savings with the new scale down to zero feature in SageMaker Inference") alarms at >= 1. We alarm
        at >= 1: the first refused request starts the cold start.

        Two departures from the guide, both found with `peagle simulate` (docs/simulate.md):
        - the steps grow with the refused sends. Clients retry while they wait, and when the first copy
          serves they all come at once: one copy for a burst that queued behind a cold start times most
          of it out. Copies asked for while the instance still launches serve together with the first.
          During the cooldown "capacity added by the initiating scale-out activity is calculated as part
          of the desired capacity" (Application Auto Scaling API reference, StepScalingPolicyConfiguration,
          Cooldown), so a larger step adds only the difference and a repeated one adds nothing;
        - ``cooldown`` must cover the copy's whole start: the alarm stays in ALARM while requests keep
          being refused, and acts every minute (scale_in_when_idle quotes the rule); with the guide's 60 s
          every minute of a cold start adds a copy (16 copies for one user's request). The idle window is
          longer than that start (peagle/planning/deployment_rules.py, scale-to-zero-idle-window), so this cooldown
          has always ended before the count can be back at zero: a later wake-up is never held by it.
        """
        steps = []
        for copies in range(1, max(1, most_copies) + 1):
            # Relative to the alarm's threshold of 1: [ (copies - 1) x per copy, copies x per copy ).
            lower = 0 if copies == 1 else (copies - 1) * refused_per_copy - 1
            upper = None if copies == most_copies else copies * refused_per_copy - 1
            steps.append((lower, upper, copies))
        self._step_on_alarm(
            id,
            adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
            steps=steps,
            metric_aggregation_type=appscaling.MetricAggregationType.MAXIMUM,
            cooldown=cooldown,
            metric=no_capacity_failures,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            minutes=1,
            missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            description=f"invocations found no copy; add one, and one per {refused_per_copy:g} refused a minute "
            f"(up to {most_copies}): scale out from zero",
        )

    def scale_in_on_light_load(
        self,
        id: str,
        *,
        load: cloudwatch.IMetric,
        copies: cloudwatch.IMetric,
        below: float,
        minutes: int,
        cooldown: Duration,
        most_copies: int,
    ) -> None:
        """Remove the copies the load no longer needs, in one step, never the last one: while ``copies``
        (an estimate of the copies serving) is at least 2 and fewer copies would still carry the load
        (``load`` requests per copy, times the copies) under ``below`` requests each. Target tracking's own
        scale-in, with the last copy kept.

        The alarm's metric is the excess, copies x (1 - load / below), at most copies - 1; the steps remove
        its whole part (1 for [1, 2), 2 for [2, 3), ... up to ``most_copies`` - 1), aggregated by its
        Minimum. One copy per cooldown instead kept 16 copies that a 5-minute crowd had started for hours
        after it had gone (`peagle simulate --traffic flash-crowd`)."""
        below_text = f"{below:g}"
        excess = f"FILL(copies, 0) * (1 - FILL(load, 0) / {below_text})"
        largest = max(1, most_copies - 1)
        self._step_on_alarm(
            id,
            adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
            steps=[
                (removed - 1, None if removed == largest else removed, -removed) for removed in range(1, largest + 1)
            ],
            metric_aggregation_type=appscaling.MetricAggregationType.MINIMUM,
            cooldown=cooldown,
            metric=cloudwatch.MathExpression(
                expression=(
                    f"IF(FILL(copies, 0) >= 2, IF({excess} > FILL(copies, 0) - 1, FILL(copies, 0) - 1, {excess}), 0)"
                ),
                using_metrics={"load": load, "copies": copies},
                label="copies the load does not need",
                period=Duration.minutes(1),
            ),
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            minutes=minutes,
            missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            description=f"fewer copies would carry the load under {below_text} requests per copy for {minutes} min; "
            "remove the ones it does not need",
        )

    def scale_in_when_idle(
        self, id: str, *, invocations: cloudwatch.IMetric, no_capacity_failures: cloudwatch.IMetric, idle_minutes: int
    ) -> None:
        """Set the copy count to zero after ``idle_minutes`` in which no request came: none served
        (``invocations``) and none refused for lack of a copy (``no_capacity_failures``); no data counts
        as none.

        A refused request must end the idle spell. The alarm's action repeats: "For Auto Scaling actions,
        the alarm continues to invoke the action once per minute that the alarm remains in the new state"
        (Amazon CloudWatch User Guide, "Alarm actions",
        https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-actions.html). No AWS
        page says that a request refused at zero copies counts in Invocations; if it does not, an alarm on
        Invocations alone stays in ALARM through the cold start and sets the count back to zero every
        minute, undoing each copy the scale-out-from-zero policy adds (`peagle simulate` shows it,
        docs/simulate.md). Counting the refused requests too ends the alarm in the minute of the first one.
        """
        self._step_on_alarm(
            id,
            adjustment_type=appscaling.AdjustmentType.EXACT_CAPACITY,
            steps=[(None, 0, 0)],
            metric=cloudwatch.MathExpression(
                expression="FILL(served, 0) + FILL(refused, 0)",
                using_metrics={"served": invocations, "refused": no_capacity_failures},
                label="requests served or refused",
                period=Duration.minutes(1),
            ),
            comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            minutes=idle_minutes,
            missing_data=cloudwatch.TreatMissingData.BREACHING,
            description=f"no request (served or refused) for {idle_minutes} min; scale to zero copies",
        )

    def _step_on_alarm(
        self,
        id: str,
        *,
        adjustment_type: appscaling.AdjustmentType,
        steps: list[tuple[float | None, float | None, int]],
        metric: cloudwatch.IMetric,
        comparison: cloudwatch.ComparisonOperator,
        minutes: int,
        missing_data: cloudwatch.TreatMissingData,
        description: str,
        cooldown: Duration | None = None,
        metric_aggregation_type: appscaling.MetricAggregationType | None = None,
    ) -> None:
        """Step adjustments ``steps`` (lower bound, upper bound, adjustment; bounds relative to the threshold,
        as StepAdjustment has them) when ``metric`` compares with threshold 1 for ``minutes`` of ``minutes``
        one-minute datapoints. CDK's StepScalingPolicy needs two or more intervals and makes its own alarms,
        so these are a StepScalingAction behind our own alarm."""
        action = appscaling.StepScalingAction(
            self,
            f"{id}Action",
            scaling_target=self._scalable_target(),
            adjustment_type=adjustment_type,
            cooldown=cooldown,
            metric_aggregation_type=metric_aggregation_type,
        )
        for lower, upper, adjustment in steps:
            bounds = {
                key: value for key, value in (("lower_bound", lower), ("upper_bound", upper)) if value is not None
            }
            action.add_adjustment(adjustment=adjustment, **bounds)
        alarm = cloudwatch.Alarm(
            self,
            f"{id}Alarm",
            metric=metric,
            threshold=1,
            comparison_operator=comparison,
            evaluation_periods=minutes,
            datapoints_to_alarm=minutes,
            treat_missing_data=missing_data,
            alarm_description=f"{self.component_name}: {description}",
        )
        alarm.add_alarm_action(cloudwatch_actions.ApplicationScalingAction(action))  # pyright: ignore[reportArgumentType]
