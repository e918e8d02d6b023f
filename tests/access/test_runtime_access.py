"""The runtime-access check (peagle/access) on real apps: every example deployment of the YAML app, a user's app with
two endpoints in one stack (tests/access/two_endpoint_app.py), and the same apps with one grant taken away.

What it answers is what IAM would decide once the stacks are deployed: the SageMaker execution roles may pull their
images, list and read their weights and decrypt them with the bucket's key, write their logs, read their rollback
alarms; the image build may read its contexts, pull its base through the cache and push; EventBridge may invoke the
build's handler. A missing grant names the principal, the action, the resource and the prop that grants it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from cdk_synth import REPO_ROOT
from two_endpoint_app import DOCKER_HUB_SECRET, STACK, build

from peagle.access.assembly import Assembly
from peagle.access.check import check_runtime_access
from peagle.cli import main as peagle_main
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
    assert "0 missing, 0 not checked" in out
    outcomes = check_runtime_access(Assembly.from_cdk_out(cdk_out))
    actions = {outcome.need.action for outcome in outcomes}
    # The execution role's core needs are derived from every deployment (the image, the weights, the logs).
    assert {"ecr:BatchGetImage", "s3:GetObject", "s3:ListBucket", "logs:PutLogEvents"} <= actions


def test_two_endpoints_in_one_stack_synthesize_with_every_runtime_grant(two_endpoints, capsys):
    """The issue's app: two endpoints (one with a build context of its own), a bucket with its own KMS key passed
    without key=, the pull-through cache, one endpoint scaling to zero; the plugin ran during the synth."""
    code, out = _access(two_endpoints, capsys)
    assert code == 0, out
    outcomes = check_runtime_access(Assembly.from_cdk_out(two_endpoints))
    decrypts = [outcome for outcome in outcomes if outcome.need.action == "kms:Decrypt"]
    assert len(decrypts) == 2 and all(outcome.granted for outcome in decrypts)  # both roles, through the key policy
    imports = [outcome for outcome in outcomes if outcome.need.action == "ecr:BatchImportUpstreamImage"]
    assert len(imports) == 2 and all(outcome.granted for outcome in imports)  # two contexts, one cache
    template = json.loads((two_endpoints / f"{STACK}.template.json").read_text())
    types = [resource["Type"] for resource in template["Resources"].values()]
    assert types.count("AWS::ECR::PullThroughCacheRule") == 1 and types.count("Custom::PeagleServingImageBuild") == 2
    assert types.count("AWS::SageMaker::InferenceComponent") == 1


def _without_statement(cdk_out: Path, copy: Path, sid: str) -> Path:
    shutil.copytree(cdk_out, copy)
    path = copy / f"{STACK}.template.json"
    template = json.loads(path.read_text())
    removed = 0
    for resource in template["Resources"].values():
        document = resource.get("Properties", {}).get("PolicyDocument")
        if resource["Type"] == "AWS::IAM::ManagedPolicy" and document:
            kept = [statement for statement in document["Statement"] if statement.get("Sid") != sid]
            removed += len(document["Statement"]) - len(kept)
            document["Statement"] = kept
            if removed:
                break
    assert removed == 1
    path.write_text(json.dumps(template))
    return copy


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
    (violation,) = plugin["violations"]
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
