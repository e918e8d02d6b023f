"""SageMaker's deployment rules (peagle/planning/deployment_rules.py): the GPU host's driver vs the
image's CUDA, rollout limits, container environment limits, transform types; checked
on the real synthesized templates and through `peagle plan` / `cdk synth`."""

from __future__ import annotations

import re

import botocore.session
import pytest
from aws_cdk.assertions import Match
from cdk_synth import REPO_ROOT, write_deployment

from peagle.catalog import instance_family, load_catalog
from peagle.cli import main
from peagle.planning.deployment_rules import (
    DeploymentPlans,
    DeploymentRuleError,
    check_deployment,
    plan_checked_deployment,
    transform_problems,
)
from peagle.planning.planner import plan_deployment
from peagle.settings import config_from_overrides, load_deployment_config

RUNTIME = load_catalog().runtime
IMAGE_AMI = RUNTIME.serving_image.inference_ami_version
EXAMPLES = ("default", "ab-test", "async-summarization", "private-vpc")


def _sagemaker_model():
    return botocore.session.get_session().get_service_model("sagemaker")


# --- the data against its sources -----------------------------------------------------------


def test_ami_names_are_the_ones_the_api_accepts():
    assert set(RUNTIME.inference_amis) <= set(_sagemaker_model().shape_for("ProductionVariantInferenceAmiVersion").enum)
    documented = _sagemaker_model().shape_for("TransformResources").members["TransformAmiVersion"].documentation
    assert set(RUNTIME.transform_amis) == set(re.findall(r"al2-ami-sagemaker-batch-gpu-\d+", documented))


def test_ami_drivers_are_the_ones_botocore_documents():
    documented = _sagemaker_model().shape_for("ProductionVariant").members["InferenceAmiVersion"].documentation
    text = re.sub(r"<[^>]+>", " ", documented)
    for name, host in RUNTIME.inference_amis.items():
        entry = re.search(
            re.escape(name) + r"\s+Accelerator: GPU\s+NVIDIA driver version: (\d+)\s+CUDA version: ([\d.]+)", text
        )
        assert entry, name
        assert (int(entry[1]), entry[2]) == (host.driver, host.cuda)


def test_instance_types_are_valid_for_each_mode():
    model = _sagemaker_model()
    realtime = set(model.shape_for("ProductionVariantInstanceType").enum)
    transform_families = {instance_family(t) for t in model.shape_for("TransformInstanceType").enum}
    catalog_families = {instance_family(t) for t in load_catalog().instances}
    assert set(load_catalog().instances) <= realtime
    assert set(RUNTIME.transform_instance_families) == transform_families & catalog_families


def test_the_dockerfile_builds_from_the_image_the_catalog_describes():
    dockerfile = (REPO_ROOT / "inference_image" / "Dockerfile").read_text()
    (default,) = re.findall(r"^ARG VLLM_IMAGE=(\S+)$", dockerfile, re.MULTILINE)
    assert default == RUNTIME.serving_image.base


# --- finding 1: every variant gets a driver that runs the image ------------------------------


@pytest.fixture(scope="module", params=EXAMPLES)
def example(request, synth):
    return synth(deployment=str(REPO_ROOT / "deployments" / f"{request.param}.yaml"))


def test_every_synthesized_variant_boots_an_ami_whose_driver_runs_the_image(example):
    configs = example.resources("PeagleEndpoint", "AWS::SageMaker::EndpointConfig").values()
    variants = [variant for config in configs for variant in config["Properties"]["ProductionVariants"]]
    assert variants
    for variant in variants:
        host = RUNTIME.inference_amis[variant["InferenceAmiVersion"]]
        assert host.cuda_version >= (13, 0), variant["VariantName"]


def test_the_ab_baseline_variant_carries_the_ami_too(synth):
    synth(deployment=str(REPO_ROOT / "deployments" / "ab-test.yaml")).template().has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": Match.array_with(
                [Match.object_like({"VariantName": "Baseline", "InferenceAmiVersion": IMAGE_AMI})]
            )
        },
    )


def test_an_ami_override_whose_driver_is_too_old_is_refused_with_the_fix():
    config = config_from_overrides(
        {}, base={"instance": {"type": "ml.g5.12xlarge", "ami_version": "al2-ami-sagemaker-inference-gpu-3-1"}}
    )
    with pytest.raises(DeploymentRuleError) as error:
        plan_checked_deployment(config)
    message = str(error.value)
    assert "[gpu-driver]" in message and "driver 550 (CUDA 12.4)" in message and "built for CUDA 13.0" in message
    assert f"Use instance.ami_version: {IMAGE_AMI}" in message


def test_an_unknown_ami_is_refused_with_the_list():
    config = config_from_overrides({}, base={"instance": {"ami_version": "al2-ami-sagemaker-inference-gpu-9"}})
    with pytest.raises(DeploymentRuleError, match=r"is not a GPU InferenceAmiVersion SageMaker offers; use one of"):
        plan_checked_deployment(config)


def test_peagle_plan_refuses_a_driver_mismatch(tmp_path, capsys):
    path = write_deployment(
        tmp_path, "instance: {type: ml.g6.12xlarge, ami_version: al2-ami-sagemaker-inference-gpu-2}\n"
    )
    assert main(["plan", "--deployment", path, "--model", "qwen3-8b"]) == 2
    err = capsys.readouterr().err
    assert "al2-ami-sagemaker-inference-gpu-2 has NVIDIA driver 535 (CUDA 12.2)" in err and IMAGE_AMI in err


def test_cdk_synth_refuses_a_driver_mismatch(synth, tmp_path):
    path = write_deployment(tmp_path, "instance: {ami_version: al2-ami-sagemaker-inference-gpu-3-1}\n")
    with pytest.raises(DeploymentRuleError, match=r"\[gpu-driver\] peagle-endpoint/Primary"):
        synth(deployment=path)


# --- finding 5: rolling updates need a batch of at least one instance -----------------------


def test_a_rolling_update_on_one_instance_is_refused_with_the_fix(tmp_path, capsys):
    path = write_deployment(tmp_path, "rollout: {strategy: rolling, rolling: {batch_percent: 50}}\n")
    assert main(["plan", "--deployment", path]) == 2
    err = capsys.readouterr().err
    assert "[rolling-batch]" in err and "a step of 0.5 instances" in err
    assert "Use rollout.strategy: blue_green" in err and "keep at least 2 instances" in err


def test_a_rolling_update_counts_the_autoscaling_minimum():
    config = config_from_overrides(
        {"instanceCount": 4},
        base={
            "rollout": {"strategy": "rolling", "rolling": {"batch_percent": 25}},
            "autoscaling": {"min_capacity": 2, "max_capacity": 4},
        },
    )
    with pytest.raises(DeploymentRuleError, match=r"the fleet can be as small as 2 instance\(s\)"):
        plan_checked_deployment(config)
    fine = config.model_copy(update={"autoscaling": config.autoscaling.model_copy(update={"min_capacity": 4})})
    plan_checked_deployment(fine)


# --- batch transform ---------------------------------------------------------------------


def test_batch_enabled_is_refused_at_synth_while_no_transform_host_runs_the_image():
    config = config_from_overrides({}, base={"batch": {"enabled": True}})
    with pytest.raises(DeploymentRuleError) as error:
        plan_checked_deployment(config)
    assert "[batch-transform]" in str(error.value) and "set batch.enabled: false" in str(error.value)


def test_transform_instance_types_are_checked_against_the_transform_enum():
    assert any(
        "ml.p4d.24xlarge is not a Batch Transform instance type" in p for p in transform_problems("ml.p4d.24xlarge")
    )
    assert not any("not a Batch Transform instance type" in p for p in transform_problems("ml.g6e.12xlarge"))


# --- container environment limits -----------------------------------------------------------


def test_a_container_environment_value_past_1024_characters_is_refused():
    config = config_from_overrides({}, base={"vllm_args": {"chat-template": "x" * 1025}})
    with pytest.raises(DeploymentRuleError, match=r"SM_VLLM_CHAT_TEMPLATE is 1025 characters; CreateModel allows 1024"):
        plan_checked_deployment(config)


def test_more_than_100_environment_variables_are_refused():
    config = config_from_overrides({}, base={"vllm_args": {f"flag-{i}": i for i in range(90)}})
    violations = check_deployment(DeploymentPlans(config=config, plan=plan_deployment(config)))
    assert any("CreateModel takes at most 100" in v.message for v in violations)


def test_the_shipped_examples_break_no_rule():
    for name in EXAMPLES:
        plan_checked_deployment(load_deployment_config(REPO_ROOT / "deployments" / f"{name}.yaml"))


# --- finding 3: the role may read the rollback alarms ---------------------------------------


def _statements(result):
    (policy,) = result.resources("PeagleEndpoint", "AWS::IAM::ManagedPolicy").values()
    return {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}


def test_the_execution_role_may_describe_exactly_the_rollback_alarms(default_synth):
    (endpoint,) = default_synth.resources("PeagleEndpoint", "AWS::SageMaker::Endpoint").values()
    rollback = endpoint["Properties"]["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
    rollback_ids = {alarm["AlarmName"]["Ref"] for alarm in rollback}
    statement = _statements(default_synth)["ReadRollbackAlarms"]
    assert statement["Action"] == "cloudwatch:DescribeAlarms"
    granted = {resource["Fn::GetAtt"][0] for resource in statement["Resource"]}
    assert granted == rollback_ids and len(granted) == 2


def test_without_auto_rollback_no_alarm_permission_is_granted(synth, tmp_path):
    result = synth(deployment=write_deployment(tmp_path, "rollout: {auto_rollback: false}\n"))
    assert "ReadRollbackAlarms" not in _statements(result)


# --- finding 4: A/B on or off goes through a plain update -------------------------------------


def test_rollout_strategy_none_deploys_without_guardrails_or_retained_properties(synth, tmp_path):
    result = synth(deployment=write_deployment(tmp_path, "rollout: {strategy: none}\n"))
    (endpoint,) = result.resources("PeagleEndpoint", "AWS::SageMaker::Endpoint").values()
    assert "DeploymentConfig" not in endpoint["Properties"]
    assert "RetainAllVariantProperties" not in endpoint["Properties"]
    assert "ReadRollbackAlarms" not in _statements(result)


# --- finding 7: the async endpoint's KPI lines carry its own name -----------------------------


def test_the_async_endpoint_has_its_own_model_naming_it(synth):
    result = synth(deployment=str(REPO_ROOT / "deployments" / "async-summarization.yaml"))
    models = result.resources("PeagleEndpoint", "AWS::SageMaker::Model")
    names = {
        logical_id: m["Properties"]["PrimaryContainer"]["Environment"]["PEAGLE_ENDPOINT_NAME"]
        for logical_id, m in models.items()
    }
    assert sorted(names.values()) == ["peagle-summaries-async", "peagle-summaries-endpoint"]
    configs = result.resources("PeagleEndpoint", "AWS::SageMaker::EndpointConfig").values()
    (async_config,) = [c["Properties"] for c in configs if "AsyncInferenceConfig" in c["Properties"]]
    (variant,) = async_config["ProductionVariants"]
    async_model_id = variant["ModelName"]["Fn::GetAtt"][0]
    assert names[async_model_id] == "peagle-summaries-async"


# --- finding 6: one start-up budget, sized and checked at synth ------------------------------


def test_the_start_up_timeout_leaves_the_engine_its_load_time_after_the_self_check():
    plan = plan_checked_deployment(config_from_overrides({}, base={})).plan
    off = plan_checked_deployment(config_from_overrides({"speculativeTokens": 0}, base={})).plan
    # the same weights: only the self-check (300 s) separates them
    assert plan.container_startup_timeout_seconds - off.container_startup_timeout_seconds == 300


def test_a_start_up_timeout_too_short_for_the_self_check_fails_synth_with_the_launchers_message():
    config = config_from_overrides({}, base={"timeouts": {"container_startup_seconds": 300}})
    with pytest.raises(DeploymentRuleError) as error:
        plan_checked_deployment(config)
    message = str(error.value)
    assert "[launcher-settings] peagle-endpoint/Primary" in message and "to at least 390" in message
    assert "timeouts.container_startup_seconds" in message
    plan_checked_deployment(
        config_from_overrides({"speculativeTokens": 0}, base={"timeouts": {"container_startup_seconds": 300}})
    )
