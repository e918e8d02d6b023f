"""The runtime-access check (peagle/access) on real apps: every example deployment of the YAML app, a user's app with
two endpoints in one stack (tests/access/two_endpoint_app.py), and the same apps with one grant taken away.

What it answers is what IAM would decide once the stacks are deployed: the SageMaker execution roles may pull their
images, list and read their weights and decrypt them with the bucket's key, create and write their logs, read their
rollback alarms, read async inputs, write async results with the bucket's key and publish to encrypted topics; the
image build may read its contexts, pull its base through the cache and push; EventBridge may invoke the build's
handler. A missing grant names the principal, the action, the resource and the prop that grants it. What the
templates cannot decide (a policy outside the app) is reported as not checked: tests/access/test_outside_the_app.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from cdk_synth import REPO_ROOT
from template_edits import edited_copy, without_action, without_statement
from two_endpoint_app import DOCKER_HUB_SECRET, STACK, build

from peagle.access.check import check_runtime_access
from peagle.access.requirements import FIXES
from peagle.cli import main as peagle_main
from peagle.cloud_assembly import Assembly
from peagle_cdk import ModelWeights, PeagleEndpoint, RuntimeAccessChecks

DEPLOYMENTS = sorted(path.name for path in (REPO_ROOT / "deployments").glob("*.yaml"))


@pytest.fixture(scope="module")
def two_endpoints(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("two-endpoints")
    return build(root / "cdk.out", root / "code-image")


def _access(cdk_out: Path, capsys) -> tuple[int, str]:
    code = peagle_main(["access", "--cdk-out", str(cdk_out)])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_every_example_deployment_grants_what_aws_will_ask(synth, deployment, capsys):
    cdk_out = synth(deployment=str(REPO_ROOT / "deployments" / deployment)).outdir
    code, out = _access(cdk_out, capsys)
    assert code == 0, out
    assert "0 missing" in out.splitlines()[-1]
    outcomes = check_runtime_access(Assembly.from_cdk_out(cdk_out))
    actions = {outcome.need.action for outcome in outcomes}
    # The execution role's core needs are derived from every deployment (the image, the weights, the logs, as
    # SageMaker's CreateModel execution-role page lists them).
    assert {"ecr:BatchGetImage", "s3:GetObject", "s3:ListBucket", "logs:PutLogEvents"} <= actions
    assert {"logs:CreateLogGroup", "logs:DescribeLogStreams", "logs:CreateLogStream"} <= actions
    # The one request a shipped deployment leaves to the reader: its build context sits in the CDK bootstrap's
    # asset bucket, whose policy and key are in the bootstrap stack, not in this app.
    unchecked = [outcome for outcome in outcomes if outcome.not_checked]
    assert unchecked, "the bootstrap's asset bucket is not in the app"
    for outcome in unchecked:
        assert outcome.need.action == "s3:GetObject" and ":::cdk-hnb659fds-assets-" in outcome.need.resource, out
        # ...with what the default bootstrap template settles, so the reader knows when there is nothing to do.
        assert "with the default `cdk bootstrap` template neither stands in the way" in outcome.not_checked


def test_two_endpoints_in_one_stack_synthesize_with_every_runtime_grant(two_endpoints, capsys):
    """The issue's app: two endpoints (one with a build context of its own), a bucket with its own KMS key passed
    without key=, the pull-through cache, one endpoint scaling to zero; the plugin ran during the synth."""
    code, out = _access(two_endpoints, capsys)
    assert code == 0, out
    outcomes = check_runtime_access(Assembly.from_cdk_out(two_endpoints))
    decrypts = [outcome for outcome in outcomes if outcome.need.action == "kms:Decrypt"]
    assert len(decrypts) == 2 and all(outcome.granted for outcome in decrypts)  # both roles, through the key policy
    imports = [outcome for outcome in outcomes if outcome.need.action == "ecr:BatchImportUpstreamImage"]
    # Two contexts, one cache; the repository ECR creates at the first pull is not in the app: not checked, never
    # missing.
    assert len(imports) == 2 and not any(outcome.missing for outcome in imports)
    # ...saying what the app's creation template gives such repositories, and what it cannot say of older ones.
    assert all("repository creation template for peagle-hub-" in (outcome.found or "") for outcome in imports)
    # Creating a repository is the caller's own policies' decision (no repository, no repository policy yet): decided.
    creates = [outcome for outcome in outcomes if outcome.need.action == "ecr:CreateRepository"]
    assert creates and all(outcome.granted for outcome in creates), [outcome.not_checked for outcome in creates]
    template = json.loads((two_endpoints / f"{STACK}.template.json").read_text())
    types = [resource["Type"] for resource in template["Resources"].values()]
    assert types.count("AWS::ECR::PullThroughCacheRule") == 1 and types.count("Custom::PeagleServingImageBuild") == 2
    assert types.count("AWS::SageMaker::InferenceComponent") == 1


def _without_statement(cdk_out: Path, copy: Path, sid: str) -> Path:
    return edited_copy(cdk_out, copy, STACK, without_statement(sid))


def test_removing_one_grant_turns_the_check_red_naming_principal_action_resource_and_fix(
    two_endpoints, tmp_path, capsys
):
    broken = _without_statement(two_endpoints, tmp_path / "cdk.out", "DecryptModelWeights")
    code, out = _access(broken, capsys)
    assert code == 1
    (missing,) = [line for line in out.splitlines() if line.startswith("MISSING")]
    assert "ExecutionRole" in missing and "may not kms:Decrypt on arn:aws:kms:us-east-1:111122223333:key/" in missing
    assert "fix: ModelWeights.from_bucket(bucket, prefix) takes the bucket's encryption_key" in out
    assert "1 missing" in out


def test_removing_the_image_pull_grant_is_named_too(two_endpoints, tmp_path, capsys):
    broken = _without_statement(two_endpoints, tmp_path / "cdk.out", "PullServingImage")
    code, out = _access(broken, capsys)
    assert code == 1
    assert "may not ecr:BatchGetImage on arn:aws:ecr:us-east-1:111122223333:repository/" in out
    assert "fix: PeagleEndpoint grants its execution role pulls" in out


# Each request added from SageMaker's execution-role page and the async/SNS pages, and the grant that covers it in
# a shipped deployment: taking that grant away must turn the check red, naming the request and its fix.
ASYNC = "async-summarization.yaml"
TAKEN_AWAY = [
    # (edit of the PeagleEndpoint template, the action refused, a piece of its resource, a piece of why, the fix key)
    pytest.param(
        without_action("WriteEndpointLogs", "logs:CreateLogGroup"),
        "logs:CreateLogGroup",
        "log-group:/aws/sagemaker/Endpoints/peagle-summaries-endpoint:*",
        "writes its logs",
        "logs",
        id="create-log-group",
    ),
    pytest.param(
        without_action("WriteAsyncEndpointLogs", "logs:DescribeLogStreams"),
        "logs:DescribeLogStreams",
        "log-group:/aws/sagemaker/Endpoints/peagle-summaries-async:*",
        "writes its logs",
        "logs",
        id="describe-log-streams",
    ),
    pytest.param(
        without_statement("ReadAsyncInput"),
        "s3:GetObject",
        "/async/input/request.json",
        "request payloads",
        "async-input",
        id="async-input-read",
    ),
    pytest.param(
        without_statement("EncryptResults"),
        "kms:GenerateDataKey",
        "key/${PeagleArtifacts/ModelArtifactsKey",
        "asynchronous results",
        "async-key",
        id="async-output-key",
    ),
    pytest.param(
        without_statement("DecryptModelWeights"),
        "kms:Decrypt",
        "key/${PeagleArtifacts/ModelArtifactsKey",
        "request payloads",
        "async-key",
        id="async-input-key",
    ),
    pytest.param(
        without_action("PublishAsyncSuccessEncrypt", "kms:GenerateDataKey"),
        "kms:GenerateDataKey",
        "AsyncInferenceSuccessTopicKey",
        "SuccessTopic notifications",
        "topic-key",
        id="success-topic-key",
    ),
    pytest.param(
        without_action("PublishAsyncFailureEncrypt", "kms:Decrypt"),
        "kms:Decrypt",
        "AsyncInferenceFailureTopicKey",
        "ErrorTopic notifications",
        "topic-key",
        id="error-topic-key",
    ),
]


@pytest.mark.parametrize(("edit", "action", "resource", "why", "fix"), TAKEN_AWAY)
def test_taking_a_grant_away_from_a_shipped_deployment_names_the_request_it_no_longer_allows(
    synth, tmp_path, capsys, edit, action, resource, why, fix
):
    cdk_out = synth(deployment=str(REPO_ROOT / "deployments" / ASYNC)).outdir
    broken = edited_copy(cdk_out, tmp_path / "cdk.out", "PeagleEndpoint", edit)
    code, out = _access(broken, capsys)
    assert code == 1, out
    blocks = [block for block in out.split("MISSING  ")[1:] if f" may not {action} on " in block.splitlines()[0]]
    named = [block for block in blocks if resource in block.splitlines()[0] and why in block]
    assert named, out
    assert f"fix: {FIXES[fix]}" in named[0]


def test_the_request_log_group_actions_are_asked_of_the_groups_arn_with_its_trailing_colon_star(synth):
    """botocore's logs model: the ARN "includes a trailing :* after the log group name. Use this version to refer to
    the ARN in IAM policies when specifying permissions for most API actions"; a grant on the bare name misses."""
    cdk_out = synth(deployment=str(REPO_ROOT / "deployments" / "default.yaml")).outdir
    outcomes = check_runtime_access(Assembly.from_cdk_out(cdk_out))
    groups = [outcome for outcome in outcomes if outcome.need.action == "logs:CreateLogGroup"]
    assert groups and all(
        outcome.need.resource.endswith("/aws/sagemaker/Endpoints/peagle-endpoint:*") for outcome in groups
    )
    assert all(outcome.granted for outcome in groups)


def test_an_explicit_deny_in_a_users_app_fails_its_synth_with_the_missing_grant(tmp_path):
    """A user's app adds a Deny to the execution role (a guard rail copied from elsewhere): an explicit deny wins
    over every allow, and the plugin fails the synth naming what the endpoint would no longer be able to do."""
    app = App(outdir=str(tmp_path / "cdk.out"))
    stack = Stack(app, "Guarded")
    bucket = s3.Bucket(stack, "Weights", encryption=s3.BucketEncryption.KMS, enforce_ssl=True)
    endpoint = PeagleEndpoint(
        stack, "Chat", name="chat", weights=ModelWeights.from_bucket(bucket, "models/gpt-oss-20b/")
    )
    endpoint.role.add_to_principal_policy(
        iam.PolicyStatement(effect=iam.Effect.DENY, actions=["kms:*"], resources=["*"])
    )
    Validations.of(app).add_plugins(RuntimeAccessChecks())
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "cdk.out" / "validation-report.json").read_text())
    (plugin,) = report["pluginReports"]
    (violation,) = [violation for violation in plugin["violations"] if violation["severity"] == "error"]
    assert violation["ruleName"] == "peagle-runtime-access"
    assert "may not kms:Decrypt" in violation["description"] and "explicitly denied" in violation["description"]
    assert violation["violatingConstructs"][0]["cloudFormationResource"]["logicalId"].startswith("ChatExecutionRole")
    assert violation["suggestedFix"].startswith("narrow or remove Deny statement #0 of Guarded/ChatExecutionRole")


def test_a_role_outside_the_app_is_not_checked_rather_than_passed(tmp_path, capsys):
    app = App(outdir=str(tmp_path / "cdk.out"))
    stack = Stack(app, "OwnRole")
    role = iam.Role.from_role_arn(stack, "Theirs", "arn:aws:iam::111122223333:role/platform-sagemaker", mutable=False)
    bucket = s3.Bucket(stack, "Weights")
    PeagleEndpoint(stack, "Chat", name="chat", role=role, weights=ModelWeights.from_bucket(bucket, "models/x/"))
    app.synth()
    code, out = _access(tmp_path / "cdk.out", capsys)
    assert code == 0
    assert "not checked: arn:aws:iam::111122223333:role/platform-sagemaker s3:GetObject" in out
    assert "0 missing" in out and "not checked" in out.splitlines()[-1]


def test_a_missing_cdk_out_is_a_clear_error(tmp_path, capsys):
    code = peagle_main(["access", "--cdk-out", str(tmp_path / "nowhere")])
    assert code == 2
    assert "cdk synth" in capsys.readouterr().err


def test_the_secret_for_the_cache_is_what_the_app_names():
    assert DOCKER_HUB_SECRET.split(":secret:")[1].startswith("ecr-pullthroughcache/")
