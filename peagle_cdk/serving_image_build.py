"""The serving image built inside the account during `cdk deploy`: no Docker on the deploying machine and no
multi-gigabyte push from it, and a build that cannot fail a deploy whose image exists, cannot be answered by anyone
else, and is safe to redeploy and roll back.

How it works. The build context (inference_image/, a few hundred KB) is uploaded as an S3 file asset. A custom
resource (``Custom::PeagleServingImageBuild``, handled by peagle_cdk/image_build_handler/) names the image by its
**tag, the hash of what it is built from** (the context's files as Docker reads them, the platform, the vLLM base,
this module's build recipe): the same context gives the same tag on every synth. On Create or Update the handler
asks ECR whether the repository holds that tag; if it does, the resource succeeds in seconds and nothing is pulled or
built, so a redeploy of an unchanged context, a second endpoint on the same context, and a **rollback** all cost
nothing ("If an Update event fails, CloudFormation will issue an additional Update with the previous properties",
aws-cdk packages/aws-cdk-lib/custom-resources/README.md: the previous properties name the previous tag, which
exists). Otherwise it watches a CodeBuild build of that image, adopting one still running or starting one, and
answers when the build ends, **checking the tag before any answer**.

The races it is built for (each has a test in tests/infra/test_image_build_races.py):

- CloudFormation invokes the handler asynchronously, and "it's possible for it to receive the same event from Lambda
  multiple times" (Lambda Developer Guide, "How Lambda handles errors and retries with asynchronous invocation"): the
  build starts with an ``idempotencyToken`` derived from the request, "valid for 5 minutes" (botocore codebuild
  service-2.json, StartBuildInput), and a build of the same image still running is adopted before any start, so a
  duplicate request is the same build.
- The repository's tags are immutable, so of two builds of one tag the second push fails (a redeploy while a build
  CloudFormation gave up on still runs, a build not adopted): the handler answers from the tag, not from the build's
  status, so a build that failed after another pushed the tag is a SUCCESS.
- CodeBuild's "Build State Change" events are delivered "best effort" (EventBridge): nothing here waits for one.
  The handler polls the build (BatchGetBuilds) and, a minute before its own 15-minute timeout, hands the watch to a
  new invocation of itself; two independent watch chains run per request, so one lost invocation breaks neither
  ("If your function does not have enough capacity to keep up with the queue, events may be lost", botocore lambda
  service-2.json, Invoke). A chain is at most ~5 invocations, below the 16 at which Lambda stops a recursive chain.
- The request's ResponseURL lets whoever holds it answer for the stack. It reaches no build (the builds' variables
  name the image only), no log line and no other service: it travels only in the events this function receives.

Why not CDK's Provider framework (aws_cdk.custom_resources.Provider with an is_complete_handler), read in aws-cdk-lib
2.275.0 (custom-resources/README.md and lib/provider-framework/runtime/framework.js as the jsii package ships them):

- It moves the ResponseURL from the build's variables to Step Functions: its onEvent starts the waiter with ``input:
  JSON.stringify(resourceEvent)``, the URL included, and its README says so: "the Custom Resource Provider Framework
  will write the value of ResponseURL ... in a readable form to the AWS Step Functions execution history. Anybody who
  can list and read AWS StepFunction executions in your account will be able to write a fake response to this URL".
  The fix (the URL in SSM Parameter Store) is aws/aws-cdk pull request #38652, open, for issue #21224, open since 2022
  ("Security has deemed this a medium priority security issue").
- It does not absorb duplicate deliveries: each delivery of the request invokes the user's onEvent and starts one more
  waiter execution (StartExecution without a name), so the idempotent start would still be this handler's.
- Its total timeout gains nothing: "The maximum timeout is 1 hour" (provider.d.ts, totalTimeout), CloudFormation's
  own ServiceTimeout ceiling (3600 s).
- A switch would change every build resource's ServiceToken, which the resource schema makes create-only
  (AWS::CloudFormation::CustomResource, createOnlyProperties ["/properties/ServiceToken"], as cfn-lint ships it) and
  CloudFormation refuses on update ("Modifying service token is not allowed", e.g. aws/aws-pdk pull request #501):
  every stack deployed with this builder would fail its next update.
- Cost is not what decides: a poll of the framework is a state transition ("each retry will be charged as an
  additional state transition", $0.025 per 1,000 in us-east-1, https://aws.amazon.com/step-functions/pricing/) and
  two Lambda invocations (the framework's isComplete and the user's); this watch is at most two 128 MB functions for
  the build's length, 2 x 0.125 GB x 3,420 s = 855 GB-seconds, about $0.014 a build at "$0.00001667 for every
  GB-second" ("How AWS Pricing Works", Lambda), nothing while no build runs.

Trust policies, with the confused-deputy conditions each service documents:

- CodeBuild's service role may be assumed by codebuild.amazonaws.com for this stack's project only:
  ``aws:SourceAccount`` and ``aws:SourceArn`` on the project's ARN (each with IfExists: codebuild_principal says
  why), the form CodeBuild's requests
  carry ("ArnLike": {"aws:SourceArn": "arn:aws:codebuild:region:123456789012:project/project-name"}, "StringEquals":
  {"aws:SourceAccount": "123456789012"} for codebuild.amazonaws.com: Amazon ECR User Guide, "Cross-service confused
  deputy prevention"; the same pair in the CodeBuild User Guide's "Amazon ECR sample"). The CodeBuild User Guide's
  own page for it, https://docs.aws.amazon.com/codebuild/latest/userguide/cross-service-confused-deputy-prevention.html,
  was found by title only, not read. The project ARN is built from a name this module gives the project
  (``<stack name>-serving-images``): the project's GetAtt in its own role's trust policy would be a circular
  dependency (the project names the role).
- The handler's role (lambda.amazonaws.com) has none: Lambda's execution-role page asks only that "the role's trust
  policy must specify the Lambda service principal" (Lambda Developer Guide, "Lambda execution role"), and a condition
  Lambda did not satisfy would stop every build answer.
- The pull-through cache's repository-creation role (ecr.amazonaws.com, serving_image_cache.py) has none: the ECR
  User Guide's trust policy for it has no condition ("Create an IAM role for repository creation templates").

One builder per stack (``ServingImageBuilds``, a child of the stack): one CodeBuild project and role, one handler,
one repository for the images it builds unless you give one, one pull-through cache rule (with its repository
creation template) per Docker Hub secret, and one build per distinct image, however many endpoints use it. The build
role reads exactly the build contexts' objects (s3:GetObject on each object's ARN), so two contexts in one stack never
block each other (the deploy-time-build library used before granted the whole assets bucket and narrowed it with a
Deny per build under one Sid; two such Denies blocked both builds: "an explicit deny in any policy overrides any
allows", IAM User Guide, "Policy evaluation logic").

The images stay. The repository's lifecycle rule expires untagged images only, and its tags are immutable, so the
image a deployed Model names can never be expired or re-pointed: ECR lifecycle rules act on the images their
selection matches, "If you specify untagged, then you must omit both tagPrefixList and tagPatternList" and
"untagged" selects images without tags (Amazon ECR User Guide, "Lifecycle policy properties in Amazon ECR",
tagStatus, https://docs.aws.amazon.com/AmazonECR/latest/userguide/lifecycle_policy_parameters.html); an immutable
repository refuses a push that would move an existing tag ("Image tag mutability", ImageTagMutability IMMUTABLE:
"all image tags within the repository will be immutable which will prevent them from being overwritten", CreateRepository
API reference). A new image shares the vLLM base's layers with the last one: a push skips layers the repository
has ("When an image is pushed to a repository, each image layer is checked to verify if it has been uploaded
before. If it has been uploaded, then the image layer is skipped", ECR API reference, BatchCheckLayerAvailability).
docs/deployment.md says how to delete images no Model uses.

The time budget. CloudFormation waits at most an hour for a custom resource (ServiceTimeout: "The maximum time,
in seconds, that can elapse before a custom resource operation times out. The value must be an integer from 1 to
3600. The default value is 3600 seconds", AWS::CloudFormation::CustomResource). A build may queue for
QUEUED_TIMEOUT and run for BUILD_TIMEOUT (CodeBuild project TimeoutInMinutes, 5-2160, default 60, and
QueuedTimeoutInMinutes, 5-480, default 480: AWS::CodeBuild::Project), so CodeBuild ends every build within 55
minutes of its start; the handler's watch lasts WATCH_BUDGET (past those, plus the minute StartBuild may retry while
IAM propagates and a poll to see the end), and the resource's ServiceTimeout is just past the watch, so the handler's
answer, with the build's log, always comes first.

Where the build pulls the pinned vLLM base from (the Dockerfile's VLLM_IMAGE build argument):

- ``BaseImage.docker_hub()`` (default): straight from Docker Hub, anonymously. Docker Hub limits unauthenticated
  pulls to "10 per IPv4 address or IPv6 /64 subnet" per hour ("Docker Hub usage and limits",
  https://docs.docker.com/docker-hub/usage/, docker/docs pull 22134), and CodeBuild's hosts share addresses:
  a build can fail with "toomanyrequests". The synth says so (an info message, not a warning).
- ``BaseImage.pull_through_cache(secret)``: through an ECR pull-through cache rule for Docker Hub, with your
  Docker Hub credentials in Secrets Manager. AWS::ECR::PullThroughCacheRule: UpstreamRegistryUrl for Docker Hub
  is "registry-1.docker.io" (CreatePullThroughCacheRule, "Docker Hub (docker-hub) – registry-1.docker.io");
  CredentialArn must match "^arn:aws:secretsmanager:[a-zA-Z0-9-:]+:secret:ecr\\-pullthroughcache\\/..." and "The
  name of the secret begins with ecr-pullthroughcache/ ... The account and Region that the secret is in must
  match the account and Region that the pull through cache rule is in" ("Creating a pull through cache rule in
  Amazon ECR", https://docs.aws.amazon.com/AmazonECR/latest/userguide/pull-through-cache-creating-rule.html).
  The rule's EcrRepositoryPrefix is its identifier in the account and region, and every property of the
  resource is create-only (the resource's CloudFormation schema, primaryIdentifier and createOnlyProperties):
  a rule whose secret changes is a new rule, which needs a prefix of its own, or its create fails on the old
  one's. So the prefix is derived from the stack and the secret ("peagle-hub-<hash>", 2-30 characters), unless you
  name one. The build's role needs "ecr:BatchImportUpstreamImage – Grants permission to retrieve the external
  image and import it to your private registry" and "ecr:CreateRepository ... required if the repository storing
  the cached images doesn't already exist" ("IAM permissions required to sync an upstream registry with an Amazon
  ECR private registry", https://docs.aws.amazon.com/AmazonECR/latest/userguide/pull-through-cache-iam.html), on
  the cache's repositories only. The repositories the cache creates get a lifecycle and the stack's encryption from
  a repository creation template for the rule's prefix (serving_image_cache.py).
- ``BaseImage.existing_pull_through_cache(prefix)``: a Docker Hub pull-through cache rule you already have (its
  repositories' lifecycle is yours: docs/deployment.md, "Deleting").
- ``BaseImage.mirror(repository, tag)`` / ``mirror_uri(uri)``: from an ECR repository of yours that holds the
  base, in the endpoint's account and region (the build logs in to that one registry).

The build runs privileged, which a Docker build needs ("If set to true, enables running the Docker daemon inside a
Docker container ... This value must be set to true only if this build project will be used to build Docker
images", CodeBuild API reference, ProjectEnvironment.privilegedMode, as the AWS SDKs carry it, e.g. docs.rs
rusoto_codebuild ProjectEnvironment), on BUILD_GENERAL1_MEDIUM ("Use up to 8 GiB memory and 4 vCPUs for builds",
CodeBuild API reference, ProjectEnvironment.computeType): the vLLM base is several GB compressed, pulled, unpacked
and exported once more. Cost: on-demand Linux general1.medium is billed per build minute (AWS CodeBuild pricing,
https://aws.amazon.com/codebuild/pricing/; docs/deployment.md gives the figure). Not run on the machines this was
written on (no Docker, no AWS account): docs/testing.md says what is and is not verified.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from aws_cdk import (
    Annotations,
    Aws,
    CfnElement,
    CfnResource,
    CustomResource,
    Duration,
    FileSystem,
    IgnoreMode,
    RemovalPolicy,
    Stack,
    Token,
)
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from peagle.catalog import load_catalog
from peagle_cdk.nag import acknowledge
from peagle_cdk.serving_image_cache import CacheRepositories, nag_place
from peagle_cdk.settings_model import ECR_IMAGE

# The Dockerfile's build argument that names the vLLM base (inference_image/Dockerfile: ARG VLLM_IMAGE).
BASE_IMAGE_ARG = "VLLM_IMAGE"
DOCKER_HUB_REGISTRY_URL = "registry-1.docker.io"
PULL_THROUGH_SECRET_PREFIX = "ecr-pullthroughcache/"
_CACHE_PREFIX = re.compile(r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$")
PLATFORM = "linux/amd64"
BUILD_COMPUTE_TYPE = codebuild.ComputeType.MEDIUM
BUILD_TIMEOUT = Duration.minutes(45)
QUEUED_TIMEOUT = Duration.minutes(10)
# The handler's watch, from the request: past the queue and the build (55 minutes), the minute StartBuild may retry
# while IAM propagates, and a poll to see the end.
WATCH_BUDGET = Duration.minutes(57)
POLL_INTERVAL = Duration.seconds(20)
# CloudFormation's wait for the resource: past the watch, so the handler's answer always comes first; within 3600 s.
SERVICE_TIMEOUT = Duration.minutes(59)
# Each invocation of the handler watches up to this long, then hands the watch on: "the maximum allowed value is 900
# seconds" (AWS::Lambda::Function Timeout, the resource schema as cfn-lint ships it).
HANDLER_TIMEOUT = Duration.minutes(15)
# The handler's settings (peagle_cdk/image_build_handler/index.py reads them by these names).
WATCH_SECONDS_VARIABLE = "PEAGLE_BUILD_WATCH_SECONDS"
POLL_SECONDS_VARIABLE = "PEAGLE_BUILD_POLL_SECONDS"
# The project's name, from the stack's: its ARN is in the role's trust policy, which cannot reference the project.
PROJECT_NAME_SUFFIX = "-serving-images"
# The handler's resource-policy statement that lets the watch invoke the function again.
WATCH_PERMISSION_ID = "WatchHandOff"
BUILD_LOG_RETENTION = logs.RetentionDays.THREE_MONTHS
# Part of every tag: raise it when the build spec changes what an image holds, so every context builds anew.
BUILD_RECIPE = 1
TAG_PREFIX = "peagle-"
CUSTOM_RESOURCE_TYPE = "Custom::PeagleServingImageBuild"
HANDLER_DIR = Path(__file__).resolve().parent / "image_build_handler"
BUILDER_ID = "PeagleServingImages"

# buildspec version 0.2: "CodeBuild runs all commands in the same instance of the default shell" (CodeBuild User
# Guide, "Build specification reference", version), so `cd` and variables carry from one command to the next.
# The variables come from the handler's StartBuild (peagle_cdk/image_build_handler/image_builds.py, Image.build_variables):
# the image and its inputs, nothing of the CloudFormation request.
BUILD_SPEC = {
    "version": "0.2",
    "env": {"shell": "bash"},
    "phases": {
        "build": {
            "commands": [
                'echo "building $repositoryUri:$imageTag from ${baseImage:-the pinned base of the Dockerfile}"',
                'aws s3 cp "$sourceS3Url" context.zip',
                "mkdir context && cd context && unzip -q ../context.zip",
                'aws ecr get-login-password --region "$AWS_REGION" '
                '| docker login --username AWS --password-stdin "${repositoryUri%%/*}"',
                f"docker buildx build --platform {PLATFORM} --provenance=false "
                f'${{baseImage:+--build-arg "{BASE_IMAGE_ARG}=$baseImage"}} '
                '--output "type=docker,name=$repositoryUri:$imageTag" .',
                'docker push "$repositoryUri:$imageTag"',
            ]
        }
    },
}


def pinned_base() -> str:
    """The vLLM base the serving image is pinned to (peagle/catalog/runtime.yaml, serving_image.base)."""
    return load_catalog().runtime.serving_image.base


@dataclass(frozen=True)
class BuiltImage:
    image_uri: str  # the repository URI and the tag the build resource reports (so the Model waits for it)
    repository: ecr.IRepository
    tag: str


class BaseImage:
    """Where the in-account build pulls the pinned vLLM base from (the module docstring says why it matters)."""

    def __init__(self, kind: str, **options) -> None:
        self.kind, self._options = kind, options

    @staticmethod
    def docker_hub() -> BaseImage:
        """Anonymously from Docker Hub (its pull limits apply to CodeBuild's shared addresses)."""
        return BaseImage("docker_hub")

    @staticmethod
    def pull_through_cache(
        credentials: secretsmanager.ISecret | str, *, repository_prefix: str | None = None
    ) -> BaseImage:
        """Through an ECR pull-through cache rule for Docker Hub, made with the stack, with your Docker Hub
        credentials: a Secrets Manager secret (or its ARN) whose name begins with ``ecr-pullthroughcache/``, in this
        account and region, holding {"username": ..., "accessToken": ...}. ``repository_prefix``: the rule's prefix
        (default: derived from the stack and the secret, so a new secret makes a new rule beside the old one)."""
        if repository_prefix is not None:
            _check_cache_prefix("BaseImage.pull_through_cache", repository_prefix)
        return BaseImage("pull_through_cache", credentials=credentials, repository_prefix=repository_prefix)

    @staticmethod
    def existing_pull_through_cache(repository_prefix: str) -> BaseImage:
        """Through a pull-through cache rule for Docker Hub that you have already (its ECR repository prefix):
        nothing is created, the build may pull and import under that prefix."""
        _check_cache_prefix("BaseImage.existing_pull_through_cache", repository_prefix)
        return BaseImage("existing_pull_through_cache", repository_prefix=repository_prefix)

    @staticmethod
    def mirror(repository: ecr.IRepository, tag_or_digest: str) -> BaseImage:
        """From your ECR repository holding a copy of the pinned base (``tag_or_digest``: its tag, or
        ``sha256:...``), in the endpoint's account and region."""
        return BaseImage("mirror", repository=repository, tag_or_digest=tag_or_digest)

    @staticmethod
    def mirror_uri(image: str) -> BaseImage:
        """From your ECR copy of the base named by its URI (<account>.dkr.ecr.<region>.amazonaws.com/<repository>
        :<tag> or @sha256:<digest>): the deployment file's image.base_mirror."""
        found = ECR_IMAGE.match(image)
        if found is None:
            raise ValueError(f"BaseImage.mirror_uri: {image!r} is not an ECR image reference")
        return BaseImage(
            "mirror", uri=image, account=found["account"], region=found["region"], name=found["repository"]
        )

    @staticmethod
    def from_settings(settings) -> BaseImage:
        """The deployment file's image section (peagle.settings.ImageSettings): its base source."""
        if settings.pull_through_cache_secret_arn:
            return BaseImage.pull_through_cache(
                settings.pull_through_cache_secret_arn, repository_prefix=settings.pull_through_cache_prefix
            )
        if settings.pull_through_cache_prefix:
            return BaseImage.existing_pull_through_cache(settings.pull_through_cache_prefix)
        if settings.base_mirror:
            return BaseImage.mirror_uri(settings.base_mirror)
        return BaseImage.docker_hub()

    def identity(self, stack: Stack) -> str:
        """What the image is built from, for its tag: the pinned base (the same upstream image whether pulled from
        Docker Hub or through a cache), or the mirror's reference (a copy this project cannot vouch for)."""
        if self.kind != "mirror":
            return pinned_base()
        if "uri" in self._options:
            return self._options["uri"]
        reference = stack.resolve(self._options["repository"].repository_uri)
        return json.dumps([reference, self._options["tag_or_digest"]], sort_keys=True)

    def build_arg(self, builds: ServingImageBuilds) -> tuple[str, str | None]:
        """The value of the Dockerfile's base argument ('' = its pinned default) and the pull-through cache prefix
        it pulls through (None: no cache), creating what the source needs (the stack's cache rule)."""
        base, stack = pinned_base(), Stack.of(builds)
        if self.kind == "docker_hub":
            if builds.said_docker_hub:
                return "", None
            builds.said_docker_hub = True  # once per stack, however many endpoints build from Docker Hub
            Annotations.of(builds).add_info(
                f"The serving image is built in CodeBuild during `cdk deploy`, pulling {base} from Docker Hub "
                "anonymously: Docker Hub allows 10 unauthenticated pulls an hour per IPv4 address, shared by "
                "CodeBuild's hosts, so a build can fail with 'toomanyrequests'. To pull with your Docker Hub "
                "account instead, use an ECR pull-through cache (image.pull_through_cache_secret_arn in the "
                "deployment file; BaseImage.pull_through_cache(secret) in the library), or an ECR mirror."
            )
            return "", None
        if self.kind == "mirror" and "uri" in self._options:
            _check_same_place(stack, self._options["account"], self._options["region"], "image.base_mirror")
            return self._options["uri"], None
        if self.kind == "mirror":
            repository: ecr.IRepository = self._options["repository"]
            _check_repository_place(stack, repository, "BaseImage.mirror")
            reference = self._options["tag_or_digest"]
            separator = "@" if reference.startswith("sha256:") else ":"
            return f"{repository.repository_uri}{separator}{reference}", None
        prefix = self._options["repository_prefix"]
        if self.kind == "pull_through_cache":
            prefix = builds.pull_through_cache_rule(self._secret_arn(stack), prefix)
        registry = f"{Aws.ACCOUNT_ID}.dkr.ecr.{Aws.REGION}.{Aws.URL_SUFFIX}"
        # Docker Hub's own images live under library/; vllm/vllm-openai is a user repository and keeps its path.
        path = base if "/" in base.split(":", 1)[0] else f"library/{base}"
        return f"{registry}/{prefix}/{path}", prefix

    def _secret_arn(self, stack: Stack) -> str:
        credentials = self._options["credentials"]
        secret_arn = credentials if isinstance(credentials, str) else credentials.secret_arn
        if Token.is_unresolved(secret_arn):
            return secret_arn
        name = secret_arn.split(":secret:", 1)[-1]
        if not secret_arn.startswith("arn:") or not name.startswith(PULL_THROUGH_SECRET_PREFIX):
            raise ValueError(
                f"BaseImage.pull_through_cache: {secret_arn!r} is not a Secrets Manager secret ARN whose name "
                f"begins with {PULL_THROUGH_SECRET_PREFIX!r}, which ECR requires of a pull-through cache's "
                "credentials; create the secret under that prefix (in this account and region)"
            )
        parts = secret_arn.split(":")
        _check_same_place(stack, parts[4], parts[3], "the pull-through cache's secret")
        return secret_arn

    def grant_pull(self, builds: ServingImageBuilds, grantee: iam.IGrantable, cache_prefix: str | None) -> None:
        """The build's role may pull the base from where it comes (nothing to grant for Docker Hub)."""
        if self.kind == "mirror" and "uri" in self._options:
            options = self._options
            iam.Grant.add_to_principal(
                grantee=grantee,
                actions=["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
                resource_arns=[
                    f"arn:{Aws.PARTITION}:ecr:{options['region']}:{options['account']}:repository/{options['name']}"
                ],
            )
        elif self.kind == "mirror":
            self._options["repository"].grant_pull(grantee)
        elif cache_prefix is not None:
            prefix = cache_prefix
            cached = Stack.of(builds).format_arn(service="ecr", resource="repository", resource_name=f"{prefix}/*")
            iam.Grant.add_to_principal(
                grantee=grantee,
                actions=[
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:GetDownloadUrlForLayer",
                    "ecr:BatchImportUpstreamImage",
                    "ecr:CreateRepository",
                ],
                resource_arns=[cached],
            )
            acknowledge(
                builds.build_role,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ecr:{nag_place(builds)}:repository/{prefix}/*]",
                "The pull-through cache creates one repository per upstream image under its prefix on the first "
                "pull; the build may pull and import under that prefix only.",
            )


class ServingImageBuilds(Construct):
    """The stack's in-account image builder (one per stack, ``ServingImageBuilds.of(scope)``): a CodeBuild project,
    the custom-resource handler, the repository for the images unless one is given, the pull-through cache rules,
    and one build resource per distinct image."""

    @staticmethod
    def of(scope: Construct) -> ServingImageBuilds:
        stack = Stack.of(scope)
        existing = stack.node.try_find_child(BUILDER_ID)
        return existing if isinstance(existing, ServingImageBuilds) else ServingImageBuilds(stack, BUILDER_ID)

    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        self._repository: ecr.Repository | None = None
        self._builds: dict[tuple[str, str], BuiltImage] = {}
        self._cache_rules: dict[str, tuple[str, ecr.CfnPullThroughCacheRule]] = {}
        self._cache_repositories: CacheRepositories | None = None
        self.said_docker_hub = False
        self.log_group = logs.LogGroup(
            self, "BuildLogs", retention=BUILD_LOG_RETENTION, removal_policy=RemovalPolicy.RETAIN
        )
        self.project_name = Stack.of(self).stack_name + PROJECT_NAME_SUFFIX
        self.build_role = iam.Role(
            self,
            "ProjectRole",
            description="The serving image builds' CodeBuild service role (peagle_cdk/serving_image_build.py)",
            assumed_by=codebuild_principal(Stack.of(self), self.project_name),  # pyright: ignore[reportArgumentType]
        )
        self.project = codebuild.Project(
            self,
            "Project",
            project_name=self.project_name,
            role=self.build_role,  # pyright: ignore[reportArgumentType]
            description="Builds the P-EAGLE serving image during `cdk deploy` (peagle_cdk/serving_image_build.py)",
            build_spec=codebuild.BuildSpec.from_object(BUILD_SPEC),
            environment=codebuild.BuildEnvironment(
                build_image=codebuild.LinuxBuildImage.STANDARD_7_0,
                compute_type=BUILD_COMPUTE_TYPE,
                privileged=True,
            ),
            timeout=BUILD_TIMEOUT,
            queued_timeout=QUEUED_TIMEOUT,
            logging=codebuild.LoggingOptions(cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=self.log_group)),
        )
        self.handler = self._watching_handler()
        _acknowledge_builder(self)

    def _watching_handler(self) -> lambda_.Function:
        """The custom-resource handler: asks ECR for the tag, finds or starts the build, watches it and hands the
        watch to a new invocation of itself (peagle_cdk/image_build_handler/index.py)."""
        handler = lambda_.Function(
            self,
            "Handler",
            description="Answers CloudFormation for the serving image build: the tag exists, or the watched build",
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler="index.handler",
            # The modules only: a test run's bytecode cache would change the asset's hash from machine to machine.
            code=lambda_.Code.from_asset(str(HANDLER_DIR), exclude=["__pycache__", "*.pyc"]),
            timeout=HANDLER_TIMEOUT,
            environment={
                WATCH_SECONDS_VARIABLE: str(int(WATCH_BUDGET.to_seconds())),
                POLL_SECONDS_VARIABLE: str(int(POLL_INTERVAL.to_seconds())),
            },
            log_group=logs.LogGroup(
                self, "HandlerLogs", retention=BUILD_LOG_RETENTION, removal_policy=RemovalPolicy.RETAIN
            ),
        )
        # StartBuild, BatchGetBuilds and ListBuildsForProject are granted on the project: "BatchGetBuilds ... Resource:
        # arn:aws:codebuild:region-ID:account-ID:project/project-name" (CodeBuild User Guide, "AWS CodeBuild
        # permissions reference"); its identity-based policy examples scope all three to project ARNs ("Allow a User to
        # Get Information About Builds", "... a List of Build IDs for a Build Project", "... Begin Running Builds").
        handler.add_to_role_policy(
            iam.PolicyStatement(
                actions=["codebuild:StartBuild", "codebuild:BatchGetBuilds", "codebuild:ListBuildsForProject"],
                resources=[self.project.project_arn],
            )
        )
        # The watch hands itself on by invoking this function. In the function's resource policy, not its role's: the
        # role's policy would name the function, which depends on that policy (a circular dependency). "The AWS
        # service, AWS account, IAM user, or IAM role that invokes the function" (botocore lambda service-2.json,
        # AddPermission Principal); within one account either policy may allow (IAM User Guide, "Policy evaluation
        # logic").
        handler.add_permission(
            WATCH_PERMISSION_ID,
            principal=iam.ArnPrincipal(cast(iam.IRole, handler.role).role_arn),  # pyright: ignore[reportArgumentType]
            action="lambda:InvokeFunction",
        )
        # aws-cdk-lib makes the function depend on its role and the role's policy; its GetAtt of the role already
        # orders the role (cfn-lint W3005 "dependency already enforced"), the policy is the one DependsOn needed.
        cast(CfnResource, handler.node.default_child).add_override(
            "DependsOn",
            [Stack.of(self).get_logical_id(cast(CfnElement, _default_policy(handler.role).node.default_child))],
        )
        return handler

    @property
    def repository(self) -> ecr.Repository:
        """The stack's repository for the images it builds (made on first use)."""
        if self._repository is None:
            self._repository = ecr.Repository(
                self,
                "Repository",
                image_scan_on_push=True,
                encryption=ecr.RepositoryEncryption.KMS,
                image_tag_mutability=ecr.TagMutability.IMMUTABLE,
                lifecycle_rules=[
                    ecr.LifecycleRule(
                        description="untagged images only: a tagged image may be one a deployed Model runs",
                        tag_status=ecr.TagStatus.UNTAGGED,
                        max_image_age=Duration.days(1),
                    )
                ],
                # Every image in it is rebuilt from its build context on the next deploy.
                removal_policy=RemovalPolicy.DESTROY,
                empty_on_delete=True,
            )
        return self._repository

    def build(self, *, directory: Path, base: BaseImage, repository: ecr.IRepository | None) -> BuiltImage:
        """The image from ``directory`` on ``base``, pushed to ``repository`` (default: the stack's); built once
        per stack however many endpoints ask for it."""
        if repository is not None:
            _check_repository_place(Stack.of(self), repository, "ServingImage.build_in_account repository")
        target = repository or self.repository
        exclude = _dockerignore(directory)
        tag = image_tag(directory, exclude, base.identity(Stack.of(self)))
        base_arg, cache_prefix = base.build_arg(self)  # checks the source (and makes its cache rule) in any case
        key = (tag, json.dumps(Stack.of(self).resolve(target.repository_arn), sort_keys=True))
        if key in self._builds:  # the same image into the same repository: built once, by the first to ask
            return self._builds[key]
        scope = Construct(self, "Build" if not self._builds else f"Build{len(self._builds) + 1}")
        context = s3_assets.Asset(scope, "Context", path=str(directory), exclude=exclude, ignore_mode=IgnoreMode.DOCKER)
        base.grant_pull(self, self.build_role, cache_prefix)
        self.project.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"], resources=[context.bucket.arn_for_objects(context.s3_object_key)]
            )
        )
        target.grant_pull_push(self.project)
        self.handler.add_to_role_policy(
            iam.PolicyStatement(actions=["ecr:DescribeImages"], resources=[target.repository_arn])
        )
        resource = CustomResource(
            scope,
            "Resource",
            service_token=self.handler.function_arn,
            resource_type=CUSTOM_RESOURCE_TYPE,
            service_timeout=SERVICE_TIMEOUT,
            properties={
                "ProjectName": self.project.project_name,
                "RepositoryName": target.repository_name,
                "RepositoryUri": target.repository_uri,
                "ImageTag": tag,
                "SourceS3Url": context.s3_object_url,
                "BaseImage": base_arg,
            },
        )
        # The build reads its context and pushes with the project role's grants (its default policy; the project and
        # the handler themselves are referenced above), and the watch hands itself on through the function's
        # resource policy.
        resource.node.add_dependency(
            _default_policy(cast(iam.IRole, self.build_role)), self.handler.node.find_child(WATCH_PERMISSION_ID)
        )
        # A first deploy creates the cache rule, its creation template and the build together: the first pull creates
        # the cache's repository, which must find its rule and its template.
        for prefix, rule in self._cache_rules.values():
            if cache_prefix == prefix:
                resource.node.add_dependency(rule, self.cache_repositories.template_for(prefix))
        built = BuiltImage(target.repository_uri_for_tag(resource.get_att_string("ImageTag")), target, tag)
        self._builds[key] = built
        return built

    def pull_through_cache_rule(self, secret_arn: str, prefix: str | None) -> str:
        """The stack's Docker Hub pull-through cache rule for this secret (one per secret); returns its prefix."""
        secret_key = json.dumps(Stack.of(self).resolve(secret_arn), sort_keys=True)
        if secret_key in self._cache_rules:
            made, _ = self._cache_rules[secret_key]
            if prefix is not None and prefix != made:
                raise ValueError(
                    f"BaseImage.pull_through_cache: this stack's cache rule for that secret has the prefix {made!r}, "
                    f"not {prefix!r}; give every endpoint the same repository_prefix (or none)"
                )
            return made
        stack = Stack.of(self)
        prefix = prefix or "peagle-hub-" + _short_hash(stack.stack_name, secret_key, length=10)
        if any(made == prefix for made, _ in self._cache_rules.values()):
            raise ValueError(
                f"BaseImage.pull_through_cache: two secrets for one cache prefix {prefix!r}; a rule's prefix is its "
                "identity in the account and region, so give each secret its own repository_prefix"
            )
        index = len(self._cache_rules)
        rule = ecr.CfnPullThroughCacheRule(
            self,
            "DockerHubPullThroughCache" + (str(index + 1) if index else ""),
            ecr_repository_prefix=prefix,
            upstream_registry="docker-hub",
            upstream_registry_url=DOCKER_HUB_REGISTRY_URL,
            credential_arn=secret_arn,
        )
        self._cache_rules[secret_key] = (prefix, rule)
        self.cache_repositories.template_for(prefix)
        return prefix

    @property
    def cache_repositories(self) -> CacheRepositories:
        """What gives the cache rules' repositories a lifecycle and encryption (made with the first rule)."""
        if self._cache_repositories is None:
            self._cache_repositories = CacheRepositories(self, "CacheRepositories")
        return self._cache_repositories


def codebuild_principal(stack: Stack, project_name: str) -> iam.ServicePrincipal:
    """codebuild.amazonaws.com for this account's project of that name only (the module docstring quotes the
    condition's sources): the project's ARN is built from its name, not referenced, because the project names the
    role whose trust policy this is. Each key with IfExists: the CodeBuild page for the role's trust was not read
    here, and a condition on a key CodeBuild did not send would refuse every build ("If the key that you specify in a
    policy condition is not present in the request context, the values do not match and the condition is false");
    with IfExists a request that carries the keys, as CodeBuild's do toward ECR, is held to this project exactly, and
    one without them is not refused ("If the key is not present, evaluate the condition element as true", IAM User
    Guide, "IAM JSON policy elements: Condition operators")."""
    project_arn = stack.format_arn(service="codebuild", resource="project", resource_name=project_name)
    return iam.ServicePrincipal(
        "codebuild.amazonaws.com",
        conditions={
            "StringEqualsIfExists": {"aws:SourceAccount": Aws.ACCOUNT_ID},
            "ArnLikeIfExists": {"aws:SourceArn": project_arn},
        },
    )


def image_tag(directory: Path, exclude: list[str], base_identity: str) -> str:
    """The tag of the image built from ``directory`` on that base: the same inputs, the same tag, on any machine.
    The files as Docker reads them (aws_cdk.FileSystem.fingerprint with the .dockerignore rules, the same hash an
    asset of the context gets), the platform, the base and the build recipe."""
    fingerprint = FileSystem.fingerprint(str(directory), exclude=exclude, ignore_mode=IgnoreMode.DOCKER)
    return TAG_PREFIX + _short_hash(fingerprint, PLATFORM, base_identity, str(BUILD_RECIPE), length=24)


def build_in_account(
    scope: Construct, *, directory: Path, base: BaseImage, repository: ecr.IRepository | None
) -> BuiltImage:
    """The serving image built during `cdk deploy` by the stack's builder (ServingImageBuilds)."""
    return ServingImageBuilds.of(scope).build(directory=directory, base=base, repository=repository)


def _short_hash(*parts: str, length: int) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:length]


def _dockerignore(directory: Path) -> list[str]:
    """The context's .dockerignore lines: what Docker leaves out is left out of the upload and the tag."""
    ignore = directory / ".dockerignore"
    return [line for line in ignore.read_text().splitlines() if line.strip()] if ignore.is_file() else []


def _check_cache_prefix(what: str, prefix: str) -> None:
    # AWS::ECR::PullThroughCacheRule EcrRepositoryPrefix: 2-30 characters, "Pattern: ^((?:[a-z0-9]+(?:[._-][a-z0-9]+)
    # */)*[a-z0-9]+(?:[._-][a-z0-9]+)*/?|ROOT)$" (CloudFormation User Guide, AWS::ECR::PullThroughCacheRule).
    if not Token.is_unresolved(prefix) and not (2 <= len(prefix) <= 30 and _CACHE_PREFIX.match(prefix)):
        raise ValueError(
            f"{what}: repository_prefix {prefix!r} is not an ECR pull-through cache prefix (2-30 characters of "
            "lower-case letters, digits, '.', '_', '-' in '/'-separated parts), e.g. 'docker-hub'"
        )


def _check_repository_place(stack: Stack, repository: ecr.IRepository, what: str) -> None:
    # An imported repository's env is its stack's; its ARN says where it is.
    arn = repository.repository_arn
    if Token.is_unresolved(arn):
        account, region = repository.env.account, repository.env.region
    else:
        account, region = arn.split(":")[4], arn.split(":")[3]
    _check_same_place(stack, account, region, what)


def _check_same_place(stack: Stack, account: str, region: str, what: str) -> None:
    """A SageMaker Model pulls its image from ECR in its own region, the build logs in to its own account's
    registry only, and a pull-through cache's secret must be in the rule's account and region."""
    here = {"region": stack.region, "account": stack.account}
    there = {"region": region, "account": account}
    for field, value in there.items():
        if Token.is_unresolved(value) or Token.is_unresolved(here[field]) or value == here[field]:
            continue
        raise ValueError(
            f"{what}: the {field} is {value}, the endpoint's stack is in {here[field]}; the in-account build uses the "
            f"stack's own account and region (a SageMaker Model pulls its image from ECR in its region, the build "
            f"logs in to its account's registry, and ECR takes a cache's secret from the rule's account and region): "
            f"copy it into {here[field]}, or leave it out"
        )


def _default_policy(role: iam.IRole | None) -> iam.Policy:
    """The policy where a construct's own role (the project's, the handler's) collects its grants."""
    assert role is not None, "the construct made its own role"
    return cast(iam.Policy, role.node.find_child("DefaultPolicy"))


def _acknowledge_builder(builds: ServingImageBuilds) -> None:
    """Each cdk-nag finding the builder raises, acknowledged on its resource with the reason."""
    place = nag_place(builds)
    # aws-cdk-lib names the project in these grants by its Ref, which cdk-nag prints as <logical id>.
    project = "<" + Stack.of(builds).get_logical_id(cast(CfnElement, builds.project.node.default_child)) + ">"
    acknowledge(
        builds.project,
        "AwsSolutions-CB4",
        "The build produces no CodeBuild artifacts: its one output is the image, pushed to an ECR repository "
        "encrypted with KMS.",
    )
    for finding, reason in {
        "AwsSolutions-IAM5[Resource::*]": "ecr:GetAuthorizationToken takes no resource (its ARN is '*' in the IAM "
        "service authorization reference for Amazon ECR); the pushes themselves are granted on the repository.",
        f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:codebuild:{place}:report-group/{project}-*]": "CodeBuild's "
        "default grant for report groups of this project (aws-cdk-lib codebuild Project).",
        f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:{place}:log-group:/aws/codebuild/{project}:*]": "aws-cdk-lib's default grant for the project's default log group, whose streams are "
        "made per build (the builds log to the BuildLogs group, which has a retention).",
        "NIST.800.53.R5-IAMNoInlinePolicy": "The build role's grants are made by aws-cdk-lib as the role's default "
        "policy, each scoped to a build context object, a repository or the project's logs.",
    }.items():
        acknowledge(builds.build_role, finding, reason)
    logs_reason = (
        "Build and handler logs hold Docker build output, build ids and image names, never the CloudFormation "
        "request's ResponseURL; CloudWatch Logs encrypts them at rest with its own key."
    )
    for group in (builds.log_group, builds.node.find_child("HandlerLogs")):
        acknowledge(group, "NIST.800.53.R5-CloudWatchLogGroupEncrypted", logs_reason)
    for finding, reason in {
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]": (
            "The custom-resource handler's logs only (CloudWatch Logs create and put)."
        ),
        "NIST.800.53.R5-IAMNoInlinePolicy": "codebuild:StartBuild, BatchGetBuilds and ListBuildsForProject on the one "
        "build project and ecr:DescribeImages on the build's repositories, made by aws-cdk-lib as the handler's "
        "default policy.",
        "NIST.800.53.R5-LambdaConcurrency": "Invoked by CloudFormation once per build resource request and by its own "
        "watch, two chains of at most a few invocations per build.",
        "NIST.800.53.R5-LambdaDLQ": "A dead-letter queue would hold the CloudFormation request, ResponseURL included, "
        "for whoever may read the queue; a failed invocation is retried by Lambda, and a second watch chain answers.",
        "NIST.800.53.R5-LambdaInsideVPC": "Calls the ECR, CodeBuild, Lambda and CloudFormation response endpoints "
        "only; it holds no data to keep inside a network.",
    }.items():
        acknowledge(builds.handler, finding, reason)
