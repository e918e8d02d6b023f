"""The queue policy and the components' metrics scrape through PeagleEndpoint's props (bare Stacks), and the
deployment file's rules for the queue policy."""

from __future__ import annotations

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from peagle.settings import config_from_overrides
from peagle.settings.errors import ConfigError
from peagle_cdk import Autoscaling, EndpointMode, ModelWeights, PeagleEndpoint

MODES = {
    "variants": EndpointMode.variants(),
    "components": EndpointMode.inference_components(min_instances=0),
}


def _template(mode: str, **props) -> tuple[Template, PeagleEndpoint]:
    stack = Stack(App(), "Queue")
    weights = ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/")
    endpoint = PeagleEndpoint(stack, "Chat", name="chat", weights=weights, mode=MODES[mode], **props)
    return Template.from_stack(stack), endpoint


def _queue_policies(template: Template) -> list[dict]:
    policies = template.find_resources(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "Properties": {
                "TargetTrackingScalingPolicyConfiguration": Match.object_like(
                    {"CustomizedMetricSpecification": Match.object_like({"MetricName": "RequestsWaiting"})}
                )
            }
        },
    )
    return [policy["Properties"]["TargetTrackingScalingPolicyConfiguration"] for policy in policies.values()]


@pytest.mark.parametrize("mode", MODES)
def test_the_queue_policy_tracks_the_units_kpi_queue_and_scales_in_beside_concurrency(mode):
    template, endpoint = _template(
        mode, autoscaling=Autoscaling(min_capacity=1, max_capacity=2, scale_on_queue=True, target_requests_waiting=3)
    )
    (config,) = _queue_policies(template)
    unit = endpoint.endpoint.primary_unit
    assert config["TargetValue"] == 3
    assert config["CustomizedMetricSpecification"] == {
        "Namespace": "PEagle/Endpoints",
        "MetricName": "RequestsWaiting",
        "Statistic": "Average",
        "Dimensions": [{"Name": "EndpointName", "Value": "chat-endpoint"}, {"Name": "VariantName", "Value": unit}],
    }
    assert "DisableScaleIn" not in config  # the concurrency policy scales in too: this one holds it back


def test_a_component_that_scales_to_zero_keeps_the_queue_policy_from_scaling_in():
    template, _ = _template("components", autoscaling=Autoscaling(min_capacity=0, max_capacity=2, scale_on_queue=True))
    (config,) = _queue_policies(template)
    assert config["DisableScaleIn"] is True  # its step policies scale in; alone, this one would whenever none wait


def test_off_by_default_and_the_default_target_is_the_queue_a_unit_admits_within_the_ttft_bound():
    template, _ = _template("variants", autoscaling=Autoscaling(min_capacity=1, max_capacity=2))
    assert _queue_policies(template) == []
    template, endpoint = _template(
        "variants", autoscaling=Autoscaling(min_capacity=1, max_capacity=2, scale_on_queue=True)
    )
    plan = endpoint.plan
    (config,) = _queue_policies(template)
    ttft = plan.profile.slo.ttft_seconds
    assert ttft is not None
    expected = plan.max_num_seqs * ttft / plan.request_seconds_estimate
    assert config["TargetValue"] == pytest.approx(round(expected, 2))


def test_a_components_container_is_left_to_the_documented_default_scrape():
    """vLLM serves /metrics on 8080, SageMaker's default; the component does not state ContainerMetricsConfig beside
    its ModelName, a combination AWS documents nowhere (peagle_cdk/endpoint_metrics_config.py)."""
    template, _ = _template("components", metric_publish_frequency=Duration.seconds(10))
    template.has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {"Specification": Match.object_like({"ModelName": Match.any_value(), "Container": Match.absent()})},
    )


def test_the_file_refuses_a_queue_policy_the_kpi_lines_cannot_feed_and_a_target_without_the_policy():
    with pytest.raises(ConfigError, match=r"kpi_interval_seconds.*120.*every 120 s: minutes without a datapoint"):
        config_from_overrides(
            {}, base={"autoscaling": {"scale_on_queue": True}, "observability": {"kpi_interval_seconds": 120}}
        )
    with pytest.raises(ConfigError, match=r"target_requests_waiting is the queue policy's target, which is off"):
        config_from_overrides({}, base={"autoscaling": {"target_requests_waiting": 4}})
