"""A resolved update policy, rendered for either endpoint mode: a variant endpoint's DeploymentConfig
(blue/green or rolling) or an inference component's (rolling only), with the alarms it rolls back on.

Facts behind it: SageMaker caps auto-rollback alarms at ten ("AutoRollbackConfig", Alarms "minItems":
1, "maxItems": 10, botocore 1.44.5 SageMaker model); an inference component's only policy is a
RollingUpdatePolicy ('required': ['RollingUpdatePolicy'], same model), whose batch "must be between 5%
to 50% of the copy count of the inference component"
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentRollingUpdatePolicy.html);
a percentage meets that at any copy count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sagemaker as sagemaker

MAX_ROLLBACK_ALARMS = 10


@dataclass
class RolloutPolicy:
    """``traffic`` is the resolved blue/green routing (canary, linear, all_at_once); times in seconds."""

    strategy: Literal["blue_green", "rolling", "none"]
    traffic: Literal["canary", "linear", "all_at_once"] = "canary"
    canary_percent: int = 10
    linear_step_percent: int = 25
    batch_percent: int = 25
    rollback_batch_percent: int = 100
    wait_seconds: int = 600
    termination_wait_seconds: int = 600
    max_execution_seconds: int = 7200
    auto_rollback: bool = True
    rollback_alarms: list[cloudwatch.IAlarm] = field(default_factory=list)

    def _alarm_names(self) -> list[str]:
        return [alarm.alarm_name for alarm in self.rollback_alarms[:MAX_ROLLBACK_ALARMS]]

    def endpoint_deployment_config(self) -> sagemaker.CfnEndpoint.DeploymentConfigProperty:
        percent = lambda value: sagemaker.CfnEndpoint.CapacitySizeProperty(type="CAPACITY_PERCENT", value=value)  # noqa: E731
        names = self._alarm_names()
        rollback = (
            sagemaker.CfnEndpoint.AutoRollbackConfigProperty(
                alarms=[sagemaker.CfnEndpoint.AlarmProperty(alarm_name=name) for name in names]
            )
            if self.auto_rollback and names
            else None
        )
        if self.strategy == "rolling":
            return sagemaker.CfnEndpoint.DeploymentConfigProperty(
                rolling_update_policy=sagemaker.CfnEndpoint.RollingUpdatePolicyProperty(
                    maximum_batch_size=percent(self.batch_percent),
                    wait_interval_in_seconds=self.wait_seconds,
                    rollback_maximum_batch_size=percent(self.rollback_batch_percent),
                    maximum_execution_timeout_in_seconds=self.max_execution_seconds,
                ),
                auto_rollback_configuration=rollback,
            )
        traffic = {
            "canary": lambda: sagemaker.CfnEndpoint.TrafficRoutingConfigProperty(
                type="CANARY", canary_size=percent(self.canary_percent), wait_interval_in_seconds=self.wait_seconds
            ),
            "linear": lambda: sagemaker.CfnEndpoint.TrafficRoutingConfigProperty(
                type="LINEAR",
                linear_step_size=percent(self.linear_step_percent),
                wait_interval_in_seconds=self.wait_seconds,
            ),
            "all_at_once": lambda: sagemaker.CfnEndpoint.TrafficRoutingConfigProperty(
                type="ALL_AT_ONCE", wait_interval_in_seconds=self.wait_seconds
            ),
        }[self.traffic]()
        return sagemaker.CfnEndpoint.DeploymentConfigProperty(
            blue_green_update_policy=sagemaker.CfnEndpoint.BlueGreenUpdatePolicyProperty(
                traffic_routing_configuration=traffic,
                termination_wait_in_seconds=self.termination_wait_seconds,
                maximum_execution_timeout_in_seconds=self.max_execution_seconds,
            ),
            auto_rollback_configuration=rollback,
        )

    def component_deployment_config(
        self,
    ) -> sagemaker.CfnInferenceComponent.InferenceComponentDeploymentConfigProperty:
        percent = lambda value: sagemaker.CfnInferenceComponent.InferenceComponentCapacitySizeProperty(  # noqa: E731
            type="CAPACITY_PERCENT", value=value
        )
        names = self._alarm_names() if self.auto_rollback else []
        return sagemaker.CfnInferenceComponent.InferenceComponentDeploymentConfigProperty(
            rolling_update_policy=sagemaker.CfnInferenceComponent.InferenceComponentRollingUpdatePolicyProperty(
                maximum_batch_size=percent(self.batch_percent),
                wait_interval_in_seconds=self.wait_seconds,
                rollback_maximum_batch_size=percent(self.rollback_batch_percent),
                maximum_execution_timeout_in_seconds=self.max_execution_seconds,
            ),
            auto_rollback_configuration=(
                sagemaker.CfnInferenceComponent.AutoRollbackConfigurationProperty(
                    alarms=[sagemaker.CfnInferenceComponent.AlarmProperty(alarm_name=name) for name in names]
                )
                if names
                else None
            ),
        )
