"""The model-artifacts bucket, deployed before the endpoint so weights can be staged
into it (`peagle stage`) before the endpoint first pulls them."""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from peagle_cdk.model_artifacts import ModelArtifactsBucket, artifacts_bucket_name


class ArtifactsStack(Stack):
    def __init__(self, scope: Construct, id: str, *, deployment_name: str, **kwargs) -> None:
        super().__init__(scope, id, **kwargs)
        self.artifacts = ModelArtifactsBucket(
            self, "ModelArtifacts", bucket_name=artifacts_bucket_name(deployment_name)
        )
        CfnOutput(
            self,
            "ArtifactsBucketName",
            value=self.artifacts.bucket.bucket_name,
            description="Stage weights under s3://<bucket>/models/<pair>/{target,drafter}/ (peagle stage)",
        )
