"""Rollout guardrails, the A/B variant, batch-transform access and the async endpoint."""

import json

import pytest
from cdk_synth import REPO_ROOT, synthesize, write_deployment

import peagle.planning.deployment_rules
from peagle.catalog import HostDriver, load_catalog
from peagle.planning.planner import plan_deployment
from peagle.settings import config_from_overrides
from peagle.settings.errors import ConfigError

AB_FILE = str(REPO_ROOT / "deployments" / "ab-test.yaml")
ASYNC_FILE = str(REPO_ROOT / "deployments" / "async-summarization.yaml")


def _endpoint(result, name="peagle-endpoint"):
    (props,) = [
        r["Properties"]
        for r in result.resources("PeagleEndpoint", "AWS::SageMaker::Endpoint").values()
        if r["Properties"]["EndpointName"] == name
    ]
    return props


def _alarm_logical_id(result, fragment):
    (logical_id,) = [
        lid
        for lid, r in result.resources("PeagleEndpoint", "AWS::CloudWatch::Alarm").items()
        if fragment in r["Properties"].get("AlarmDescription", "")
    ]
    return logical_id


# --- rollout guardrails -------------------------------------------------------------


def test_default_updates_go_blue_green_with_baking_and_alarm_rollback(default_synth):
    endpoint = _endpoint(default_synth)
    policy = endpoint["DeploymentConfig"]["BlueGreenUpdatePolicy"]
    # one instance: a canary would be the whole fleet (SageMaker allows at most half), so all at once + baking
    assert policy["TrafficRoutingConfiguration"] == {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 600}
    assert (policy["TerminationWaitInSeconds"], policy["MaximumExecutionTimeoutInSeconds"]) == (600, 7200)
    rollback = endpoint["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
    assert rollback == [
        {"AlarmName": {"Ref": _alarm_logical_id(default_synth, "fail with 5xx")}},
        {"AlarmName": {"Ref": _alarm_logical_id(default_synth, "p90 ModelLatency over")}},
    ]
    assert endpoint["RetainAllVariantProperties"] is True  # a deploy keeps the autoscaled instance count
    assert endpoint["ExcludeRetainedVariantProperties"] == [{"VariantPropertyType": "DesiredWeight"}]


def test_two_or_more_instances_shift_a_canary_first(synth):
    routing = _endpoint(synth(instanceCount="2"))["DeploymentConfig"]["BlueGreenUpdatePolicy"][
        "TrafficRoutingConfiguration"
    ]
    assert routing == {
        "Type": "CANARY",
        "CanarySize": {"Type": "CAPACITY_PERCENT", "Value": 10},
        "WaitIntervalInSeconds": 600,
    }


def test_linear_shifting_and_rolling_updates_are_configurable(synth, tmp_path):
    linear = synth(
        deployment=write_deployment(
            tmp_path,
            "instance: {count: 2}\nrollout:\n  blue_green: {traffic: linear, linear_step_percent: 25, wait_seconds: 300}\n",
        )
    )
    routing = _endpoint(linear)["DeploymentConfig"]["BlueGreenUpdatePolicy"]["TrafficRoutingConfiguration"]
    assert routing == {
        "Type": "LINEAR",
        "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 25},
        "WaitIntervalInSeconds": 300,
    }
    (tmp_path / "rolling").mkdir()
    rolling = _endpoint(
        synth(
            deployment=write_deployment(
                tmp_path / "rolling",
                "instance: {count: 2}\nrollout:\n  strategy: rolling\n  rolling: {batch_percent: 50, wait_seconds: 300}\n"
                "autoscaling: {min_instances: 2, max_instances: 4}\n",
            )
        )
    )["DeploymentConfig"]
    assert rolling["RollingUpdatePolicy"] == {
        "MaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 50},
        "WaitIntervalInSeconds": 300,
        "RollbackMaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 100},
        "MaximumExecutionTimeoutInSeconds": 7200,
    }
    assert "AutoRollbackConfiguration" in rolling


def test_rollout_ranges_and_combinations_are_validated():
    with pytest.raises(
        ConfigError, match=r"rollout.blue_green.canary_percent: Input should be less than or equal to 50"
    ):
        config_from_overrides({}, base={"rollout": {"blue_green": {"canary_percent": 60}}})
    with pytest.raises(ConfigError, match=r"linear_step_percent: Input should be greater than or equal to 10"):
        config_from_overrides({}, base={"rollout": {"blue_green": {"linear_step_percent": 5}}})
    with pytest.raises(
        ConfigError, match=r"the waits add up to 9600 s, more than rollout.blue_green.max_execution_seconds: 7200"
    ):
        config_from_overrides(
            {"instanceCount": 2},
            base={
                "rollout": {
                    "blue_green": {
                        "traffic": "linear",
                        "linear_step_percent": 10,
                        "wait_seconds": 900,
                        "termination_wait_seconds": 600,
                    }
                }
            },
        )
    with pytest.raises(ConfigError, match=r"rollout.blue_green.traffic: canary needs at least 2 instances"):
        config_from_overrides({}, base={"rollout": {"blue_green": {"traffic": "canary"}}})
    with pytest.raises(ConfigError, match=r"rollout.strategy: rolling is not supported on multi-variant endpoints"):
        config_from_overrides({}, base={"ab_test": {"enabled": True}, "rollout": {"strategy": "rolling"}})
    with pytest.raises(ConfigError, match=r"kpi_missing_minutes 2 is shorter than two KPI intervals \(300 s each\)"):
        config_from_overrides(
            {}, base={"alarms": {"kpi_missing_minutes": 2}, "observability": {"kpi_interval_seconds": 300}}
        )


# --- A/B measurement ----------------------------------------------------------------


@pytest.fixture(scope="module")
def ab(synth):
    return synth(deployment=AB_FILE)


def test_ab_example_has_two_production_variants_splitting_traffic(ab):
    (config,) = ab.resources("PeagleEndpoint", "AWS::SageMaker::EndpointConfig").values()
    variants = {v["VariantName"]: v for v in config["Properties"]["ProductionVariants"]}
    assert set(variants) == {"Primary", "Baseline"}
    assert variants["Primary"]["InitialVariantWeight"] == variants["Baseline"]["InitialVariantWeight"] == 0.5
    assert variants["Primary"]["InstanceType"] == variants["Baseline"]["InstanceType"] == "ml.g6e.xlarge"
    assert variants["Primary"]["ModelName"] != variants["Baseline"]["ModelName"]


def test_ab_baseline_serves_the_same_target_without_speculation(ab):
    models = list(ab.resources("PeagleEndpoint", "AWS::SageMaker::Model").values())
    envs = {m["Properties"]["PrimaryContainer"]["Environment"]["PEAGLE_VARIANT_NAME"]: m["Properties"] for m in models}
    primary, baseline = (envs[name]["PrimaryContainer"]["Environment"] for name in ("Primary", "Baseline"))
    assert json.loads(primary["SM_VLLM_SPECULATIVE_CONFIG"])["num_speculative_tokens"] == 7
    assert "SM_VLLM_SPECULATIVE_CONFIG" not in baseline
    assert primary["SM_VLLM_MODEL"] == baseline["SM_VLLM_MODEL"]
    # one execution role and one image for both
    assert envs["Primary"]["ExecutionRoleArn"] == envs["Baseline"]["ExecutionRoleArn"]
    assert envs["Primary"]["PrimaryContainer"]["Image"] == envs["Baseline"]["PrimaryContainer"]["Image"]


def test_ab_dashboard_shows_per_variant_latency_and_the_measured_speedup(ab):
    (dashboard,) = ab.resources("PeagleEndpoint", "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    assert "measured speedup (Baseline TPOT / Primary TPOT)" in body
    assert "baseline / speculative" in body
    assert body.count('\\"VariantName\\",\\"Baseline\\"') >= 4


# --- batch transform ----------------------------------------------------------------


def test_batch_access_is_off_by_default_since_no_transform_host_runs_the_image(default_synth):
    outputs = default_synth.templates["PeagleEndpoint"]["Outputs"]
    assert "ModelName" in outputs and "BatchInputS3Uri" not in outputs
    (policy,) = default_synth.resources("PeagleEndpoint", "AWS::IAM::ManagedPolicy").values()
    assert not {"ReadBatchInput", "WriteBatchOutput"} & {
        s["Sid"] for s in policy["Properties"]["PolicyDocument"]["Statement"]
    }


def test_batch_jobs_can_read_input_and_write_output_with_the_models_role(tmp_path, monkeypatch):
    # With a transform host whose driver runs the image (a catalog row AWS has yet to make true).
    catalog = load_catalog()
    runtime = catalog.runtime.model_copy(
        update={"transform_amis": {"al2023-example-batch-gpu-580": HostDriver(driver=580, cuda="13.0")}}
    )
    monkeypatch.setattr(
        peagle.planning.deployment_rules, "load_catalog", lambda: catalog.model_copy(update={"runtime": runtime})
    )
    default_synth = synthesize(tmp_path / "out", deployment=write_deployment(tmp_path, "batch: {enabled: true}\n"))
    outputs = default_synth.templates["PeagleEndpoint"]["Outputs"]
    assert {"ModelName", "BatchInputS3Uri", "BatchOutputS3Uri"} <= set(outputs)
    (model_id,) = default_synth.resources("PeagleEndpoint", "AWS::SageMaker::Model")
    assert outputs["ModelName"]["Value"] == {"Fn::GetAtt": [model_id, "ModelName"]}
    (policy,) = default_synth.resources("PeagleEndpoint", "AWS::IAM::ManagedPolicy").values()
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert json.dumps(statements["ReadBatchInput"]["Resource"]).endswith('/batch/input/*"]]}')
    assert json.dumps(statements["WriteBatchOutput"]["Resource"]).endswith('/batch/output/*"]]}')
    assert statements["EncryptResults"]["Action"] == "kms:GenerateDataKey"
    assert statements["WriteBatchOutput"]["Action"] == ["s3:AbortMultipartUpload", "s3:PutObject"]
    assert json.dumps(statements["WriteTransformJobLogs"]["Resource"]).endswith(
        ':log-group:/aws/sagemaker/TransformJobs:*"]]}'
    )


# --- async inference ----------------------------------------------------------------


@pytest.fixture(scope="module")
def async_synth(synth):
    return synth(deployment=ASYNC_FILE)


def test_async_endpoint_queues_to_s3_and_notifies_on_success_and_failure(async_synth):
    configs = [
        c["Properties"] for c in async_synth.resources("PeagleEndpoint", "AWS::SageMaker::EndpointConfig").values()
    ]
    (async_config,) = [c for c in configs if "AsyncInferenceConfig" in c]
    output = async_config["AsyncInferenceConfig"]["OutputConfig"]
    assert json.dumps(output["S3OutputPath"]).endswith('/async/output/"]]}')
    assert json.dumps(output["S3FailurePath"]).endswith('/async/failure/"]]}')
    assert set(output["NotificationConfig"]) == {"SuccessTopic", "ErrorTopic"}
    assert async_config["AsyncInferenceConfig"]["ClientConfig"] == {"MaxConcurrentInvocationsPerInstance": 8}
    _endpoint(async_synth, "peagle-summaries-async")


def test_async_endpoint_scales_to_zero_and_back_on_its_backlog(async_synth):
    template = async_synth.template()
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {"ResourceId": "endpoint/peagle-summaries-async/variant/Primary", "MinCapacity": 0, "MaxCapacity": 2},
    )
    policies = [
        p["Properties"]
        for p in async_synth.resources("PeagleEndpoint", "AWS::ApplicationAutoScaling::ScalingPolicy").values()
    ]
    backlog = [p for p in policies if "BacklogPerInstance" in p["PolicyName"]]
    assert (
        backlog[0]["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"]["MetricName"]
        == "ApproximateBacklogSizePerInstance"
    )
    assert [p for p in policies if "ScaleOutFromZero" in p["PolicyName"]]
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm", {"MetricName": "HasBacklogWithoutCapacity", "Namespace": "AWS/SageMaker"}
    )


def test_async_topics_are_encrypted_and_the_role_may_publish_to_them(async_synth):
    topics = async_synth.resources("PeagleEndpoint", "AWS::SNS::Topic")
    assert len(topics) == 3  # alarms, async success, async failure
    assert all("KmsMasterKeyId" in t["Properties"] for t in topics.values())
    (policy,) = async_synth.resources("PeagleEndpoint", "AWS::IAM::ManagedPolicy").values()
    sids = {s["Sid"] for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert {"PublishAsyncSuccess", "PublishAsyncFailure", "WriteAsyncOutput", "WriteAsyncEndpointLogs"} <= sids
    # SageMaker reads each request's S3 input object with the model's role
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert json.dumps(statements["ReadAsyncInput"]["Resource"]).endswith('/async/input/*"]]}')
    assert "AsyncInputS3Uri" in async_synth.templates["PeagleEndpoint"]["Outputs"]


# --- private network ----------------------------------------------------------------


@pytest.fixture(scope="module")
def private(synth):
    return synth(deployment=str(REPO_ROOT / "deployments" / "private-vpc.yaml"))


def test_private_vpc_has_isolated_subnets_and_no_route_out(private):
    template = private.template()
    template.resource_count_is("AWS::EC2::NatGateway", 0)
    template.resource_count_is("AWS::EC2::InternetGateway", 0)
    template.resource_count_is("AWS::EC2::Subnet", 2)
    template.has_resource_properties(
        "AWS::EC2::FlowLog", {"TrafficType": "ALL", "LogDestinationType": "cloud-watch-logs"}
    )


def test_model_runs_in_the_private_subnets_behind_a_security_group_without_ingress(private):
    (model,) = private.resources("PeagleEndpoint", "AWS::SageMaker::Model").values()
    vpc_config = model["Properties"]["VpcConfig"]
    assert len(vpc_config["Subnets"]) == 2 and len(vpc_config["SecurityGroupIds"]) == 1
    groups = private.resources("PeagleEndpoint", "AWS::EC2::SecurityGroup")
    model_group = [g for g in groups.values() if "no ingress" in g["Properties"]["GroupDescription"]][0]["Properties"]
    assert "SecurityGroupIngress" not in model_group
    assert [(r["IpProtocol"], r["FromPort"], r["ToPort"]) for r in model_group["SecurityGroupEgress"]] == [
        ("tcp", 443, 443)
    ]


def test_private_vpc_has_the_endpoints_sagemaker_needs_inside_it(private):
    services = [
        json.dumps(e["Properties"]["ServiceName"])
        for e in private.resources("PeagleEndpoint", "AWS::EC2::VPCEndpoint").values()
    ]
    for service in ("s3", "ecr.api", "ecr.dkr", "logs", "monitoring", "sts"):
        assert any(f".{service}" in name or f'{service}"' in name for name in services), service
    interface = [
        e["Properties"]
        for e in private.resources("PeagleEndpoint", "AWS::EC2::VPCEndpoint").values()
        if e["Properties"].get("VpcEndpointType") == "Interface"
    ]
    assert all(e["PrivateDnsEnabled"] for e in interface)
    (policy,) = private.resources("PeagleEndpoint", "AWS::IAM::ManagedPolicy").values()
    assert "AttachToVpc" in {s["Sid"] for s in policy["Properties"]["PolicyDocument"]["Statement"]}


def test_vpc_settings_need_one_source():
    with pytest.raises(
        ConfigError, match=r"give subnet_ids and security_group_ids of your private subnets, or create: true"
    ):
        config_from_overrides({}, base={"network": {"vpc": {"subnet_ids": ["subnet-1"]}}})
    with pytest.raises(ConfigError, match=r"either create: true or subnet_ids \+ security_group_ids, not both"):
        config_from_overrides({}, base={"network": {"vpc": {"create": True, "subnet_ids": ["subnet-1"]}}})


# --- weights from the hub (network isolation off) -----------------------------------

HUB_TOKEN_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hf-token-AbCdEf"


def test_hub_mode_downloads_in_the_container_with_only_the_token_arn_in_the_template(synth, tmp_path):
    path = write_deployment(
        tmp_path,
        f"artifacts: {{source: hub, hf_token_secret_arn: '{HUB_TOKEN_ARN}'}}\nnetwork: {{isolation: false}}\n",
    )
    result = synth(deployment=path)
    (model,) = result.resources("PeagleEndpoint", "AWS::SageMaker::Model").values()
    props = model["Properties"]
    assert props["EnableNetworkIsolation"] is False
    assert "ModelDataSource" not in props["PrimaryContainer"]
    env = props["PrimaryContainer"]["Environment"]
    assert env["SM_VLLM_MODEL"] == "openai/gpt-oss-20b"
    assert json.loads(env["SM_VLLM_SPECULATIVE_CONFIG"])["model"] == "amazon/GPT-OSS-20B-P-EAGLE"
    assert env["PEAGLE_HF_TOKEN_SECRET_ARN"] == HUB_TOKEN_ARN
    assert "HF_TOKEN" not in env
    (policy,) = result.resources("PeagleEndpoint", "AWS::IAM::ManagedPolicy").values()
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert statements["ReadHubToken"] == {
        "Sid": "ReadHubToken",
        "Effect": "Allow",
        "Action": "secretsmanager:GetSecretValue",
        "Resource": HUB_TOKEN_ARN,
    }
    assert "ReadModelWeights" not in statements


def test_hub_mode_budgets_the_download_into_the_start_up_timeout():
    s3 = plan_deployment(config_from_overrides({"model": "gpt-oss-120b", "instanceType": "ml.p5.48xlarge"}))
    hub = plan_deployment(
        config_from_overrides(
            {"model": "gpt-oss-120b", "instanceType": "ml.p5.48xlarge"},
            base={"artifacts": {"source": "hub"}, "network": {"isolation": False}},
        )
    )
    assert hub.container_startup_timeout_seconds > s3.container_startup_timeout_seconds
    assert hub.container_startup_timeout_seconds <= 3600


def test_hub_mode_needs_network_isolation_off():
    with pytest.raises(
        ConfigError,
        match=r"artifacts.source: hub downloads weights inside the container, which "
        r"network isolation forbids; set network.isolation: false",
    ):
        config_from_overrides({}, base={"artifacts": {"source": "hub"}})
    with pytest.raises(ConfigError, match=r"hf_token_secret_arn is only used with artifacts.source: hub"):
        config_from_overrides({}, base={"artifacts": {"hf_token_secret_arn": HUB_TOKEN_ARN}})


def test_async_endpoint_config_leaves_out_real_time_only_settings(async_synth):
    configs = [
        c["Properties"] for c in async_synth.resources("PeagleEndpoint", "AWS::SageMaker::EndpointConfig").values()
    ]
    (async_config,) = [c for c in configs if "AsyncInferenceConfig" in c]
    (real_time,) = [c for c in configs if "AsyncInferenceConfig" not in c]
    # Both state MetricsConfig (left out, SageMaker turns detailed observability on: tests/infra/test_metrics_config.py);
    # enhanced metrics, documented for real-time endpoints, only on the real-time one.
    assert async_config["MetricsConfig"]["EnableEnhancedMetrics"] is False
    assert real_time["MetricsConfig"]["EnableEnhancedMetrics"] is True
    assert "RoutingConfig" not in async_config["ProductionVariants"][0]
    assert async_config["ProductionVariants"][0]["InitialInstanceCount"] == 1
