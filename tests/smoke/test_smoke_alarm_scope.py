"""`peagle smoke`'s alarms-ok step on a stack with two endpoints: a busy chat endpoint (production variants) and a
code endpoint on inference components that idles at zero copies, its scale-to-zero alarm in ALARM by design.

The stack is a real synthesized app; CloudFormation and CloudWatch answer through botocore's Stubber with that
template, its alarm resources (ListStackResources) and their states (DescribeAlarms)."""

from __future__ import annotations

import json

import boto3
import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_s3 as s3
from botocore.stub import Stubber

from peagle.smoke.alarm_scope import SCALING_REASON
from peagle.smoke.cloud import check_alarms
from peagle.smoke.step import StepStatus
from peagle_cdk import Autoscaling, EndpointMode, EndpointMonitoring, ModelWeights, PeagleEndpoint

STACK = "Service"
CHAT, CODE = "chat-endpoint", "code-endpoint"


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> dict:
    outdir = tmp_path_factory.mktemp("two-endpoints") / "cdk.out"
    app = App(outdir=str(outdir))
    stack = Stack(app, STACK, env=Environment(account="111122223333", region="us-east-1"))
    bucket = s3.Bucket(stack, "Weights")
    chat = PeagleEndpoint(
        stack,
        "Chat",
        name="chat",
        model="gpt-oss-20b",
        instance_type="ml.g6e.xlarge",
        weights=ModelWeights.from_bucket(bucket, "models/gpt-oss-20b/"),
    )
    code = PeagleEndpoint(
        stack,
        "Code",
        name="code",
        model="qwen3-8b",
        instance_type="ml.g6e.xlarge",
        profile="codegen",
        weights=ModelWeights.from_bucket(bucket, "models/qwen3-8b/"),
        mode=EndpointMode.inference_components(min_instances=0, max_instances=1),
        autoscaling=Autoscaling(min_capacity=0, max_capacity=1),
    )
    for id, endpoint in (("ChatMonitoring", chat), ("CodeMonitoring", code)):
        EndpointMonitoring(stack, id, endpoint=endpoint)
    app.synth()
    return json.loads((outdir / f"{STACK}.template.json").read_text())


def _alarm_names(template: dict) -> dict[str, str]:
    """Logical id -> the name CloudFormation gives an alarm the template leaves unnamed (<stack>-<id>-<suffix>)."""
    return {
        logical_id: f"{STACK}-{logical_id}-1A2B3C4D5E6F"
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")
    }


def _one(names: dict[str, str], *parts: str) -> str:
    (found,) = [name for logical_id, name in names.items() if all(part in logical_id for part in parts)]
    return found


def _alarms_step(
    template: dict, endpoint: str, in_alarm: frozenset[str] | set[str] = frozenset(), *, described: bool = True
):
    """check_alarms for ``endpoint`` with the alarms ``in_alarm`` in ALARM and the rest OK; ``described`` False: the
    step stops before DescribeAlarms."""
    names = _alarm_names(template)
    cloudformation = boto3.client("cloudformation", region_name="us-east-1")
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    with Stubber(cloudformation) as cfn, Stubber(cloudwatch) as cw:
        summaries = [
            {
                "LogicalResourceId": logical_id,
                "PhysicalResourceId": names.get(logical_id, logical_id),
                "ResourceType": resource["Type"],
                "LastUpdatedTimestamp": "2026-01-01T00:00:00Z",
                "ResourceStatus": "CREATE_COMPLETE",
            }
            for logical_id, resource in template["Resources"].items()
        ]
        cfn.add_response("list_stack_resources", {"StackResourceSummaries": summaries}, {"StackName": STACK})
        cfn.add_response(
            "get_template", {"TemplateBody": json.dumps(template)}, {"StackName": STACK, "TemplateStage": "Original"}
        )
        composite = {name for logical_id, name in names.items() if "Unhealthy" in logical_id}

        def alarm(name: str) -> dict:
            state = "ALARM" if name in in_alarm else "OK"
            return {"AlarmName": name, "StateValue": state, "StateReason": f"{name} is {state}"}

        if described:
            cw.add_response(
                "describe_alarms",
                {
                    "MetricAlarms": [alarm(name) for name in names.values() if name not in composite],
                    "CompositeAlarms": [alarm(name) for name in names.values() if name in composite],
                },
                {"AlarmNames": list(names.values()), "AlarmTypes": ["MetricAlarm", "CompositeAlarm"]},
            )
        result = check_alarms(cloudformation, cloudwatch, STACK, endpoint)
        cfn.assert_no_pending_responses()
        cw.assert_no_pending_responses()
    return result


def test_the_idle_endpoints_scale_to_zero_alarm_does_not_fail_the_busy_ones_smoke(template):
    names = _alarm_names(template)
    to_zero = _one(names, "Code", "ScaleInToZero")
    result = _alarms_step(template, CHAT, {to_zero})
    assert result.status is StepStatus.OK, result.detail
    own = [name for logical_id, name in names.items() if logical_id.startswith("ChatMonitoring")]
    assert f"{len(own)} alarm(s) of {CHAT} in {STACK}, none in ALARM" in result.detail
    # What it skipped, and why: the idle endpoint's scale-to-zero alarm among the scaling alarms, in ALARM.
    scaling = result.detail.split(f"{SCALING_REASON}: ")[1].split(";")[0]
    assert f"{to_zero} (ALARM)" in scaling
    assert _one(names, "Chat", "ModelLatencyOverSlaUpper") in scaling  # the busy endpoint's own scaling alarm too
    others = result.detail.split(f"other endpoints' alarms ({CODE}): ")[1]
    assert _one(names, "CodeMonitoring", "ModelLatencyP90High") in others
    assert all(name not in scaling + others for name in own)


def test_the_busy_endpoints_own_health_alarm_in_alarm_still_fails_it(template):
    names = _alarm_names(template)
    latency = _one(names, "ChatMonitoring", "ModelLatencyP90High")
    result = _alarms_step(template, CHAT, {latency, _one(names, "Code", "ScaleInToZero")})
    assert result.status is StepStatus.FAIL
    assert result.detail.startswith(
        f"1 of {sum(1 for id in names if id.startswith('ChatMonitoring'))} alarm(s) in ALARM"
    )
    assert f"{latency}: {latency} is ALARM" in result.detail


def test_another_endpoints_health_alarm_is_its_own_smokes_business(template):
    """The code endpoint's latency alarm fails the code endpoint's smoke, not the chat endpoint's."""
    latency = _one(_alarm_names(template), "CodeMonitoring", "ModelLatencyP90High")
    assert _alarms_step(template, CHAT, {latency}).status is StepStatus.OK
    assert _alarms_step(template, CODE, {latency}).status is StepStatus.FAIL


def test_a_stack_without_the_endpoint_is_refused_with_what_to_pass(template):
    result = _alarms_step(template, "other-endpoint", described=False)
    assert result.status is StepStatus.FAIL
    assert f"stack {STACK} holds no endpoint other-endpoint (its endpoints: {CHAT}, {CODE})" in result.detail
    assert "pass --stack" in result.detail
