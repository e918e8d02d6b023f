"""KPI metrics, autoscaling, alarms and dashboard in the synthesized endpoint stack."""

import json
import re

import pytest
from aws_cdk.assertions import Capture, Match
from cdk_synth import REPO_ROOT, dashboard_widgets, write_deployment

from peagle.planning.planner import plan_deployment
from peagle.settings import config_from_overrides, load_deployment_config
from peagle.settings.errors import ConfigError
from peagle_cdk.kpi_metrics import KPI_FIELDS, KPI_NAMESPACE

ENDPOINT = "peagle-endpoint"
RESOURCE_ID = f"endpoint/{ENDPOINT}/variant/Primary"
EXAMPLES = sorted(path.stem for path in (REPO_ROOT / "deployments").glob("*.yaml"))
COST_PER_HOUR = "Cost per hour of the fleet (USD): units reporting x price per unit"
COST_PER_MILLION = "Cost per 1M output tokens (USD; none while no tokens are generated)"


def _of_type(result, resource_type):
    return list(result.resources("PeagleEndpoint", resource_type).values())


# --- KPI metrics --------------------------------------------------------------------


def test_log_group_is_owned_encrypted_retained_and_created_before_the_endpoint(default_synth):
    template = default_synth.template()
    template.has_resource(
        "AWS::Logs::LogGroup",
        {
            "Properties": {
                "LogGroupName": f"/aws/sagemaker/Endpoints/{ENDPOINT}",
                "RetentionInDays": 365,
                "KmsKeyId": {"Fn::GetAtt": [Match.any_value(), "Arn"]},
            },
            "DeletionPolicy": "Retain",
        },
    )
    (endpoint_logical_id,) = default_synth.resources("PeagleEndpoint", "AWS::SageMaker::Endpoint")
    # The endpoint's one log group (the image builder's two have generated names).
    (log_group_logical_id,) = [
        logical_id
        for logical_id, group in default_synth.resources("PeagleEndpoint", "AWS::Logs::LogGroup").items()
        if "LogGroupName" in group["Properties"]
    ]
    depends_on = default_synth.templates["PeagleEndpoint"]["Resources"][endpoint_logical_id]["DependsOn"]
    assert log_group_logical_id in depends_on


def test_log_group_key_lets_cloudwatch_logs_encrypt_exactly_this_log_group(default_synth):
    keys = default_synth.resources("PeagleEndpoint", "AWS::KMS::Key").values()
    conditions = [
        statement["Condition"]
        for key in keys
        for statement in key["Properties"]["KeyPolicy"]["Statement"]
        if statement.get("Sid") == "AllowCloudWatchLogs"
    ]
    assert len(conditions) == 1
    arn = json.dumps(conditions[0]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"])
    # log-group ARNs put ':' (not '/') before the name; a '/' would never match and the
    # log group (and with it the endpoint) would fail to create.
    assert arn.endswith(f':log-group:/aws/sagemaker/Endpoints/{ENDPOINT}"]]}}')


def test_every_kpi_field_becomes_a_metric_with_endpoint_and_variant_dimensions(default_synth):
    filters = _of_type(default_synth, "AWS::Logs::MetricFilter")
    by_name = {f["Properties"]["MetricTransformations"][0]["MetricName"]: f["Properties"] for f in filters}
    assert set(by_name) == {kpi.metric_name for kpi in KPI_FIELDS} | {"KpiReports"}
    for kpi in KPI_FIELDS:
        props = by_name[kpi.metric_name]
        transformation = props["MetricTransformations"][0]
        assert props["LogGroupName"] == f"/aws/sagemaker/Endpoints/{ENDPOINT}"
        assert props["FilterPattern"] == f'{{ ($.event = "peagle_kpi") && ($.{kpi.json_field} >= 0) }}'
        assert transformation["MetricValue"] == f"$.{kpi.json_field}"
        assert transformation["MetricNamespace"] == KPI_NAMESPACE
        assert transformation["Dimensions"] == [
            {"Key": "EndpointName", "Value": "$.endpoint_name"},
            {"Key": "VariantName", "Value": "$.variant_name"},
        ]
    assert by_name["TimeToFirstTokenSeconds"]["MetricTransformations"][0]["Unit"] == "Seconds"
    assert by_name["KpiReports"]["MetricTransformations"][0]["MetricValue"] == "1"


def test_the_container_is_told_the_names_the_metric_filters_read(default_synth):
    env = default_synth.container_environment()
    assert env["PEAGLE_ENDPOINT_NAME"] == ENDPOINT
    assert env["PEAGLE_VARIANT_NAME"] == "Primary"
    assert env["PEAGLE_KPI_INTERVAL_SECONDS"] == "60"


def test_endpoint_config_sets_metrics_config_explicitly(default_synth):
    default_synth.template().has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "MetricsConfig": {
                "EnableDetailedObservability": True,
                "EnableEnhancedMetrics": True,
                "MetricPublishFrequencyInSeconds": 60,
            }
        },
    )


def test_execution_role_writes_only_this_endpoints_log_streams(default_synth):
    (policy,) = _of_type(default_synth, "AWS::IAM::ManagedPolicy")
    (logs,) = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Sid"] == "WriteEndpointLogs"]
    assert json.dumps(logs["Resource"]).endswith(f':log-group:/aws/sagemaker/Endpoints/{ENDPOINT}:*"]]}}')


# --- Autoscaling --------------------------------------------------------------------


def test_scalable_target_is_the_variants_instance_count(default_synth):
    default_synth.template().has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "ServiceNamespace": "sagemaker",
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "ResourceId": RESOURCE_ID,
            "MinCapacity": 1,
            "MaxCapacity": 2,
        },
    )


def _policies(result):
    return {
        p["Properties"]["PolicyName"].split("InstanceCount")[-1]: p["Properties"]
        for p in _of_type(result, "AWS::ApplicationAutoScaling::ScalingPolicy")
    }


def test_concurrency_target_tracking_defaults_to_three_quarters_of_max_num_seqs(default_synth):
    policies = _policies(default_synth)
    (concurrency,) = [p for name, p in policies.items() if "Concurrency" in name]
    config = concurrency["TargetTrackingScalingPolicyConfiguration"]
    assert config["PredefinedMetricSpecification"] == {
        "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
    }
    assert config["TargetValue"] == 24  # 0.75 x max_num_seqs 32
    assert (config["ScaleInCooldown"], config["ScaleOutCooldown"]) == (900, 120)


def test_gpu_utilization_target_is_normalised_by_gpu_count(synth):
    single = _policies(synth())
    multi = _policies(synth(model="gpt-oss-120b", instanceType="ml.p5.48xlarge"))
    for policies, gpus in ((single, 1), (multi, 8)):
        (gpu,) = [p for name, p in policies.items() if "GpuUtilization" in name]
        config = gpu["TargetTrackingScalingPolicyConfiguration"]
        assert config["TargetValue"] == 80 * gpus
        metric = config["CustomizedMetricSpecification"]
        assert (metric["MetricName"], metric["Namespace"], metric["Statistic"]) == (
            "GPUUtilization",
            "/aws/sagemaker/Endpoints",
            "Average",
        )
        assert {d["Name"] for d in metric["Dimensions"]} == {"EndpointName", "VariantName"}


def test_latency_step_scaling_adds_instances_over_the_sla_in_microseconds(default_synth):
    policies = _policies(default_synth)
    (step,) = [p for name, p in policies.items() if "ModelLatencyOverSla" in name]
    config = step["StepScalingPolicyConfiguration"]
    assert config["AdjustmentType"] == "ChangeInCapacity"
    assert config["MetricAggregationType"] == "Maximum"
    adjustments = {a["ScalingAdjustment"] for a in config["StepAdjustments"]}
    assert adjustments == {1, 2}
    alarms = [
        a["Properties"]
        for a in _of_type(default_synth, "AWS::CloudWatch::Alarm")
        if a["Properties"].get("MetricName") == "ModelLatency"
        and "AlarmActions" in a["Properties"]
        and "ExtendedStatistic" in a["Properties"]
        and a["Properties"].get("Threshold") == 10_000_000
    ]
    assert alarms, "step scaling alarm at the chatbot SLA of 10 s = 10,000,000 us"


def test_invocations_target_needs_a_measured_rps_and_uses_the_headroom(synth, tmp_path):
    with pytest.raises(
        ConfigError, match=r"needs autoscaling.max_requests_per_second: measure it with `peagle capacity`"
    ):
        config_from_overrides({}, base={"autoscaling": {"target": "invocations"}})
    path = write_deployment(tmp_path, "autoscaling:\n  target: invocations\n  max_requests_per_second: 2.0\n")
    policies = _policies(synth(deployment=path))
    (invocations,) = [p for name, p in policies.items() if "InvocationsPerInstance" in name]
    config = invocations["TargetTrackingScalingPolicyConfiguration"]
    assert config["PredefinedMetricSpecification"]["PredefinedMetricType"] == "SageMakerVariantInvocationsPerInstance"
    assert config["TargetValue"] == 2.0 * 0.8 * 60  # the headroom's one default, `peagle capacity`'s too


def test_scheduled_scaling_for_off_peak_hours(synth, tmp_path):
    path = write_deployment(
        tmp_path,
        """
instance: {count: 2}
autoscaling:
  max_instances: 4
  schedules:
    - {name: NightlyScaleIn, schedule: "cron(0 20 * * ? *)", min_instances: 1, max_instances: 1, time_zone: Europe/Berlin}
    - {name: MorningScaleOut, schedule: "cron(0 7 * * ? *)", min_instances: 2, max_instances: 4}
""",
    )
    result = synth(deployment=path)
    result.template().has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "MaxCapacity": 4,
            "ScheduledActions": [
                {
                    "ScheduledActionName": "NightlyScaleIn",
                    "Schedule": "cron(0 20 * * ? *)",
                    "Timezone": "Europe/Berlin",
                    "ScalableTargetAction": {"MinCapacity": 1, "MaxCapacity": 1},
                },
                Match.object_like(
                    {
                        "ScheduledActionName": "MorningScaleOut",
                        "ScalableTargetAction": {"MinCapacity": 2, "MaxCapacity": 4},
                    }
                ),
            ],
        },
    )


def test_scaling_validation_reports_every_problem_at_once():
    with pytest.raises(ConfigError) as error:
        config_from_overrides(
            {"instanceCount": 5},
            base={
                "autoscaling": {
                    "target": "invocations",
                    "max_instances": 3,
                    "schedules": [
                        {"name": "Night", "schedule": "cron(0 20 * * ? *)", "min_instances": 3, "max_instances": 1}
                    ],
                }
            },
        )
    message = str(error.value)
    assert "autoscaling.min_capacity (1) <= instance.count (5) <= autoscaling.max_capacity (3) does not hold" in message
    assert "needs autoscaling.max_requests_per_second" in message
    assert "autoscaling.schedules[Night]: min_capacity 3 > max_capacity 1" in message


def test_autoscaling_can_be_turned_off(synth, tmp_path):
    result = synth(deployment=write_deployment(tmp_path, "autoscaling: {enabled: false}\n"))
    result.template().resource_count_is("AWS::ApplicationAutoScaling::ScalableTarget", 0)


# --- Alarms -------------------------------------------------------------------------


def _alarms(result):
    return {
        a["Properties"]["AlarmDescription"]: a["Properties"]
        for a in _of_type(result, "AWS::CloudWatch::Alarm")
        if a["Properties"].get("AlarmDescription", "").startswith("P-EAGLE")
    }


def _alarm(result, fragment):
    (alarm,) = [props for description, props in _alarms(result).items() if fragment in description]
    return alarm


def test_alarm_topic_is_kms_encrypted_ssl_only_and_cloudwatch_can_use_its_key(default_synth):
    template = default_synth.template()
    template.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": {"Fn::GetAtt": [Match.any_value(), "Arn"]}})
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            }
        },
    )
    template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                            }
                        )
                    ]
                )
            }
        },
    )


def test_latency_alarm_threshold_is_the_profile_sla_in_microseconds(synth):
    chatbot = _alarm(synth(), "p90 ModelLatency over")
    assert (chatbot["MetricName"], chatbot["ExtendedStatistic"], chatbot["Period"]) == ("ModelLatency", "p90", 60)
    assert chatbot["Threshold"] == 10 * 1_000_000
    assert chatbot["ComparisonOperator"] == "GreaterThanThreshold"
    assert (chatbot["EvaluationPeriods"], chatbot["DatapointsToAlarm"]) == (5, 3)
    codegen = _alarm(synth(profile="codegen"), "p90 ModelLatency over")
    assert codegen["Threshold"] == 30 * 1_000_000


def test_error_rate_alarms_divide_errors_by_invocations(default_synth):
    for fragment, threshold, metric in (
        ("fail with 5xx", 1, "Invocation5XXErrors"),
        ("rejected (4xx)", 10, "Invocation4XXErrors"),
    ):
        alarm = _alarm(default_synth, fragment)
        assert alarm["Threshold"] == threshold
        queries = {q["Id"]: q for q in alarm["Metrics"]}
        assert "100 *" in next(q["Expression"] for q in queries.values() if "Expression" in q)
        names = {q["MetricStat"]["Metric"]["MetricName"] for q in queries.values() if "MetricStat" in q}
        assert names == {metric, "Invocations"}


def test_gpu_memory_alarm_scales_with_gpu_count(synth):
    assert _alarm(synth(), "GPU memory over")["Threshold"] == 95
    assert _alarm(synth(model="gpt-oss-120b", instanceType="ml.p5.48xlarge"), "GPU memory over")["Threshold"] == 95 * 8


def test_acceptance_alarm_watches_the_kpi_metric_only_when_speculating(synth):
    alarm = _alarm(synth(), "draft acceptance under 0.2")
    assert (alarm["Namespace"], alarm["MetricName"], alarm["ComparisonOperator"]) == (
        KPI_NAMESPACE,
        "SpecAcceptanceRate",
        "LessThanThreshold",
    )
    assert alarm["TreatMissingData"] == "notBreaching"  # no traffic, no drafts: not an incident
    assert not [d for d in _alarms(synth(speculativeTokens="0")) if "draft acceptance" in d]


def test_missing_kpi_lines_alarm_treats_silence_as_breaching(default_synth):
    alarm = _alarm(default_synth, "no KPI line for 10 minutes")
    assert (alarm["MetricName"], alarm["Statistic"], alarm["Period"]) == ("KpiReports", "SampleCount", 600)
    assert alarm["TreatMissingData"] == "breaching"


def test_every_alarm_notifies_the_topic_and_a_composite_rolls_them_up(default_synth):
    alarms = _alarms(default_synth)
    assert len(alarms) == 6
    (topic_id,) = default_synth.resources("PeagleEndpoint", "AWS::SNS::Topic")
    for props in alarms.values():
        assert props["AlarmActions"] == props["OKActions"] == [{"Ref": topic_id}]
    (composite,) = _of_type(default_synth, "AWS::CloudWatch::CompositeAlarm")
    rule = json.dumps(composite["Properties"]["AlarmRule"])
    assert rule.count("ALARM(") == 3


def test_thresholds_can_be_overridden_and_emails_subscribed(synth, tmp_path):
    path = write_deployment(
        tmp_path,
        "alarms:\n  latency_sla_p90_seconds: 4\n  error_5xx_rate_percent: 0.5\n  emails: [oncall@example.com]\n",
    )
    result = synth(deployment=path)
    assert _alarm(result, "p90 ModelLatency over")["Threshold"] == 4_000_000
    assert _alarm(result, "fail with 5xx")["Threshold"] == 0.5
    result.template().has_resource_properties(
        "AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "oncall@example.com"}
    )
    with pytest.raises(ConfigError, match=r"not e-mail addresses: \['oncall'\]"):
        config_from_overrides({}, base={"alarms": {"emails": ["oncall"]}})


# --- Dashboard ----------------------------------------------------------------------


def _widgets(result) -> dict[str, dict]:
    """Widgets by title; text widgets by their markdown's first line, and the first one also as "text"."""
    (dashboard,) = _of_type(result, "AWS::CloudWatch::Dashboard")
    widgets: dict[str, dict] = {}
    for widget in dashboard_widgets(dashboard["Properties"]["DashboardBody"]):
        properties = widget["properties"]
        widgets.setdefault(properties.get("title", widget["type"]), widget)
        if "markdown" in properties:
            widgets[properties["markdown"].splitlines()[0]] = widget
    return widgets


def _expressions(widget: dict) -> dict[str, str]:
    """A graph's metric-math lines, label -> expression."""
    rows = widget["properties"]["metrics"]
    return {row[0]["label"]: row[0]["expression"] for row in rows if len(row) == 1 and "expression" in row[0]}


def _metric_rows(widget: dict) -> dict[str, tuple[str, str]]:
    """A graph's hidden metrics behind its expressions, id -> (metric name, statistic)."""
    rows = widget["properties"]["metrics"]
    return {row[-1]["id"]: (row[1], row[-1]["stat"]) for row in rows if len(row) > 1 and "id" in row[-1]}


def _metric_names(widget: dict) -> set[str]:
    """Metric names a metric widget plots (metric rows are [namespace, name, dim, value, ...])."""
    rows = widget["properties"].get("metrics", [])
    return {row[1] for row in rows if len(row) > 1 and isinstance(row[1], str) and not row[0].startswith(".")}


def _stats(widget: dict) -> set[str]:
    return {row[-1].get("stat") for row in widget["properties"].get("metrics", []) if isinstance(row[-1], dict)}


def test_dashboard_shows_every_kpi_the_seed_promises(default_synth):
    widgets = _widgets(default_synth)
    latency = widgets["Latency per request: ModelLatency (ms)"]
    assert "ModelLatency" in _metric_names(latency) and {"p50", "p90", "p99"} <= _stats(latency)
    assert "GenerationTokensPerSecond" in _metric_names(widgets["Tokens per second (all instances)"])
    streaming = widgets["Streaming latency (s): time to first token, time per output token"]
    assert {"TimeToFirstTokenSeconds", "TimePerOutputTokenSeconds"} <= _metric_names(streaming)
    speculation = widgets["Speculation: is P-EAGLE paying?"]
    assert {"SpecAcceptanceRate", "SpecMeanAcceptanceLength"} <= _metric_names(speculation)
    gpu = widgets["GPU utilization and memory (% of 1 GPU(s), averaged per GPU)"]
    assert gpu["properties"]["metrics"] and "GPU" in json.dumps(gpu["properties"]["metrics"])
    assert "KvCacheUsageRatio" in _metric_names(widgets["Load: instances, requests in flight, KV cache"])
    errors = json.dumps(widgets["Error rates (%)"]["properties"]["metrics"])
    assert "Invocation5XXErrors" in errors and "Invocation4XXErrors" in errors
    # every health alarm (not autoscaling's step alarm), and the plan in words
    alarm_ids = {ref.split(".")[0].strip("<") for ref in widgets["Alarms"]["properties"]["alarms"]}
    alarms = default_synth.resources("PeagleEndpoint", "AWS::CloudWatch::Alarm")
    health = {i for i, a in alarms.items() if a["Properties"].get("AlarmDescription", "").startswith("P-EAGLE")}
    health |= set(default_synth.resources("PeagleEndpoint", "AWS::CloudWatch::CompositeAlarm"))
    assert alarm_ids == health and len(health) == 7
    assert "P-EAGLE parallel drafting, K=7" in widgets["text"]["properties"]["markdown"]


# --- Cost ---------------------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_dashboard_shows_cost_per_hour_and_per_million_output_tokens(synth, example):
    deployment = REPO_ROOT / "deployments" / f"{example}.yaml"
    result = synth(deployment=str(deployment))
    config = load_deployment_config(deployment)
    plan = plan_deployment(config)
    for title in (COST_PER_HOUR, COST_PER_MILLION):
        result.template().has_resource_properties(
            "AWS::CloudWatch::Dashboard",
            {"DashboardBody": {"Fn::Join": ["", Match.array_with([Match.string_like_regexp(re.escape(title))])]}},
        )
    widgets = _widgets(result)
    assert f"## Cost (on-demand price, ${plan.price_per_hour_usd:,g}/instance-hour, {plan.price_source})" in widgets
    price, interval = f"{plan.price_per_hour_usd:g}", config.observability.kpi_interval_seconds
    copies = (plan.units.as_json() or {}).get("copies_per_instance")  # None: production variants
    hourly, per_million = _expressions(widgets[COST_PER_HOUR]), _expressions(widgets[COST_PER_MILLION])
    expected_hourly, expected_per_million = _cost_expressions(price, interval, copies, [0])
    assert expected_hourly in hourly.values() and expected_per_million in per_million.values()
    assert _metric_rows(widgets[COST_PER_MILLION]) == {
        "reports0": ("KpiReports", "SampleCount"),
        "tokens0": ("GenerationTokensPerSecond", "Sum"),
        **({"reports1": ("KpiReports", "SampleCount")} if config.ab_test.enabled else {}),
        **({"tokens1": ("GenerationTokensPerSecond", "Sum")} if config.ab_test.enabled else {}),
    }
    if config.ab_test.enabled:  # the baseline's cost too, and both together
        assert (hourly["all units"], per_million["all units"]) == _cost_expressions(price, interval, copies, [0, 1])


def _cost_expressions(price: str, interval: int, copies_per_instance: int | None, units: list[int]) -> tuple[str, str]:
    """The cost per hour and per 1M output tokens of ``units`` (peagle_cdk/fleet_metrics.py): instances reporting x
    the price; with inference components the whole instances the copies need (copies_per_instance to one)."""
    tokens = " + ".join(f"tokens{i}" for i in units)
    if copies_per_instance is None:
        costs = " + ".join(f"{price} * reports{i}" for i in units)
        return (
            f"({costs}) * {interval} / PERIOD(reports{units[0]})",
            f"({costs}) / (({tokens}) * 3600) * 1000000",
        )
    hourly = " + ".join(
        f"{price} * CEIL(FLOOR(reports{i} * {interval} / PERIOD(reports{i}) + 0.5) / {copies_per_instance})"
        for i in units
    )
    return hourly, f"({hourly}) / (({tokens}) * {interval} / PERIOD(tokens{units[0]}) * 3600) * 1000000"


def _cost_alarm_ids(result) -> list[str]:
    return [
        logical_id
        for logical_id in result.resources("PeagleEndpoint", "AWS::CloudWatch::Alarm")
        if logical_id.startswith("MonitoringCostPerMillionOutputTokensHigh")
    ]


def test_a_price_override_and_a_budget_make_the_cost_figures_and_the_cost_alarm(synth, tmp_path):
    path = write_deployment(
        tmp_path, "instance: {price_per_hour_usd: 1.5}\nalarms: {max_cost_per_million_output_tokens_usd: 4.25}\n"
    )
    result = synth(deployment=path)
    widgets = _widgets(result)
    assert "## Cost (on-demand price, $1.5/instance-hour, instance.price_per_hour_usd)" in widgets
    assert _expressions(widgets[COST_PER_HOUR]) == {
        "Primary: instances x $1.5/hour": "(1.5 * reports0) * 60 / PERIOD(reports0)"
    }
    expression = Capture()
    result.template().has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Threshold": 4.25,
            "ComparisonOperator": "GreaterThanThreshold",
            "EvaluationPeriods": 3,
            "DatapointsToAlarm": 3,
            "TreatMissingData": "notBreaching",  # idle hours: no tokens, no datapoint
            "Metrics": [
                Match.object_like({"Expression": expression, "ReturnData": True}),
                Match.object_like(
                    {
                        "Id": "reports0",
                        "MetricStat": Match.object_like(
                            {
                                "Period": 3600,
                                "Stat": "SampleCount",
                                "Metric": Match.object_like({"MetricName": "KpiReports"}),
                            }
                        ),
                    }
                ),
                Match.object_like(
                    {
                        "Id": "tokens0",
                        "MetricStat": Match.object_like(
                            {
                                "Period": 3600,
                                "Stat": "Sum",
                                "Metric": Match.object_like({"MetricName": "GenerationTokensPerSecond"}),
                            }
                        ),
                    }
                ),
            ],
        },
    )
    assert expression.as_string() == "(1.5 * reports0) / ((tokens0) * 3600) * 1000000"
    (cost_alarm,) = _cost_alarm_ids(result)
    # On the alarm widget, notifying the topic, but no reason to roll a deploy back.
    alarm_ids = {ref.split(".")[0].strip("<") for ref in widgets["Alarms"]["properties"]["alarms"]}
    assert cost_alarm in alarm_ids
    (topic_id,) = result.resources("PeagleEndpoint", "AWS::SNS::Topic")
    alarm = result.resources("PeagleEndpoint", "AWS::CloudWatch::Alarm")[cost_alarm]["Properties"]
    assert alarm["AlarmActions"] == [{"Ref": topic_id}]
    (endpoint,) = result.resources("PeagleEndpoint", "AWS::SageMaker::Endpoint").values()
    rollback = endpoint["Properties"]["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
    assert {"Ref": cost_alarm} not in [alarm["AlarmName"] for alarm in rollback]


def test_without_a_budget_there_is_no_cost_alarm(default_synth):
    assert _cost_alarm_ids(default_synth) == []
    assert COST_PER_MILLION in _widgets(default_synth)  # the figure is on the dashboard either way


def test_a_budget_or_price_that_is_not_positive_is_refused_with_the_field_named():
    with pytest.raises(
        ConfigError,
        match=r"alarms.max_cost_per_million_output_tokens_usd: Input should be greater than 0 \(given: -2\)",
    ):
        config_from_overrides({}, base={"alarms": {"max_cost_per_million_output_tokens_usd": -2}})
    with pytest.raises(ConfigError, match=r"instance.price_per_hour_usd: Input should be greater than 0 \(given: -1\)"):
        config_from_overrides({}, base={"instance": {"price_per_hour_usd": -1}})
