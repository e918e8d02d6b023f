"""EndpointMonitoring in a bare Stack: a segment on your dashboard, your alarm action, typed alarms
that the endpoint's update rolls back on."""

from __future__ import annotations

import json
import re

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template

from peagle.errors import ConfigError
from peagle_cdk import (
    AbBaseline,
    AlarmThresholds,
    Autoscaling,
    EndpointMode,
    EndpointMonitoring,
    ModelWeights,
    PeagleEndpoint,
)


def _endpoint(stack: Stack, **props) -> PeagleEndpoint:
    weights = ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/pair/")
    return PeagleEndpoint(stack, "Chat", name="chat", weights=weights, **props)


def _alarm_actions(template: Template, prefix: str) -> set[str]:
    """The actions of the alarms under construct ``prefix`` (scaling alarms act on their policies)."""
    return {
        json.dumps(action, sort_keys=True)
        for logical_id, alarm in template.find_resources("AWS::CloudWatch::Alarm").items()
        if logical_id.startswith(prefix)
        for action in alarm["Properties"].get("AlarmActions", [])
    }


def test_your_topic_and_dashboard_get_the_alarms_and_the_widgets():
    stack = Stack(App(), "Consumer")
    endpoint = _endpoint(stack)
    topic = sns.Topic(stack, "OnCall")
    dashboard = cloudwatch.Dashboard(stack, "Ops")
    dashboard.add_widgets(cloudwatch.TextWidget(markdown="# our service", width=24, height=1))
    monitoring = EndpointMonitoring(
        stack, "ChatMonitoring", endpoint=endpoint, alarm_action=cw_actions.SnsAction(topic), dashboard=dashboard
    )
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::SNS::Topic", 1)  # yours; none made
    template.resource_count_is("AWS::CloudWatch::Dashboard", 1)
    assert _alarm_actions(template, "ChatMonitoring") == {
        json.dumps({"Ref": stack.get_logical_id(topic.node.default_child)})
    }
    assert monitoring.topic is None and monitoring.dashboard is dashboard
    (body,) = [d["Properties"]["DashboardBody"] for d in template.find_resources("AWS::CloudWatch::Dashboard").values()]
    text = json.dumps(body)
    assert "our service" in text and "Speculation: is P-EAGLE paying?" in text


def test_typed_alarms_and_the_rollback_they_drive():
    stack = Stack(App(), "Consumer")
    endpoint = _endpoint(stack)
    monitoring = EndpointMonitoring(stack, "ChatMonitoring", endpoint=endpoint, thresholds=AlarmThresholds())
    assert monitoring.latency_alarm in monitoring.alarms and monitoring.error_5xx_alarm in monitoring.alarms
    assert monitoring.acceptance_alarm is not None  # speculation on
    assert monitoring.cost_alarm is None  # no budget given
    template = Template.from_stack(stack)
    (resource,) = template.find_resources("AWS::SageMaker::Endpoint").values()
    rollback = resource["Properties"]["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
    logical = [
        stack.get_logical_id(a.node.default_child) for a in (monitoring.error_5xx_alarm, monitoring.latency_alarm)
    ]
    assert [alarm["AlarmName"] for alarm in rollback] == [{"Ref": logical_id} for logical_id in logical]
    # SageMaker reads them with the execution role during the update.
    statements = [
        statement
        for policy in template.find_resources("AWS::IAM::ManagedPolicy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert any(s["Sid"] == "ReadRollbackAlarms" and s["Action"] == "cloudwatch:DescribeAlarms" for s in statements)
    # The latency threshold is the plan's SLA, in microseconds.
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {"MetricName": "ModelLatency", "Threshold": endpoint.plan.latency_sla_p90_seconds * 1_000_000},
    )


def _components_with_a_baseline(stack: Stack, **props) -> PeagleEndpoint:
    """qwen3-8b as inference components, eight copies to an 8-GPU instance, scaling to zero, with an A/B baseline."""
    return _endpoint(
        stack,
        model="qwen3-8b",
        instance_type="ml.g6e.48xlarge",
        mode=EndpointMode.inference_components(),
        autoscaling=Autoscaling(min_capacity=0),
        ab_baseline=AbBaseline(),
        **props,
    )


def test_components_with_a_baseline_roll_back_each_on_its_own_alarms():
    stack = Stack(App(), "Consumer")
    endpoint = _components_with_a_baseline(stack)
    EndpointMonitoring(stack, "ChatMonitoring", endpoint=endpoint)
    template = Template.from_stack(stack)
    rollback = {
        resource["Properties"]["InferenceComponentName"]: resource["Properties"]["DeploymentConfig"][
            "AutoRollbackConfiguration"
        ]["Alarms"]
        for resource in template.find_resources("AWS::SageMaker::InferenceComponent").values()
    }
    assert set(rollback) == {"chat-primary", "chat-baseline"}
    assert all(len(alarms) == 2 for alarms in rollback.values())
    assert rollback["chat-primary"] != rollback["chat-baseline"]
    # No KPI alarm while scaled to zero: KPI lines are expected only while copies serve.
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Metrics": [
                {
                    "Expression": "IF(FILL(serving, 0) > 0 AND FILL(reports, 0) < 1, 1, 0)",
                    "Id": "expr_1",
                    "ReturnData": True,
                },
                {
                    "Id": "serving",
                    "MetricStat": {
                        "Metric": {
                            "Dimensions": [{"Name": "InferenceComponentName", "Value": "chat-primary"}],
                            "MetricName": "InvocationsPerCopy",
                            "Namespace": "AWS/SageMaker",
                        },
                        "Period": 600,
                        "Stat": "Sum",
                    },
                    "ReturnData": False,
                },
                {
                    "Id": "reports",
                    "MetricStat": {
                        "Metric": {
                            "Dimensions": [
                                {"Name": "EndpointName", "Value": "chat-endpoint"},
                                {"Name": "VariantName", "Value": "chat-primary"},
                            ],
                            "MetricName": "KpiReports",
                            "Namespace": "PEagle/Endpoints",
                        },
                        "Period": 600,
                        "Stat": "SampleCount",
                    },
                    "ReturnData": False,
                },
            ]
        },
    )


def _dashboard_has(template: Template, fragment: str) -> None:
    """The dashboard body (an Fn::Join of JSON text and tokens) holds ``fragment`` in one of its strings."""
    template.has_resource_properties(
        "AWS::CloudWatch::Dashboard",
        {"DashboardBody": {"Fn::Join": ["", Match.array_with([Match.string_like_regexp(re.escape(fragment))])]}},
    )


def test_cost_of_copies_is_their_share_of_an_instance_and_the_budget_alarms_on_the_whole_fleet():
    stack = Stack(App(), "Consumer")
    endpoint = _components_with_a_baseline(stack, price_per_hour_usd=30.0)
    monitoring = EndpointMonitoring(
        stack,
        "ChatMonitoring",
        endpoint=endpoint,
        thresholds=AlarmThresholds(max_cost_per_million_output_tokens_usd=2.5),
    )
    assert (endpoint.plan.price_per_hour_usd, endpoint.plan.price_source) == (30.0, "instance.price_per_hour_usd")
    primary, baseline = (
        f"(30 / {plan.components.copies_per_instance})" for plan in (endpoint.plan, endpoint.baseline_plan)
    )
    template = Template.from_stack(stack)
    _dashboard_has(template, "## Cost (on-demand price, $30/instance-hour, instance.price_per_hour_usd)")
    _dashboard_has(template, f'"expression":"({primary} * reports0) * 60 / PERIOD(reports0)"')
    _dashboard_has(template, f'"expression":"({baseline} * reports1) / ((tokens1) * 3600) * 1000000"')
    assert monitoring.cost_alarm is not None and monitoring.cost_alarm in monitoring.alarms
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Threshold": 2.5,
            "Metrics": Match.array_with(
                [
                    Match.object_like(
                        {
                            "Expression": f"({primary} * reports0 + {baseline} * reports1) "
                            "/ ((tokens0 + tokens1) * 3600) * 1000000"
                        }
                    ),
                    Match.object_like(
                        {
                            "Id": "reports1",
                            "MetricStat": Match.object_like(
                                {
                                    "Metric": Match.object_like(
                                        {
                                            "Dimensions": [
                                                {"Name": "EndpointName", "Value": "chat-endpoint"},
                                                {"Name": "VariantName", "Value": "chat-baseline"},
                                            ]
                                        }
                                    )
                                }
                            ),
                        }
                    ),
                ]
            ),
        },
    )
    # Neither component's update rolls back on it.
    cost_alarm = {"Ref": stack.get_logical_id(monitoring.cost_alarm.node.default_child)}
    for component in template.find_resources("AWS::SageMaker::InferenceComponent").values():
        rollback = component["Properties"]["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
        assert cost_alarm not in [alarm["AlarmName"] for alarm in rollback]


# The graph period for each KPI interval: the whole minutes that hold one interval. CDK leaves a period of
# 300 s out of the widget, the dashboard's own default.
@pytest.mark.parametrize(("interval_seconds", "period"), [(10, ',"period":60'), (60, ',"period":60'), (300, "")])
def test_fleet_totals_count_each_unit_once_whatever_the_kpi_interval(interval_seconds, period):
    """A unit logs period / interval lines per period: a plain Sum of tokens/s at 1 minute showed 6x the
    fleet's rate with 10-second lines, and gaps with 5-minute ones."""
    stack = Stack(App(), "Consumer")
    endpoint = _endpoint(stack, kpi_interval=Duration.seconds(interval_seconds))
    EndpointMonitoring(stack, "ChatMonitoring", endpoint=endpoint)
    template = Template.from_stack(stack)
    for metric_id in ("tokens0", "requestsRunning0", "reports0"):
        _dashboard_has(template, f'"expression":"{metric_id} * {interval_seconds} / PERIOD({metric_id})"{period}}}')


def test_thresholds_are_checked_with_the_deployment_files_rules_in_the_thresholds_words():
    stack = Stack(App(), "Consumer")
    endpoint = _endpoint(stack)
    with pytest.raises(ConfigError) as error:
        EndpointMonitoring(
            stack,
            "ChatMonitoring",
            endpoint=endpoint,
            thresholds=AlarmThresholds(max_cost_per_million_output_tokens_usd=-1),
        )
    message = str(error.value)
    assert "EndpointMonitoring Consumer/ChatMonitoring: invalid thresholds" in message
    assert (
        "AlarmThresholds(max_cost_per_million_output_tokens_usd=...): Input should be greater than 0 (given: -1)"
        in message
    )
    assert "alarms." not in message and "deployment" not in message
