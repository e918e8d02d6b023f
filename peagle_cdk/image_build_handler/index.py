"""The serving image's in-account build, as a CloudFormation custom resource (peagle_cdk/serving_image_build.py).

Runs in AWS Lambda (Python runtime, stdlib plus the runtime's boto3) and answers two kinds of event:

- CloudFormation's Create and Update of a ``Custom::PeagleServingImageBuild``: the image is named by its
  tag, the hash of what it is built from, so the answer is idempotent. If the repository already holds
  that tag (a redeploy of an unchanged context, the rollback of a failed update, a second endpoint on the
  same context), the resource succeeds at once and nothing is pulled or built. Otherwise a CodeBuild
  build starts and CloudFormation is answered when it ends. Delete does nothing: images outlive the
  resource that asked for them (the repository's lifecycle rule says which go, and never a tagged one).
- CodeBuild's "Build State Change" event for a build that ended (EventBridge): the answer to the request
  that started it, SUCCESS only when the tag is in the repository, FAILED with the build's status and a
  link to its log otherwise, whatever stopped it (a failed command, the build timeout, the queue timeout,
  a stop by hand), so CloudFormation never waits out its own timeout for a build that is over.

Every request is answered, errors included: "If the custom resource provider does not respond, the stack
operation waits until the timeout ... expires" (CloudFormation User Guide, "Custom resources", response
objects; the ServiceTimeout property, 1 to 3600 seconds).
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import boto3
from botocore.exceptions import ClientError

# The build's environment variables that carry the request to answer (set by start_build, read back from the
# build's state-change event: its detail's "additional-information" holds "environment" with
# "environment-variables", and "logs" with "deep-link"; CodeBuild User Guide, "Build notifications input format
# reference", https://docs.aws.amazon.com/codebuild/latest/userguide/sample-build-notifications.html).
REQUEST_VARIABLES = ("responseURL", "stackId", "requestId", "logicalResourceId", "physicalResourceId")
# A build's end states: CodeBuild API reference, Build.buildStatus "Valid Values: SUCCEEDED | FAILED | FAULT |
# TIMED_OUT | IN_PROGRESS | STOPPED", less IN_PROGRESS.
TERMINAL_STATUSES = frozenset({"SUCCEEDED", "FAILED", "FAULT", "STOPPED", "TIMED_OUT"})
# A response body over 4096 bytes is refused ("The total size of the response body can't exceed 4096 bytes",
# CloudFormation User Guide, "Custom resource response objects").
MAX_REASON = 1500
# StartBuild right after the role's policy is created can be denied while IAM propagates it.
ACCESS_DENIED_BACKOFF_SECONDS = (2, 4, 8, 15, 15, 15)


def handler(event: dict[str, Any], context: Any) -> None:
    if event.get("source") == "aws.codebuild":
        on_build_finished(event)
    else:
        on_stack_event(event, context)


# --- CloudFormation ----------------------------------------------------------------------------------------


def on_stack_event(event: dict[str, Any], context: Any, *, ecr=None, codebuild=None) -> None:
    """Answer at once (Delete, or the tag exists), start the build, or answer FAILED with why."""
    request = {name: event.get(key) for name, key in zip(REQUEST_VARIABLES, _EVENT_KEYS, strict=True)}
    try:
        if event["RequestType"] == "Delete":
            respond(request, "SUCCESS", "Nothing to delete: the image stays in its repository.")
            return
        properties = event["ResourceProperties"]
        repository, tag = properties["RepositoryName"], properties["ImageTag"]
        request["physicalResourceId"] = f"{repository}:{tag}"
        if image_exists(ecr or boto3.client("ecr"), repository, tag):
            respond(
                request,
                "SUCCESS",
                f"{repository}:{tag} exists already: nothing to build.",
                data={"ImageTag": tag, "Built": "false"},
            )
            return
        build_id = start_build(codebuild or boto3.client("codebuild"), properties, request)
        print(json.dumps({"started": build_id, "image": f"{repository}:{tag}"}))
    except Exception as error:  # every request gets an answer, or CloudFormation waits out its timeout
        print(json.dumps({"error": repr(error)}))
        respond(request, "FAILED", f"{type(error).__name__}: {error}")


# The request's fields in a CloudFormation event, in REQUEST_VARIABLES' order.
_EVENT_KEYS = ("ResponseURL", "StackId", "RequestId", "LogicalResourceId", "PhysicalResourceId")


def image_exists(ecr, repository: str, tag: str) -> bool:
    try:
        ecr.describe_images(repositoryName=repository, imageIds=[{"imageTag": tag}])
    except ClientError as error:
        if error.response["Error"]["Code"] == "ImageNotFoundException":
            return False
        raise
    return True


def start_build(codebuild, properties: dict[str, Any], request: dict[str, Any]) -> str:
    """StartBuild with the image to build and the request to answer in the build's environment."""
    variables = {
        **request,
        "repositoryUri": properties["RepositoryUri"],
        "repositoryName": properties["RepositoryName"],
        "imageTag": properties["ImageTag"],
        "sourceS3Url": properties["SourceS3Url"],
        "baseImage": properties.get("BaseImage", ""),
    }
    override = [{"name": name, "value": str(value), "type": "PLAINTEXT"} for name, value in variables.items()]
    for attempt, pause in enumerate((*ACCESS_DENIED_BACKOFF_SECONDS, None)):
        try:
            response = codebuild.start_build(
                projectName=properties["ProjectName"], environmentVariablesOverride=override
            )
            return response["build"]["id"]
        except ClientError as error:
            if error.response["Error"]["Code"] != "AccessDeniedException" or pause is None:
                raise
            print(json.dumps({"retry": attempt + 1, "error": "AccessDeniedException"}))
            time.sleep(pause)
    raise AssertionError("unreachable")


# --- CodeBuild -----------------------------------------------------------------------------------------------


def on_build_finished(event: dict[str, Any], *, ecr=None) -> None:
    """The answer to the request that started this build (a build started otherwise is ignored)."""
    detail = event.get("detail", {})
    status = detail.get("build-status")
    information = detail.get("additional-information", {})
    variables = {
        item["name"]: item.get("value", "")
        for item in information.get("environment", {}).get("environment-variables", [])
    }
    if status not in TERMINAL_STATUSES or not variables.get("responseURL"):
        return
    request = {name: variables.get(name) for name in REQUEST_VARIABLES}
    image = f"{variables['repositoryUri']}:{variables['imageTag']}"
    log = information.get("logs", {}).get("deep-link", "")
    if status == "SUCCEEDED":
        if image_exists(ecr or boto3.client("ecr"), variables["repositoryName"], variables["imageTag"]):
            respond(request, "SUCCESS", f"built and pushed {image}", data={"ImageTag": variables["imageTag"]})
            return
        reason = f"the build succeeded but {image} is not in the repository; its log: {log}"
    else:
        reason = f"the serving image build {detail.get('build-id', '')} ended {status}; its log: {log}"
    respond(request, "FAILED", reason)


# --- the answer ----------------------------------------------------------------------------------------------


def respond(request: dict[str, Any], status: str, reason: str, *, data: dict[str, str] | None = None) -> None:
    """PUT the response object to the pre-signed URL CloudFormation gave (Status, Reason, PhysicalResourceId,
    StackId, RequestId, LogicalResourceId, Data)."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:MAX_REASON],
            "PhysicalResourceId": request.get("physicalResourceId") or request.get("logicalResourceId"),
            "StackId": request["stackId"],
            "RequestId": request["requestId"],
            "LogicalResourceId": request["logicalResourceId"],
            "Data": data or {},
        }
    ).encode()
    put = urllib.request.Request(
        request["responseURL"], data=body, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(body))}
    )
    with urllib.request.urlopen(put, timeout=30) as answer:
        print(json.dumps({"responded": status, "http": answer.status}))
