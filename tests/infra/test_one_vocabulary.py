"""One name per concept across the deployment file, the props, the plan and the docs: the headroom (formerly
``autoscaling.safety_factor`` / ``Autoscaling(safety_factor=)``) and the latency SLA (formerly
``alarms.latency_p90_seconds`` / ``AlarmThresholds(latency_p90_seconds=)``). The old names still work, with a
FutureWarning that names the new one, and mean exactly what the new ones do."""

from __future__ import annotations

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template

from peagle.planning.planner import plan_deployment
from peagle.settings import parse_deployment_config
from peagle.settings.errors import ConfigError
from peagle_cdk import AlarmThresholds, Autoscaling, EndpointMonitoring, ModelWeights, PeagleEndpoint

OLD_AND_NEW = [
    ({"autoscaling": {"safety_factor": 0.7}}, {"autoscaling": {"headroom": 0.7}}, "autoscaling.safety_factor"),
    (
        {"alarms": {"latency_p90_seconds": 4.5}},
        {"alarms": {"latency_sla_p90_seconds": 4.5}},
        "alarms.latency_p90_seconds",
    ),
]


@pytest.mark.parametrize(("old", "new", "key"), OLD_AND_NEW)
def test_an_old_file_key_loads_as_the_new_one_with_a_warning_that_names_it(old, new, key):
    with pytest.warns(FutureWarning, match=rf"{key} is deprecated: it is now \S+ \(same meaning and value\)"):
        from_old = parse_deployment_config(old)
    assert from_old == parse_deployment_config(new)
    with pytest.raises(ConfigError, match=rf"{key} is the old name of"):
        parse_deployment_config({section: {**old[section], **new[section]} for section in old})


def test_the_latency_sla_has_one_name_from_file_to_plan():
    config = parse_deployment_config({"alarms": {"latency_sla_p90_seconds": 4.5}})
    assert plan_deployment(config).latency_sla_p90_seconds == 4.5


def _template(autoscaling: Autoscaling, thresholds: AlarmThresholds) -> dict:
    stack = Stack(App(), "Words")
    weights = ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/")
    endpoint = PeagleEndpoint(stack, "Chat", name="chat", weights=weights, autoscaling=autoscaling)
    EndpointMonitoring(stack, "Monitoring", endpoint=endpoint, thresholds=thresholds)
    return Template.from_stack(stack).to_json()


def test_the_props_old_names_synthesize_what_the_new_ones_do_with_a_warning():
    new = _template(
        Autoscaling(max_requests_per_second=2.0, headroom=0.7), AlarmThresholds(latency_sla=Duration.millis(4500))
    )
    with pytest.warns(FutureWarning, match=r"Autoscaling\(safety_factor=\.\.\.\) is deprecated.*headroom"):
        old_scaling = Autoscaling(max_requests_per_second=2.0, safety_factor=0.7)
    with pytest.warns(FutureWarning, match=r"AlarmThresholds\(latency_p90_seconds=\.\.\.\) is deprecated.*latency_sla"):
        old_thresholds = AlarmThresholds(latency_p90_seconds=4.5)
    assert _template(old_scaling, old_thresholds) == new
    # The monitoring's latency alarm at 4.5 s; the step scaling keeps the plan's SLA (PeagleEndpoint's latency_sla).
    p90_alarms = {
        name: resource["Properties"]["Threshold"]
        for name, resource in new["Resources"].items()
        if resource["Type"] == "AWS::CloudWatch::Alarm" and resource["Properties"].get("ExtendedStatistic") == "p90"
    }
    assert {name.startswith("Monitoring"): threshold for name, threshold in p90_alarms.items()} == {
        True: 4_500_000,
        False: 10_000_000,
    }
    with pytest.raises(ValueError, match="safety_factor is the old name of headroom; give only headroom"):
        Autoscaling(headroom=0.6, safety_factor=0.7)
