"""EndpointMonitoring in a bare Stack: a segment on your dashboard, your alarm action, typed alarms
that the endpoint's update rolls back on."""

from __future__ import annotations

import json

from aws_cdk import App, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template

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


def test_components_with_a_baseline_roll_back_each_on_its_own_alarms():
    stack = Stack(App(), "Consumer")
    endpoint = _endpoint(
        stack,
        model="qwen3-8b",
        instance_type="ml.g6e.48xlarge",
        mode=EndpointMode.inference_components(),
        autoscaling=Autoscaling(min_capacity=0),
        ab_baseline=AbBaseline(),
    )
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
