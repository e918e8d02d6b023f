"""Real boto3 clients under botocore's Stubber, answering the calls `peagle smoke` makes,
plus a fake clock, so the smoke steps run against recorded AWS answers without waiting."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import boto3
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from client.sagemaker_wire import FakeClock as WireClock
from client.sagemaker_wire import StubbedEndpoint, described_component, payload_part, vllm_sse_stream

from peagle.smoke.runner import AwsClients
from peagle.smoke.step import Timing
from peagle_serve.contract import KPI_NAMESPACE

ENDPOINT = "demo-endpoint"
VARIANT = "Primary"
STACK = "demo-endpoint"
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class FakeClock(WireClock):
    """The client tests' fake clock, plus the smoke runner's ``Timing`` on it."""

    def timing(self) -> Timing:
        """Jitter fixed at its top (random() = 1.0), so every wait is its ceiling."""
        return Timing(
            sleep=self.sleep,
            monotonic=lambda: self.now,
            utc_now=lambda: T0 + timedelta(seconds=self.now),
            random=lambda: 1.0,
        )


class StubbedAws:
    """The four clients `peagle smoke` uses; queue answers with the helpers, in call order."""

    def __init__(self) -> None:
        self.endpoint = StubbedEndpoint()  # sagemaker-runtime, with event streams for the streamed call
        self.sagemaker = boto3.client("sagemaker", region_name="us-east-1")
        self.cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        self.cloudformation = boto3.client("cloudformation", region_name="us-east-1")
        self.stubbers = {
            "sagemaker-runtime": self.endpoint.stubber,
            "sagemaker": Stubber(self.sagemaker),
            "cloudwatch": Stubber(self.cloudwatch),
            "cloudformation": Stubber(self.cloudformation),
        }
        for stubber in self.stubbers.values():
            stubber.activate()

    def clients(self) -> AwsClients:
        return AwsClients(self.sagemaker, self.endpoint.runtime, self.cloudwatch, self.cloudformation)

    def assert_all_answers_used(self) -> None:
        for stubber in self.stubbers.values():
            stubber.assert_no_pending_responses()

    # -- SageMaker ----------------------------------------------------------------------------

    def describe_endpoint(
        self, status: str, *, variants=(VARIANT,), failure_reason: str | None = None, endpoint=ENDPOINT
    ):
        response = {
            "EndpointName": endpoint,
            "EndpointArn": f"arn:aws:sagemaker:us-east-1:123456789012:endpoint/{endpoint}",
            "EndpointConfigName": f"{endpoint}-config",
            "EndpointStatus": status,
            "CreationTime": T0,
            "LastModifiedTime": T0,
            "ProductionVariants": [{"VariantName": name, "CurrentInstanceCount": 1} for name in variants],
        }
        if failure_reason:
            response["FailureReason"] = failure_reason
        self.stubbers["sagemaker"].add_response("describe_endpoint", response, {"EndpointName": endpoint})

    def describe_component(self, component: str, *, download_s: int | None, startup_s: int | None):
        """DescribeInferenceComponent: the component's start-up timeouts (the default cold-start wait)."""
        self.stubbers["sagemaker"].add_response(
            "describe_inference_component",
            described_component(component, download_s=download_s, startup_s=startup_s),
            {"InferenceComponentName": component},
        )

    def describe_endpoint_error(self, code: str, message: str, status: int = 400):
        self.stubbers["sagemaker"].add_client_error(
            "describe_endpoint", service_error_code=code, service_message=message, http_status_code=status
        )

    def plain_completion(
        self,
        text: str = "Drafts, then one check.",
        *,
        variant=VARIANT,
        endpoint=ENDPOINT,
        inference_component=None,
        spec_decode: dict | None = None,
    ):
        """A non-streamed completion; ``spec_decode`` goes where vLLM puts the answer's acceptance."""
        choice = f'{{"index":0,"text":{_json(text)},"finish_reason":"length"}}'
        metrics = f',"metrics":{{"speculative_decoding":{_json(spec_decode)}}}' if spec_decode else ""
        body = (
            f'{{"id":"cmpl-1","object":"text_completion","choices":[{choice}],'
            f'"usage":{{"prompt_tokens":9,"completion_tokens":8,"total_tokens":17}}{metrics}}}'
        ).encode()
        self.endpoint.stubber.add_response(
            "invoke_endpoint",
            {"Body": StreamingBody(io.BytesIO(body), len(body)), "ContentType": "application/json"},
            {
                "EndpointName": endpoint,
                "Body": ANY,
                "ContentType": "application/json",
                "Accept": "application/json",
                "CustomAttributes": ANY,
                # In inference-component mode the component picks the model: no TargetVariant.
                **(
                    {"InferenceComponentName": inference_component}
                    if inference_component
                    else {"TargetVariant": variant}
                ),
            },
        )

    def plain_no_capacity(self, times: int = 1):
        """InvokeEndpoint answers of an inference component scaled to zero."""
        self.endpoint.add_no_capacity(times, operation="invoke_endpoint")

    def streamed_completion(
        self, pieces=("Drafts", ", then", " one check."), *, inference_component=None, spec_decode: dict | None = None
    ):
        expected = None
        if inference_component:
            expected = {
                "EndpointName": ENDPOINT,
                "Body": ANY,
                "ContentType": "application/json",
                "Accept": "text/event-stream",
                "CustomAttributes": ANY,
                "InferenceComponentName": inference_component,
            }
        stream = vllm_sse_stream(list(pieces), spec_decode=spec_decode)
        self.endpoint.add_stream([payload_part(stream)], expected_params=expected)

    # -- CloudWatch ---------------------------------------------------------------------------

    def metric_data(
        self,
        values_by_id: dict[str, list[float]],
        metrics: dict[str, tuple[str, str]],
        *,
        endpoint=ENDPOINT,
        variant=VARIANT,
    ):
        """One GetMetricData answer; ``metrics`` is the query the step must send (id -> (name, stat))."""
        queries = [
            {
                "Id": query_id,
                "MetricStat": {
                    "Metric": {
                        "Namespace": KPI_NAMESPACE,
                        "MetricName": name,
                        "Dimensions": [
                            {"Name": "EndpointName", "Value": endpoint},
                            {"Name": "VariantName", "Value": variant},
                        ],
                    },
                    "Period": 60,
                    "Stat": stat,
                },
                "ReturnData": True,
            }
            for query_id, (name, stat) in metrics.items()
        ]
        results = [
            {
                "Id": query_id,
                "Timestamps": [T0 - timedelta(minutes=index) for index in range(len(values))],
                "Values": values,
                "StatusCode": "Complete",
            }
            for query_id, values in values_by_id.items()
        ]
        self.stubbers["cloudwatch"].add_response(
            "get_metric_data",
            {"MetricDataResults": results},
            {"MetricDataQueries": queries, "StartTime": ANY, "EndTime": ANY},
        )

    def acceptance(self, rates: list[float], lengths: list[float] | None = None, **kwargs):
        self.metric_data(
            {"acceptance": rates, "length": lengths if lengths is not None else [1 + 3 * rate for rate in rates]},
            {"acceptance": ("SpecAcceptanceRate", "Maximum"), "length": ("SpecMeanAcceptanceLength", "Maximum")},
            **kwargs,
        )

    def kpi_reports(self, counts: list[float], **kwargs):
        self.metric_data({"reports": counts}, {"reports": ("KpiReports", "Sum")}, **kwargs)

    def metric_data_error(self, code: str, message: str, status: int = 403):
        self.stubbers["cloudwatch"].add_client_error(
            "get_metric_data", service_error_code=code, service_message=message, http_status_code=status
        )

    def alarms(self, states: dict[str, str], *, composite: dict[str, str] | None = None, stack=STACK):
        """The stack's alarm resources, then DescribeAlarms answering with ``states`` (name -> StateValue)."""
        composite = composite or {}
        resources = [
            {
                "LogicalResourceId": f"Alarm{index}",
                "PhysicalResourceId": name,
                "ResourceType": "AWS::CloudWatch::CompositeAlarm" if name in composite else "AWS::CloudWatch::Alarm",
                "LastUpdatedTimestamp": T0,
                "ResourceStatus": "CREATE_COMPLETE",
            }
            for index, name in enumerate([*states, *composite])
        ]
        resources.append(
            {
                "LogicalResourceId": "Endpoint",
                "PhysicalResourceId": "arn:endpoint",
                "ResourceType": "AWS::SageMaker::Endpoint",
                "LastUpdatedTimestamp": T0,
                "ResourceStatus": "CREATE_COMPLETE",
            }
        )
        self.stubbers["cloudformation"].add_response(
            "list_stack_resources", {"StackResourceSummaries": resources}, {"StackName": stack}
        )
        # The deployed template: every alarm a health alarm of ENDPOINT (tests/smoke/test_smoke_alarm_scope.py
        # serves a synthesized app's template instead).
        template = {
            "Resources": {"Endpoint": {"Type": "AWS::SageMaker::Endpoint", "Properties": {"EndpointName": ENDPOINT}}}
        }
        dimensions = [{"Name": "EndpointName", "Value": ENDPOINT}]
        rule = {"Fn::Join": ["", [{"Fn::GetAtt": [f"Alarm{index}", "Arn"]} for index in range(len(states))]]}
        for index, name in enumerate([*states, *composite]):
            template["Resources"][f"Alarm{index}"] = {
                "Type": "AWS::CloudWatch::CompositeAlarm" if name in composite else "AWS::CloudWatch::Alarm",
                "Properties": {
                    "AlarmName": name,
                    **({"AlarmRule": rule} if name in composite else {"Dimensions": dimensions}),
                },
            }
        self.template(template, stack=stack)

        def alarm(name: str, state: str) -> dict:
            return {"AlarmName": name, "StateValue": state, "StateReason": f"{name} is {state}: threshold crossed"}

        self.stubbers["cloudwatch"].add_response(
            "describe_alarms",
            {
                "MetricAlarms": [alarm(name, state) for name, state in states.items()],
                "CompositeAlarms": [alarm(name, state) for name, state in composite.items()],
            },
            {"AlarmNames": [*states, *composite], "AlarmTypes": ["MetricAlarm", "CompositeAlarm"]},
        )

    def template(self, body: dict, *, stack=STACK):
        """CloudFormation GetTemplate answering with ``body`` (as JSON text, which botocore parses back)."""
        self.stubbers["cloudformation"].add_response(
            "get_template", {"TemplateBody": _json(body)}, {"StackName": stack, "TemplateStage": "Original"}
        )

    def stack_missing(self, stack=STACK):
        self.stubbers["cloudformation"].add_client_error(
            "list_stack_resources",
            service_error_code="ValidationError",
            service_message=f"Stack with id {stack} does not exist",
            http_status_code=400,
        )


def _json(value: object) -> str:
    import json

    return json.dumps(value)


def step_lines(out: str) -> dict[str, tuple[str, str]]:
    """{step name: (status, detail)} from the printed step lines."""
    lines = {}
    for line in out.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) >= 2 and parts[0] in ("ok", "FAIL", "skip"):
            lines[parts[1]] = (parts[0], parts[2] if len(parts) > 2 else "")
    return lines
