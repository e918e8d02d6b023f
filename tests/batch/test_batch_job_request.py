"""The CreateTransformJob request: its shape, the <=16-entry Environment taken from real plans,
the job name, and the checks that fail before anything is started."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import boto3
import pytest
from botocore.stub import Stubber
from transform_host import job_argv

from peagle.aws import AwsCallError
from peagle.batch.job_follow import start_transform_job
from peagle.batch.job_request import (
    BATCH_ENVIRONMENT_KEYS,
    TRANSFORM_ENVIRONMENT_LIMIT,
    TransformJobError,
    TransformJobSpec,
    build_transform_job_request,
    choose_batch_environment,
    default_job_name,
    transform_instance_types,
)
from peagle.cli import main
from peagle.planning.container_env import DEFAULT_VARIANT_NAME, container_environment
from peagle.planning.planner import plan_deployment
from peagle.settings import config_from_overrides

JOB_NAME_RULE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


def _environment(**overrides) -> dict[str, str]:
    config = config_from_overrides(overrides)
    return container_environment(
        plan_deployment(config), variant_name=DEFAULT_VARIANT_NAME, endpoint_name=config.endpoint_name
    )


def _spec(**changes) -> TransformJobSpec:
    fields = dict(
        job_name="peagle-gpt-oss-20b-20260301-120000",
        model_name="PeagleModel-abc123",
        input_s3_uri="s3://my-batch-io/in/prompts.jsonl",
        output_s3_uri="s3://my-batch-io/out/",
        instance_type="ml.g6e.12xlarge",
        environment={"SM_VLLM_MAX_NUM_SEQS": "128"},
    )
    return TransformJobSpec(**{**fields, **changes})


def test_request_sends_one_json_record_per_invocation_and_joins_answers_to_records():
    request = build_transform_job_request(_spec(output_kms_key_id="alias/batch"))

    assert request["BatchStrategy"] == "SingleRecord"
    assert request["MaxPayloadInMB"] == 6
    assert request["TransformInput"] == {
        "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://my-batch-io/in/prompts.jsonl"}},
        "ContentType": "application/json",
        "CompressionType": "None",
        "SplitType": "Line",
    }
    assert request["TransformOutput"] == {
        "S3OutputPath": "s3://my-batch-io/out/",
        "Accept": "application/json",
        "AssembleWith": "Line",
        "KmsKeyId": "alias/batch",
    }
    assert request["DataProcessing"]["JoinSource"] == "Input"
    assert request["Environment"] == {"SM_VLLM_MAX_NUM_SEQS": "128"}
    # botocore's own validation of the request against the SageMaker API model.
    client = boto3.client("sagemaker", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stubber:
        stubber.add_response(
            "create_transform_job", {"TransformJobArn": "arn:aws:sagemaker:us-east-1:1:transform-job/j"}, request
        )
        assert start_transform_job(client, request).endswith("transform-job/j")


def test_environment_carries_the_batch_plan_settings_that_differ_and_fits_the_limit():
    model_env = _environment()  # the default deployment's Model: chatbot on ml.g6e.xlarge
    batch_env = _environment(profile="batch", instanceType="ml.g6e.12xlarge")
    assert len(batch_env) > TRANSFORM_ENVIRONMENT_LIMIT  # why a choice is needed at all

    choice = choose_batch_environment(model_env, batch_env)

    env = choice.environment
    assert len(env) <= TRANSFORM_ENVIRONMENT_LIMIT and set(env) <= set(BATCH_ENVIRONMENT_KEYS)
    assert env["SM_VLLM_TENSOR_PARALLEL_SIZE"] == "4"  # 4 x L40S
    assert env["SM_VLLM_MAX_NUM_SEQS"] == "128" and env["SM_VLLM_MAX_MODEL_LEN"] == "32768"
    assert json.loads(env["SM_VLLM_SPECULATIVE_CONFIG"])["num_speculative_tokens"] == 3  # the pair's batch K
    assert json.loads(env["SM_VLLM_OVERRIDE_GENERATION_CONFIG"])["temperature"] == 0.3
    assert "SM_VLLM_SERVED_MODEL_NAME" not in env and "PEAGLE_MODEL_PAIR" not in env  # unchanged: not repeated


def test_an_unset_batch_setting_is_overridden_with_its_neutral_value():
    model_env = {"SM_VLLM_KV_CACHE_DTYPE": "fp8", "SM_VLLM_MAX_NUM_SEQS": "32"}
    batch_env = {"SM_VLLM_MAX_NUM_SEQS": "128"}  # e.g. a transform GPU without fp8
    assert choose_batch_environment(model_env, batch_env).environment == {
        "SM_VLLM_MAX_NUM_SEQS": "128",
        "SM_VLLM_KV_CACHE_DTYPE": "auto",
    }


def test_more_than_16_entries_is_refused_with_the_list():
    extra = {f"EXTRA_{index}": "1" for index in range(12)}
    with pytest.raises(
        TransformJobError,
        match=r"1[7-9] environment variables \(.*EXTRA_11\); CreateTransformJob takes at most 16: drop some --env values",
    ):
        choose_batch_environment(
            _environment(), _environment(profile="batch", instanceType="ml.g6e.12xlarge"), extra=extra
        )


def test_default_job_names_are_valid_and_at_most_63_characters():
    now = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    assert default_job_name("peagle", "gpt-oss-20b", now) == "peagle-gpt-oss-20b-20260301-120000"
    long_name = default_job_name("a-very-long-deployment-name", "custom_pair.with.dots-and-a-long-suffix", now)
    assert len(long_name) <= 63 and JOB_NAME_RULE.match(long_name) and long_name.endswith("-20260301-120000")


def test_spec_problems_are_reported_together():
    spec = _spec(
        job_name="bad_name", instance_type="ml.p5.48xlarge", max_concurrent_transforms=40, output_s3_uri="/tmp/out"
    )
    problems = spec.problems(allowed_instance_types=transform_instance_types())
    assert len(problems) == 4
    assert "job name 'bad_name'" in problems[0]
    assert "ml.p5.48xlarge cannot run a Batch Transform job" in problems[1]
    assert "--output '/tmp/out' must be an s3:// URI" in problems[2]
    assert "use at most 16" in problems[3]


def test_dry_run_prints_the_request_without_calling_aws(tmp_path, capsys, monkeypatch, cuda13_transform_host):
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))

    exit_code = main(
        job_argv(
            tmp_path,
            "--model-name",
            "PeagleModel-abc123",
            "--instance-type",
            "ml.g6e.12xlarge",
            "--job-name",
            "nightly-1",
            "--env",
            "PEAGLE_SELF_CHECK_MAX_TOKENS=4",
            "--dry-run",
        )
    )

    out = capsys.readouterr().out
    assert exit_code == 0
    request = json.loads(out[out.index("\n{\n") :])
    assert request["TransformJobName"] == "nightly-1" and request["ModelName"] == "PeagleModel-abc123"
    assert request["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"] == "s3://my-batch-io/in/prompts.jsonl"
    assert request["MaxConcurrentTransforms"] == 16  # 100 MB / 6 MB payload
    assert request["TransformResources"]["TransformAmiVersion"] == cuda13_transform_host
    assert request["Environment"]["PEAGLE_ENDPOINT_NAME"] == "nightly-1"
    assert request["Environment"]["PEAGLE_SELF_CHECK_MAX_TOKENS"] == "4"
    assert len(request["Environment"]) <= 16
    assert "--max-payload-mb 1 allows up to 100" in out  # the records are tiny


@pytest.mark.parametrize(
    ("code", "message", "expected"),
    [
        (
            "AccessDeniedException",
            "User: arn:aws:iam::1:user/u is not authorized",
            "the caller needs sagemaker:CreateTransformJob",
        ),
        (
            "ValidationException",
            'Could not find model "PeagleModel-x".',
            "AWS rejected the request: Could not find model",
        ),
        (
            "ResourceLimitExceeded",
            "The account-level service limit 'ml.g6e.12xlarge for transform job usage' is 0",
            "Service Quotas",
        ),
    ],
)
def test_create_failures_become_actionable_messages(code, message, expected):
    client = boto3.client("sagemaker", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    request = build_transform_job_request(_spec())
    with Stubber(client) as stubber:
        stubber.add_client_error(
            "create_transform_job", service_error_code=code, service_message=message, http_status_code=400
        )
        with pytest.raises(AwsCallError, match=re.escape(expected)) as raised:
            start_transform_job(client, request)
    assert message.split()[0] in str(raised.value)


def test_transform_jobs_are_refused_before_anything_is_uploaded_while_no_host_runs_the_image(tmp_path, capsys):
    # The real runtime catalog: transform hosts have drivers 470/535, the image needs CUDA 13.0 (driver 580).
    exit_code = main(job_argv(tmp_path, "--instance-type", "ml.g6.12xlarge", "--region", "us-east-1"))
    err = capsys.readouterr().err
    assert exit_code == 2
    assert "Batch Transform cannot run the serving image" in err and "CUDA 13.0" in err
    assert "async_inference.enabled: true" in err and "peagle batch --endpoint" in err
    assert "Traceback" not in err


def test_transform_instance_types_outside_the_transform_enum_are_refused(cuda13_transform_host, capsys):
    exit_code = main(
        [
            "batch",
            "--input",
            "s3://b/in/",
            "--output",
            "s3://b/out/",
            "--instance-type",
            "ml.p5.48xlarge",
            "--model-name",
            "M",
            "--dry-run",
        ]
    )
    err = capsys.readouterr().err
    assert exit_code == 2
    assert "ml.p5.48xlarge is not a Batch Transform instance type" in err and "ml.g6e.12xlarge" in err
