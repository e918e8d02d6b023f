"""One serving unit for both endpoint modes (peagle_cdk/serving_unit.py): a production variant or an inference
component answers the same calls (rollout, scaling, log group, metrics by unit), and the plan holds the scaling
target in one field, which reaches the synthesized TargetValue in both modes."""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from peagle_cdk import AbBaseline, Autoscaling, EndpointMode, ModelWeights, PeagleEndpoint
from peagle_cdk.component_endpoint import ComponentEndpoint
from peagle_cdk.endpoint_scaling import ScalableCopyCount, ScalableInstanceCount
from peagle_cdk.rollout import RolloutPolicy
from peagle_cdk.variant_endpoint import VariantEndpoint

MODES = {
    "variants": EndpointMode.variants(),
    "components": EndpointMode.inference_components(min_instances=0),
}


def _endpoint(mode: str, **props) -> tuple[Stack, PeagleEndpoint]:
    stack = Stack(App(), "Units")
    weights = ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/")
    endpoint = PeagleEndpoint(
        stack, "Chat", name="chat", weights=weights, mode=MODES[mode], ab_baseline=AbBaseline(), **props
    )
    return stack, endpoint


@pytest.mark.parametrize("mode", MODES)
def test_both_modes_answer_the_same_unit_calls(mode):
    stack, endpoint = _endpoint(mode, autoscaling=Autoscaling(min_capacity=1, max_capacity=2))
    units = endpoint.endpoint
    assert isinstance(units, ComponentEndpoint if mode == "components" else VariantEndpoint)
    assert units.units == endpoint.unit_names and units.primary_unit == endpoint.primary_unit
    # Components manage each unit; the variants share the endpoint's update and log group (the primary's).
    assert endpoint.managed_units == (endpoint.unit_names if mode == "components" else endpoint.unit_names[:1])
    for unit in endpoint.managed_units:
        capacity = endpoint.auto_scale_capacity(unit_name=unit)
        assert isinstance(capacity, ScalableCopyCount if mode == "components" else ScalableInstanceCount)
        assert units.log_group_of(unit) is not None
    dimension = "InferenceComponentName" if mode == "components" else "VariantName"
    for unit in endpoint.unit_names:
        assert endpoint.metric_invocations(unit_name=unit).dimensions[dimension] == unit
        assert endpoint.metric_kpi("TimePerOutputTokenSeconds", unit_name=unit).dimensions["VariantName"] == unit


def test_a_variant_that_shares_the_endpoints_update_cannot_roll_out_or_scale_on_its_own():
    _, endpoint = _endpoint("variants")
    baseline = endpoint.baseline_unit
    with pytest.raises(ValueError, match="does not roll out on its own; the variants' one managed unit is 'Primary'"):
        endpoint.endpoint.configure_rollout(baseline, RolloutPolicy(strategy="rolling"))
    with pytest.raises(ValueError, match="does not scale"):
        endpoint.endpoint.auto_scale(baseline, min_capacity=1, max_capacity=2)
    with pytest.raises(ValueError, match="no scalable capacity for 'Baseline'; units that scale: \\['Primary'\\]"):
        endpoint.auto_scale_capacity(unit_name=baseline)


@pytest.mark.parametrize("mode", MODES)
def test_the_plans_one_scaling_target_is_the_synthesized_target_value(mode):
    stack, endpoint = _endpoint(mode, autoscaling=Autoscaling(min_capacity=1, max_capacity=2, target_concurrency=7.5))
    assert endpoint.plan.scaling.concurrency == 7.5
    metric = (
        "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
        if mode == "components"
        else ("SageMakerVariantConcurrentRequestsPerModelHighResolution")
    )
    Template.from_stack(stack).has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "TargetTrackingScalingPolicyConfiguration": Match.object_like(
                {"TargetValue": 7.5, "PredefinedMetricSpecification": {"PredefinedMetricType": metric}}
            )
        },
    )
    assert not hasattr(endpoint.plan.units, "target_concurrency_per_copy")
