"""Inference components in a bare Stack: the placement strategy and scale-in policy every template states, the cost
figures computed from the same settings, and `cdk synth`'s warning where data_cache false is not honoured."""

from __future__ import annotations

import math
import re

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Annotations, Match, Template
from test_endpoint_monitoring import _cost_per_hour_graph, _expressions

from peagle.catalog import load_catalog
from peagle.settings import parse_deployment_config
from peagle.settings.errors import ConfigError
from peagle_cdk import AlarmThresholds, Autoscaling, EndpointMode, EndpointMonitoring, ModelWeights, PeagleEndpoint


def _stack() -> Stack:
    return Stack(App(), "Consumer")


def _components(
    stack: Stack, instance_type: str = "ml.g6e.12xlarge", instance_facts=None, **settings
) -> PeagleEndpoint:
    """qwen3-8b on ml.g6e.12xlarge (4 one-GPU copies to an instance, 2 instances at most), priced at $10/hour."""
    return PeagleEndpoint(
        stack,
        "Chat",
        name="chat",
        weights=ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/pair/"),
        model="qwen3-8b",
        instance_type=instance_type,
        instance_facts=instance_facts,
        mode=EndpointMode.inference_components(**settings),
        autoscaling=Autoscaling(min_capacity=0),
        price_per_hour_usd=10.0,
    )


def _with_budget(**settings) -> Template:
    stack = _stack()
    endpoint = _components(stack, **settings)
    EndpointMonitoring(
        stack,
        "ChatMonitoring",
        endpoint=endpoint,
        thresholds=AlarmThresholds(max_cost_per_million_output_tokens_usd=2.5),
    )
    return Template.from_stack(stack)


def _metric_math(expression: str, *, period: int, **values: float) -> float:
    """CloudWatch metric math of one datapoint, in Python: + - * / >, CEIL, FLOOR, PERIOD and IF(condition, true,
    false) (CloudWatch User Guide, "Using metric math"; comparison operators give 1 or 0)."""
    assert re.fullmatch(r"[A-Za-z0-9_ .()*/+,>-]+", expression), expression
    functions = {
        "CEIL": math.ceil,
        "FLOOR": math.floor,
        "PERIOD": lambda _metric: period,
        "IF": lambda condition, yes, no: yes if condition else no,
    }
    return eval(expression, {"__builtins__": {}}, {**functions, **values})  # noqa: S307 - checked above


# --- what the template states -------------------------------------------------------------------------------


def test_every_component_states_binpack_with_an_az_balance_that_never_overrules_it():
    """botocore: PlacementStrategy has no stated default; CloudFormation requires AvailabilityZoneBalance beside it."""
    stack = _stack()
    _components(stack)
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {
            "Specification": Match.object_like(
                {
                    "SchedulingConfig": {
                        "PlacementStrategy": "BINPACK",
                        "AvailabilityZoneBalance": {"EnforcementMode": "PERMISSIVE", "MaxImbalance": 100},
                    }
                }
            )
        },
    )
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {"ManagedInstanceScaling": Match.object_like({"ScaleInPolicy": {"Strategy": "IDLE_RELEASE"}})}
                )
            ]
        },
    )


def test_spread_is_the_other_placement_and_an_unknown_one_is_refused_naming_both():
    stack = _stack()
    _components(stack, placement="SPREAD")
    Template.from_stack(stack).has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {"Specification": Match.object_like({"SchedulingConfig": Match.object_like({"PlacementStrategy": "SPREAD"})})},
    )
    with pytest.raises(ConfigError, match=r"placement.*'BINPACK' or 'SPREAD'"):
        EndpointMode.inference_components(placement="PACKED")
    # The deployment file's door, the same field and rule.
    with pytest.raises(ConfigError, match=r"endpoint.inference_components.placement.*'BINPACK' or 'SPREAD'"):
        parse_deployment_config(
            {"endpoint": {"mode": "inference_components", "inference_components": {"placement": "binpack"}}}
        )


# --- the cost figures from the same settings ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("placement", "instances_by_copies"),
    [
        # BINPACK: the fewest instances that hold the copies, 4 to an instance.
        ("BINPACK", {1: 1, 2: 1, 4: 1, 5: 2, 8: 2}),
        # SPREAD: after a scale-in an instance keeps a copy, so up to one instance per copy, at most max_instances 2.
        ("SPREAD", {1: 1, 2: 2, 4: 2, 5: 2, 8: 2}),
    ],
)
def test_the_cost_graph_and_the_budget_alarm_price_the_instances_the_placement_holds(placement, instances_by_copies):
    template = _with_budget(placement=placement)
    ((label, per_hour),) = _expressions(_cost_per_hour_graph(template)).items()
    (alarm,) = [
        a for a in template.find_resources("AWS::CloudWatch::Alarm").values() if a["Properties"].get("Threshold") == 2.5
    ]
    (per_million,) = [m["Expression"] for m in alarm["Properties"]["Metrics"] if m.get("ReturnData", True)]
    for copies, instances in instances_by_copies.items():
        assert _metric_math(per_hour, period=900, reports0=copies * 15) == 10.0 * instances, (copies, per_hour)
        dollars = _metric_math(per_million, period=3600, reports0=copies * 60, tokens0=copies * 60 * 50)
        assert dollars == pytest.approx(10.0 * instances / (copies * 50 * 3600) * 1e6)
    assert ("rounded up" in label) is (placement == "BINPACK")


# --- data_cache false where SageMaker caches anyway -------------------------------------------------------------


def _warnings(stack: Stack) -> list[str]:
    return [
        str(entry.entry.data)
        for entry in Annotations.from_stack(stack).find_warning("*", Match.any_value())
        if "data_cache" in str(entry.entry.data)
    ]


def test_cdk_synth_warns_where_data_cache_false_is_not_honoured():
    """CloudFormation schema, CurrentDataCacheConfig: caching is on "on instance types with more than 232 GiB of local
    NVMe storage, whether or not DataCacheConfig was set"; ml.g6e.12xlarge has 3800 GB."""
    stack = _stack()
    _components(stack, data_cache=False)
    (warning,) = _warnings(stack)
    assert "data_cache false is not honoured on ml.g6e.12xlarge: it has 3800 GB" in warning
    assert "The template still says EnableCaching false" in warning
    Template.from_stack(stack).has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {"Specification": Match.object_like({"DataCacheConfig": {"EnableCaching": False}})},
    )
    cached = _stack()
    _components(cached)  # data_cache on: nothing to say
    assert _warnings(cached) == []


@pytest.mark.parametrize(
    ("local_nvme_gb", "said"),
    [(125, None), (None, "is not checked: SageMaker caches"), (240, "is not checked: SageMaker caches")],
)
def test_an_instance_whose_storage_is_small_unknown_or_on_the_line(local_nvme_gb, said):
    """125 GB is under 232 GiB under either reading of EC2's GB; 240 GB is 223.5 GiB or 240 GiB: not checked."""
    facts = load_catalog().instances["ml.g6e.12xlarge"].model_copy(update={"local_nvme_gb": local_nvme_gb})
    stack = _stack()
    _components(stack, instance_type="ml.custom.12xlarge", instance_facts=facts, data_cache=False)
    warnings = _warnings(stack)
    assert warnings == [] if said is None else len(warnings) == 1 and said in warnings[0]
