"""The instance pool's scale-in policy (``endpoint.inference_components.scale_in_policy``; the props' same keyword of
EndpointMode.inference_components): stated in the template's ManagedInstanceScaling.ScaleInPolicy, read back by
`peagle simulate` from that template, and priced by the cost figures from the plan's pool, in both doors."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template
from test_component_placement import _components, _metric_math, _with_budget
from test_endpoint_monitoring import _cost_per_hour_graph, _expressions

from peagle.cloud_assembly import parse_template
from peagle.planning.plan_record import read_records
from peagle.settings import parse_deployment_config
from peagle.settings.errors import ConfigError
from peagle.simulate.scenarios import setups
from peagle_cdk import EndpointMode, ModelWeights, PeagleEndpoint


def _scale_in(template: Template) -> dict:
    (config,) = template.find_resources("AWS::SageMaker::EndpointConfig").values()
    return config["Properties"]["ProductionVariants"][0]["ManagedInstanceScaling"]["ScaleInPolicy"]


def _simulated_scale_in(stack: Stack) -> str | None:
    """What `peagle simulate` reads of the pool's scale-in from the stack's template and the plan it records."""
    body = Template.from_stack(stack).to_json()
    (record,) = read_records(body, source="test")
    (setup,) = setups(parse_template(json.loads(json.dumps(body)), source="test"), record.primary)
    return setup.shape.placement.scale_in


def test_the_props_door_states_consolidation_and_the_simulator_reads_it():
    stack = Stack(App(), "Consumer")
    _components(stack, scale_in_policy="CONSOLIDATION")
    assert _scale_in(Template.from_stack(stack)) == {"Strategy": "CONSOLIDATION"}
    assert _simulated_scale_in(stack) == "CONSOLIDATION"
    default = Stack(App(), "Default")
    _components(default)
    assert _scale_in(Template.from_stack(default)) == {"Strategy": "IDLE_RELEASE"}
    assert _simulated_scale_in(default) == "IDLE_RELEASE"


def test_the_file_door_states_it_from_the_same_field():
    config = parse_deployment_config(
        {
            "model": "qwen3-8b",
            "instance": {"type": "ml.g6e.12xlarge"},
            "endpoint": {"mode": "inference_components", "inference_components": {"scale_in_policy": "CONSOLIDATION"}},
        }
    )
    stack = Stack(App(), "FromFile")
    PeagleEndpoint.from_config(
        stack, "Chat", config=config, weights=ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/pair/")
    )
    Template.from_stack(stack).has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {"ManagedInstanceScaling": Match.object_like({"ScaleInPolicy": {"Strategy": "CONSOLIDATION"}})}
                )
            ]
        },
    )
    assert _simulated_scale_in(stack) == "CONSOLIDATION"


def test_an_unknown_scale_in_policy_is_refused_in_both_doors_naming_both_values():
    with pytest.raises(ConfigError, match=r"scale_in_policy.*'IDLE_RELEASE' or 'CONSOLIDATION'"):
        EndpointMode.inference_components(scale_in_policy="RELEASE")
    with pytest.raises(
        ConfigError, match=r"endpoint.inference_components.scale_in_policy.*'IDLE_RELEASE' or 'CONSOLIDATION'"
    ):
        parse_deployment_config(
            {"endpoint": {"mode": "inference_components", "inference_components": {"scale_in_policy": "idle"}}}
        )


def test_consolidation_prices_spread_copies_as_the_fewest_instances_that_hold_them():
    """CONSOLIDATION "Consolidates inference component copies onto fewer instances to release more instances"
    (SageMaker API Reference): whatever the placement, the copies end on CEIL(copies / 4) instances; with IDLE_RELEASE
    SPREAD keeps up to one instance per copy (test_component_placement.py)."""
    template = _with_budget(placement="SPREAD", scale_in_policy="CONSOLIDATION")
    ((label, per_hour),) = _expressions(_cost_per_hour_graph(template)).items()
    for copies, instances in {1: 1, 2: 1, 4: 1, 5: 2, 8: 2}.items():
        assert _metric_math(per_hour, period=900, reports0=copies * 15) == 10.0 * instances, (copies, per_hour)
    assert "rounded up" in label
