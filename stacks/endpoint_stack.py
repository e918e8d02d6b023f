"""The P-EAGLE endpoint for one plan: model, endpoint, KPI metrics, autoscaling,
alarms and dashboard."""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration, Stack, TimeZone
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_kms as kms
from constructs import Construct

from cdk_constructs.endpoint_logs import endpoint_log_group_name
from cdk_constructs.endpoint_monitoring import AlarmThresholds, EndpointMonitoring
from cdk_constructs.kpi_metrics import KpiMetrics
from cdk_constructs.model_artifacts import ModelArtifactsLocation, artifacts_bucket_name, pair_prefix
from cdk_constructs.nag import acknowledge
from cdk_constructs.peagle_endpoint import PeagleEndpoint
from cdk_constructs.peagle_model import PeagleModel
from peagle.config import DeploymentConfig
from peagle.container_env import DEFAULT_VARIANT_NAME, container_environment
from peagle.planner import Plan

# Target concurrency per instance as a share of the engine's max_num_seqs: scale out
# before requests queue inside vLLM.
DEFAULT_CONCURRENCY_SHARE = 0.75


class EndpointStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: DeploymentConfig,
        plan: Plan,
        artifacts_key: kms.IKey | None = None,
        **kwargs,
    ) -> None:
        """
        :param artifacts_key: KMS key of the project's artifacts bucket (ArtifactsStack); used when
            config.artifacts.s3_uri is unset and weights live in that bucket under models/<pair>/.
        """
        super().__init__(scope, id, **kwargs)
        artifacts = self._artifacts_location(config, plan, artifacts_key)
        vpc = config.network.vpc
        self.model = PeagleModel(
            self,
            "PeagleModel",
            environment=container_environment(plan, config, variant_name=DEFAULT_VARIANT_NAME),
            artifacts=artifacts,
            log_group_name=endpoint_log_group_name(config.endpoint_name),
            network_isolation=config.network.isolation,
            subnet_ids=vpc.subnet_ids if vpc else None,
            security_group_ids=vpc.security_group_ids if vpc else None,
        )
        volume_key = None
        if not plan.instance.local_nvme:
            volume_key = kms.Key(
                self, "VolumeKey", enable_key_rotation=True, description="P-EAGLE endpoint ML storage volume"
            )
        observability = config.observability
        self.endpoint = PeagleEndpoint(
            self,
            "PeagleEndpoint",
            model=self.model,
            endpoint_name=config.endpoint_name,
            instance_type=plan.instance_type,
            instance_count=plan.instance_count,
            container_startup_timeout_seconds=plan.container_startup_timeout_seconds,
            model_download_timeout_seconds=plan.model_download_timeout_seconds,
            volume_key=volume_key,
            log_retention_days=observability.log_retention_days,
            detailed_observability=observability.detailed_observability,
            metric_publish_frequency_seconds=observability.metric_publish_frequency_seconds,
        )
        if volume_key is None:
            acknowledge(
                self.endpoint.endpoint_config,
                "NIST.800.53.R5-SageMakerEndpointConfigurationKMSKeyConfigured",
                f"{plan.instance_type} has local NVMe instance storage: SageMaker rejects a KmsKeyId "
                "there, and NVMe instance store is encrypted at rest by the Nitro hardware.",
            )
        self.kpi = KpiMetrics(self, "KpiMetrics", log_group=self.endpoint.log_group, endpoint_name=config.endpoint_name)
        self.scaling = self._autoscaling(config, plan)
        self.monitoring = None
        if config.alarms.enabled:
            alarms = config.alarms
            self.monitoring = EndpointMonitoring(
                self,
                "Monitoring",
                endpoint=self.endpoint,
                kpi=self.kpi,
                thresholds=AlarmThresholds(
                    latency_p90_seconds=alarms.latency_p90_seconds or plan.profile.latency_sla_p90_seconds,
                    error_5xx_rate_percent=alarms.error_5xx_rate_percent,
                    error_4xx_rate_percent=alarms.error_4xx_rate_percent,
                    gpu_memory_percent_per_gpu=alarms.gpu_memory_percent,
                    min_acceptance_rate=alarms.min_acceptance_rate,
                    kpi_missing_minutes=alarms.kpi_missing_minutes,
                ),
                gpu_count=plan.instance.gpu_count,
                speculation_enabled=plan.speculation_enabled,
                summary_markdown=_dashboard_summary(plan, config),
                alarm_emails=alarms.emails,
                kpi_interval_seconds=observability.kpi_interval_seconds,
            )

        CfnOutput(self, "EndpointName", value=config.endpoint_name, description="SageMaker endpoint to invoke")
        CfnOutput(self, "ExecutionRoleArn", value=self.model.execution_role.role.role_arn)
        CfnOutput(self, "ImageUri", value=self.model.image.image_uri)
        CfnOutput(
            self,
            "ModelDataS3Uri",
            value=artifacts.s3_uri,
            description="Prefix the endpoint mounts at /opt/ml/model; stage target/ and drafter/ here before deploying",
        )
        if self.monitoring is not None:
            CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic.topic_arn)
            CfnOutput(self, "DashboardName", value=self.monitoring.dashboard.dashboard_name)

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

    def _autoscaling(self, config: DeploymentConfig, plan: Plan):
        settings = config.autoscaling
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
            target = settings.target_concurrency_per_instance or max(1.0, plan.max_num_seqs * DEFAULT_CONCURRENCY_SHARE)
            scaling.scale_on_concurrency("ConcurrencyPerInstance", target_requests_per_instance=target, **cooldowns)
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
                threshold_seconds=config.alarms.latency_p90_seconds or plan.profile.latency_sla_p90_seconds,
                cooldown=Duration.seconds(settings.scale_out_cooldown_seconds),
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


def _dashboard_summary(plan: Plan, config: DeploymentConfig) -> str:
    lines = "\n".join(f"    {line}" for line in plan.summary_lines())
    return (
        f"# P-EAGLE endpoint `{config.endpoint_name}`\n"
        "Latency and errors come from SageMaker (AWS/SageMaker, /aws/sagemaker/Endpoints); tokens/s, TTFT, "
        "TPOT and acceptance from the launcher's KPI lines (PEagle/Endpoints). See the README, "
        "'Reading the dashboard'.\n\n" + lines
    )
