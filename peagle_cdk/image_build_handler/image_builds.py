"""What ECR and CodeBuild say about one serving image: is its tag in the repository, which build of it is running,
starting one idempotently, and how a build stands. The handler's SDK edge (peagle_cdk/image_build_handler/index.py
decides what to do with the answers); stdlib and the Lambda runtime's boto3 only.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

# A build's end states: CodeBuild API reference, Build.buildStatus "Valid Values: SUCCEEDED | FAILED | FAULT |
# TIMED_OUT | IN_PROGRESS | STOPPED", less IN_PROGRESS (botocore codebuild service-2.json, StatusType).
ENDED = frozenset({"SUCCEEDED", "FAILED", "FAULT", "STOPPED", "TIMED_OUT"})
RUNNING = "IN_PROGRESS"
# StartBuild right after the handler's role policy is created can be denied while IAM propagates it; the retries
# (59 s in all) stay well inside the idempotency token's "valid for 5 minutes", so a retried start is the same build.
ACCESS_DENIED_BACKOFF_SECONDS = (2, 4, 8, 15, 15, 15)
# The build's variables that say which image it builds (the build spec reads them: peagle_cdk/serving_image_build.py
# BUILD_SPEC). Nothing of the CloudFormation request goes into a build: PLAINTEXT variables "can be displayed in
# plain text using the CodeBuild console and the CLI" (botocore codebuild service-2.json, EnvironmentVariable.value).
IMAGE_VARIABLES = ("repositoryName", "imageTag")


@dataclass(frozen=True)
class Image:
    """The image a build resource asks for, from its properties (peagle_cdk/serving_image_build.py)."""

    project: str
    repository: str
    repository_uri: str
    tag: str
    source_s3_url: str
    base: str

    @classmethod
    def from_properties(cls, properties: dict[str, Any]) -> Image:
        return cls(
            project=properties["ProjectName"],
            repository=properties["RepositoryName"],
            repository_uri=properties["RepositoryUri"],
            tag=properties["ImageTag"],
            source_s3_url=properties["SourceS3Url"],
            base=properties.get("BaseImage", ""),
        )

    @property
    def name(self) -> str:
        """The resource's physical id and what the answers name: <repository>:<tag>."""
        return f"{self.repository}:{self.tag}"

    def build_variables(self) -> list[dict[str, str]]:
        """The build's environment: what to build and from what, the same on every call for the same image (a
        repeated StartBuild with the same token must not "change a parameter")."""
        values = {
            "repositoryUri": self.repository_uri,
            "repositoryName": self.repository,
            "imageTag": self.tag,
            "sourceS3Url": self.source_s3_url,
            "baseImage": self.base,
        }
        return [{"name": name, "value": value, "type": "PLAINTEXT"} for name, value in values.items()]


@dataclass(frozen=True)
class BuildState:
    status: str
    log_link: str

    @property
    def ended(self) -> bool:
        return self.status in ENDED


def idempotency_token(event: dict[str, Any]) -> str:
    """The same CloudFormation request gives the same token: StartBuild's idempotencyToken, "A unique, case
    sensitive identifier you provide to ensure the idempotency of the StartBuild request. The token is included in
    the StartBuild request and is valid for 5 minutes. If you repeat the StartBuild request with the same token, but
    change a parameter, CodeBuild returns a parameter mismatch error" (botocore codebuild service-2.json,
    StartBuildInput.idempotencyToken). A duplicate delivery of the request ("it's possible for it to receive the same
    event from Lambda multiple times", Lambda Developer Guide, "How Lambda handles errors and retries with
    asynchronous invocation") or a retried start within those 5 minutes is the same build."""
    request = [event["StackId"], event["LogicalResourceId"], event["RequestId"]]
    return hashlib.sha256(json.dumps(request).encode()).hexdigest()


def image_exists(ecr: Any, image: Image) -> bool:
    try:
        ecr.describe_images(repositoryName=image.repository, imageIds=[{"imageTag": image.tag}])
    except ClientError as error:
        if error.response["Error"]["Code"] == "ImageNotFoundException":
            return False
        raise
    return True


def running_build(codebuild: Any, image: Image) -> str | None:
    """A build of this image into this repository that is still running (the newest first), to watch instead of
    starting a second: a redeploy after CloudFormation gave up on a build that goes on, or a duplicate request after
    its token expired. ListBuildsForProject's first page holds the project's 100 newest builds ("If this is not
    specified, the results are sorted in descending order"; sortOrder is not given because "If the project has more
    than 100 builds, setting the sort order will result in an error", botocore codebuild service-2.json,
    ListBuildsForProjectInput.sortOrder): a build still running started within the queue and build timeouts, far
    fewer than 100 builds ago for one stack's builder. A build missed here is only a second build: whichever pushes
    the tag first, every answer checks the tag (index.py)."""
    ids = codebuild.list_builds_for_project(projectName=image.project).get("ids", [])
    if not ids:
        return None
    for build in codebuild.batch_get_builds(ids=ids[:100]).get("builds", []):  # BatchGetBuilds takes 1-100 ids
        if build.get("buildStatus") == RUNNING and _builds(build, image):
            return build["id"]
    return None


def _builds(build: dict[str, Any], image: Image) -> bool:
    variables = {
        item.get("name"): item.get("value") for item in build.get("environment", {}).get("environmentVariables", [])
    }
    wanted = {"repositoryName": image.repository, "imageTag": image.tag}
    return all(variables.get(name) == wanted[name] for name in IMAGE_VARIABLES)


def start_build(codebuild: Any, image: Image, token: str, *, sleep: Callable[[float], None] = time.sleep) -> str:
    """StartBuild of the image with the request's idempotency token; AccessDeniedException retried while IAM
    propagates the handler's new policy, any other error raised."""
    for attempt, pause in enumerate((*ACCESS_DENIED_BACKOFF_SECONDS, None)):
        try:
            response = codebuild.start_build(
                projectName=image.project,
                environmentVariablesOverride=image.build_variables(),
                idempotencyToken=token,
            )
            return response["build"]["id"]
        except ClientError as error:
            if error.response["Error"]["Code"] != "AccessDeniedException" or pause is None:
                raise
            print(json.dumps({"retry": attempt + 1, "error": "AccessDeniedException"}))
            sleep(pause)
    raise AssertionError("unreachable")


def build_state(codebuild: Any, build_id: str) -> BuildState | None:
    """How the build stands, or None when CodeBuild could not say this time (the watch asks again)."""
    try:
        builds = codebuild.batch_get_builds(ids=[build_id]).get("builds", [])
    except (ClientError, BotoCoreError) as error:
        print(json.dumps({"build": build_id, "unknown": repr(error)}))
        return None
    if not builds:
        return None
    build = builds[0]
    return BuildState(build.get("buildStatus", RUNNING), build.get("logs", {}).get("deepLink", ""))
