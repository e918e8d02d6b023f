"""Following a transform job (status changes, backoff, end classification) and finding the
Model from the endpoint stack: botocore's Stubber stands in for the SageMaker and
CloudFormation APIs, the code's own logic is the subject."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
import pytest
from botocore.stub import Stubber
from transform_host import job_argv

from peagle.batch.job_follow import follow_transform_job, model_environment, model_name_from_stack
from peagle.settings.errors import PeagleError

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


def _follow(statuses: list[dict], *, heartbeat: bool | None = None):
    client = _client("sagemaker")
    sleeps: list[float] = []
    lines: list[str] = []

    def sleep(seconds: float) -> None:  # time passes only in sleeps
        sleeps.append(seconds)

    with Stubber(client) as stubber:
        for description in statuses:
            stubber.add_response("describe_transform_job", description, {"TransformJobName": JOB})
        outcome = follow_transform_job(
            client, JOB, emit=lines.append, sleep=sleep, clock=lambda: sum(sleeps), heartbeat=heartbeat
        )
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


def test_a_running_job_has_a_heartbeat_on_a_terminal(capsys):
    on_instances = datetime(2026, 3, 1, 12, 4, 30, tzinfo=UTC)
    statuses = [_description("InProgress"), _description("InProgress", TransformStartTime=on_instances)]

    outcome, lines, sleeps = _follow([*statuses, _description("Completed")], heartbeat=True)

    out, err = capsys.readouterr()
    assert outcome.succeeded
    assert sum(sleeps) == 15.0 and max(sleeps) <= 1.0  # the same polls, waited in ticks of a second
    assert f"[0:00:00] {JOB}: InProgress, waiting for its instances" in err
    assert f"[0:00:04] {JOB}: InProgress, waiting for its instances" in err  # elapsed time ticks
    assert f"[0:00:14] {JOB}: InProgress, on its instances since 12:04:30 UTC" in err
    assert [line.split(": ")[-1] for line in lines] == ["InProgress", "Completed"]  # status changes as before
    assert out == ""


def test_no_heartbeat_when_stderr_is_not_a_terminal(capsys):
    outcome, _, sleeps = _follow([_description("InProgress"), _description("Completed")])

    assert outcome.succeeded and sleeps == [5.0]  # one sleep per poll
    assert capsys.readouterr() == ("", "")


def test_model_name_comes_from_the_stack_output():
    client = _client("cloudformation")
    stack = {
        "StackName": "peagle-endpoint",
        "CreationTime": "2026-03-01T12:00:00Z",
        "StackStatus": "CREATE_COMPLETE",
        "Outputs": [
            {"OutputKey": "EndpointName", "OutputValue": "peagle-endpoint"},
            {"OutputKey": "ModelName", "OutputValue": "PeagleModel-abc123"},
        ],
    }
    with Stubber(client) as stubber:
        stubber.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": "peagle-endpoint"})
        assert model_name_from_stack(client, "peagle-endpoint") == "PeagleModel-abc123"

        stubber.add_response(
            "describe_stacks",
            {"Stacks": [{**stack, "Outputs": stack["Outputs"][:1]}]},
            {"StackName": "peagle-endpoint"},
        )
        with pytest.raises(PeagleError, match="no ModelName output .*outputs: EndpointName.*pass --model-name"):
            model_name_from_stack(client, "peagle-endpoint")

        stubber.add_client_error(
            "describe_stacks",
            service_error_code="ValidationError",
            service_message="Stack with id peagle-endpoint does not exist",
        )
        with pytest.raises(PeagleError, match="reading stack peagle-endpoint: AWS rejected the request: Stack with id"):
            model_name_from_stack(client, "peagle-endpoint")


def test_model_environment_is_read_from_the_deployed_model():
    client = _client("sagemaker")
    description = {
        "ModelName": "PeagleModel-abc123",
        "PrimaryContainer": {
            "Image": "1.dkr.ecr.us-east-1.amazonaws.com/x:y",
            "Environment": {"PEAGLE_MODEL_PAIR": "gpt-oss-20b"},
        },
        "ExecutionRoleArn": "arn:aws:iam::111122223333:role/r",
        "CreationTime": "2026-03-01T12:00:00Z",
        "ModelArn": "arn:aws:sagemaker:us-east-1:111122223333:model/peaglemodel-abc123",
    }
    with Stubber(client) as stubber:
        stubber.add_response("describe_model", description, {"ModelName": "PeagleModel-abc123"})
        assert model_environment(client, "PeagleModel-abc123") == {"PEAGLE_MODEL_PAIR": "gpt-oss-20b"}
        stubber.add_client_error(
            "describe_model",
            service_error_code="AccessDeniedException",
            service_message="not authorized",
            http_status_code=400,
        )
        with pytest.raises(PeagleError, match="needs sagemaker:DescribeModel"):
            model_environment(client, "PeagleModel-abc123")


class _StubbedAws:
    """Real botocore clients under Stubber, handed to `peagle batch` in place of its own."""

    def __init__(self) -> None:
        self.clients = {service: _client(service) for service in ("sagemaker", "cloudformation", "s3")}
        self.stubbers = {service: Stubber(client) for service, client in self.clients.items()}

    def client(self, session, service: str):
        return self.clients[service]


def _deployed_model(environment: dict) -> dict:
    return {
        "ModelName": "PeagleModel-abc123",
        "PrimaryContainer": {"Image": "1.dkr.ecr.us-east-1.amazonaws.com/x:y", "Environment": environment},
        "ExecutionRoleArn": "arn:aws:iam::111122223333:role/r",
        "CreationTime": "2026-03-01T12:00:00Z",
        "ModelArn": "arn:aws:sagemaker:us-east-1:111122223333:model/peaglemodel-abc123",
    }


def _stack_with_model_name() -> dict:
    return {
        "Stacks": [
            {
                "StackName": "peagle-endpoint",
                "CreationTime": "2026-03-01T12:00:00Z",
                "StackStatus": "UPDATE_COMPLETE",
                "Outputs": [{"OutputKey": "ModelName", "OutputValue": "PeagleModel-abc123"}],
            }
        ]
    }


def test_a_job_run_uploads_then_starts_then_follows_with_settings_relative_to_the_deployed_model(
    tmp_path, monkeypatch, capsys, cuda13_transform_host
):
    from botocore.stub import ANY

    from peagle.batch import cli as batch_cli
    from peagle.cli import main
    from peagle.cli_config import load_cli_config
    from peagle.planning.container_env import container_environment
    from peagle.planning.planner import plan_deployment

    config = load_cli_config(None, {})  # what the command itself plans from
    deployed = container_environment(
        plan_deployment(config), variant_name="AllTraffic", endpoint_name=config.endpoint_name
    )
    aws = _StubbedAws()
    monkeypatch.setattr(batch_cli, "_session", lambda region: object())
    monkeypatch.setattr(batch_cli, "_client", aws.client)
    sent = {}

    aws.stubbers["cloudformation"].add_response(
        "describe_stacks", _stack_with_model_name(), {"StackName": "peagle-endpoint"}
    )
    aws.stubbers["sagemaker"].add_response(
        "describe_model", _deployed_model(deployed), {"ModelName": "PeagleModel-abc123"}
    )
    aws.stubbers["s3"].add_response(
        "put_object",
        {"ETag": '"1"'},
        {"Bucket": "my-batch-io", "Key": "in/prompts.jsonl", "Body": ANY, "ChecksumAlgorithm": ANY},
    )
    aws.stubbers["sagemaker"].add_response(
        "create_transform_job", {"TransformJobArn": "arn:aws:sagemaker:us-east-1:1:transform-job/nightly-1"}
    )
    aws.stubbers["sagemaker"].add_response(
        "describe_transform_job",
        _description("Completed") | {"TransformJobName": "nightly-1"},
        {"TransformJobName": "nightly-1"},
    )
    aws.clients["sagemaker"].meta.events.register(
        "provide-client-params.sagemaker.CreateTransformJob", lambda params, **kwargs: sent.update(params)
    )
    for stubber in aws.stubbers.values():
        stubber.activate()

    exit_code = main(job_argv(tmp_path, "--job-name", "nightly-1", "--region", "us-east-1"))

    out = capsys.readouterr().out
    assert exit_code == 0, out
    for stubber in aws.stubbers.values():
        stubber.assert_no_pending_responses()
    assert sent["ModelName"] == "PeagleModel-abc123"
    assert sent["TransformResources"]["TransformAmiVersion"] == cuda13_transform_host
    assert sent["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"] == "s3://my-batch-io/in/prompts.jsonl"
    # Same instance type as the deployed Model: TP is unchanged, so not repeated.
    assert "SM_VLLM_TENSOR_PARALLEL_SIZE" not in sent["Environment"]
    assert sent["Environment"]["SM_VLLM_MAX_NUM_SEQS"] != deployed["SM_VLLM_MAX_NUM_SEQS"]
    assert "nightly-1: Completed" in out and "completed; output" in out


def test_a_model_serving_another_pair_is_refused_before_starting(tmp_path, monkeypatch, capsys, cuda13_transform_host):
    from peagle.batch import cli as batch_cli
    from peagle.cli import main

    aws = _StubbedAws()
    monkeypatch.setattr(batch_cli, "_session", lambda region: object())
    monkeypatch.setattr(batch_cli, "_client", aws.client)
    aws.stubbers["sagemaker"].add_response(
        "describe_model", _deployed_model({"PEAGLE_MODEL_PAIR": "qwen3-8b"}), {"ModelName": "PeagleModel-abc123"}
    )
    with aws.stubbers["sagemaker"]:
        exit_code = main(
            [
                "batch",
                "--input",
                "s3://my-batch-io/in/",
                "--output",
                "s3://my-batch-io/out/",
                "--model-name",
                "PeagleModel-abc123",
                "--model",
                "gpt-oss-20b",
            ]
        )

    assert exit_code == 2
    assert "serves pair 'qwen3-8b' but the plan is for 'gpt-oss-20b'; pass --model qwen3-8b" in capsys.readouterr().err


def test_ctrl_c_while_following_says_the_job_keeps_running(monkeypatch, capsys, cuda13_transform_host):
    """Ctrl-C stops following, not the job: the command's own message (how to stop the job), not
    the CLI's generic one, and exit 130."""
    import peagle.batch.job_follow
    from peagle.batch import cli as batch_cli
    from peagle.cli import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    aws = _StubbedAws()
    monkeypatch.setattr(batch_cli, "_session", lambda region: object())
    monkeypatch.setattr(batch_cli, "_client", aws.client)
    monkeypatch.setattr(peagle.batch.job_follow, "follow_transform_job", interrupted)
    aws.stubbers["sagemaker"].add_response("describe_model", _deployed_model({}), {"ModelName": "PeagleModel-abc123"})
    aws.stubbers["sagemaker"].add_response("create_transform_job", {"TransformJobArn": "arn:aws:sagemaker:::x/night"})
    with aws.stubbers["sagemaker"]:
        argv = ["batch", "--input", "s3://my-batch-io/in/", "--output", "s3://my-batch-io/out/"]
        exit_code = main([*argv, "--model-name", "PeagleModel-abc123", "--job-name", "night"])

    assert exit_code == 130
    err = capsys.readouterr().err
    assert "stopped following; the job keeps running" in err and "stop-transform-job --transform-job-name night" in err
    assert "interrupted: peagle batch" not in err
