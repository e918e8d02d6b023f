"""What the in-account image build does at deploy time, from the synthesized template: the custom-resource handler
(peagle_cdk/image_build_handler/index.py, run here as Lambda would run it, against ECR and CodeBuild stubbed at the
SDK edge with botocore's Stubber, answering a real HTTP server standing in for CloudFormation's pre-signed
response URL) and the CodeBuild build spec (its commands run by bash, as CodeBuild runs them in one shell, with
`aws` and `docker` recorded instead of run).

The rollback case is the one that matters: "If an Update event fails, CloudFormation will issue an additional
Update with the previous properties" (aws-cdk custom-resources README); the previous properties name an image
that exists, and the handler must answer without starting a build."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import subprocess
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from peagle_cdk.serving_image_build import CUSTOM_RESOURCE_TYPE, HANDLER_DIR

REGION = "us-east-1"
REPOSITORY = "peagle-serving-abc"
REPOSITORY_URI = f"123456789012.dkr.ecr.{REGION}.amazonaws.com/{REPOSITORY}"
PROJECT = "PeagleServingImagesProject-xyz"
MIRROR = f"123456789012.dkr.ecr.{REGION}.amazonaws.com/mirrors/vllm-openai:v0.32.0"


def _load_handler():
    spec = importlib.util.spec_from_file_location("image_build_handler", HANDLER_DIR / "index.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


handler = _load_handler()


class _Responses(BaseHTTPRequestHandler):
    received: list[dict] = []

    def do_PUT(self):  # noqa: N802 (http.server's name)
        length = int(self.headers["Content-Length"])
        type(self).received.append(
            {"content_type": self.headers.get("Content-Type"), "body": json.loads(self.rfile.read(length))}
        )
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def cloudformation():
    """A local HTTP server taking the handler's PUTs, as CloudFormation's pre-signed S3 URL would."""
    _Responses.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Responses)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/response?X-Amz-Signature=abc", _Responses.received
    server.shutdown()


@pytest.fixture(scope="module")
def build_resource(default_synth) -> dict:
    (resource,) = default_synth.resources("PeagleEndpoint", CUSTOM_RESOURCE_TYPE).values()
    return resource


def _properties(build_resource: dict, tag: str | None = None, base: str = "") -> dict:
    """The build resource's properties as CloudFormation resolves them for the handler (same keys)."""
    keys = set(build_resource["Properties"]) - {"ServiceToken", "ServiceTimeout"}
    resolved = {
        "ProjectName": PROJECT,
        "RepositoryName": REPOSITORY,
        "RepositoryUri": REPOSITORY_URI,
        "ImageTag": tag or build_resource["Properties"]["ImageTag"],
        "SourceS3Url": "s3://cdk-hnb659fds-assets-123456789012-us-east-1/context.zip",
        "BaseImage": base,
    }
    assert set(resolved) == keys, "the handler reads properties the template does not set, or the reverse"
    return resolved


def _event(request_type: str, url: str, properties: dict, **extra) -> dict:
    return {
        "RequestType": request_type,
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/peagle-endpoint/guid",
        "RequestId": "request-1",
        "LogicalResourceId": "PeagleServingImagesBuild18842C9A",
        "ResourceType": CUSTOM_RESOURCE_TYPE,
        "ResourceProperties": properties,
        **extra,
    }


def _clients():
    ecr, codebuild = boto3.client("ecr", region_name=REGION), boto3.client("codebuild", region_name=REGION)
    return ecr, Stubber(ecr), codebuild, Stubber(codebuild)


def _image_found(stubber: Stubber, tag: str) -> None:
    stubber.add_response(
        "describe_images",
        {"imageDetails": [{"repositoryName": REPOSITORY, "imageTags": [tag]}]},
        {"repositoryName": REPOSITORY, "imageIds": [{"imageTag": tag}]},
    )


def _image_missing(stubber: Stubber, tag: str) -> None:
    stubber.add_client_error(
        "describe_images",
        service_error_code="ImageNotFoundException",
        http_status_code=400,
        expected_params={"repositoryName": REPOSITORY, "imageIds": [{"imageTag": tag}]},
    )


# --- the handler ----------------------------------------------------------------------------------------------


def test_a_rollback_to_an_image_that_exists_answers_at_once_and_starts_no_build(build_resource, cloudformation):
    url, received = cloudformation
    old = _properties(build_resource, tag="peagle-000000000000000000000001")
    new = _properties(build_resource)
    # The rollback's Update carries the previous properties (the image the endpoint ran before).
    event = _event("Update", url, old, OldResourceProperties=new, PhysicalResourceId=f"{REPOSITORY}:{new['ImageTag']}")
    ecr, ecr_stub, codebuild, codebuild_stub = _clients()
    _image_found(ecr_stub, old["ImageTag"])
    with ecr_stub, codebuild_stub:  # codebuild_stub has no response queued: a StartBuild would fail the test
        handler.on_stack_event(event, None, ecr=ecr, codebuild=codebuild)
        ecr_stub.assert_no_pending_responses()
    (answer,) = received
    assert answer["content_type"] == ""  # the pre-signed URL is signed without a content type
    body = answer["body"]
    assert body["Status"] == "SUCCESS" and body["Data"] == {"ImageTag": old["ImageTag"], "Built": "false"}
    assert body["PhysicalResourceId"] == f"{REPOSITORY}:{old['ImageTag']}"
    assert (body["StackId"], body["RequestId"], body["LogicalResourceId"]) == (
        event["StackId"],
        event["RequestId"],
        event["LogicalResourceId"],
    )


def test_a_new_image_starts_one_build_and_answers_only_when_it_ends(build_resource, cloudformation):
    url, received = cloudformation
    properties = _properties(build_resource, base=MIRROR)
    ecr, ecr_stub, codebuild, codebuild_stub = _clients()
    _image_missing(ecr_stub, properties["ImageTag"])
    started = {}

    def capture(**params):
        started.update(params)

    codebuild_stub.add_response("start_build", {"build": {"id": f"{PROJECT}:1"}})
    codebuild.meta.events.register("provide-client-params.codebuild.StartBuild", lambda params, **_: capture(**params))
    with ecr_stub, codebuild_stub:
        handler.on_stack_event(_event("Create", url, properties), None, ecr=ecr, codebuild=codebuild)
    assert received == []  # CloudFormation waits for the build
    assert started["projectName"] == PROJECT
    variables = {item["name"]: item["value"] for item in started["environmentVariablesOverride"]}
    assert variables["imageTag"] == properties["ImageTag"] and variables["baseImage"] == MIRROR
    assert (
        variables["responseURL"] == url and variables["physicalResourceId"] == f"{REPOSITORY}:{properties['ImageTag']}"
    )

    # The build ends; CodeBuild's state-change event carries the build's environment back.
    ended = _build_event("SUCCEEDED", started["environmentVariablesOverride"])
    ecr, ecr_stub, _, _ = _clients()
    _image_found(ecr_stub, properties["ImageTag"])
    with ecr_stub:
        handler.on_build_finished(ended, ecr=ecr)
    (answer,) = received
    assert answer["body"]["Status"] == "SUCCESS" and answer["body"]["Data"] == {"ImageTag": properties["ImageTag"]}
    assert answer["body"]["RequestId"] == "request-1"


@pytest.mark.parametrize("status", ["FAILED", "TIMED_OUT", "STOPPED", "FAULT"])
def test_a_build_that_ends_otherwise_fails_the_resource_with_its_log(build_resource, cloudformation, status):
    url, received = cloudformation
    properties = _properties(build_resource)
    variables = [
        {"name": name, "value": value, "type": "PLAINTEXT"}
        for name, value in {
            "responseURL": url,
            "stackId": "arn:stack",
            "requestId": "request-2",
            "logicalResourceId": "Build",
            "physicalResourceId": f"{REPOSITORY}:{properties['ImageTag']}",
            "repositoryUri": REPOSITORY_URI,
            "repositoryName": REPOSITORY,
            "imageTag": properties["ImageTag"],
        }.items()
    ]
    handler.on_build_finished(_build_event(status, variables), ecr=None)  # no AWS call on this path
    (answer,) = received
    assert answer["body"]["Status"] == "FAILED"
    assert (
        f"ended {status}" in answer["body"]["Reason"]
        and "https://console.aws.amazon.com/cloudwatch" in answer["body"]["Reason"]
    )


def test_a_build_not_started_by_cloudformation_is_ignored(cloudformation):
    _, received = cloudformation
    handler.on_build_finished(_build_event("FAILED", [{"name": "other", "value": "x", "type": "PLAINTEXT"}]))
    handler.on_build_finished(_build_event("IN_PROGRESS", []))
    assert received == []


def test_delete_does_nothing_and_answers(build_resource, cloudformation):
    url, received = cloudformation
    event = _event("Delete", url, _properties(build_resource), PhysicalResourceId=f"{REPOSITORY}:peagle-1")
    handler.on_stack_event(event, None, ecr=object(), codebuild=object())  # any AWS call would raise
    (answer,) = received
    assert answer["body"]["Status"] == "SUCCESS" and answer["body"]["PhysicalResourceId"] == f"{REPOSITORY}:peagle-1"


def test_start_build_denied_while_iam_propagates_is_retried_then_answered(build_resource, cloudformation, monkeypatch):
    url, received = cloudformation
    monkeypatch.setattr(handler, "ACCESS_DENIED_BACKOFF_SECONDS", (0, 0))
    properties = _properties(build_resource)
    ecr, ecr_stub, codebuild, codebuild_stub = _clients()
    _image_missing(ecr_stub, properties["ImageTag"])
    for _ in range(3):  # the first try and two retries, all denied
        codebuild_stub.add_client_error("start_build", service_error_code="AccessDeniedException", http_status_code=400)
    with ecr_stub, codebuild_stub:
        handler.on_stack_event(_event("Create", url, properties), None, ecr=ecr, codebuild=codebuild)
        codebuild_stub.assert_no_pending_responses()
    (answer,) = (
        received  # never silent: the library used before returned without answering, CloudFormation waited an hour
    )
    assert answer["body"]["Status"] == "FAILED" and "AccessDeniedException" in answer["body"]["Reason"]


def _build_event(status: str, variables: list[dict]) -> dict:
    return {
        "source": "aws.codebuild",
        "detail-type": "CodeBuild Build State Change",
        "detail": {
            "build-status": status,
            "project-name": PROJECT,
            "build-id": f"arn:aws:codebuild:{REGION}:123456789012:build/{PROJECT}:1",
            "additional-information": {
                "environment": {"environment-variables": variables},
                "logs": {"deep-link": "https://console.aws.amazon.com/cloudwatch/home?region=us-east-1#logEvent:1"},
            },
        },
    }


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
