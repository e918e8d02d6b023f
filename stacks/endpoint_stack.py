"""The P-EAGLE endpoint for one plan: model(s), endpoint with rollout guardrails, KPI
metrics, autoscaling, alarms and dashboard; optionally an A/B baseline variant, batch
transform access and an asynchronous endpoint on the same model."""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration, Stack, TimeZone
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from constructs import Construct

from peagle.config import DeploymentConfig
from peagle.container_env import BASELINE_VARIANT_NAME, DEFAULT_VARIANT_NAME, container_environment
from peagle.deployment_rules import volume_key_allowed
from peagle.planner import Plan
from peagle_cdk.async_endpoint import AsyncInferenceEndpoint
from peagle_cdk.component_endpoint import ComponentEndpoint, ComponentSpec
from peagle_cdk.endpoint_logs import component_log_group_name, endpoint_log_group_name
from peagle_cdk.endpoint_monitoring import AlarmThresholds, EndpointMonitoring
from peagle_cdk.endpoint_scaling import ScalableCopyCount
from peagle_cdk.execution_role import SageMakerExecutionRole
from peagle_cdk.kpi_metrics import KpiMetrics
from peagle_cdk.model_artifacts import ModelArtifactsLocation, artifacts_bucket_name, pair_prefix
from peagle_cdk.nag import acknowledge
from peagle_cdk.peagle_endpoint import PeagleEndpoint, VariantSpec
from peagle_cdk.peagle_model import PeagleModel, ServingImage
from peagle_cdk.private_network import PrivateNetwork

# Inference components scaling to zero: one copy goes while two or more serve and the copies left would
# still carry the load under this share of the per-copy target, for this many minutes (target tracking's
# own scale-in is off; see ScalableCopyCount). Both mirror target tracking's own scale-in: 90 % of the
# target, and 15 minutes, the delay AWS describes for the high-resolution metric ("90 10-second data
# points", scale-to-zero launch post). A fixed 30 % of the target kept a falling daily curve on 3-4 times
# the copies it needed (`peagle simulate --traffic daily`).
LIGHT_LOAD_SHARE = 0.9
LIGHT_LOAD_MINUTES = 15
TRANSFORM_JOBS_LOG_GROUP = "/aws/sagemaker/TransformJobs"


class EndpointStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: DeploymentConfig,
        plan: Plan,
        baseline_plan: Plan | None = None,
        artifacts_key: kms.IKey | None = None,
        **kwargs,
    ) -> None:
        """
        :param baseline_plan: the A/B baseline variant's plan (config.ab_test), or None.
        :param artifacts_key: KMS key of the project's artifacts bucket (ArtifactsStack); used when
            config.artifacts.s3_uri is unset and weights live in that bucket under models/<pair>/.
        """
        super().__init__(scope, id, **kwargs)
        self.config = config
        self.plan = plan
        artifacts = self._artifacts_location(config, plan, artifacts_key)
        self.artifacts = artifacts
        subnet_ids, security_group_ids = self._network(config)
        self.image = ServingImage(self, "ServingImage")
        self.execution_role = SageMakerExecutionRole(
            self,
            "ExecutionRole",
            artifacts=artifacts,
            image_repository=self.image.asset.repository,
            in_vpc=bool(subnet_ids),
            read_weights=config.artifacts.source == "s3",
        )
        if config.uses_inference_components:
            for index, variant in enumerate(self._units(baseline_plan)):
                self.execution_role.grant_write_logs(
                    component_log_group_name(config.inference_component_name(variant)),
                    sid="WriteComponentLogs" + (variant if index else ""),
                )
        else:
            self.execution_role.grant_write_logs(endpoint_log_group_name(config.endpoint_name))
        if config.artifacts.hf_token_secret_arn:
            self.execution_role.grant_read_secret(config.artifacts.hf_token_secret_arn)
        from_hub = config.artifacts.source == "hub"

        def model(construct_id: str, model_plan: Plan, variant: str, endpoint_name: str | None = None) -> PeagleModel:
            # In inference-component mode the KPI lines name the component (their VariantName dimension).
            unit = config.inference_component_name(variant) if config.uses_inference_components else variant
            return PeagleModel(
                self,
                construct_id,
                environment=container_environment(model_plan, config, variant_name=unit, endpoint_name=endpoint_name),
                artifacts=None if from_hub else artifacts,
                image=self.image,
                execution_role=self.execution_role,
                network_isolation=config.network.isolation,
                subnet_ids=subnet_ids,
                security_group_ids=security_group_ids,
            )

        self.model = model("PeagleModel", plan, DEFAULT_VARIANT_NAME)
        # The async endpoint's own Model: the same image and weights, but its KPI lines must name
        # the async endpoint (its log group's metric filters and alarms key on that name).
        self.async_model = (
            model("AsyncModel", plan, DEFAULT_VARIANT_NAME, endpoint_name=config.async_endpoint_name)
            if config.async_inference.enabled
            else None
        )
        baseline_model = model("BaselineModel", baseline_plan, BASELINE_VARIANT_NAME) if baseline_plan else None
        volume_key = self._volume_key(plan)
        if config.uses_inference_components:
            self._component_endpoint(baseline_plan, baseline_model, volume_key, subnet_ids, security_group_ids)
        else:
            self._variant_endpoint(baseline_plan, baseline_model, volume_key)
        if config.batch.enabled:
            self._batch_access()
        self.async_endpoint = self._async_endpoint(volume_key) if config.async_inference.enabled else None
        self._outputs()

    # --- the two endpoint modes -------------------------------------------------------------

    def _variant_endpoint(self, baseline_plan: Plan | None, baseline_model: PeagleModel | None, volume_key) -> None:
        """Production variants: one model replica per instance, instances scaled by Application Auto Scaling."""
        config, plan = self.config, self.plan
        primary_weight = 1.0
        variants = []
        if baseline_plan is not None:
            primary_weight = (100 - config.ab_test.baseline_traffic_percent) / 100
        variants.append(self._variant(DEFAULT_VARIANT_NAME, self.model, plan, primary_weight))
        if baseline_plan is not None:
            variants.append(self._variant(BASELINE_VARIANT_NAME, baseline_model, baseline_plan, 1.0 - primary_weight))

        observability = config.observability
        self.endpoint = PeagleEndpoint(
            self,
            "PeagleEndpoint",
            endpoint_name=config.endpoint_name,
            variants=variants,
            volume_key=volume_key,
            log_retention_days=observability.log_retention_days,
            detailed_observability=observability.detailed_observability,
            metric_publish_frequency_seconds=observability.metric_publish_frequency_seconds,
        )
        self._acknowledge_nvme(self.endpoint, plan, volume_key)
        self.kpi = KpiMetrics(self, "KpiMetrics", log_group=self.endpoint.log_group, endpoint_name=config.endpoint_name)
        self.scaling = self._autoscaling()
        self.monitoring = self._monitoring()
        rollback_alarms = []
        if self.monitoring is not None:
            rollback_alarms = [
                self.monitoring.alarms["Invocation5xxRateHigh"],
                self.monitoring.alarms["ModelLatencyP90High"],
            ]
            if config.rollout.auto_rollback and config.rollout.strategy != "none":
                self.execution_role.grant_describe_alarms(rollback_alarms)
            if baseline_plan is not None:
                self.monitoring.add_variant_comparison(self.endpoint, self.kpi, baseline_variant=BASELINE_VARIANT_NAME)
        self.endpoint.configure_rollout(config.rollout, rollback_alarms, traffic=config.blue_green_traffic())

    def _units(self, baseline_plan: Plan | None) -> list[str]:
        return [DEFAULT_VARIANT_NAME] + ([BASELINE_VARIANT_NAME] if baseline_plan is not None else [])

    def _component_endpoint(
        self,
        baseline_plan: Plan | None,
        baseline_model: PeagleModel | None,
        volume_key,
        subnet_ids: list[str] | None,
        security_group_ids: list[str] | None,
    ) -> None:
        """Inference components: copies packed per instance, copies and instances scaled to zero. The endpoint
        config carries the Models' network isolation and VPC placement (ComponentEndpoint says why)."""
        config, plan = self.config, self.plan
        components = plan.components
        specs = [self._component(config.inference_component_name(DEFAULT_VARIANT_NAME), self.model, plan)]
        if baseline_plan is not None:
            specs.append(
                self._component(config.inference_component_name(BASELINE_VARIANT_NAME), baseline_model, baseline_plan)
            )
        observability = config.observability
        self.endpoint = ComponentEndpoint(
            self,
            "PeagleEndpoint",
            endpoint_name=config.endpoint_name,
            instance_type=plan.instance_type,
            initial_instance_count=plan.instance_count,
            min_instances=components.min_instances,
            max_instances=components.max_instances,
            inference_ami_version=plan.inference_ami_version,
            execution_role=self.execution_role.role,
            execution_role_policy=self.execution_role.policy,
            components=specs,
            network_isolation=config.network.isolation,
            subnet_ids=subnet_ids,
            security_group_ids=security_group_ids,
            volume_key=volume_key,
            log_retention_days=observability.log_retention_days,
            detailed_observability=observability.detailed_observability,
            metric_publish_frequency_seconds=observability.metric_publish_frequency_seconds,
        )
        self._acknowledge_nvme(self.endpoint, plan, volume_key)
        primary = specs[0].name
        self.kpi = KpiMetrics(
            self, "KpiMetrics", log_group=self.endpoint.log_groups[primary], endpoint_name=config.endpoint_name
        )
        for index, spec in enumerate(specs[1:], start=1):
            KpiMetrics(
                self,
                f"KpiMetrics{index}",
                log_group=self.endpoint.log_groups[spec.name],
                endpoint_name=config.endpoint_name,
            )
        self.scaling = (
            [
                self._component_scaling(spec.name, spec_plan)
                for spec, spec_plan in zip(specs, [plan, baseline_plan], strict=False)
            ]
            if config.autoscaling.enabled
            else None
        )
        self.monitoring = self._monitoring(
            kpi_expected_while=self.endpoint.metric_invocations_per_copy(
                period=Duration.minutes(config.alarms.kpi_missing_minutes)
            )
        )
        if self.monitoring is None or config.rollout.strategy == "none":
            return
        for spec in specs:
            alarms = (
                list(self.monitoring.rollback_alarms_for(self.endpoint, spec.name))
                if spec.name != primary
                else [self.monitoring.alarms["ModelLatencyP90High"], self.monitoring.alarms["Invocation5xxRateHigh"]]
            )
            self.endpoint.configure_rollout(
                spec.name, config.rollout.rolling, alarms if config.rollout.auto_rollback else []
            )
            if config.rollout.auto_rollback:
                self.execution_role.grant_describe_alarms(
                    alarms, sid="ReadRollbackAlarms" + ("" if spec.name == primary else "Baseline")
                )
        if baseline_plan is not None:
            self.monitoring.add_variant_comparison(self.endpoint, self.kpi, baseline_variant=specs[1].name)

    def _component(self, name: str, model: PeagleModel, plan: Plan) -> ComponentSpec:
        components = plan.components
        return ComponentSpec(
            name=name,
            model=model,
            accelerators=components.accelerators_per_copy,
            cpu_cores=components.cpu_cores_per_copy,
            memory_mb=components.memory_mb_per_copy,
            initial_copies=components.initial_copies,
            container_startup_timeout_seconds=plan.container_startup_timeout_seconds,
            model_download_timeout_seconds=plan.model_download_timeout_seconds,
        )

    def _component_scaling(self, name: str, plan: Plan) -> ScalableCopyCount:
        """Copy count with load, to zero after the idle time and back on the first refused request
        (peagle_cdk/endpoint_scaling.py, ScalableCopyCount, says how and why)."""
        settings, components = self.config.autoscaling, plan.components
        scaling = self.endpoint.auto_scale_copy_count(
            name, min_capacity=components.min_copies, max_capacity=components.max_copies
        )
        unit = {"variant_name": name}
        to_zero = components.scales_to_zero
        cooldowns = {
            "scale_in_cooldown": Duration.seconds(settings.scale_in_cooldown_seconds),
            "scale_out_cooldown": Duration.seconds(settings.scale_out_cooldown_seconds),
        }
        scaling.scale_on_concurrency(
            "ConcurrencyPerCopy",
            target_requests_per_copy=components.target_concurrency_per_copy,
            disable_scale_in=to_zero,
            **cooldowns,
        )
        if settings.gpu_utilization_target_percent is not None:
            scaling.scale_on_gpu_utilization(
                "GpuUtilization",
                metric=self.endpoint.metric_gpu_utilization_percent(period=Duration.minutes(1), **unit),
                target_percent=settings.gpu_utilization_target_percent,
                **cooldowns,
            )
        if settings.latency_step_scaling:
            scaling.scale_on_model_latency(
                "ModelLatencyOverSla",
                metric=self.endpoint.metric_model_latency_microseconds("p90", period=Duration.minutes(1), **unit),
                threshold_seconds=self._latency_sla_seconds(),
                # Wait for the unit it added to serve (ScalableCopyCount's docstring; `peagle simulate`).
                cooldown=Duration.seconds(plan.unit_start_budget_seconds),
            )
        if to_zero:
            minute = Duration.minutes(1)
            scaling.scale_out_from_zero(
                "ScaleOutFromZero",
                no_capacity_failures=self.endpoint.metric_no_capacity_invocation_failures(period=minute, **unit),
                cooldown=Duration.seconds(plan.unit_start_budget_seconds),
            )
            # InvocationsPerCopy is Invocations normalized by the copies, so their ratio counts the copies
            # serving ("Amazon SageMaker AI metrics in Amazon CloudWatch", InferenceComponentName metrics).
            scaling.scale_in_on_light_load(
                "ScaleInOnLightLoad",
                load=self.endpoint.metric_concurrent_requests_per_copy(period=minute, **unit),
                copies=cloudwatch.MathExpression(
                    expression="IF(perCopy > 0, invocations / perCopy, 0)",
                    using_metrics={
                        "invocations": self.endpoint.metric_invocations(period=minute, **unit),
                        "perCopy": self.endpoint.metric_invocations_per_copy(period=minute, **unit),
                    },
                    label="copies serving",
                    period=minute,
                ),
                below=components.target_concurrency_per_copy * LIGHT_LOAD_SHARE,
                minutes=LIGHT_LOAD_MINUTES,
                cooldown=Duration.seconds(settings.scale_in_cooldown_seconds),
            )
            scaling.scale_in_when_idle(
                "ScaleInToZero",
                invocations=self.endpoint.metric_invocations(period=minute, **unit),
                no_capacity_failures=self.endpoint.metric_no_capacity_invocation_failures(period=minute, **unit),
                idle_minutes=components.scale_to_zero_after_idle_minutes,
            )
        return scaling

    # --- pieces -----------------------------------------------------------------------

    def _artifacts_location(
        self, config: DeploymentConfig, plan: Plan, artifacts_key: kms.IKey | None
    ) -> ModelArtifactsLocation:
        if config.artifacts.s3_uri:
            key = (
                kms.Key.from_key_arn(self, "ArtifactsKey", config.artifacts.kms_key_arn)
                if config.artifacts.kms_key_arn
                else None
            )
            return ModelArtifactsLocation.from_s3_uri(config.artifacts.s3_uri, key=key)
        return ModelArtifactsLocation(
            bucket_name=artifacts_bucket_name(config.name), prefix=pair_prefix(plan.pair_id), key=artifacts_key
        )

    def _network(self, config: DeploymentConfig) -> tuple[list[str] | None, list[str] | None]:
        vpc = config.network.vpc
        if vpc is None:
            return None, None
        if vpc.create:
            self.network = PrivateNetwork(self, "PrivateNetwork", max_azs=vpc.max_azs)
            return self.network.subnet_ids, self.network.security_group_ids
        return vpc.subnet_ids, vpc.security_group_ids

    def _variant(self, name: str, model: PeagleModel, plan: Plan, weight: float) -> VariantSpec:
        return VariantSpec(
            name=name,
            model=model,
            instance_type=plan.instance_type,
            instance_count=plan.instance_count,
            weight=round(weight, 4),
            container_startup_timeout_seconds=plan.container_startup_timeout_seconds,
            model_download_timeout_seconds=plan.model_download_timeout_seconds,
            inference_ami_version=plan.inference_ami_version,
        )

    def _volume_key(self, plan: Plan) -> kms.IKey | None:
        if not volume_key_allowed(plan.instance):
            return None
        return kms.Key(self, "VolumeKey", enable_key_rotation=True, description="P-EAGLE endpoint ML storage volume")

    def _acknowledge_nvme(self, endpoint: PeagleEndpoint, plan: Plan, volume_key: kms.IKey | None) -> None:
        if volume_key is None:
            acknowledge(
                endpoint.endpoint_config,
                "NIST.800.53.R5-SageMakerEndpointConfigurationKMSKeyConfigured",
                f"{plan.instance_type} has local NVMe instance storage, encrypted at rest by a hardware "
                "module on the instance; a KmsKeyId does not encrypt it (SageMaker API reference; its "
                "texts before botocore 1.43.27 said the call fails). See deployment_rules.volume_key_allowed.",
            )

    def _autoscaling(self):
        settings, plan = self.config.autoscaling, self.plan
        if not settings.enabled:
            return None
        scaling = self.endpoint.auto_scale_instance_count(
            min_capacity=settings.min_instances, max_capacity=settings.max_instances
        )
        cooldowns = {
            "scale_in_cooldown": Duration.seconds(settings.scale_in_cooldown_seconds),
            "scale_out_cooldown": Duration.seconds(settings.scale_out_cooldown_seconds),
        }
        if settings.target == "invocations":
            scaling.scale_on_invocations(
                "InvocationsPerInstance",
                max_requests_per_second=settings.max_rps_per_instance,
                safety_factor=settings.safety_factor,
                **cooldowns,
            )
        else:
            # The planner's target: measured by `peagle capacity`, set in the file, or its stated guess.
            scaling.scale_on_concurrency(
                "ConcurrencyPerInstance", target_requests_per_instance=plan.scaling.concurrency, **cooldowns
            )
        if settings.gpu_utilization_target_percent is not None:
            scaling.scale_on_gpu_utilization(
                "GpuUtilization",
                metric=self.endpoint.metric_gpu_utilization_percent(period=Duration.minutes(1)),
                target_percent_per_gpu=settings.gpu_utilization_target_percent,
                gpu_count=plan.instance.gpu_count,
                **cooldowns,
            )
        if settings.latency_step_scaling:
            scaling.scale_on_model_latency(
                "ModelLatencyOverSla",
                metric=self.endpoint.metric_model_latency_microseconds("p90", period=Duration.minutes(1)),
                threshold_seconds=self._latency_sla_seconds(),
                # Wait for the unit it added to serve (ScalableCopyCount's docstring; `peagle simulate`).
                cooldown=Duration.seconds(plan.unit_start_budget_seconds),
            )
        for schedule in settings.schedules:
            scaling.scale_on_schedule(
                schedule.name,
                schedule=appscaling.Schedule.expression(schedule.schedule),
                min_capacity=schedule.min_instances,
                max_capacity=schedule.max_instances,
                time_zone=TimeZone.of(schedule.time_zone) if schedule.time_zone else None,
            )
        return scaling

    def _latency_sla_seconds(self) -> float:
        return self.config.alarms.latency_p90_seconds or self.plan.profile.latency_sla_p90_seconds

    def _monitoring(self, kpi_expected_while: cloudwatch.IMetric | None = None) -> EndpointMonitoring | None:
        alarms, plan = self.config.alarms, self.plan
        if not alarms.enabled:
            return None
        return EndpointMonitoring(
            self,
            "Monitoring",
            endpoint=self.endpoint,
            kpi=self.kpi,
            thresholds=AlarmThresholds(
                latency_p90_seconds=self._latency_sla_seconds(),
                error_5xx_rate_percent=alarms.error_5xx_rate_percent,
                error_4xx_rate_percent=alarms.error_4xx_rate_percent,
                gpu_memory_percent_per_gpu=alarms.gpu_memory_percent,
                min_acceptance_rate=alarms.min_acceptance_rate,
                kpi_missing_minutes=alarms.kpi_missing_minutes,
            ),
            # A component's GPU metrics are normalized over its own GPUs already.
            gpu_count=1 if plan.components is not None else plan.instance.gpu_count,
            speculation_enabled=plan.speculation_enabled,
            summary_markdown=_dashboard_summary(plan, self.config),
            alarm_emails=alarms.emails,
            kpi_interval_seconds=self.config.observability.kpi_interval_seconds,
            kpi_expected_while=kpi_expected_while,
        )

    def _batch_access(self) -> None:
        """Batch Transform jobs run the same Model with its execution role: read input, write output."""
        batch, bucket = self.config.batch, self.artifacts.bucket_name
        self.execution_role.grant_read_prefix(
            bucket, batch.input_prefix, sid="ReadBatchInput", why="the batch-transform input prefix"
        )
        self.execution_role.grant_write_prefix(
            bucket, batch.output_prefix, sid="WriteBatchOutput", why="the batch-transform output prefix"
        )
        self.execution_role.grant_encrypt_with_bucket_key()
        # Transform jobs log (and print their KPI lines) to one shared log group.
        self.execution_role.grant_write_logs(TRANSFORM_JOBS_LOG_GROUP, sid="WriteTransformJobLogs")

    def _async_endpoint(self, volume_key: kms.IKey | None) -> AsyncInferenceEndpoint:
        """An asynchronous endpoint on its own Model (same image and weights) for long jobs."""
        settings, scaling = self.config.async_inference, self.config.autoscaling
        async_endpoint = AsyncInferenceEndpoint(
            self,
            "AsyncInference",
            endpoint_name=self.config.async_endpoint_name,
            variant=self._variant(DEFAULT_VARIANT_NAME, self.async_model, self.plan, 1.0),
            execution_role=self.execution_role,
            bucket_name=self.artifacts.bucket_name,
            max_concurrent_invocations_per_instance=settings.max_concurrent_invocations_per_instance,
            min_instances=settings.min_instances,
            max_instances=settings.max_instances,
            target_backlog_per_instance=settings.target_backlog_per_instance,
            scale_in_cooldown=Duration.seconds(scaling.scale_in_cooldown_seconds),
            scale_out_cooldown=Duration.seconds(scaling.scale_out_cooldown_seconds),
            wake_cooldown=Duration.seconds(self.plan.unit_start_budget_seconds),
            volume_key=volume_key,
            log_retention_days=self.config.observability.log_retention_days,
        )
        self._acknowledge_nvme(async_endpoint.endpoint, self.plan, volume_key)
        return async_endpoint

    def _outputs(self) -> None:
        config = self.config
        CfnOutput(self, "EndpointName", value=config.endpoint_name, description="SageMaker endpoint to invoke")
        if isinstance(self.endpoint, ComponentEndpoint):
            for index, spec in enumerate(self.endpoint.components):
                CfnOutput(
                    self,
                    f"InferenceComponentName{index}" if index else "InferenceComponentName",
                    value=spec.name,
                    description="pass to peagle invoke/bench/smoke as --inference-component",
                )
        CfnOutput(self, "ModelName", value=self.model.model_name, description="for `peagle batch` transform jobs")
        CfnOutput(self, "ExecutionRoleArn", value=self.execution_role.role.role_arn)
        CfnOutput(self, "ImageUri", value=self.image.asset.image_uri)
        CfnOutput(
            self,
            "ModelDataS3Uri",
            value=self.artifacts.s3_uri,
            description="Prefix the endpoint mounts at /opt/ml/model; stage target/ and drafter/ here before deploying",
        )
        if self.monitoring is not None:
            CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic.topic_arn)
            CfnOutput(self, "DashboardName", value=self.monitoring.dashboard.dashboard_name)
        if config.batch.enabled:
            bucket = self.artifacts.bucket_name
            CfnOutput(self, "BatchInputS3Uri", value=f"s3://{bucket}/{config.batch.input_prefix}")
            CfnOutput(self, "BatchOutputS3Uri", value=f"s3://{bucket}/{config.batch.output_prefix}")
        if self.async_endpoint is not None:
            CfnOutput(self, "AsyncEndpointName", value=config.async_endpoint_name)
            CfnOutput(
                self,
                "AsyncInputS3Uri",
                value=self.async_endpoint.input_s3_uri,
                description="upload InvokeEndpointAsync inputs here (the model's role may read only this prefix)",
            )
            CfnOutput(self, "AsyncOutputS3Uri", value=self.async_endpoint.output_s3_uri)


def _dashboard_summary(plan: Plan, config: DeploymentConfig) -> str:
    lines = "\n".join(f"    {line}" for line in plan.summary_lines())
    return (
        f"# P-EAGLE endpoint `{config.endpoint_name}`\n"
        "Latency and errors come from SageMaker (AWS/SageMaker, /aws/sagemaker/Endpoints); tokens/s, TTFT, "
        "TPOT and acceptance from the launcher's KPI lines (PEagle/Endpoints). See the README, "
        "'Reading the dashboard'.\n\n" + lines
    )
