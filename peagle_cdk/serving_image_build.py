"""The serving image built inside the account during `cdk deploy`: no Docker on the deploying machine and no
multi-gigabyte push from it.

cdklabs' deploy-time-build (``cdklabs.deploy_time_build.ContainerImageBuild``, PyPI cdklabs.deploy-time-build,
source github.com/cdklabs/deploy-time-build, src/container-image-build.ts) uploads the build context as an S3
file asset (a few hundred KB here), and a custom resource starts a CodeBuild build that runs ``docker buildx
build`` on it, pushes the image to an ECR repository tagged with the context's asset hash and reports the tag
back; the Model's image names that tag, so the endpoint waits for the build, and a context that did not change
keeps its tag and is not rebuilt. Its CodeBuild project runs privileged, which a Docker build needs ("If set to
true, enables running the Docker daemon inside a Docker container ... This value must be set to true only if this
build project will be used to build Docker images", CodeBuild API reference, ProjectEnvironment.privilegedMode, as
the AWS SDKs carry it, e.g. docs.rs rusoto_codebuild ProjectEnvironment).

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
  EcrRepositoryPrefix: 2-30 characters, lower-case path segments (same resource's schema). The build's role needs
  "ecr:BatchImportUpstreamImage – Grants permission to retrieve the external image and import it to your private
  registry" and "ecr:CreateRepository ... required if the repository storing the cached images doesn't already
  exist" ("IAM permissions required to sync an upstream registry with an Amazon ECR private registry",
  https://docs.aws.amazon.com/AmazonECR/latest/userguide/pull-through-cache-iam.html), on the cache's
  repositories only.
- ``BaseImage.mirror(repository, tag)``: from an ECR repository of yours that holds the base (same region).

The build runs on BUILD_GENERAL1_MEDIUM ("Use up to 8 GiB memory and 4 vCPUs for builds", CodeBuild API
reference, ProjectEnvironment.computeType) rather than the library's SMALL: the vLLM base is several GB
compressed, pulled, unpacked and exported once more by ``--output type=docker``. Cost: on-demand Linux
general1.medium is billed per build minute (AWS CodeBuild pricing, https://aws.amazon.com/codebuild/pricing/;
docs/deployment.md gives the figure and what it is from). Not built on the machines this was written on (no
Docker, no AWS account): docs/deployment.md says what is and is not verified.
"""

from __future__ import annotations

import re
from pathlib import Path

from aws_cdk import Annotations, Aws, IgnoreMode, RemovalPolicy, Stack, Token
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from cdklabs.deploy_time_build import ContainerImageBuild
from constructs import Construct

from peagle.catalog import load_catalog
from peagle_cdk.nag import acknowledge
from peagle_cdk.settings_model import ECR_IMAGE

# The Dockerfile's build argument that names the vLLM base (inference_image/Dockerfile: ARG VLLM_IMAGE).
BASE_IMAGE_ARG = "VLLM_IMAGE"
DOCKER_HUB_REGISTRY_URL = "registry-1.docker.io"
PULL_THROUGH_SECRET_PREFIX = "ecr-pullthroughcache/"
_CACHE_PREFIX = re.compile(r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$")
# Images the repository keeps: the running one, the one before it (a rollback), a few more.
KEEP_IMAGES = 5
BUILD_COMPUTE_TYPE = "BUILD_GENERAL1_MEDIUM"


def pinned_base() -> str:
    """The vLLM base the serving image is pinned to (peagle/catalog/runtime.yaml, serving_image.base)."""
    return load_catalog().runtime.serving_image.base


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
        credentials: secretsmanager.ISecret | str, *, repository_prefix: str = "docker-hub"
    ) -> BaseImage:
        """Through an ECR pull-through cache rule for Docker Hub, made here, with your Docker Hub credentials: a
        Secrets Manager secret (or its ARN) whose name begins with ``ecr-pullthroughcache/``, in this account and
        region, holding {"username": ..., "accessToken": ...}."""
        if not Token.is_unresolved(repository_prefix) and not (
            2 <= len(repository_prefix) <= 30 and _CACHE_PREFIX.match(repository_prefix)
        ):
            raise ValueError(
                f"BaseImage.pull_through_cache: repository_prefix {repository_prefix!r} is not an ECR pull-through "
                "cache prefix (2-30 characters of lower-case letters, digits, '.', '_', '-' in '/'-separated parts); "
                "the default 'docker-hub' is one"
            )
        return BaseImage("pull_through_cache", credentials=credentials, repository_prefix=repository_prefix)

    @staticmethod
    def mirror(repository: ecr.IRepository, tag_or_digest: str) -> BaseImage:
        """From your ECR repository holding a copy of the pinned base (``tag_or_digest``: its tag, or
        ``sha256:...``), in the endpoint's region."""
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
        """The deployment file's image section (peagle.config.ImageSettings): its base source."""
        if settings.pull_through_cache_secret_arn:
            return BaseImage.pull_through_cache(settings.pull_through_cache_secret_arn)
        if settings.base_mirror:
            return BaseImage.mirror_uri(settings.base_mirror)
        return BaseImage.docker_hub()

    def build_args(self, scope: Construct) -> dict[str, str]:
        """The Dockerfile's base build argument, creating what the source needs (the cache rule)."""
        base = pinned_base()
        if self.kind == "docker_hub":
            Annotations.of(scope).add_info(
                f"The serving image is built in CodeBuild during `cdk deploy`, pulling {base} from Docker Hub "
                "anonymously: Docker Hub allows 10 unauthenticated pulls an hour per IPv4 address, shared by "
                "CodeBuild's hosts, so a build can fail with 'toomanyrequests'. To pull with your Docker Hub "
                "account instead, use an ECR pull-through cache (image.pull_through_cache_secret_arn in the "
                "deployment file; BaseImage.pull_through_cache(secret) in the library), or an ECR mirror."
            )
            return {}
        if self.kind == "mirror" and "uri" in self._options:
            _check_region(scope, self._options["region"], "image.base_mirror")
            return {BASE_IMAGE_ARG: self._options["uri"]}
        if self.kind == "mirror":
            repository: ecr.IRepository = self._options["repository"]
            _check_same_region(scope, repository, "BaseImage.mirror")
            reference = self._options["tag_or_digest"]
            separator = "@" if reference.startswith("sha256:") else ":"
            return {BASE_IMAGE_ARG: f"{repository.repository_uri}{separator}{reference}"}
        credentials, prefix = self._options["credentials"], self._options["repository_prefix"]
        secret_arn = credentials if isinstance(credentials, str) else credentials.secret_arn
        if not Token.is_unresolved(secret_arn):
            name = secret_arn.split(":secret:", 1)[-1]
            if not secret_arn.startswith("arn:") or not name.startswith(PULL_THROUGH_SECRET_PREFIX):
                raise ValueError(
                    f"BaseImage.pull_through_cache: {secret_arn!r} is not a Secrets Manager secret ARN whose name "
                    f"begins with {PULL_THROUGH_SECRET_PREFIX!r}, which ECR requires of a pull-through cache's "
                    "credentials; create the secret under that prefix (in this account and region)"
                )
        ecr.CfnPullThroughCacheRule(
            scope,
            "DockerHubPullThroughCache",
            ecr_repository_prefix=prefix,
            upstream_registry="docker-hub",
            upstream_registry_url=DOCKER_HUB_REGISTRY_URL,
            credential_arn=secret_arn,
        )
        registry = f"{Aws.ACCOUNT_ID}.dkr.ecr.{Aws.REGION}.{Aws.URL_SUFFIX}"
        # Docker Hub's own images live under library/; vllm/vllm-openai is a user repository and keeps its path.
        path = base if "/" in base.split(":", 1)[0] else f"library/{base}"
        return {BASE_IMAGE_ARG: f"{registry}/{prefix}/{path}"}

    def grant_pull(self, scope: Construct, grantee: iam.IGrantable) -> None:
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
        elif self.kind == "pull_through_cache":
            prefix = self._options["repository_prefix"]
            cached = Stack.of(scope).format_arn(service="ecr", resource="repository", resource_name=f"{prefix}/*")
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
            for child in Stack.of(scope).node.children:
                if child.node.id.startswith(_PROJECT_ID):
                    acknowledge(
                        child,
                        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ecr:<AWS::Region>:<AWS::AccountId>:repository/"
                        f"{prefix}/*]",
                        "The pull-through cache creates one repository per upstream image under its prefix on the first "
                        "pull; the build may pull and import under that prefix only.",
                    )


def build_in_account(
    scope: Construct,
    *,
    directory: Path,
    base: BaseImage,
    repository: ecr.IRepository | None,
) -> tuple[str, ecr.IRepository]:
    """The serving image built during `cdk deploy` (children of ``scope``); returns its URI and repository."""
    if repository is None:
        repository = ecr.Repository(
            scope,
            "Repository",
            image_scan_on_push=True,
            encryption=ecr.RepositoryEncryption.KMS,
            lifecycle_rules=[
                ecr.LifecycleRule(
                    description=f"keep the last {KEEP_IMAGES} serving images (the running one and its rollbacks)",
                    max_image_count=KEEP_IMAGES,
                )
            ],
            # Every image in it is rebuilt from the build context on the next deploy.
            removal_policy=RemovalPolicy.DESTROY,
            empty_on_delete=True,
        )
    else:
        _check_same_region(scope, repository, "ServingImage.build_in_account repository")
    build = ContainerImageBuild(
        scope,
        "Build",
        directory=str(directory),
        platform=ecr_assets.Platform.LINUX_AMD64,
        # The library passes .dockerignore's lines as the asset's exclude patterns; read with glob rules, its
        # "*" then "!peagle_serve/" uploads the Dockerfile alone, so they must be read as Docker reads them.
        ignore_mode=IgnoreMode.DOCKER,
        repository=repository,
        build_args=base.build_args(scope),
    )
    base.grant_pull(scope, build)
    _read_only_its_context(build)
    _size_and_acknowledge(build)
    return build.image_uri, repository


def _check_same_region(scope: Construct, repository: ecr.IRepository, what: str) -> None:
    # An imported repository's env is its stack's; its ARN says where it is.
    arn = repository.repository_arn
    _check_region(scope, arn.split(":")[3] if not Token.is_unresolved(arn) else repository.env.region, what)


def _check_region(scope: Construct, there: str, what: str) -> None:
    """A SageMaker Model pulls its image from ECR in its own region, and the build pushes where the Model pulls."""
    here = Stack.of(scope).region
    if not Token.is_unresolved(here) and not Token.is_unresolved(there) and here != there:
        raise ValueError(
            f"{what}: the repository is in {there}, the endpoint's stack in {here}; give a repository in {here} "
            "(a SageMaker Model pulls its image from ECR in its own region), or leave it out and one is made"
        )


def _size_and_acknowledge(build: ContainerImageBuild) -> None:
    """The library's CodeBuild project and custom-resource function are singletons, children of the stack (one
    per stack and platform): the project on BUILD_COMPUTE_TYPE, and each cdk-nag finding they raise acknowledged
    with its reason."""
    stack = Stack.of(build)
    for child in stack.node.children:
        if child.node.id.startswith(_PROJECT_ID) and isinstance(child, codebuild.Project):
            child.node.default_child.add_property_override("Environment.ComputeType", BUILD_COMPUTE_TYPE)
            # The build waits for its role's permissions; the library's DependsOn also names the project and the
            # role, which its Ref already orders (cfn-lint W3005 "dependency already enforced").
            build.node.find_child("Resource").node.default_child.add_override(
                "DependsOn", [stack.get_logical_id(_default_policy(child.role))]
            )
            for finding, reason in _PROJECT_FINDINGS.items():
                acknowledge(
                    child,
                    finding.replace("<PROJECT>", Stack.of(child).get_logical_id(child.node.default_child)),
                    reason,
                )
        elif child.node.id.startswith(_HANDLER_ID):
            # As above: the function's GetAtt of its role orders the role; its policy is the one DependsOn needed.
            child.node.default_child.add_override("DependsOn", [stack.get_logical_id(_default_policy(child.role))])
            for finding, reason in _HANDLER_FINDINGS.items():
                acknowledge(child, finding, reason)


def _read_only_its_context(build: ContainerImageBuild) -> None:
    """The library grants the build role read on the whole CDK assets bucket (s3_assets.Asset.grant_read:
    bucket/*); an explicit deny narrows object reads to this build's context ("an explicit deny in any policy
    overrides any allows", IAM User Guide, "Policy evaluation logic",
    https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html). The build reads
    nothing else from S3: layers come through the registries' APIs."""
    source = build.node.find_child("Source")
    build.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(
            sid="ReadOnlyThisBuildContext",
            effect=iam.Effect.DENY,
            actions=["s3:GetObject*"],
            not_resources=[source.bucket.arn_for_objects(source.s3_object_key)],
        )
    )


def _default_policy(role: iam.IRole):
    return role.node.find_child("DefaultPolicy").node.default_child


# The library's singletons (cdklabs/deploy-time-build src/container-image-build.ts: SingletonFunction
# lambdaPurpose "DeployTimeBuildCustomResourceHandler", SingletonProject projectPurpose "ContainerImageBuildAmd64").
_PROJECT_ID, _HANDLER_ID = "ContainerImageBuildAmd64", "DeployTimeBuildCustomResourceHandler"
_SOURCE = "cdklabs/deploy-time-build src/container-image-build.ts"
_PROJECT_FINDINGS = {
    "AwsSolutions-CB4": "The build produces no CodeBuild artifacts: its one output is the image, pushed to an ECR "
    "repository encrypted with KMS.",
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly]": (
        f"Attached by the build library ({_SOURCE}): its build spec logs in to ECR Public (`aws ecr-public "
        "get-login-password`), and the build fails without it. Read-only."
    ),
    "AwsSolutions-IAM5[Resource::*]": "ecr:GetAuthorizationToken takes no resource (its ARN is '*' in the IAM "
    "service authorization reference for Amazon ECR); the pushes themselves are granted on the one repository.",
    "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:/aws/codebuild/"
    "<<PROJECT>>:*]": "CodeBuild's own log group for this project; streams are created per build.",
    "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:codebuild:<AWS::Region>:<AWS::AccountId>:report-group/"
    "<<PROJECT>>-*]": "CodeBuild's default grant for report groups of this project (aws-cdk-lib codebuild Project).",
    "AwsSolutions-IAM5[Action::s3:GetObject*]": "Reads the build context, a file asset in the CDK bootstrap bucket "
    "(s3_assets.Asset.grant_read).",
    "AwsSolutions-IAM5[Action::s3:GetBucket*]": "Reads the build context, a file asset in the CDK bootstrap bucket "
    "(s3_assets.Asset.grant_read).",
    "AwsSolutions-IAM5[Action::s3:List*]": "Reads the build context, a file asset in the CDK bootstrap bucket "
    "(s3_assets.Asset.grant_read).",
    "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*]": (
        "The CDK bootstrap bucket's assets, where the build context is uploaded (s3_assets.Asset.grant_read)."
    ),
    "NIST.800.53.R5-IAMNoInlinePolicy": f"The build role's grants are made by the build library ({_SOURCE}) and "
    "aws-cdk-lib as the role's default policy, scoped to the repository, the asset and the project's logs.",
}
_HANDLER_FINDINGS = {
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]": (
        "The custom-resource handler's logs only (CloudWatch Logs create and put)."
    ),
    "AwsSolutions-L1": f"The runtime is the build library's ({_SOURCE}: nodejs22.x), a supported runtime.",
    "NIST.800.53.R5-IAMNoInlinePolicy": "One statement, codebuild:StartBuild on the one build project, made by the "
    "build library as the handler's default policy.",
    "NIST.800.53.R5-LambdaConcurrency": "Invoked by CloudFormation only, once per deploy that changes the image.",
    "NIST.800.53.R5-LambdaDLQ": "Invoked synchronously by CloudFormation, which reports a failure on the stack.",
    "NIST.800.53.R5-LambdaInsideVPC": "Calls the CodeBuild API only; it has no data to keep inside a network.",
}
