"""Instance pools and ML capacity reservations (issue 47, item 1): each pool type planned as its own, the refusals,
the template (InstancePools by priority, a Model per type whose container differs, the provision timeout, the
reservation) through both doors, and nothing changed for a deployment without them."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template
from cdk_synth import REPO_ROOT

from peagle.cli import main
from peagle.planning.deployment_rules import DeploymentRuleError, plan_checked_deployment
from peagle.planning.planner import plan_deployment, plan_type
from peagle.planning.pool_plans import DEFAULT_POOL_PROVISION_TIMEOUT_SECONDS, pool_type_plans
from peagle.settings import ConfigError, load_deployment_config, parse_deployment_config
from peagle.settings.errors import PlanError
from peagle_cdk import AlarmThresholds, EndpointMonitoring, ModelWeights, PeagleEndpoint

POOL_FILE = REPO_ROOT / "deployments" / "instance-pool.yaml"
RESERVATION_FILE = REPO_ROOT / "tests" / "infra" / "deployments" / "capacity-reservation.yaml"
RESERVATION = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/example-plan"


def _config(instance: dict, **sections):
    return parse_deployment_config({"name": "pool", "model": "gpt-oss-20b", "instance": instance, **sections})


def _variant(template: dict) -> dict:
    (config,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::EndpointConfig"]
    (variant,) = config["Properties"]["ProductionVariants"]
    return variant


def _models(template: dict) -> dict[str, dict]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == "AWS::SageMaker::Model"}


# --- one plan per type ----------------------------------------------------------------------------------------


def test_every_pool_type_is_planned_as_its_own_type():
    config = load_deployment_config(str(POOL_FILE))
    plan = plan_deployment(config)
    assert [plan.instance_type, *(f.instance_type for f in plan.fallbacks)] == config.instance.pool
    for fallback in plan.fallbacks:
        alone = plan_deployment(_config({"type": fallback.instance_type}))
        assert (fallback.max_num_seqs, fallback.tensor_parallel_size, fallback.speculative_tokens) == (
            alone.max_num_seqs,
            alone.tensor_parallel_size,
            alone.speculative_tokens,
        )
        assert fallback.price_per_hour_usd == alone.price_per_hour_usd
    # The L4 holds fewer sequences than the Blackwell type: a plan of its own, not the first type's.
    assert plan.fallbacks[-1].max_num_seqs < plan.max_num_seqs


def test_a_pool_type_that_cannot_hold_the_pair_is_refused_naming_the_smallest_that_fits():
    config = _config({"type": "ml.g6e.xlarge", "fallback_types": ["ml.g4dn.xlarge"]})
    with pytest.raises(PlanError) as refused:
        plan_deployment(config)
    message = refused.value.in_words("file")
    assert "ml.g4dn.xlarge" in message and "pool priority 2" in message
    assert "Smallest that fits: ml.g6.xlarge" in message
    assert "replace 'ml.g4dn.xlarge' in instance.fallback_types with 'ml.g6.xlarge'" in message
    # `peagle plan` shows every type, the refused one with its reason, rather than stop at it.
    shown = pool_type_plans(config, plan_type)
    assert [(each.priority, each.plan is None) for each in shown] == [(1, False), (2, True)]


def test_the_price_override_prices_the_first_type_only():
    config = _config({"type": "ml.g6e.xlarge", "fallback_types": ["ml.g6.xlarge"], "price_per_hour_usd": 1.5})
    plan = plan_deployment(config)
    assert plan.price_per_hour_usd == 1.5
    assert plan.fallbacks[0].price_per_hour_usd == plan_deployment(_config({"type": "ml.g6.xlarge"})).price_per_hour_usd


def test_the_driver_rule_runs_on_every_pool_type():
    # One InferenceAmiVersion serves the variant's every type: a driver too old for a fallback's GPU is refused there.
    config = _config(
        {
            "type": "ml.g6e.xlarge",
            "fallback_types": ["ml.g7e.2xlarge"],
            "ami_version": "al2-ami-sagemaker-inference-gpu-3-1",
        }
    )
    with pytest.raises(DeploymentRuleError) as refused:
        plan_checked_deployment(config)
    assert any("ml.g7e.2xlarge" in str(v.message) for v in refused.value.violations if v.rule == "gpu-driver")


# --- settings rules -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("instance", "sections", "expected"),
    [
        ({"fallback_types": ["ml.g6e.xlarge"]}, {}, "names 'ml.g6e.xlarge' twice"),
        ({"fallback_types": ["ml.x9.huge"]}, {}, "'ml.x9.huge' is not in the instance catalog"),
        ({"fallback_types": ["ml.g6.xlarge"] * 5}, {}, "at most 4 items"),
        ({"provision_timeout_seconds": 200}, {}, "should be at least 300 seconds"),
        ({"ml_reservation_arn": "arn:aws:ec2:us-east-1:123456789012:x/y"}, {}, "ml_reservation_arn"),
        ({"fallback_types": ["ml.g6.xlarge"], "ml_reservation_arn": RESERVATION}, {}, "a pool replaces"),
        (
            {"fallback_types": ["ml.g6.xlarge"]},
            {"endpoint": {"mode": "inference_components"}},
            "built for production variants only",
        ),
    ],
)
def test_bad_pool_settings_are_refused_with_what_to_do(instance, sections, expected):
    with pytest.raises(ConfigError) as refused:
        _config({"type": "ml.g6e.xlarge", **instance}, **sections)
    assert expected in str(refused.value)


# --- the template (file door) ---------------------------------------------------------------------------------


def test_a_pool_synthesizes_instance_pools_by_priority_with_a_model_per_differing_type(synth):
    template = synth(deployment=str(POOL_FILE)).templates["PeagleEndpoint"]
    variant, models = _variant(template), _models(template)
    assert "InstanceType" not in variant  # "you replace the InstanceType parameter ... with an InstancePools list"
    pools = variant["InstancePools"]
    assert [(p["Priority"], p["InstanceType"]) for p in pools] == [
        (1, "ml.g7e.2xlarge"),
        (2, "ml.g6e.xlarge"),
        (3, "ml.g6.xlarge"),
    ]
    assert "ModelNameOverride" not in pools[0]
    plan = plan_deployment(load_deployment_config(str(POOL_FILE)))
    for pool, fallback in zip(pools[1:], plan.fallbacks, strict=True):
        override = models[pool["ModelNameOverride"]["Fn::GetAtt"][0]]
        environment = override["Properties"]["PrimaryContainer"]["Environment"]
        assert environment["SM_VLLM_MAX_NUM_SEQS"] == str(fallback.max_num_seqs)
    assert len(models) == 3
    assert variant["VariantInstanceProvisionTimeoutInSeconds"] == 900


def test_a_reservation_synthesizes_capacity_reservation_config(synth):
    variant = _variant(synth(deployment=str(RESERVATION_FILE)).templates["PeagleEndpoint"])
    assert variant["CapacityReservationConfig"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "MlReservationArn": RESERVATION,
    }
    assert variant["InstanceType"] == "ml.g6e.xlarge"
    assert variant["VariantInstanceProvisionTimeoutInSeconds"] == 1200


def test_a_deployment_without_a_pool_keeps_its_variant_as_it_was(default_synth):
    variant = _variant(default_synth.templates["PeagleEndpoint"])
    assert variant["InstanceType"] == "ml.g6e.xlarge"
    for key in ("InstancePools", "VariantInstanceProvisionTimeoutInSeconds", "CapacityReservationConfig"):
        assert key not in variant
    assert len(_models(default_synth.templates["PeagleEndpoint"])) == 1


# --- the props door -------------------------------------------------------------------------------------------


def test_the_props_door_builds_the_same_pool():
    stack = Stack(App(), "Consumer")
    PeagleEndpoint(
        stack,
        "Chat",
        weights=ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/"),
        name="chat",
        model="gpt-oss-20b",
        instance_type="ml.g6e.xlarge",
        fallback_instance_types=["ml.g7e.2xlarge", "ml.g6.xlarge"],
    )
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "InstanceType": Match.absent(),
                        "VariantInstanceProvisionTimeoutInSeconds": DEFAULT_POOL_PROVISION_TIMEOUT_SECONDS,
                        "InstancePools": [
                            {"InstanceType": "ml.g6e.xlarge", "Priority": 1},
                            Match.object_like({"InstanceType": "ml.g7e.2xlarge", "Priority": 2}),
                            Match.object_like({"InstanceType": "ml.g6.xlarge", "Priority": 3}),
                        ],
                    }
                )
            ]
        },
    )


def test_the_props_door_refuses_a_reservation_with_a_pool_in_its_words():
    stack = Stack(App(), "Consumer")
    with pytest.raises(ConfigError) as refused:
        PeagleEndpoint(
            stack,
            "Chat",
            weights=ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/"),
            name="chat",
            fallback_instance_types=["ml.g6.xlarge"],
            ml_reservation_arn=RESERVATION,
            instance_provision_timeout=Duration.minutes(10),
        )
    assert "ml_reservation_arn" in str(refused.value) and "fallback_instance_types" in str(refused.value)


# --- money ----------------------------------------------------------------------------------------------------


def test_the_cost_alarm_and_widgets_bound_a_pool_by_its_most_expensive_type():
    stack = Stack(App(), "Consumer")
    endpoint = PeagleEndpoint(
        stack,
        "Chat",
        weights=ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/"),
        name="chat",
        model="gpt-oss-20b",
        instance_type="ml.g6e.xlarge",
        fallback_instance_types=["ml.g7e.2xlarge"],
    )
    EndpointMonitoring(
        stack, "ChatMonitoring", endpoint=endpoint, thresholds=AlarmThresholds(max_cost_per_million_output_tokens_usd=5)
    )
    top = plan_deployment(_config({"type": "ml.g7e.2xlarge"})).price_per_hour_usd
    assert top > endpoint.plan.price_per_hour_usd  # the fallback costs more than the type of priority 1
    template = Template.from_stack(stack)
    (alarm,) = [
        a
        for a in template.find_resources("AWS::CloudWatch::Alarm").values()
        if "cost per 1M output tokens" in a["Properties"]["AlarmDescription"]
    ]
    expressions = [m["Expression"] for m in alarm["Properties"]["Metrics"] if "Expression" in m]
    assert any(f"{top:g} *" in e or f"{top:g}*" in e for e in expressions), expressions
    assert "priced at its most expensive type, ml.g7e.2xlarge" in alarm["Properties"]["AlarmDescription"]
    (dashboard,) = template.find_resources("AWS::CloudWatch::Dashboard").values()
    assert "an upper bound" in json.dumps(dashboard["Properties"]["DashboardBody"])


# --- peagle plan ----------------------------------------------------------------------------------------------


def test_peagle_plan_prints_one_plan_per_pool_type(capsys):
    assert main(["plan", "--deployment", str(POOL_FILE)]) == 0
    printed = capsys.readouterr().out
    table = printed.split("instance pool (")[1].splitlines()[1:5]
    assert table[0].split() == ["priority", "type", "TP", "max_num_seqs", "token", "budget", "K", "$/hour"]
    plan = plan_deployment(load_deployment_config(str(POOL_FILE)))
    for row, each in zip(table[1:], (plan, *plan.fallbacks), strict=True):
        cells = row.split()
        assert cells[1] == each.instance_type and cells[-1] == "fits"
        assert cells[3] == str(each.max_num_seqs) and cells[4] == f"{each.max_num_batched_tokens:,}"

    assert main(["plan", "--deployment", str(POOL_FILE), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [p["instance_type"] for p in document["instance_pool"]] == load_deployment_config(
        str(POOL_FILE)
    ).instance.pool


def test_peagle_plan_shows_a_refused_pool_type_then_exits_with_the_reason(capsys, tmp_path):
    bad = tmp_path / "pool.yaml"
    bad.write_text(POOL_FILE.read_text().replace("- ml.g6.xlarge ", "- ml.g4dn.xlarge"))
    assert main(["plan", "--deployment", str(bad)]) == 2
    captured = capsys.readouterr()
    assert "3  ml.g4dn.xlarge" in captured.out and "refused" in captured.out
    assert "Smallest that fits: ml.g6.xlarge" in captured.err


def test_peagle_plan_states_the_provision_timeout_and_what_a_reservation_changes(capsys):
    """A reservation's bill and window are what the user acts on: the plan says the on-demand figure is not its cost
    and that the endpoint stops serving when it expires."""
    assert main(["plan", "--deployment", str(RESERVATION_FILE)]) == 0
    printed = capsys.readouterr().out
    assert "instances provisioned within 1200 s" in printed
    reservation = printed.split("reservation     ")[1]
    assert reservation.startswith("arn:aws:sagemaker:us-east-1:123456789012:training-plan/example-plan")
    assert "fail with a capacity error once it expires" in reservation
    assert "the on-demand cost above is not what it costs" in reservation
    assert main(["plan", "--deployment", str(POOL_FILE)]) == 0
    assert "reservation     " not in capsys.readouterr().out


def test_a_guessed_concurrency_target_is_the_pool_types_lowest():
    """One target-tracking policy serves every type: a guessed target (75% of max_num_seqs) must not exceed what the
    type holding fewest requests runs, or units on it queue before the fleet scales."""
    pool = plan_deployment(_config({"type": "ml.g7e.2xlarge", "fallback_types": ["ml.g6e.xlarge", "ml.g6.xlarge"]}))
    alone = plan_deployment(_config({"type": "ml.g7e.2xlarge"})).scaling
    own = [each.scaling.concurrency for each in pool.fallbacks if each.scaling is not None]
    assert alone is not None and pool.scaling is not None
    assert pool.scaling.concurrency == min(own) < alone.concurrency
    assert "the pool's lowest, on ml.g6.xlarge" in pool.scaling.source
    given = plan_deployment(
        _config({"type": "ml.g7e.2xlarge", "fallback_types": ["ml.g6.xlarge"]}, autoscaling={"target_concurrency": 30})
    )
    assert given.scaling is not None and given.scaling.concurrency == 30


def test_a_pool_mixing_gpu_counts_is_refused_while_a_gpu_utilization_policy_scales_it():
    instance = {"type": "ml.p6-b200.48xlarge", "fallback_types": ["ml.g6e.12xlarge"]}
    with pytest.raises(PlanError, match=r"'ml.g6e.12xlarge' has 4 GPU\(s\).*8.*gpu_utilization_target_percent: null"):
        plan_deployment(_config(instance, model="gpt-oss-120b"))
    plan = plan_deployment(
        _config(instance, model="gpt-oss-120b", autoscaling={"gpu_utilization_target_percent": None})
    )
    assert [each.instance_type for each in plan.fallbacks] == ["ml.g6e.12xlarge"]


def test_the_queue_target_is_the_pool_types_lowest_and_peagle_plan_prints_it(capsys):
    from peagle.planning.queue_target import queue_target

    instance = {"type": "ml.g7e.2xlarge", "fallback_types": ["ml.g6.xlarge"]}
    pool = plan_deployment(_config(instance, autoscaling={"scale_on_queue": True}))
    alone = plan_deployment(_config({"type": "ml.g7e.2xlarge"}, autoscaling={"scale_on_queue": True}))
    fewest = pool.fallbacks[0]
    assert fewest.max_num_seqs < pool.max_num_seqs
    ttft = pool.profile.slo.ttft_seconds
    assert ttft is not None
    assert queue_target(pool) == round(fewest.max_num_seqs * ttft / pool.request_seconds_estimate, 2)
    assert queue_target(alone) == round(alone.max_num_seqs * ttft / alone.request_seconds_estimate, 2)
    assert queue_target(plan_deployment(_config(instance))) is None

    assert main(["plan", "--deployment", str(POOL_FILE)]) == 0
    assert "queue target" not in capsys.readouterr().out
    assert main(["plan", "--deployment", "deployments/async-summarization.yaml"]) == 0
    assert "queue target    1 requests waiting per instance" in capsys.readouterr().out
