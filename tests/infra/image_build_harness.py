"""The in-account build's handler (peagle_cdk/image_build_handler/) run as Lambda would run it, for the tests: its
own modules imported from the function's code directory, ECR, CodeBuild and Lambda stubbed at the SDK edge with
botocore's Stubber, a real HTTP server standing in for CloudFormation's pre-signed response URL, and a clock and a
Lambda context that the tests move (a poll's sleep advances the clock, so a 57-minute watch runs in milliseconds)."""

from __future__ import annotations

import importlib
import json
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
from botocore.stub import ANY, Stubber

from peagle_cdk.serving_image_build import CUSTOM_RESOURCE_TYPE, HANDLER_DIR

# The function's code directory is its import root in Lambda ("index.handler"): its modules import each other by name.
if str(HANDLER_DIR) not in sys.path:
    sys.path.insert(0, str(HANDLER_DIR))
index = importlib.import_module("index")
image_builds = importlib.import_module("image_builds")
cfn_answer = importlib.import_module("cfn_answer")

REGION = "us-east-1"
ACCOUNT = "123456789012"
REPOSITORY = "peagle-serving-abc"
REPOSITORY_URI = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{REPOSITORY}"
PROJECT = "peagle-endpoint-serving-images"
FUNCTION = "peagle-endpoint-PeagleServingImagesHandler-abc"
TAG = "peagle-0123456789abcdef01234567"
WATCH_SECONDS = 57 * 60
POLL_SECONDS = 20
LOG_LINK = "https://console.aws.amazon.com/cloudwatch/home?region=us-east-1#logEvent:1"


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


class CloudFormation:
    """A local HTTP server taking the handler's PUTs, as CloudFormation's pre-signed S3 URL would."""

    def __enter__(self) -> CloudFormation:
        _Responses.received = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Responses)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/response?X-Amz-Signature=secret-signature"
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()

    @property
    def answers(self) -> list[dict]:
        return [item["body"] for item in _Responses.received]

    @property
    def puts(self) -> list[dict]:
        return list(_Responses.received)


@dataclass
class Clock:
    """now() for the handler; sleep() moves it on, as a poll's wait would."""

    t: float = 1_800_000_000.0
    sleeps: list[float] = field(default_factory=list)

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds


@dataclass
class Context:
    """The Lambda context the handler reads: its function's name and the time left in this invocation."""

    clock: Clock
    seconds: float = 900.0
    function_name: str = FUNCTION

    def __post_init__(self) -> None:
        self.ends = self.clock.now() + self.seconds

    def get_remaining_time_in_millis(self) -> int:
        return int((self.ends - self.clock.now()) * 1000)


class Edge:
    """ECR, CodeBuild and Lambda clients with a Stubber each: queue what AWS answers, then run the handler."""

    def __init__(self) -> None:
        self.ecr = boto3.client("ecr", region_name=REGION)
        self.codebuild = boto3.client("codebuild", region_name=REGION)
        self.lambda_ = boto3.client("lambda", region_name=REGION)
        self.stubs = [Stubber(client) for client in (self.ecr, self.codebuild, self.lambda_)]
        self.ecr_stub, self.codebuild_stub, self.lambda_stub = self.stubs
        self.started: list[dict] = []
        self.invoked: list[dict] = []
        self.codebuild.meta.events.register("provide-client-params.codebuild.StartBuild", self._record_start)
        self.lambda_.meta.events.register("provide-client-params.lambda.Invoke", self._record_invoke)
        # Every call is counted before the Stubber answers it: a call nothing was queued for fails the test even where
        # the handler treats an SDK error as "ask again" (image_builds.build_state).
        self.queued: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        for client in (self.ecr, self.codebuild, self.lambda_):
            client.meta.events.register_first("before-call.*.*", self._count)

    def _count(self, model, **_):
        self.calls[model.name] += 1

    def _record_start(self, params, **_):
        self.started.append(dict(params))

    def _record_invoke(self, params, **_):
        self.invoked.append(json.loads(params["Payload"]))

    @property
    def clients(self):
        return index.Clients(self.ecr, self.codebuild, self.lambda_)

    def __enter__(self) -> Edge:
        for stub in self.stubs:
            stub.activate()
        return self

    def __exit__(self, *exc) -> None:
        for stub in self.stubs:
            stub.deactivate()

    def assert_all_used(self) -> None:
        for stub in self.stubs:
            stub.assert_no_pending_responses()
        assert self.calls == self.queued, f"called {dict(self.calls)}, queued {dict(self.queued)}"

    def start_denied(self) -> None:
        self.queued["StartBuild"] += 1
        self.codebuild_stub.add_client_error(
            "start_build", service_error_code="AccessDeniedException", http_status_code=400
        )

    # --- what AWS answers ------------------------------------------------------------------------------------------

    def image_found(self, tag: str = TAG) -> None:
        self.queued["DescribeImages"] += 1
        self.ecr_stub.add_response(
            "describe_images",
            {"imageDetails": [{"repositoryName": REPOSITORY, "imageTags": [tag]}]},
            {"repositoryName": REPOSITORY, "imageIds": [{"imageTag": tag}]},
        )

    def image_missing(self, tag: str = TAG) -> None:
        self.queued["DescribeImages"] += 1
        self.ecr_stub.add_client_error(
            "describe_images",
            service_error_code="ImageNotFoundException",
            http_status_code=400,
            expected_params={"repositoryName": REPOSITORY, "imageIds": [{"imageTag": tag}]},
        )

    def builds_listed(self, *builds: dict) -> None:
        """ListBuildsForProject, newest first, then BatchGetBuilds of those (none listed: no BatchGetBuilds)."""
        ids = [build["id"] for build in builds]
        self.queued["ListBuildsForProject"] += 1
        self.queued["BatchGetBuilds"] += 1 if ids else 0
        listed = {"ids": ids} if ids else {}  # the model's BuildIds hold 1-100 ids: none listed is no "ids"
        self.codebuild_stub.add_response("list_builds_for_project", listed, {"projectName": PROJECT})
        if ids:
            self.codebuild_stub.add_response("batch_get_builds", {"builds": list(builds)}, {"ids": ids})

    def listing_refused(self) -> None:
        self.queued["ListBuildsForProject"] += 1
        self.codebuild_stub.add_client_error(
            "list_builds_for_project", service_error_code="AccessDeniedException", http_status_code=400
        )

    def build_polled(self, build_id: str, status: str, tag: str = TAG) -> None:
        self.queued["BatchGetBuilds"] += 1
        self.codebuild_stub.add_response(
            "batch_get_builds", {"builds": [build_record(build_id, status, tag)]}, {"ids": [build_id]}
        )

    def build_started(self, build_id: str, token: str) -> None:
        self.queued["StartBuild"] += 1
        self.codebuild_stub.add_response(
            "start_build",
            {"build": {"id": build_id}},
            {"projectName": PROJECT, "environmentVariablesOverride": ANY, "idempotencyToken": token},
        )

    def watcher_invoked(self) -> None:
        self.queued["Invoke"] += 1
        self.lambda_stub.add_response(
            "invoke", {"StatusCode": 202}, {"FunctionName": FUNCTION, "InvocationType": "Event", "Payload": ANY}
        )


def build_record(build_id: str, status: str, tag: str = TAG) -> dict:
    """A build as BatchGetBuilds returns it: its status, its log link, and the variables the handler gave it."""
    variables = [
        {"name": "repositoryUri", "value": REPOSITORY_URI, "type": "PLAINTEXT"},
        {"name": "repositoryName", "value": REPOSITORY, "type": "PLAINTEXT"},
        {"name": "imageTag", "value": tag, "type": "PLAINTEXT"},
    ]
    return {
        "id": build_id,
        "buildStatus": status,
        "logs": {"deepLink": LOG_LINK},
        "environment": {
            "type": "LINUX_CONTAINER",
            "image": "aws/codebuild/standard:7.0",
            "computeType": "BUILD_GENERAL1_MEDIUM",
            "environmentVariables": variables,
        },
    }


def properties(build_resource: dict, tag: str = TAG, base: str = "") -> dict:
    """The build resource's properties as CloudFormation resolves them for the handler (the template's keys)."""
    keys = set(build_resource["Properties"]) - {"ServiceToken", "ServiceTimeout"}
    resolved = {
        "ProjectName": PROJECT,
        "RepositoryName": REPOSITORY,
        "RepositoryUri": REPOSITORY_URI,
        "ImageTag": tag,
        "SourceS3Url": "s3://cdk-hnb659fds-assets-123456789012-us-east-1/context.zip",
        "BaseImage": base,
    }
    assert set(resolved) == keys, "the handler reads properties the template does not set, or the reverse"
    return resolved


def stack_event(request_type: str, url: str, resource_properties: dict, request_id: str = "request-1", **extra) -> dict:
    return {
        "RequestType": request_type,
        "ResponseURL": url,
        "StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/peagle-endpoint/guid",
        "RequestId": request_id,
        "LogicalResourceId": "PeagleServingImagesBuild18842C9A",
        "ResourceType": CUSTOM_RESOURCE_TYPE,
        "ResourceProperties": resource_properties,
        **extra,
    }


def timing(clock: Clock) -> Any:
    return index.Timing(WATCH_SECONDS, POLL_SECONDS, now=clock.now, sleep=clock.sleep)
