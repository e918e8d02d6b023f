"""Inference-component mode (endpoint.mode: inference_components): the plan packs copies per
instance, the stack creates managed instance scaling, components with the plan's compute
requirements, copy-count scaling to and from zero, rollouts per component, and alarms and a
dashboard by component. Bad combinations fail `peagle plan` and `cdk synth` with the fix."""

from __future__ import annotations

import json

import pytest
import yaml
from aws_cdk.assertions import Match
from cdk_synth import REPO_ROOT, normalise_template, synthesize, write_deployment

from peagle.cli import main
from peagle.planning.deployment_rules import plan_checked_deployment
from peagle.planning.unit_plan import pool_of
from peagle.settings import load_deployment_config

S2Z_FILE = REPO_ROOT / "deployments" / "scale-to-zero.yaml"
COMPONENT = "peagle-s2z-primary"


@pytest.fixture(scope="module")
def s2z(synth):
    return synth(deployment=str(S2Z_FILE))


@pytest.fixture(scope="module")
def s2z_plan():
    return plan_checked_deployment(load_deployment_config(S2Z_FILE)).plan


def _deployment(tmp_path, **changes) -> str:
    data = yaml.safe_load(S2Z_FILE.read_text())
    for dotted, value in changes.items():
        node = data
        *parents, leaf = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return write_deployment(tmp_path, yaml.safe_dump(data))


# --- the plan: packing --------------------------------------------------------------------


def test_qwen3_8b_packs_one_copy_per_gpu_on_eight_l40s(s2z_plan):
    components = pool_of(s2z_plan.units)
    assert (s2z_plan.tensor_parallel_size, components.accelerators_per_copy, components.copies_per_instance) == (
        1,
        1,
        8,
    )
    assert (components.min_copies, components.max_copies, components.initial_copies) == (0, 16, 1)
    # Each copy gets an equal share of the host less the 10 % reserve: 192 vCPUs, 1536 GiB on a g6e.48xlarge.
    assert components.cpu_cores_per_copy == int(192 * 0.9 / 8)
    assert components.memory_mb_per_copy == int(1536 * 1024 * 0.9 / 8)


def test_a_copy_takes_two_a10g_when_one_holds_too_little_kv_cache(tmp_path):
    plan = plan_checked_deployment(
        load_deployment_config(_deployment(tmp_path, **{"instance.type": "ml.g5.48xlarge"}))
    ).plan
    assert (plan.tensor_parallel_size, pool_of(plan.units).copies_per_instance, pool_of(plan.units).max_copies) == (
        2,
        4,
        8,
    )


def test_the_plan_says_copies_per_instance_and_what_idle_costs(capsys):
    assert main(["plan", "--deployment", str(S2Z_FILE)]) == 0
    out = capsys.readouterr().out
    assert "8 copies per instance, each 1 GPU(s) (tensor_parallel_size), 21 vCPUs" in out
    assert "copies 0..16 (deploy starts 1), instances 0..2 (managed instance scaling)" in out
    assert "$0 while scaled to zero" in out
    # The plan's own budgets (600 s download + 1053 s start-up) tell clients how long to wait.
    assert "model download (up to 600 s) and vLLM's start-up with the self-check (up to 1053 s)" in out
    assert "(up to 1053 s), 1653 s in all; invoke, bench and smoke wait that long" in out


# --- the stack ----------------------------------------------------------------------------


def test_the_endpoint_config_has_managed_instance_scaling_down_to_zero_and_no_model(s2z):
    s2z.template().has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ExecutionRoleArn": Match.any_value(),
            "ProductionVariants": [
                {
                    "VariantName": "AllTraffic",
                    "InstanceType": "ml.g6e.48xlarge",
                    "InitialInstanceCount": 1,
                    "InferenceAmiVersion": "al2023-ami-sagemaker-inference-gpu-4-1",
                    "ManagedInstanceScaling": {
                        "Status": "ENABLED",
                        "MinInstanceCount": 0,
                        "MaxInstanceCount": 2,
                        "ScaleInPolicy": {"Strategy": "IDLE_RELEASE"},
                    },
                    "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
                }
            ],
        },
    )
    (config,) = s2z.resources("PeagleEndpoint", "AWS::SageMaker::EndpointConfig").values()
    assert "ModelName" not in config["Properties"]["ProductionVariants"][0]


@pytest.mark.parametrize("isolation", [True, False])
def test_the_endpoint_config_isolates_the_containers_as_their_model_does(synth, tmp_path, isolation):
    result = synth(deployment=_deployment(tmp_path, **{"network.isolation": isolation}))
    template = result.template()
    template.has_resource_properties("AWS::SageMaker::Model", {"EnableNetworkIsolation": isolation})
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig", {"EnableNetworkIsolation": isolation, "VpcConfig": Match.absent()}
    )


def test_in_a_vpc_the_endpoint_config_places_the_instances_where_the_model_runs(synth, tmp_path):
    data = yaml.safe_load((REPO_ROOT / "deployments" / "private-vpc.yaml").read_text())
    data["endpoint"] = {"mode": "inference_components"}
    result = synth(deployment=write_deployment(tmp_path, yaml.safe_dump(data)))
    (model,) = result.resources("PeagleEndpoint", "AWS::SageMaker::Model").values()
    vpc_config = model["Properties"]["VpcConfig"]
    assert len(vpc_config["Subnets"]) == 2 and len(vpc_config["SecurityGroupIds"]) == 1  # the private network's
    result.template().has_resource_properties(
        "AWS::SageMaker::EndpointConfig", {"EnableNetworkIsolation": True, "VpcConfig": vpc_config}
    )


def test_the_endpoint_waits_for_the_execution_roles_policy(s2z):
    # In variant mode the Model the endpoint config names waits for it; here the config names none.
    (policy_id,) = s2z.resources("PeagleEndpoint", "AWS::IAM::ManagedPolicy")
    s2z.template().has_resource("AWS::SageMaker::Endpoint", {"DependsOn": Match.array_with([policy_id])})


def test_the_components_compute_requirements_are_the_plans(s2z, s2z_plan):
    components = pool_of(s2z_plan.units)
    s2z.template().has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {
            "EndpointName": "peagle-s2z-endpoint",
            "VariantName": "AllTraffic",
            "InferenceComponentName": COMPONENT,
            "RuntimeConfig": {"CopyCount": components.initial_copies},
            "Specification": {
                "ModelName": {"Fn::GetAtt": [Match.string_like_regexp("^PeagleModel"), "ModelName"]},
                "ComputeResourceRequirements": {
                    "NumberOfAcceleratorDevicesRequired": components.accelerators_per_copy,
                    "NumberOfCpuCoresRequired": components.cpu_cores_per_copy,
                    "MinMemoryRequiredInMb": components.memory_mb_per_copy,
                },
                "StartupParameters": {
                    "ContainerStartupHealthCheckTimeoutInSeconds": s2z_plan.container_startup_timeout_seconds,
                    "ModelDataDownloadTimeoutInSeconds": s2z_plan.model_download_timeout_seconds,
                },
            },
        },
    )
    # The model's tensor parallelism is the copy's GPU count, and its KPI lines name the component.
    env = s2z.container_environment()
    assert env["SM_VLLM_TENSOR_PARALLEL_SIZE"] == str(components.accelerators_per_copy)
    assert env["PEAGLE_VARIANT_NAME"] == COMPONENT


def test_the_copy_count_scales_between_zero_and_what_the_instances_hold(s2z):
    s2z.template().has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "ServiceNamespace": "sagemaker",
            "ResourceId": f"inference-component/{COMPONENT}",
            "ScalableDimension": "sagemaker:inference-component:DesiredCopyCount",
            "MinCapacity": 0,
            "MaxCapacity": 16,
        },
    )
    s2z.template().has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": {
                "PredefinedMetricSpecification": {
                    "PredefinedMetricType": "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
                },
                "TargetValue": 24,  # 75 % of max_num_seqs 32
                # with a floor of zero, target tracking would remove the last copy on its own clock
                "DisableScaleIn": True,
            },
        },
    )


def _alarm_and_policy(result, metric_name: str) -> tuple[dict, dict]:
    """The alarm on ``metric_name`` and the scaling policy its action points at."""
    resources = result.template().to_json()["Resources"]
    (alarm,) = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::CloudWatch::Alarm" and r["Properties"].get("MetricName") == metric_name
    ]
    (action,) = alarm["AlarmActions"]
    return alarm, resources[action["Ref"]]["Properties"]


def test_the_first_request_that_finds_no_copy_scales_out_from_zero(s2z):
    alarm, policy = _alarm_and_policy(s2z, "NoCapacityInvocationFailures")
    assert (alarm["Namespace"], alarm["Dimensions"]) == (
        "AWS/SageMaker",
        [{"Name": "InferenceComponentName", "Value": COMPONENT}],
    )
    assert (alarm["ComparisonOperator"], alarm["Threshold"], alarm["EvaluationPeriods"]) == (
        "GreaterThanOrEqualToThreshold",
        1,
        1,
    )
    assert policy["PolicyType"] == "StepScaling"
    assert policy["StepScalingPolicyConfiguration"]["AdjustmentType"] == "ChangeInCapacity"
    # One copy, and one more per the refused sends a minute that a copy's minute of work makes through a
    # typical start (the planner's estimates), up to the copies one instance holds: a burst that queued
    # behind a cold start meets enough copies when they serve (peagle simulate --traffic idle-burst).
    from peagle.planning.planner import plan_deployment

    plan = plan_deployment(load_deployment_config(str(REPO_ROOT / "deployments" / "scale-to-zero.yaml"), {}))
    per_copy = round(plan.unit_requests_per_minute * 60 / plan.typical_unit_start_seconds)
    assert per_copy == 32  # 32 slots x 12 requests a minute each, through a ~12-minute start
    steps = policy["StepScalingPolicyConfiguration"]["StepAdjustments"]
    assert steps[0] == {"MetricIntervalLowerBound": 0, "MetricIntervalUpperBound": per_copy - 1, "ScalingAdjustment": 1}
    assert steps[1] == {
        "MetricIntervalLowerBound": per_copy - 1,
        "MetricIntervalUpperBound": 2 * per_copy - 1,
        "ScalingAdjustment": 2,
    }
    assert steps[-1] == {"MetricIntervalLowerBound": 7 * per_copy - 1, "ScalingAdjustment": 8}
    assert len(steps) == pool_of(plan.units).copies_per_instance == 8


def _idle_alarm(result) -> tuple[dict, dict]:
    resources = result.template().to_json()["Resources"]
    (alarm,) = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        and "scale to zero copies" in r["Properties"].get("AlarmDescription", "")
    ]
    (action,) = alarm["AlarmActions"]
    return alarm, resources[action["Ref"]]["Properties"]


def test_the_last_copy_goes_after_the_configured_idle_time_without_a_request_served_or_refused(s2z, tmp_path):
    alarm, policy = _idle_alarm(s2z)
    queries = {query["Id"]: query for query in alarm["Metrics"]}
    (returned,) = [query for query in alarm["Metrics"] if query.get("ReturnData", True)]
    assert returned["Expression"] == "FILL(served, 0) + FILL(refused, 0)"
    # A refused request ends the idle spell: without it the alarm resets every wake-up (peagle simulate).
    assert {name: queries[name]["MetricStat"]["Metric"]["MetricName"] for name in ("served", "refused")} == {
        "served": "Invocations",
        "refused": "NoCapacityInvocationFailures",
    }
    assert all(
        queries[name]["MetricStat"]["Metric"]["Dimensions"] == [{"Name": "InferenceComponentName", "Value": COMPONENT}]
        for name in ("served", "refused")
    )
    assert (alarm["ComparisonOperator"], alarm["Threshold"], alarm["TreatMissingData"]) == (
        "LessThanThreshold",
        1,
        "breaching",  # no request publishes no datapoint
    )
    # Unset, the window is the copy's start budget (38 min) + 2: a woken copy always serves first.
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == 40
    assert policy["StepScalingPolicyConfiguration"]["AdjustmentType"] == "ExactCapacity"
    assert policy["StepScalingPolicyConfiguration"]["StepAdjustments"] == [
        {"MetricIntervalUpperBound": 0, "ScalingAdjustment": 0}
    ]
    longer = synthesize(
        tmp_path / "out",
        deployment=_deployment(tmp_path, **{"endpoint.inference_components.scale_to_zero_after_idle_minutes": 60}),
    )
    assert _idle_alarm(longer)[0]["EvaluationPeriods"] == 60


def test_an_idle_window_shorter_than_a_copys_start_fails_synth_with_the_shortest_allowed(tmp_path):
    from peagle.planning.deployment_rules import DeploymentRuleError

    config = load_deployment_config(
        str(_deployment(tmp_path, **{"endpoint.inference_components.scale_to_zero_after_idle_minutes": 30})), {}
    )
    with pytest.raises(
        DeploymentRuleError,
        match=r"scale_to_zero_after_idle_minutes: 30 is shorter .*; set endpoint.inference_components.scale_to_zero_after_idle_minutes: 40 or more",
    ):
        plan_checked_deployment(config)


def test_step_policies_wait_a_whole_start_before_adding_more(s2z):
    """The wake-up and latency steps act every minute their alarm stays in ALARM; their cooldown is the
    plan's start budget (instance allowance + download + start-up timeouts), not 60 or 120 s."""
    from peagle.planning.planner import INSTANCE_LAUNCH_ALLOWANCE_S, plan_deployment
    from peagle.settings import load_deployment_config

    plan = plan_deployment(load_deployment_config(str(REPO_ROOT / "deployments" / "scale-to-zero.yaml"), {}))
    budget = INSTANCE_LAUNCH_ALLOWANCE_S + plan.model_download_timeout_seconds + plan.container_startup_timeout_seconds
    assert plan.unit_start_budget_seconds == budget
    _, wake = _alarm_and_policy(s2z, "NoCapacityInvocationFailures")
    latency = next(
        r["Properties"]
        for lid, r in s2z.template().to_json()["Resources"].items()
        if r["Type"] == "AWS::ApplicationAutoScaling::ScalingPolicy" and "ModelLatencyOverSla" in lid
    )
    assert wake["StepScalingPolicyConfiguration"]["Cooldown"] == budget
    assert latency["StepScalingPolicyConfiguration"]["Cooldown"] == budget


def test_light_load_removes_the_copies_the_load_does_not_need_in_one_step_never_the_last(s2z):
    resources = s2z.template().to_json()["Resources"]
    (alarm,) = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        and "remove the ones it does not need" in r["Properties"].get("AlarmDescription", "")
    ]
    (expression,) = [query["Expression"] for query in alarm["Metrics"] if query.get("ReturnData", True)]
    # The excess over what would carry the load under 90 % of the per-copy target 24 (target tracking's own
    # scale-in share), at most all copies but one; one copy per cooldown kept a flash crowd's 16 copies for
    # hours (tests/simulate).
    excess = "FILL(copies, 0) * (1 - FILL(load, 0) / 21.6)"
    assert (
        expression == f"IF(FILL(copies, 0) >= 2, IF({excess} > FILL(copies, 0) - 1, FILL(copies, 0) - 1, {excess}), 0)"
    )
    policy = resources[alarm["AlarmActions"][0]["Ref"]]["Properties"]["StepScalingPolicyConfiguration"]
    assert policy["MetricAggregationType"] == "Minimum"
    steps = policy["StepAdjustments"]
    assert steps[:2] == [
        {"MetricIntervalLowerBound": 0, "MetricIntervalUpperBound": 1, "ScalingAdjustment": -1},
        {"MetricIntervalLowerBound": 1, "MetricIntervalUpperBound": 2, "ScalingAdjustment": -2},
    ]
    assert steps[-1] == {"MetricIntervalLowerBound": 14, "ScalingAdjustment": -15}  # 16 copies at most


def test_the_component_rolls_out_copy_by_copy_and_rolls_back_on_its_alarms(s2z):
    (component,) = s2z.resources("PeagleEndpoint", "AWS::SageMaker::InferenceComponent").values()
    deployment = component["Properties"]["DeploymentConfig"]
    assert deployment["RollingUpdatePolicy"] == {
        "MaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 25},
        "WaitIntervalInSeconds": 300,
        "RollbackMaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 100},
        "MaximumExecutionTimeoutInSeconds": 7200,
    }
    alarms = s2z.resources("PeagleEndpoint", "AWS::CloudWatch::Alarm")
    rollback = [
        alarms[entry["AlarmName"]["Ref"]]["Properties"] for entry in deployment["AutoRollbackConfiguration"]["Alarms"]
    ]
    assert {alarm.get("MetricName") or "math" for alarm in rollback} == {"ModelLatency", "math"}
    for alarm in rollback:
        stats = [q["MetricStat"]["Metric"] for q in alarm.get("Metrics", []) if "MetricStat" in q] or [alarm]
        for metric in stats:
            assert metric["Dimensions"] == [{"Name": "InferenceComponentName", "Value": COMPONENT}]
    # The execution role may read exactly those alarms (SageMaker reads them during the update).
    (policy,) = s2z.resources("PeagleEndpoint", "AWS::IAM::ManagedPolicy").values()
    statements = {s.get("Sid"): s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert statements["ReadRollbackAlarms"]["Action"] == "cloudwatch:DescribeAlarms"
    assert len(statements["ReadRollbackAlarms"]["Resource"]) == 2


def test_logs_alarms_and_dashboard_are_by_component(s2z):
    template = s2z.template()
    template.has_resource_properties(
        "AWS::Logs::LogGroup", {"LogGroupName": f"/aws/sagemaker/InferenceComponents/{COMPONENT}"}
    )
    template.has_resource_properties(
        "AWS::Logs::MetricFilter",
        {
            "LogGroupName": f"/aws/sagemaker/InferenceComponents/{COMPONENT}",
            "MetricTransformations": [Match.object_like({"MetricName": "KpiReports"})],
        },
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "/aws/sagemaker/InferenceComponents",
            "MetricName": "GPUMemoryUtilizationNormalized",
            "Dimensions": [{"Name": "InferenceComponentName", "Value": COMPONENT}],
            "Threshold": 95,  # normalized over the copy's GPUs: no GPU-count factor
        },
    )
    body = json.dumps(template.to_json())
    assert 'EndpointName","peagle-s2z-endpoint","VariantName' not in body  # no variant metrics


def test_the_kpi_missing_alarm_is_quiet_while_scaled_to_zero(s2z):
    alarms = s2z.resources("PeagleEndpoint", "AWS::CloudWatch::Alarm")
    (alarm,) = [a["Properties"] for a in alarms.values() if "without a KPI line" in a["Properties"]["AlarmDescription"]]
    queries = {query["Id"]: query for query in alarm["Metrics"]}
    # It fires only while copies serve requests (InvocationsPerCopy exists only with copies) and
    # no KPI line came; at zero copies neither exists and the expression is 0.
    (expression,) = [query["Expression"] for query in alarm["Metrics"] if "Expression" in query]
    assert expression == "IF(FILL(serving, 0) > 0 AND FILL(reports, 0) < 1, 1, 0)"
    assert queries["serving"]["MetricStat"]["Metric"]["MetricName"] == "InvocationsPerCopy"
    assert queries["reports"]["MetricStat"]["Metric"]["MetricName"] == "KpiReports"


def test_the_outputs_name_the_component_for_the_clients(s2z):
    outputs = s2z.template().to_json()["Outputs"]
    assert outputs["InferenceComponentName"]["Value"] == COMPONENT


def test_inference_component_stack_snapshot(s2z, snapshot):
    assert normalise_template(s2z.templates["PeagleEndpoint"]) == snapshot


# --- bad combinations fail plan and synth with the fix -------------------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"autoscaling.enabled": False},
            "autoscaling.min_capacity: 0 copies (scale to zero) needs autoscaling on",
        ),
        (
            {"autoscaling.max_capacity": 20},
            "autoscaling.max_capacity 20 copies do not fit: 2 x ml.g6e.48xlarge hold 16 copies of 1 GPU(s) each (8 "
            "per instance); raise endpoint.inference_components.max_instances: 3 or lower autoscaling.max_capacity: 16",
        ),
        (
            {"endpoint.inference_components.accelerators_per_copy": 3},
            "endpoint.inference_components.accelerators_per_copy 3 does not split ml.g6e.48xlarge (8 GPUs) evenly; "
            "use one of [1, 2, 4, 8]",
        ),
        (
            {"rollout.strategy": "blue_green"},
            "an inference component updates copy by copy: use rollout.strategy: rolling",
        ),
        (
            {
                "autoscaling.schedules": [
                    {"name": "Night", "schedule": "cron(0 20 * * ? *)", "min_capacity": 1, "max_capacity": 1}
                ]
            },
            "autoscaling.schedules scale production variants' instances; in inference_components mode bound the copies",
        ),
        (
            {"ab_test.enabled": True, "ab_test.baseline_traffic_percent": 20},
            "with inference components each request names its component (--inference-component)",
        ),
        ({"async_inference.enabled": True}, "in inference_components mode turn it off"),
        (
            {
                "ab_test.enabled": True,
                "endpoint.inference_components.initial_copies": 8,
                "endpoint.inference_components.max_instances": 1,
            },
            "the components' initial copies need 8 x 1 GPU(s) (peagle-s2z-primary) + 8 x 1 GPU(s) "
            "(peagle-s2z-baseline) = 16 GPUs, but endpoint.inference_components.max_instances 1 x ml.g6e.48xlarge have 8",
        ),
        (
            {"endpoint.inference_components.initial_copies": 9},
            "initial_copies 9 need 2 x ml.g6e.48xlarge (8 copies of 1 GPU(s) per instance), but ",
        ),
    ],
)
def test_bad_combinations_fail_plan_and_synth_with_the_fix(tmp_path, capsys, changes, expected):
    deployment = _deployment(tmp_path, **changes)
    assert main(["plan", "--deployment", deployment]) == 2
    assert expected in capsys.readouterr().err
    with pytest.raises(Exception) as error:  # noqa: PT011 (the message is checked below)
        synthesize(tmp_path / "cdk.out", deployment=deployment)
    assert expected in str(error.value)


def test_a_components_file_that_names_no_rollout_rolls_and_a_variants_file_stays_blue_green(tmp_path, capsys):
    # The variants default (blue_green) would be refused in this mode; a file without `rollout:`
    # gets the one update a component has, rolling, and plans.
    minimal = write_deployment(
        tmp_path, "model: qwen3-8b\ninstance: {type: ml.g6e.48xlarge}\nendpoint: {mode: inference_components}\n"
    )
    assert load_deployment_config(minimal).rollout.strategy == "rolling"
    assert main(["plan", "--deployment", minimal]) == 0
    assert "8 copies per instance" in capsys.readouterr().out
    variants = write_deployment(
        tmp_path, "model: qwen3-8b\ninstance: {type: ml.g6e.48xlarge}\nendpoint: {mode: variants}\n"
    )
    assert load_deployment_config(variants).rollout.strategy == "blue_green"


def test_an_ab_test_is_a_second_component_with_its_own_scaling_and_rollback(synth, tmp_path):
    result = synth(deployment=_deployment(tmp_path, **{"ab_test.enabled": True}))
    components = result.resources("PeagleEndpoint", "AWS::SageMaker::InferenceComponent")
    by_name = {c["Properties"]["InferenceComponentName"]: c["Properties"] for c in components.values()}
    assert set(by_name) == {COMPONENT, "peagle-s2z-baseline"}
    targets = result.resources("PeagleEndpoint", "AWS::ApplicationAutoScaling::ScalableTarget")
    assert {t["Properties"]["ResourceId"] for t in targets.values()} == {
        f"inference-component/{name}" for name in by_name
    }
    alarms = result.resources("PeagleEndpoint", "AWS::CloudWatch::Alarm")
    rollback = by_name["peagle-s2z-baseline"]["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
    for entry in rollback:
        alarm = alarms[entry["AlarmName"]["Ref"]]["Properties"]
        assert alarm["AlarmDescription"].startswith("P-EAGLE peagle-s2z-endpoint: peagle-s2z-baseline: ")
        metrics = [q["MetricStat"]["Metric"] for q in alarm.get("Metrics", []) if "MetricStat" in q] or [alarm]
        for metric in metrics:  # on the baseline component's own metrics
            assert metric["Dimensions"] == [{"Name": "InferenceComponentName", "Value": "peagle-s2z-baseline"}]


def test_component_settings_in_variants_mode_are_refused(tmp_path, capsys):
    deployment = write_deployment(tmp_path, "endpoint: {inference_components: {min_copies: 0}}\n")
    assert main(["plan", "--deployment", deployment]) == 2
    assert (
        "endpoint.inference_components is set but endpoint.mode is 'variants'; set endpoint.mode: "
        in capsys.readouterr().err
    )


def test_the_data_cache_is_on_by_default_and_off_only_when_asked_on_each_component(synth, tmp_path, s2z):
    """endpoint.inference_components.data_cache: the file key, read where the component is built. On by default
    (scale-to-zero.yaml leaves it out); turned off, the template says EnableCaching false rather than leaving the
    property out, so an update turns a cache that was on off."""
    assert "data_cache" not in S2Z_FILE.read_text()  # what the first assertion shows is the default
    s2z.template().has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {"Specification": Match.object_like({"DataCacheConfig": {"EnableCaching": True}})},
    )
    uncached = synth(deployment=_deployment(tmp_path, **{"endpoint.inference_components.data_cache": False}))
    uncached.template().has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {"Specification": Match.object_like({"DataCacheConfig": {"EnableCaching": False}})},
    )
