"""Blackwell instance types (issue 36): the catalog rows against botocore, the planner's fits and refusals, the
driver rule for every new type and the gpt-oss environment flag only where vLLM runs it. Plans only: no synth,
no engine."""

from __future__ import annotations

import botocore.session
import pytest

from peagle.catalog import instance_family, load_catalog
from peagle.planning.container_env import DEFAULT_VARIANT_NAME, container_environment
from peagle.planning.deployment_rules import DeploymentRuleError, architecture_driver_problem, plan_checked_deployment
from peagle.planning.planner import plan_deployment, smallest_fitting_instance
from peagle.settings import ConfigError, DeploymentConfig, config_from_overrides
from peagle.settings.errors import PlanError

CATALOG = load_catalog()
RUNTIME = CATALOG.runtime
IMAGE_AMI = RUNTIME.serving_image.inference_ami_version
BLACKWELL_FAMILIES = ("ml.g7e", "ml.g7", "ml.p6-b200", "ml.p6-b300", "ml.p6e-gb200")
BLACKWELL = sorted(name for name in CATALOG.instances if instance_family(name) in BLACKWELL_FAMILIES)
FLAG = "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8"
BIG_PAIRS = ("gpt-oss-120b", "qwen3-coder-30b-a3b")


def _plan(model: str, instance: str, **extra):
    return plan_deployment(config_from_overrides({"model": model, "instanceType": instance, **extra}))


def _environment(model: str, instance: str) -> dict[str, str]:
    return container_environment(_plan(model, instance), variant_name=DEFAULT_VARIANT_NAME, endpoint_name="e")


def test_every_blackwell_type_botocore_offers_is_in_the_catalog_or_excluded_with_a_reason():
    model = botocore.session.get_session().get_service_model("sagemaker")
    offered = {t for t in model.shape_for("ProductionVariantInstanceType").enum if t.startswith(BLACKWELL_FAMILIES)}
    assert offered, "botocore lists no Blackwell type: the pin changed?"
    assert offered == set(BLACKWELL) | set(CATALOG.excluded_instances)
    assert set(CATALOG.excluded_instances) <= offered  # an exclusion names a real type
    assert all("linux/amd64" in why for why in CATALOG.excluded_instances.values())


def test_blackwell_rows_carry_nvidia_compute_capabilities_and_say_their_prices_are_estimates():
    by_gpu = {CATALOG.instances[name].gpu: CATALOG.instances[name].cc for name in BLACKWELL}
    # NVIDIA, "CUDA GPU Compute Capability": RTX PRO 6000/4500 Blackwell Server Edition 12.0, B300 10.3, B200 10.0.
    assert by_gpu == {"RTX PRO 6000 Blackwell": 12.0, "RTX PRO 4500 Blackwell": 12.0, "B200": 10.0, "B300": 10.3}
    assert not any(CATALOG.instances[name].price_verified for name in BLACKWELL)
    assert all(CATALOG.instances[name].price_verified for name in CATALOG.instances if name not in BLACKWELL)


# --- the driver rule --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("instance_type", BLACKWELL)
def test_every_blackwell_type_needs_driver_570_and_the_image_ami_has_it(instance_type):
    instance = CATALOG.instances[instance_type]
    needed = RUNTIME.driver_needed_for(instance.cc)
    assert needed is not None and (needed.driver, needed.cuda) == (570, "12.8")
    image_host = RUNTIME.inference_amis[IMAGE_AMI]
    assert architecture_driver_problem(instance_type, instance, IMAGE_AMI, image_host) is None
    old = "al2-ami-sagemaker-inference-gpu-3-1"  # driver 550: older than Blackwell
    problem = architecture_driver_problem(instance_type, instance, old, RUNTIME.inference_amis[old])
    assert problem and "need NVIDIA driver >= 570" in problem and "driver 550" in problem
    assert IMAGE_AMI in problem  # the fix names the AMI that works


def test_older_gpus_have_no_blackwell_driver_minimum():
    for name, instance in CATALOG.instances.items():
        if name not in BLACKWELL:
            assert RUNTIME.driver_needed_for(instance.cc) is None, name


def test_the_deployment_rules_refuse_a_pre_blackwell_driver_on_g7e():
    config = config_from_overrides(
        {"model": "qwen3-coder-30b-a3b"},
        base={"instance": {"type": "ml.g7e.2xlarge", "ami_version": "al2-ami-sagemaker-inference-gpu-3-1"}},
    )
    with pytest.raises(DeploymentRuleError) as error:
        plan_checked_deployment(config)
    assert "ml.g7e.2xlarge has Blackwell GPUs" in str(error.value) and "[gpu-driver]" in str(error.value)


# --- fits and refusals ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", BIG_PAIRS)
@pytest.mark.parametrize(
    "instance_type", ["ml.g7e.2xlarge", "ml.g7.12xlarge", "ml.p6-b200.48xlarge", "ml.p6-b300.48xlarge"]
)
def test_the_big_pairs_fit_the_blackwell_types_that_hold_them(model, instance_type):
    plans = plan_checked_deployment(config_from_overrides({"model": model, "instanceType": instance_type}))
    assert plans.plan.tensor_parallel_size == CATALOG.instances[instance_type].gpu_count
    assert plans.plan.memory.kv_cache_gib > 0 and plans.plan.kv_cache_dtype == "fp8"
    assert plans.plan.inference_ami_version == IMAGE_AMI


@pytest.mark.parametrize("model", BIG_PAIRS)
def test_a_g7_too_small_is_refused_with_the_smallest_fitting_type(model):
    with pytest.raises(PlanError) as error:
        _plan(model, "ml.g7.2xlarge")
    message = str(error.value)
    assert "ml.g7.2xlarge has 1 x 31.5 GiB RTX PRO 4500 Blackwell" in message
    # The suggestion is priced from the pricing page; the Blackwell type whose price is a guess is named beside it.
    assert "Smallest that fits: ml.g6.12xlarge (4 x 22.5 GiB L4, $5.752/hour)" in message
    assert "; ml.g7e.2xlarge (1 x 95.6 GiB RTX PRO 6000 Blackwell) also fits, at an estimated $4.2/hour" in message
    assert message.endswith("; set instance.type: ml.g6.12xlarge")  # the fix comes last


def test_the_arm_grace_type_is_refused_with_its_reason():
    with pytest.raises(ConfigError, match=r"'ml\.p6e-gb200\.36xlarge' cannot serve: .*Arm.*linux/amd64"):
        config_from_overrides({"model": "gpt-oss-120b", "instanceType": "ml.p6e-gb200.36xlarge"})


def test_b300_plans_with_a_note_that_it_runs_the_images_10_0_kernels_and_b200_without():
    def has_note(plan):
        return any("no kernels compiled for compute capability 10.3" in note for note in plan.notes)

    assert has_note(_plan("qwen3-coder-30b-a3b", "ml.p6-b300.48xlarge"))
    assert not has_note(_plan("qwen3-coder-30b-a3b", "ml.p6-b200.48xlarge"))


def test_a_gpu_no_image_kernel_runs_on_is_refused():
    gpu = {"gpu": "Future", "gpu_count": 1, "gpu_memory_gib": 200.0, "cc": 13.0, "local_nvme": True}
    config = config_from_overrides(
        {"model": "qwen3-8b", "instanceType": "ml.future.2xlarge"},
        base={
            "custom_instances": {"ml.future.2xlarge": {**gpu, "vcpus": 8, "memory_gib": 64, "price_per_hour_usd": 1}}
        },
    )
    with pytest.raises(PlanError, match=r"compiled for compute capabilities 7\.5, .*12 only, none of which runs on 13"):
        plan_deployment(config)


def test_an_estimated_price_never_picks_the_suggestion_by_itself():
    # Ordering is by price, and the Blackwell prices are estimates: the suggestion stays what the pricing page
    # ranks cheapest; with estimates counted, ml.g7e.2xlarge ($4.2 estimated) undercuts ml.g6.12xlarge ($5.752).
    assert smallest_fitting_instance(DeploymentConfig(model="gpt-oss-120b")) == "ml.g6.12xlarge"
    assert smallest_fitting_instance(DeploymentConfig(model="gpt-oss-120b"), estimated_prices=True) == "ml.g7e.2xlarge"
    assert smallest_fitting_instance(DeploymentConfig(model="gpt-oss-20b"), estimated_prices=True) == "ml.g6.xlarge"
    assert smallest_fitting_instance(DeploymentConfig(model="qwen3-8b"), estimated_prices=True) == "ml.g6.xlarge"


# --- the gpt-oss flag, only where vLLM runs its kernel ----------------------------------------------------------


@pytest.mark.parametrize("model", ["gpt-oss-20b", "gpt-oss-20b-long-context", "gpt-oss-120b"])
def test_gpt_oss_gets_the_flashinfer_mxfp8_flag_on_sm10x_only(model):
    for instance_type in ("ml.p6-b200.48xlarge", "ml.p6-b300.48xlarge"):
        assert _environment(model, instance_type)[FLAG] == "1", instance_type
    for instance_type in ("ml.g7e.2xlarge", "ml.g7e.48xlarge", "ml.g7.48xlarge", "ml.p5.48xlarge", "ml.g6e.48xlarge"):
        assert FLAG not in _environment(model, instance_type), instance_type


def test_the_flag_is_the_targets_and_not_set_for_other_pairs():
    assert FLAG not in _environment("qwen3-coder-30b-a3b", "ml.p6-b200.48xlarge")
    assert FLAG not in _environment("qwen3-8b", "ml.p6-b200.48xlarge")
    plan = _plan("gpt-oss-120b", "ml.p6-b200.48xlarge")
    assert plan.gpu_environment == {FLAG: "1"}
    assert any(note.startswith(f"container environment {FLAG}=1 on B200") for note in plan.notes)
