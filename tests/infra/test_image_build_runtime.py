"""What the in-account image build does at deploy time, from the synthesized template: the custom-resource handler
(peagle_cdk/image_build_handler/, run here as Lambda would run it by tests/infra/image_build_harness.py, against ECR
and CodeBuild stubbed at the SDK edge with botocore's Stubber, answering a real HTTP server standing in for
CloudFormation's pre-signed response URL) and the CodeBuild build spec (its commands run by bash, as CodeBuild runs
them in one shell, with `aws` and `docker` recorded instead of run). The races a build can meet (a duplicate request,
no build-ended event, two builds of one tag, a redeploy after a timeout): tests/infra/test_image_build_races.py.

The rollback case is the one that matters: "If an Update event fails, CloudFormation will issue an additional
Update with the previous properties" (aws-cdk custom-resources README); the previous properties name an image
that exists, and the handler must answer without starting a build."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import zipfile
from pathlib import Path

import pytest
from image_build_harness import (
    REGION,
    REPOSITORY,
    REPOSITORY_URI,
    TAG,
    Clock,
    CloudFormation,
    Context,
    Edge,
    image_builds,
    index,
    properties,
    stack_event,
    timing,
)

from peagle_cdk.serving_image_build import CUSTOM_RESOURCE_TYPE, POLL_SECONDS_VARIABLE, WATCH_SECONDS_VARIABLE

MIRROR = f"123456789012.dkr.ecr.{REGION}.amazonaws.com/mirrors/vllm-openai:v0.32.0"


@pytest.fixture
def cloudformation():
    with CloudFormation() as server:
        yield server


@pytest.fixture(scope="module")
def build_resource(default_synth) -> dict:
    (resource,) = default_synth.resources("PeagleEndpoint", CUSTOM_RESOURCE_TYPE).values()
    return resource


def _on_stack_event(event: dict, edge: Edge) -> None:
    clock = Clock()
    with edge:
        index.on_stack_event(event, Context(clock), edge.clients, timing(clock))
        edge.assert_all_used()


# --- the handler ----------------------------------------------------------------------------------------------


def test_a_rollback_to_an_image_that_exists_answers_at_once_and_starts_no_build(build_resource, cloudformation):
    old = properties(build_resource, tag="peagle-000000000000000000000001")
    new = properties(build_resource)
    # The rollback's Update carries the previous properties (the image the endpoint ran before).
    event = stack_event(
        "Update",
        cloudformation.url,
        old,
        OldResourceProperties=new,
        PhysicalResourceId=f"{REPOSITORY}:{new['ImageTag']}",
    )
    edge = Edge()
    edge.image_found(old["ImageTag"])
    edge.image_found(old["ImageTag"])  # the answer checks the tag itself
    _on_stack_event(event, edge)  # no CodeBuild or Lambda response queued: a StartBuild would fail the test
    (put,) = cloudformation.puts
    assert put["content_type"] == ""  # the pre-signed URL is signed without a content type
    body = put["body"]
    assert body["Status"] == "SUCCESS" and body["Data"] == {"ImageTag": old["ImageTag"]}
    assert body["PhysicalResourceId"] == f"{REPOSITORY}:{old['ImageTag']}"
    assert (body["StackId"], body["RequestId"], body["LogicalResourceId"]) == (
        event["StackId"],
        event["RequestId"],
        event["LogicalResourceId"],
    )


def test_delete_does_nothing_and_answers(build_resource, cloudformation):
    event = stack_event(
        "Delete", cloudformation.url, properties(build_resource), PhysicalResourceId=f"{REPOSITORY}:peagle-1"
    )
    _on_stack_event(event, Edge())  # nothing queued: any AWS call would fail the test
    (answer,) = cloudformation.answers
    assert answer["Status"] == "SUCCESS" and answer["PhysicalResourceId"] == f"{REPOSITORY}:peagle-1"


def test_start_build_denied_while_iam_propagates_is_retried_with_the_same_token_then_answered(
    build_resource, cloudformation, monkeypatch
):
    monkeypatch.setattr(image_builds, "ACCESS_DENIED_BACKOFF_SECONDS", (0, 0))
    event = stack_event("Create", cloudformation.url, properties(build_resource))
    edge = Edge()
    edge.image_missing()
    edge.builds_listed()
    for _ in range(3):  # the first try and two retries, all denied
        edge.start_denied()
    edge.image_missing()  # the tag is checked before the answer
    _on_stack_event(event, edge)
    assert len(edge.started) == 3 and len({started["idempotencyToken"] for started in edge.started}) == 1
    # Never silent: the library used before returned without answering, and CloudFormation waited an hour.
    (answer,) = cloudformation.answers
    assert answer["Status"] == "FAILED" and "AccessDeniedException" in answer["Reason"]


def test_a_mirror_base_is_passed_to_the_build(build_resource, cloudformation):
    event = stack_event("Create", cloudformation.url, properties(build_resource, base=MIRROR))
    edge = Edge()
    edge.image_missing()
    edge.builds_listed()
    edge.build_started("project:1", image_builds.idempotency_token(event))
    edge.watcher_invoked()
    edge.build_polled("project:1", "SUCCEEDED")
    edge.image_found()
    edge.image_found()
    _on_stack_event(event, edge)
    (started,) = edge.started
    variables = {item["name"]: item["value"] for item in started["environmentVariablesOverride"]}
    assert variables == {
        "repositoryUri": REPOSITORY_URI,
        "repositoryName": REPOSITORY,
        "imageTag": TAG,
        "sourceS3Url": "s3://cdk-hnb659fds-assets-123456789012-us-east-1/context.zip",
        "baseImage": MIRROR,
    }


def test_the_handler_reads_the_watch_budget_the_template_sets(default_synth, monkeypatch):
    (function,) = [
        resource
        for logical_id, resource in default_synth.resources("PeagleEndpoint", "AWS::Lambda::Function").items()
        if logical_id.startswith("PeagleServingImagesHandler")
    ]
    variables = function["Properties"]["Environment"]["Variables"]
    # The names are the contract between the construct and the handler, each side spelling them once.
    assert (index.WATCH_SECONDS_VARIABLE, index.POLL_SECONDS_VARIABLE) == (
        WATCH_SECONDS_VARIABLE,
        POLL_SECONDS_VARIABLE,
    )
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    budget = index.Timing.from_environment()
    assert (budget.watch_seconds, budget.poll_seconds) == (57 * 60, 20)


# --- the build spec ------------------------------------------------------------------------------------------


def _build_spec(default_synth) -> dict:
    (project,) = default_synth.resources("PeagleEndpoint", "AWS::CodeBuild::Project").values()
    return json.loads(project["Properties"]["Source"]["BuildSpec"])


def _tool(path: Path, body: str) -> None:
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _run_build(default_synth, tmp_path: Path, *, base: str, fail_build: bool = False) -> tuple[int, list[str]]:
    """The build phase's commands in one bash (as CodeBuild runs a version 0.2 spec), stopping at the first that
    fails (as a CodeBuild phase does), with `aws` and `docker` recorded."""
    spec = _build_spec(default_synth)
    assert spec["version"] == "0.2" and spec["env"]["shell"] == "bash"
    tools, work = tmp_path / "bin", tmp_path / "work"
    tools.mkdir()
    work.mkdir()
    context = tmp_path / "context.zip"
    with zipfile.ZipFile(context, "w") as archive:
        archive.writestr("Dockerfile", "FROM scratch\n")
    calls = tmp_path / "calls.log"
    _tool(
        tools / "aws",
        f'echo "aws $*" >> {calls}\n'
        f'if [ "$1 $2" = "s3 cp" ]; then cp {context} "$4"; fi\n'
        'if [ "$2" = "get-login-password" ]; then echo token; fi\n',
    )
    failing = 'if [ "$1" = buildx ]; then exit 1; fi\n' if fail_build else ""
    _tool(
        tools / "docker",
        f'echo "docker $* [cwd $(basename $PWD)] [stdin $( [ -t 0 ] || head -c 5)]" >> {calls}\n{failing}',
    )
    environment = {
        "PATH": f"{tools}:{os.environ['PATH']}",
        "AWS_REGION": REGION,
        "sourceS3Url": "s3://assets/context.zip",
        "repositoryUri": REPOSITORY_URI,
        "imageTag": "peagle-0123",
        "baseImage": base,
    }
    script = "set -e\n" + "\n".join(spec["phases"]["build"]["commands"])
    done = subprocess.run(["bash", "-c", script], cwd=work, env=environment, capture_output=True, text=True)
    assert calls.exists(), done.stderr
    return done.returncode, calls.read_text().splitlines()


def test_the_build_spec_builds_the_context_on_the_pinned_base_and_pushes_the_tag(default_synth, tmp_path):
    code, calls = _run_build(default_synth, tmp_path, base="")
    assert code == 0, calls
    docker = [call for call in calls if call.startswith("docker")]
    assert docker[0].startswith(f"docker login --username AWS --password-stdin {REPOSITORY_URI.split('/')[0]}")
    assert "[stdin token]" in docker[0]
    build = docker[1]
    assert build.startswith("docker buildx build --platform linux/amd64 --provenance=false")
    assert "--build-arg" not in build  # the Dockerfile's pinned base
    assert f"--output type=docker,name={REPOSITORY_URI}:peagle-0123 . [cwd context]" in build
    assert docker[2].startswith(f"docker push {REPOSITORY_URI}:peagle-0123")


def test_the_build_spec_passes_a_mirror_or_cache_as_the_base(default_synth, tmp_path):
    code, calls = _run_build(default_synth, tmp_path, base=MIRROR)
    assert code == 0
    (build,) = [call for call in calls if "buildx build" in call]
    assert f"--build-arg VLLM_IMAGE={MIRROR} " in build


def test_a_failed_docker_build_pushes_nothing(default_synth, tmp_path):
    code, calls = _run_build(default_synth, tmp_path, base="", fail_build=True)
    assert code != 0
    assert not [call for call in calls if call.startswith("docker push")]
