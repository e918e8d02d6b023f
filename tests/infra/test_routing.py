"""Routing (endpoint.routing; the props' ``routing=Routing...``) and the prefix caching it relies on: SageMaker's
bounds and rules checked before synth, the planner's tie between prefix-aware routing and the pair's verdict on
prefix caching with its drafter, and what the template says (RoutingConfig, the container's prefix-caching flag)."""

from __future__ import annotations

import pytest
import yaml
from aws_cdk.assertions import Match, Template
from cdk_synth import REPO_ROOT

from peagle.catalog import load_catalog
from peagle.planning.container_env import container_environment
from peagle.planning.planner import plan_deployment, routing_threshold
from peagle.settings import parse_deployment_config
from peagle.settings.errors import ConfigError, PlanError

PREFIX_AWARE_FILE = REPO_ROOT / "deployments" / "prefix-aware.yaml"


def _config(**sections):
    return parse_deployment_config(sections, source="test")


def _plan(**sections):
    return plan_deployment(_config(**sections))


def _prefix_aware(prefix_length=4096, **more):
    return {"routing": {"strategy": "PREFIX_AWARE", "prefix_length": prefix_length, **more}}


# --- SageMaker's rules, before anything is planned -----------------------------------------------------------


@pytest.mark.parametrize(
    ("routing", "message"),
    [
        ({"strategy": "KV_AWARE"}, r"'KV_AWARE' is not a routing strategy SageMaker documents \(botocore lists"),
        ({"strategy": "ROUND_ROBIN"}, r"use one of LEAST_OUTSTANDING_REQUESTS, RANDOM, PREFIX_AWARE"),
        ({"strategy": "PREFIX_AWARE"}, r"prefix-aware routing needs endpoint.routing.prefix_length .*1024-65536"),
        (
            {"strategy": "PREFIX_AWARE", "prefix_length": 512},
            r"512 is outside SageMaker's range for PrefixLength: a whole number 1024-65536",
        ),
        (
            {"strategy": "PREFIX_AWARE", "prefix_length": 70000},
            r"70000 is outside SageMaker's range for PrefixLength",
        ),
        (
            {"strategy": "PREFIX_AWARE", "prefix_length": 4096, "concurrency_threshold": 0},
            r"0 is outside SageMaker's range for ConcurrencyThreshold: a whole number 1-1024",
        ),
        (
            {"strategy": "PREFIX_AWARE", "prefix_length": 4096, "concurrency_threshold": 2000},
            r"ConcurrencyThreshold",
        ),
        (
            {"strategy": "RANDOM", "prefix_length": 4096},
            r"endpoint.routing.prefix_length apply to prefix-aware routing only .*set "
            r"endpoint.routing.strategy: PREFIX_AWARE or remove them",
        ),
    ],
)
def test_sagemaker_refuses_these_and_so_does_the_file(routing, message):
    with pytest.raises(ConfigError, match=message):
        _config(model="qwen3-8b", endpoint={"routing": routing})


def test_least_outstanding_requests_is_the_default_and_random_needs_nothing_else():
    assert _config().endpoint.routing.strategy == "LEAST_OUTSTANDING_REQUESTS"
    assert _plan(endpoint={"routing": {"strategy": "RANDOM"}}).routing.strategy == "RANDOM"


# --- the planner: prefix-aware routing and prefix caching ----------------------------------------------------


def test_the_catalog_pairs_carry_a_verdict_and_the_gpt_oss_pairs_refuse_caching():
    pairs = load_catalog().pairs
    verdicts = {pair_id: pair.prefix_caching.allowed for pair_id, pair in pairs.items()}
    assert verdicts == {
        "gpt-oss-20b": False,
        "gpt-oss-20b-long-context": False,
        "gpt-oss-120b": False,
        "qwen3-coder-30b-a3b": True,
        "qwen3-coder-30b-a3b-long-context": True,
        "qwen3-8b": True,
    }
    for pair_id, pair in pairs.items():
        assert "#41838" in pair.prefix_caching.evidence or pair.prefix_caching.allowed, pair_id
        # A pair that refuses caching must not leave it to vLLM's default (on).
        assert pair.prefix_caching.allowed or pair.vllm_flags.get("enable-prefix-caching") is False, pair_id


@pytest.mark.parametrize("pair_id", ["gpt-oss-20b", "gpt-oss-120b"])
def test_prefix_aware_routing_is_refused_for_a_pair_that_refuses_caching_with_the_reason(pair_id):
    with pytest.raises(PlanError) as refused:
        _plan(model=pair_id, instance={"type": "ml.g7e.2xlarge", "count": 2}, endpoint=_prefix_aware())
    message = str(refused.value)
    assert f"which pair {pair_id} does not allow with its drafter" in message
    assert "#41838" in message
    assert "LEAST_OUTSTANDING_REQUESTS" in message


def test_turning_caching_on_by_hand_is_refused_for_such_a_pair_too():
    with pytest.raises(PlanError, match=r"turns on vLLM's prefix cache .*Remove enable-prefix-caching"):
        _plan(vllm_args={"enable-prefix-caching": True})


def test_prefix_aware_routing_turns_caching_on_over_the_card_and_fills_the_threshold_from_the_plan():
    """The long-context Qwen3-Coder pair's card serves with caching off; prefix-aware routing turns it on (the pair
    allows it), and an unset threshold is what one instance's engine runs at once."""
    plan = _plan(
        model="qwen3-coder-30b-a3b-long-context",
        instance={"type": "ml.g7e.2xlarge", "count": 2},
        profile="codegen",
        endpoint=_prefix_aware(8192),
    )
    assert plan.prefix_caching is True
    assert "over the drafter card's off" in plan.prefix_caching_why
    assert plan.routing.concurrency_threshold == plan.max_num_seqs == routing_threshold(plan.max_num_seqs, plan.units)
    env = container_environment(plan, variant_name="Primary", endpoint_name="e")
    assert env["SM_VLLM_ENABLE_PREFIX_CACHING"] == "true"
    lines = "\n".join(plan.summary_lines())
    assert "routing         PREFIX_AWARE: the first 8,192 bytes of a request body pick its instance" in lines


def test_a_given_threshold_is_kept_and_components_count_every_copy_on_an_instance():
    given = _plan(model="qwen3-8b", endpoint=_prefix_aware(concurrency_threshold=7))
    assert given.routing.concurrency_threshold == 7
    components = yaml.safe_load((REPO_ROOT / "deployments" / "scale-to-zero.yaml").read_text())
    components["endpoint"]["routing"] = _prefix_aware()["routing"]
    plan = plan_deployment(parse_deployment_config(components, source="test"))
    copies = plan.units.replicas_per_instance
    assert copies > 1
    assert plan.routing.concurrency_threshold == min(plan.max_num_seqs * copies, 1024)


def test_prefix_aware_routing_with_caching_turned_off_is_a_contradiction():
    with pytest.raises(PlanError, match=r"but vllm_args sets enable-prefix-caching: false\. Remove that flag"):
        _plan(model="qwen3-8b", endpoint=_prefix_aware(), vllm_args={"enable-prefix-caching": False})


def test_without_prefix_aware_routing_the_card_and_vllms_default_decide_and_the_container_says_so():
    gpt = _plan()  # gpt-oss-20b: the card's off
    qwen = _plan(model="qwen3-8b")  # no card flag: vLLM's default, on, which the pair allows
    assert (gpt.prefix_caching, qwen.prefix_caching) == (False, True)
    assert "the pair's flag" in gpt.prefix_caching_why and "vLLM's default" in qwen.prefix_caching_why
    for plan, text in ((gpt, "false"), (qwen, "true")):
        env = container_environment(plan, variant_name="Primary", endpoint_name="e")
        assert env["SM_VLLM_ENABLE_PREFIX_CACHING"] == text


# --- the template ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def prefix_aware(synth):
    return synth(deployment=str(PREFIX_AWARE_FILE))


def test_the_prefix_aware_example_synthesizes_its_routing_and_caching(prefix_aware):
    plan = plan_deployment(parse_deployment_config(yaml.safe_load(PREFIX_AWARE_FILE.read_text()), source="test"))
    template = Template.from_json(prefix_aware.templates["PeagleEndpoint"])
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "InstanceType": "ml.g7e.2xlarge",
                        "RoutingConfig": {
                            "RoutingStrategy": "PREFIX_AWARE",
                            "PrefixAwareRoutingConfig": {
                                "PrefixLength": 8192,
                                "ConcurrencyThreshold": plan.routing.concurrency_threshold,
                            },
                        },
                    }
                )
            ]
        },
    )
    template.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "PrimaryContainer": Match.object_like(
                {"Environment": Match.object_like({"SM_VLLM_ENABLE_PREFIX_CACHING": "true"})}
            )
        },
    )


def test_the_default_routes_by_load_with_no_prefix_config(default_synth):
    template = Template.from_json(default_synth.templates["PeagleEndpoint"])
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like({"RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}})
            ]
        },
    )
