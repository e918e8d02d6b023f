"""EndpointMonitoring in a bare Stack: a segment on your dashboard, your alarm action, typed alarms
that the endpoint's update rolls back on."""

from __future__ import annotations

import json
import math
import re

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template

from peagle.planning.unit_plan import pool_of
from peagle.settings.errors import ConfigError
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


def _pair_of_one_gpu_copies(stack: Stack, **props) -> PeagleEndpoint:
    """qwen3-8b as inference components on ml.g6e.12xlarge: one GPU per copy, four copies to an instance."""
    return _endpoint(
        stack,
        model="qwen3-8b",
        instance_type="ml.g6e.12xlarge",
        mode=EndpointMode.inference_components(),
        autoscaling=Autoscaling(min_capacity=0),
        price_per_hour_usd=10.0,
        **props,
    )


def _dashboard_widgets(template: Template) -> list[dict]:
    """The dashboard's widgets: its body (an Fn::Join of JSON text and tokens) with each token as text."""
    (dashboard,) = template.find_resources("AWS::CloudWatch::Dashboard").values()
    parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    return json.loads("".join(part if isinstance(part, str) else "TOKEN" for part in parts))["widgets"]


def _cost_per_hour_graph(template: Template) -> dict:
    (graph,) = [w for w in _dashboard_widgets(template) if w["properties"].get("title", "").startswith("Cost per hour")]
    return graph


def _expressions(widget: dict) -> dict[str, str]:
    """A graph's metric-math lines, label -> expression."""
    return {
        line[0]["label"]: line[0]["expression"]
        for line in widget["properties"]["metrics"]
        if len(line) == 1 and "expression" in line[0]
    }


def _metric_math(expression: str, *, period: int, **values: float) -> float:
    """CloudWatch metric math of one datapoint, in Python: + - * / and the functions the cost figures use
    (CEIL, FLOOR: "the smallest integer greater than or equal to", "the largest integer less than or equal to each
    value"; PERIOD: "the period of the metric in seconds"; CloudWatch User Guide, "Using metric math")."""
    assert re.fullmatch(r"[A-Za-z0-9_ .()*/+-]+", expression), expression
    functions = {"CEIL": math.ceil, "FLOOR": math.floor, "PERIOD": lambda _metric: period}
    return eval(expression, {"__builtins__": {}}, {**functions, **values})  # noqa: S307 - checked above


# copies serving -> the instances billed for them: four one-GPU copies to a 4-GPU instance, each instance whole.
COPIES_AND_INSTANCES = [(0, 0), (1, 1), (3, 1), (4, 1), (5, 2), (8, 2), (9, 3)]


@pytest.mark.parametrize(("copies", "instances"), COPIES_AND_INSTANCES)
def test_cost_of_copies_is_the_whole_instances_they_need(copies, instances):
    """Before: each copy cost a quarter of its instance ((10 / 4) * copies), so one copy serving on a 4-GPU
    instance, billed whole, read 4x low on the dashboard and in the budget alarm."""
    stack = Stack(App(), "Consumer")
    endpoint = _pair_of_one_gpu_copies(stack)
    EndpointMonitoring(
        stack,
        "ChatMonitoring",
        endpoint=endpoint,
        thresholds=AlarmThresholds(max_cost_per_million_output_tokens_usd=2.5),
    )
    assert (pool_of(endpoint.plan.units).copies_per_instance, pool_of(endpoint.plan.units).accelerators_per_copy) == (
        4,
        1,
    )
    template = Template.from_stack(stack)
    # The arithmetic of what was synthesized. Every copy logs a KPI line a minute, so SampleCount(KpiReports) is
    # copies x 15 over the graph's 15 minutes, and copies x 60 over the alarm's hour, in which each copy generating
    # 50 tokens/s sums GenerationTokensPerSecond to copies x 60 x 50.
    ((label, per_hour),) = _expressions(_cost_per_hour_graph(template)).items()
    assert _metric_math(per_hour, period=900, reports0=copies * 15) == 10.0 * instances
    (alarm,) = [
        a for a in template.find_resources("AWS::CloudWatch::Alarm").values() if a["Properties"].get("Threshold") == 2.5
    ]
    (per_million,) = [m["Expression"] for m in alarm["Properties"]["Metrics"] if m.get("ReturnData", True)]
    if copies:
        dollars = _metric_math(per_million, period=3600, reports0=copies * 60, tokens0=copies * 60 * 50)
        assert dollars == pytest.approx(10.0 * instances / (copies * 50 * 3600) * 1e6)
    # And its text.
    instances_of = "CEIL(FLOOR(reports0 * 60 / PERIOD(reports0) + 0.5) / 4)"
    assert (label, per_hour) == ("chat-primary: instances (copies / 4, rounded up) x $10/hour", f"10 * {instances_of}")
    assert per_million == f"(10 * {instances_of}) / ((tokens0) * 60 / PERIOD(tokens0) * 3600) * 1000000"


def test_a_kpi_line_more_or_less_in_a_period_does_not_add_an_instance():
    """The copies are counted from KPI lines; a copy whose lines drift logs 61 in one hour and 59 in the next:
    4.02 copies are still the one instance that holds 4, not two."""
    stack = Stack(App(), "Consumer")
    EndpointMonitoring(stack, "ChatMonitoring", endpoint=_pair_of_one_gpu_copies(stack))
    per_hour = _cost_per_hour_graph(Template.from_stack(stack))
    (expression,) = _expressions(per_hour).values()
    assert _metric_math(expression, period=3600, reports0=4 * 60 + 1) == 10.0
    assert _metric_math(expression, period=3600, reports0=4 * 60 - 1) == 10.0
    assert _metric_math(expression, period=3600, reports0=5 * 60 - 1) == 20.0


def test_components_with_a_baseline_are_priced_on_instances_of_their_own_and_the_budget_alarms_on_both():
    """Assumed: each component's copies fill instances of their own (the conservative reading: two components
    that share an instance are priced as two instances)."""
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
        f"30 * CEIL(FLOOR(reports{index} * 60 / PERIOD(reports{index}) + 0.5) / {pool_of(plan.units).copies_per_instance})"
        for index, plan in enumerate((endpoint.plan, endpoint.baseline_plan))
    )
    template = Template.from_stack(stack)
    _dashboard_has(template, "## Cost (on-demand price, $30/instance-hour, instance.price_per_hour_usd)")
    per_hour = _cost_per_hour_graph(template)
    lines = _expressions(per_hour)
    assert lines["all units"] == f"{primary} + {baseline}"
    assert _metric_math(lines["all units"], period=900, reports0=15, reports1=15) == 60.0  # one copy each: 2 instances
    _dashboard_has(template, f'"expression":"({baseline}) / ((tokens1) * 60 / PERIOD(tokens1) * 3600) * 1000000"')
    assert monitoring.cost_alarm is not None and monitoring.cost_alarm in monitoring.alarms
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Threshold": 2.5,
            "Metrics": Match.array_with(
                [
                    Match.object_like(
                        {
                            "Expression": f"({primary} + {baseline}) "
                            "/ ((tokens0 + tokens1) * 60 / PERIOD(tokens0) * 3600) * 1000000"
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


def test_variants_keep_their_instance_price_per_reporting_instance():
    stack = Stack(App(), "Consumer")
    endpoint = _endpoint(stack, price_per_hour_usd=2.5)
    EndpointMonitoring(stack, "ChatMonitoring", endpoint=endpoint)
    per_hour = _cost_per_hour_graph(Template.from_stack(stack))
    (expression,) = _expressions(per_hour).values()
    assert expression == "(2.5 * reports0) * 60 / PERIOD(reports0)"
    assert _metric_math(expression, period=900, reports0=2 * 15) == 5.0  # two instances


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
    """Checked when the thresholds are made, as every value type (before: when EndpointMonitoring was built)."""
    with pytest.raises(ConfigError) as error:
        AlarmThresholds(max_cost_per_million_output_tokens_usd=-1)
    message = str(error.value)
    assert message.startswith("AlarmThresholds: invalid props")
    assert (
        "AlarmThresholds(max_cost_per_million_output_tokens_usd=...): Input should be greater than 0 (given: -1)"
        in message
    )
    assert "alarms." not in message and "deployment" not in message
