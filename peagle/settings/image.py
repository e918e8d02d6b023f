"""The image section: how `cdk deploy` gets the serving image and where the vLLM base comes from."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from peagle.catalog import StrictModel
from peagle.settings.refs import spelled

_PULL_THROUGH_SECRET = re.compile(
    r"^arn:aws[a-z-]*:secretsmanager:[a-zA-Z0-9-:]+:secret:ecr\-pullthroughcache\/[a-zA-Z0-9\/_+=.@-]+$"
)


_CACHE_PREFIX = re.compile(r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$")


# An ECR image reference (peagle_cdk's BaseImage.mirror_uri parses it too, through peagle_cdk/settings_model.py).
ECR_IMAGE = re.compile(
    r"^(?P<account>[0-9]{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?/(?P<repository>[a-z0-9._/-]+)"
    r"(:(?P<tag>[\w.-]+)|@(?P<digest>sha256:[0-9a-f]{64}))$"
)


class ImageSettings(StrictModel):
    """How `cdk deploy` gets the serving image (inference_image/: the launcher over the pinned vLLM base)."""

    build: Literal["in_account", "local_docker"] = Field(
        default="in_account",
        description="in_account: built in CodeBuild during the deploy, in the endpoint's account and region, from "
        "the build context uploaded as a small S3 asset (no Docker on your machine); local_docker: built by the "
        "CDK CLI with your Docker and pushed from your machine (several GB; the 0.1.0 behaviour)",
    )
    pull_through_cache_secret_arn: str | None = Field(
        default=None,
        json_schema_extra=spelled("ServingImage.build_in_account(base=BaseImage.pull_through_cache(...))"),
        description="in_account: pull the vLLM base through an ECR pull-through cache of Docker Hub (created with "
        "the stack) with these Docker Hub credentials, a Secrets Manager secret named ecr-pullthroughcache/..., "
        "instead of anonymously (Docker Hub's limits apply to CodeBuild's shared addresses)",
    )
    pull_through_cache_prefix: str | None = Field(
        default=None,
        json_schema_extra=spelled("BaseImage.pull_through_cache(repository_prefix=...)"),
        description="in_account: the pull-through cache rule's ECR repository prefix. With "
        "pull_through_cache_secret_arn: the prefix of the rule the stack creates (default: derived from the stack "
        "and the secret, so a new secret makes a new rule beside the old one; a rule's prefix is its identity and "
        "cannot change). Alone: a Docker Hub pull-through cache rule you already have, used as it is",
    )
    base_mirror: str | None = Field(
        default=None,
        json_schema_extra=spelled("ServingImage.build_in_account(base=BaseImage.mirror(...))"),
        description="in_account: pull the vLLM base from your ECR copy of it instead, "
        "<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag> (or @sha256:<digest>), in the endpoint's region",
    )

    @field_validator("pull_through_cache_secret_arn")
    @classmethod
    def _cache_secret(cls, value: str | None) -> str | None:
        # AWS::ECR::PullThroughCacheRule CredentialArn, "Pattern:
        # ^arn:aws:secretsmanager:[a-zA-Z0-9-:]+:secret:ecr\-pullthroughcache\/[a-zA-Z0-9\/_+=.@-]+$" (CloudFormation
        # User Guide, AWS::ECR::PullThroughCacheRule); partitions other than aws allowed as their ARNs spell them.
        if value is not None and not _PULL_THROUGH_SECRET.match(value):
            raise ValueError(
                f"{value!r} is not the ARN of a Secrets Manager secret named ecr-pullthroughcache/...; ECR takes a "
                "pull-through cache's credentials only from a secret with that name prefix, in the same account and "
                "region (create one holding your Docker Hub username and access token)"
            )
        return value

    @field_validator("pull_through_cache_prefix")
    @classmethod
    def _cache_prefix(cls, value: str | None) -> str | None:
        # AWS::ECR::PullThroughCacheRule EcrRepositoryPrefix: "Minimum: 2 Maximum: 30", lower-case path parts
        # (CloudFormation User Guide, AWS::ECR::PullThroughCacheRule).
        if value is not None and not (2 <= len(value) <= 30 and _CACHE_PREFIX.match(value)):
            raise ValueError(
                f"{value!r} is not an ECR pull-through cache prefix: 2-30 characters of lower-case letters, digits, "
                "'.', '_', '-' in '/'-separated parts, e.g. docker-hub"
            )
        return value

    @field_validator("base_mirror")
    @classmethod
    def _mirror(cls, value: str | None) -> str | None:
        if value is not None and not ECR_IMAGE.match(value):
            raise ValueError(
                f"{value!r} is not an ECR image reference; give <account>.dkr.ecr.<region>.amazonaws.com/<repository>:"
                "<tag> (or @sha256:<digest>) of your copy of the vLLM base"
            )
        return value

    @model_validator(mode="after")
    def _one_base(self) -> ImageSettings:
        if (self.pull_through_cache_secret_arn or self.pull_through_cache_prefix) and self.base_mirror:
            raise ValueError(
                "image.pull_through_cache_secret_arn (or _prefix) and image.base_mirror are two sources of the vLLM "
                "base; give one"
            )
        if self.build == "local_docker" and (
            self.pull_through_cache_secret_arn or self.pull_through_cache_prefix or self.base_mirror
        ):
            raise ValueError(
                "image.pull_through_cache_secret_arn, _prefix and image.base_mirror apply to image.build: in_account (your "
                "local Docker pulls the base itself); remove them or set build: in_account"
            )
        return self
