"""Alarms from one factory: typed thresholds with units in their names, one SNS action."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct


class EncryptedTopic(Construct):
    """A KMS-encrypted, SSL-only SNS topic with its own customer-managed key.

    The AWS-managed SNS key would not do for alarms: CloudWatch cannot use it, so alarms to
    such a topic fail silently. ``publisher_service`` is granted exactly what publishing needs.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        display_name: str,
        publisher_service: str | None = None,
        emails: Sequence[str] = (),
    ) -> None:
        super().__init__(scope, id)
        self.key = kms.Key(self, "Key", enable_key_rotation=True, description=display_name)
        if publisher_service:
            self.key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="AllowServiceToPublish",
                    principals=[iam.ServicePrincipal(publisher_service)],  # pyright: ignore[reportArgumentType]
                    actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                    resources=["*"],  # in a key policy, '*' means this key
                )
            )
        self.topic = sns.Topic(self, "Topic", master_key=self.key, enforce_ssl=True, display_name=display_name)  # pyright: ignore[reportArgumentType]
        for address in emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(address))  # pyright: ignore[reportArgumentType]


class AlarmTopic(EncryptedTopic):
    """The topic every alarm of an endpoint notifies."""

    def __init__(self, scope: Construct, id: str, *, emails: Sequence[str] = ()) -> None:
        super().__init__(
            scope,
            id,
            display_name="P-EAGLE endpoint alarms",
            publisher_service="cloudwatch.amazonaws.com",
            emails=emails,
        )
        self.action: cloudwatch.IAlarmAction = cw_actions.SnsAction(self.topic)  # pyright: ignore[reportAttributeAccessIssue, reportArgumentType]


class AlarmFactory:
    """Creates alarms that all notify one topic on ALARM and OK."""

    def __init__(self, scope: Construct, *, action: cloudwatch.IAlarmAction, name_prefix: str) -> None:
        self._scope = scope
        self._action = action
        self._prefix = name_prefix
        self.alarms: dict[str, cloudwatch.Alarm] = {}

    def alarm(
        self,
        id: str,
        *,
        metric: cloudwatch.IMetric,
        threshold: float,
        comparison: cloudwatch.ComparisonOperator,
        description: str,
        evaluation_periods: int = 5,
        datapoints_to_alarm: int = 3,
        missing_data: cloudwatch.TreatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
    ) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self._scope,
            id,
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=evaluation_periods,
            datapoints_to_alarm=datapoints_to_alarm,
            treat_missing_data=missing_data,
            alarm_description=f"{self._prefix}: {description}",
        )
        alarm.add_alarm_action(self._action)
        alarm.add_ok_action(self._action)
        self.alarms[id] = alarm
        return alarm

    def composite(self, id: str, *, alarms: list[cloudwatch.IAlarm], description: str) -> cloudwatch.CompositeAlarm:
        composite = cloudwatch.CompositeAlarm(
            self._scope,
            id,
            alarm_rule=cloudwatch.AlarmRule.any_of(*alarms),
            alarm_description=f"{self._prefix}: {description}",
        )
        composite.add_alarm_action(self._action)
        composite.add_ok_action(self._action)
        return composite


def rate_percent(
    numerator: cloudwatch.IMetric, denominator: cloudwatch.IMetric, label: str, metric_id: str = "errors"
) -> cloudwatch.MathExpression:
    """100 * numerator / denominator, 0 when there was no traffic. ``metric_id`` must be unique per graph."""
    return cloudwatch.MathExpression(
        expression=f"IF(total > 0, 100 * {metric_id} / total, 0)",
        using_metrics={metric_id: numerator, "total": denominator},
        label=label,
        period=Duration.minutes(1),
    )
