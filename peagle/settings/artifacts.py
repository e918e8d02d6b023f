"""The artifacts section: where the container reads the target's and drafter's weights."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from peagle.catalog import StrictModel
from peagle.settings.refs import spelled

_S3_PREFIX = re.compile(r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/[^\s]*)?/$")


class ArtifactsSettings(StrictModel):
    source: Literal["s3", "hub"] = Field(
        default="s3",
        json_schema_extra=spelled(
            "weights", **{'"hub"': "weights=ModelWeights.from_hub()", '"s3"': "weights=ModelWeights.from_bucket(...)"}
        ),
        description="s3: weights staged under one S3 prefix (the default, works with network isolation); "
        "hub: the container downloads target and drafter from the Hugging Face Hub at start-up "
        "(needs network.isolation: false)",
    )
    hf_token_secret_arn: str | None = Field(
        default=None,
        json_schema_extra=spelled("ModelWeights.from_hub(token_secret_arn=...)"),
        pattern=r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$",
        description="with source hub: Secrets Manager secret holding a Hugging Face token (plain text); "
        "the execution role may read it, the container reads it at start-up",
    )
    s3_uri: str | None = Field(
        default=None,
        description="s3://bucket/prefix/ holding target/ and drafter/ side by side; then no artifacts stack is "
        "created. One prefix because CloudFormation's AWS::SageMaker::Model has no AdditionalModelDataSources "
        "(the channel JumpStart uses for its drafter). "
        "Unset: the project's artifacts bucket (stack <name>-artifacts), prefix models/<pair>/",
    )
    kms_key_arn: str | None = Field(
        default=None,
        description="KMS key the artifacts under s3_uri are encrypted with, if they are; the role may use it",
    )

    @field_validator("s3_uri")
    @classmethod
    def _s3_prefix(cls, value: str | None) -> str | None:
        if value is not None and not _S3_PREFIX.match(value):
            raise ValueError(
                f"{value!r} is not an S3 prefix; use s3://<bucket>/<prefix>/ (ending in '/') "
                "with target/ and drafter/ under it"
            )
        return value
