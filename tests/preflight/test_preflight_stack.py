"""`peagle preflight --stack`: the deployed template and the account look-ups come from AWS.
botocore's Stubber stands in for CloudFormation, STS, S3 and CloudWatch Logs (real clients,
real request validation); the no-credentials case runs the real CLI with no credentials."""

from __future__ import annotations

import os
import subprocess
import sys

import boto3
import pytest
from botocore.stub import Stubber

from peagle.cli import main
from peagle.preflight import deployed

ACCOUNT, REGION = "111122223333", "us-east-1"
DEFAULT_PREFIX_BUCKET = f"peagle-models-{ACCOUNT}-{REGION}"


class StubbedAccount:
    """Real botocore clients under Stubber, handed to preflight in place of its own."""

    def __init__(self) -> None:
        session = boto3.session.Session(
            region_name=REGION, aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret"
        )
        self.session = session
        self.clients = {service: session.client(service) for service in ("cloudformation", "sts", "s3", "logs")}
        self.stubbers = {service: Stubber(client) for service, client in self.clients.items()}

    def install(self, monkeypatch) -> None:
        monkeypatch.setattr(deployed, "_session", lambda region: self.session)
        monkeypatch.setattr(deployed, "_client", lambda session, service: self.clients[service])
        for stubber in self.stubbers.values():
            stubber.activate()

    def no_stack(self, name: str = "peagle-endpoint") -> None:
        self.stubbers["cloudformation"].add_client_error(
            "get_template",
            service_error_code="ValidationError",
            http_status_code=400,
            service_message=f"Stack with id {name} does not exist",
            expected_params={"StackName": name, "TemplateStage": "Original"},
        )

    def log_groups(self, name: str, existing: list[str]) -> None:
        self.stubbers["logs"].add_response(
            "describe_log_groups",
            {"logGroups": [{"logGroupName": group} for group in existing]},
            {"logGroupNamePrefix": name, "limit": 5},
        )

    def caller(self) -> None:
        self.stubbers["sts"].add_response(
            "get_caller_identity",
            {"Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/deployer", "UserId": "AIDAEXAMPLE"},
        )

    def head(self, bucket: str, key: str, *, exists: bool) -> None:
        if exists:
            self.stubbers["s3"].add_response("head_object", {"ContentLength": 10}, {"Bucket": bucket, "Key": key})
        else:
            self.stubbers["s3"].add_client_error(
                "head_object",
                service_error_code="404",
                http_status_code=404,
                service_message="Not Found",
                expected_params={"Bucket": bucket, "Key": key},
            )

    def assert_all_called(self) -> None:
        for stubber in self.stubbers.values():
            stubber.assert_no_pending_responses()


@pytest.fixture
def aws(monkeypatch) -> StubbedAccount:
    account = StubbedAccount()
    account.install(monkeypatch)
    return account


def preflight(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["preflight", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_first_deploy_has_nothing_to_compare_and_checks_what_a_create_needs(capsys, synthesized, aws):
    default = synthesized("default")
    aws.no_stack()
    aws.log_groups("/aws/sagemaker/Endpoints/peagle-endpoint", [])
    aws.caller()
    aws.head(DEFAULT_PREFIX_BUCKET, "models/gpt-oss-20b/target/config.json", exists=True)
    aws.head(DEFAULT_PREFIX_BUCKET, "models/gpt-oss-20b/drafter/config.json", exists=True)

    code, out, err = preflight(capsys, "--new", str(default.template), "--stack", "peagle-endpoint")

    assert code == 0, out + err
    assert "first deploy: nothing to compare" in out
    assert "note [weights-prefix]" in out and f"(s3://{DEFAULT_PREFIX_BUCKET}/models/gpt-oss-20b/)" in out
    aws.assert_all_called()


def test_weights_not_staged_under_the_new_prefix_are_refused(capsys, synthesized, aws):
    default = synthesized("default")
    aws.no_stack()
    aws.log_groups("/aws/sagemaker/Endpoints/peagle-endpoint", [])
    aws.caller()
    aws.head(DEFAULT_PREFIX_BUCKET, "models/gpt-oss-20b/target/config.json", exists=True)
    aws.head(DEFAULT_PREFIX_BUCKET, "models/gpt-oss-20b/drafter/config.json", exists=False)

    code, out, _ = preflight(
        capsys,
        "--deployment",
        str(default.deployment_file),
        "--new",
        str(default.template),
        "--stack",
        "peagle-endpoint",
    )

    assert code == 1, out
    assert f"s3://{DEFAULT_PREFIX_BUCKET}/models/gpt-oss-20b/drafter/config.json not found" in out
    assert f"stage it first: `peagle stage --deployment {default.deployment_file}`" in out
    aws.assert_all_called()


def test_a_log_group_left_by_an_earlier_stack_is_refused(capsys, synthesized, aws):
    default = synthesized("default")
    aws.no_stack()
    aws.log_groups("/aws/sagemaker/Endpoints/peagle-endpoint", ["/aws/sagemaker/Endpoints/peagle-endpoint"])
    aws.caller()
    aws.head(DEFAULT_PREFIX_BUCKET, "models/gpt-oss-20b/target/config.json", exists=True)
    aws.head(DEFAULT_PREFIX_BUCKET, "models/gpt-oss-20b/drafter/config.json", exists=True)

    code, out, _ = preflight(capsys, "--new", str(default.template), "--stack", "peagle-endpoint")

    assert code == 1, out
    assert (
        "REFUSED [log-group-name] log group /aws/sagemaker/Endpoints/peagle-endpoint is created, but it already exists"
        in out
    )
    assert "`aws logs delete-log-group --log-group-name /aws/sagemaker/Endpoints/peagle-endpoint`" in out


def test_the_deployed_template_comes_from_the_stack(capsys, synthesized, aws):
    ab, ab_off = synthesized("ab"), synthesized("ab-off")
    aws.stubbers["cloudformation"].add_response(
        "get_template",
        {"TemplateBody": ab.template.read_text(), "StagesAvailable": ["Original", "Processed"]},
        {"StackName": "peagle-ab-endpoint", "TemplateStage": "Original"},
    )

    # --stack without a name: the stack cdk.out deploys the template as (its manifest)
    code, out, _ = preflight(capsys, "--new", str(ab_off.template), "--stack")

    assert code == 1, out
    assert "against stack peagle-ab-endpoint in us-east-1" in out
    assert "REFUSED [variant-set]" in out and "(removed: Baseline)" in out
    aws.assert_all_called()


def test_access_denied_is_an_aws_problem(capsys, synthesized, aws):
    aws.stubbers["cloudformation"].add_client_error(
        "get_template",
        service_error_code="AccessDenied",
        http_status_code=403,
        service_message="User: arn:aws:iam::111122223333:user/x is not authorized to perform: cloudformation:GetTemplate",
    )

    code, out, err = preflight(capsys, "--new", str(synthesized("default").template), "--stack", "peagle-endpoint")

    assert code == 3
    assert err.startswith("error: access denied while reading the deployed template of stack peagle-endpoint")
    assert "cloudformation:GetTemplate" in err


def test_without_credentials_the_error_is_one_line_and_exit_3(synthesized, tmp_path):
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    env.update(
        AWS_SHARED_CREDENTIALS_FILE="/nonexistent", AWS_CONFIG_FILE="/nonexistent", AWS_EC2_METADATA_DISABLED="true"
    )

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "peagle",
            "preflight",
            "--new",
            str(synthesized("default").template),
            "--stack",
            "peagle-endpoint",
            "--region",
            REGION,
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 3, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        "error: no usable AWS credentials while reading the deployed template of stack peagle-endpoint"
    )
    assert "AWS_PROFILE" in line
