"""Following a transform job (status changes, backoff, end classification) and finding the
Model from the endpoint stack: botocore's Stubber stands in for the SageMaker and
CloudFormation APIs, the code's own logic is the subject."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from peagle.batch.job_follow import follow_transform_job, model_environment, model_name_from_stack
from peagle.errors import PeagleError

JOB = "peagle-gpt-oss-20b-20260301-120000"


def _client(service: str):
    return boto3.client(service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


def _description(status: str, **extra) -> dict:
    return {
        "TransformJobName": JOB,
        "TransformJobArn": f"arn:aws:sagemaker:us-east-1:111122223333:transform-job/{JOB}",
        "TransformJobStatus": status,
        "ModelName": "PeagleModel-abc123",
        "TransformInput": {"DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://io-bucket/in/"}}},
        "TransformOutput": {"S3OutputPath": "s3://io-bucket/out/"},
        "TransformResources": {"InstanceType": "ml.g6e.12xlarge", "InstanceCount": 1},
        "CreationTime": "2026-03-01T12:00:00Z",
        **extra,
    }


def _follow(statuses: list[dict]):
    client = _client("sagemaker")
    sleeps: list[float] = []
    lines: list[str] = []
    with Stubber(client) as stubber:
        for description in statuses:
            stubber.add_response("describe_transform_job", description, {"TransformJobName": JOB})
        outcome = follow_transform_job(client, JOB, emit=lines.append, sleep=sleeps.append, clock=lambda: 0.0)
        stubber.assert_no_pending_responses()
    return outcome, lines, sleeps


def test_completed_job_prints_each_status_once_and_backs_off():
    outcome, lines, sleeps = _follow([_description("InProgress")] * 6 + [_description("Completed")])

    assert outcome.succeeded and outcome.status == "Completed" and "s3://io-bucket/out/" in outcome.message
    assert [line.split(": ")[-1] for line in lines] == ["InProgress", "Completed"]
    assert sleeps == [5.0, 10.0, 20.0, 40.0, 60.0, 60.0]  # doubling, capped at a minute


def test_failed_job_reports_the_failure_reason_and_where_the_logs_are():
    reason = "ClientError: See job logs for more information"
    outcome, lines, _ = _follow([_description("InProgress"), _description("Failed", FailureReason=reason)])

    assert not outcome.succeeded and outcome.status == "Failed"
    assert reason in outcome.message and "/aws/sagemaker/TransformJobs" in outcome.message


def test_stopped_job_is_not_a_success():
    outcome, _, _ = _follow([_description("Stopping"), _description("Stopped")])
    assert not outcome.succeeded and "stopped" in outcome.message


def test_model_name_comes_from_the_stack_output():
    client = _client("cloudformation")
    stack = {
        "StackName": "peagle-endpoint", "CreationTime": "2026-03-01T12:00:00Z", "StackStatus": "CREATE_COMPLETE",
        "Outputs": [{"OutputKey": "EndpointName", "OutputValue": "peagle-endpoint"},
                    {"OutputKey": "ModelName", "OutputValue": "PeagleModel-abc123"}],
    }
    with Stubber(client) as stubber:
        stubber.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": "peagle-endpoint"})
        assert model_name_from_stack(client, "peagle-endpoint") == "PeagleModel-abc123"

        stubber.add_response("describe_stacks", {"Stacks": [{**stack, "Outputs": stack["Outputs"][:1]}]}, {"StackName": "peagle-endpoint"})
        with pytest.raises(PeagleError, match="no ModelName output .*outputs: EndpointName.*pass --model-name"):
            model_name_from_stack(client, "peagle-endpoint")

        stubber.add_client_error("describe_stacks", service_error_code="ValidationError",
                                 service_message="Stack with id peagle-endpoint does not exist")
        with pytest.raises(PeagleError, match="reading stack peagle-endpoint: AWS rejected the request: Stack with id"):
            model_name_from_stack(client, "peagle-endpoint")


def test_model_environment_is_read_from_the_deployed_model():
    client = _client("sagemaker")
    description = {
        "ModelName": "PeagleModel-abc123",
        "PrimaryContainer": {"Image": "1.dkr.ecr.us-east-1.amazonaws.com/x:y", "Environment": {"PEAGLE_MODEL_PAIR": "gpt-oss-20b"}},
        "ExecutionRoleArn": "arn:aws:iam::111122223333:role/r",
        "CreationTime": "2026-03-01T12:00:00Z",
        "ModelArn": "arn:aws:sagemaker:us-east-1:111122223333:model/peaglemodel-abc123",
    }
    with Stubber(client) as stubber:
        stubber.add_response("describe_model", description, {"ModelName": "PeagleModel-abc123"})
        assert model_environment(client, "PeagleModel-abc123") == {"PEAGLE_MODEL_PAIR": "gpt-oss-20b"}
        stubber.add_client_error("describe_model", service_error_code="AccessDeniedException", service_message="not authorized",
                                 http_status_code=400)
        with pytest.raises(PeagleError, match="needs sagemaker:DescribeModel"):
            model_environment(client, "PeagleModel-abc123")
