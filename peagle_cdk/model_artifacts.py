"""Where model weights live: one S3 prefix per pair holding target/ and drafter/."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from peagle import artifacts_layout as layout
from peagle_cdk.nag import acknowledge


def artifacts_bucket_name(deployment_name: str) -> str:
    """The project bucket's name in this stack's account and region (peagle.artifacts_layout)."""
    return layout.artifacts_bucket_name(deployment_name, Aws.ACCOUNT_ID, Aws.REGION)


pair_prefix = layout.pair_prefix


@dataclass(frozen=True)
class ModelArtifactsLocation:
    """An S3 prefix (ending in '/') under which target/ and drafter/ sit side by side."""

    bucket_name: str
    prefix: str  # no leading '/', ends with '/'
    key: kms.IKey | None = None

    @property
    def s3_uri(self) -> str:
        return f"s3://{self.bucket_name}/{self.prefix}"

    @classmethod
    def from_s3_uri(cls, s3_uri: str, key: kms.IKey | None = None) -> ModelArtifactsLocation:
        bucket_name, _, prefix = s3_uri.removeprefix("s3://").partition("/")
        return cls(bucket_name=bucket_name, prefix=prefix, key=key)


def access_log_bucket(scope: Construct, id: str, *, audited: str) -> s3.Bucket:
    """The server-access-log bucket of one of the project's buckets (``audited`` names it in the acknowledgements):
    SSE-S3, private, SSL-only, versioned, logs kept a year, retained with the bucket it audits."""
    bucket = s3.Bucket(
        scope,
        id,
        # S3 server access logs can only be delivered to an SSE-S3 bucket.
        encryption=s3.BucketEncryption.S3_MANAGED,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        versioned=True,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
        lifecycle_rules=[
            s3.LifecycleRule(expiration=Duration.days(365), noncurrent_version_expiration=Duration.days(30))
        ],
        removal_policy=RemovalPolicy.RETAIN,
    )
    loop = f"This is the access-log bucket of {audited}; logging it to itself would loop."
    acknowledge(bucket, "AwsSolutions-S1", loop)
    acknowledge(bucket, "NIST.800.53.R5-S3BucketLoggingEnabled", loop)
    acknowledge(
        bucket,
        "NIST.800.53.R5-S3DefaultEncryptionKMS",
        "S3 server access logs can only be delivered to a bucket with SSE-S3 default encryption.",
    )
    acknowledge(
        bucket,
        "NIST.800.53.R5-S3BucketReplicationEnabled",
        "Access logs stay in-region, next to the bucket they audit.",
    )
    return bucket


class ModelArtifactsBucket(Construct):
    """A private, SSL-only, versioned, KMS-encrypted bucket for staged weights, with access logs.

    Weights are large and slow to re-stage, so bucket and key outlive the stack (RETAIN).
    """

    def __init__(self, scope: Construct, id: str, *, bucket_name: str) -> None:
        super().__init__(scope, id)
        self.key = kms.Key(
            self,
            "Key",
            enable_key_rotation=True,
            description="P-EAGLE model artifacts",
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.access_logs = access_log_bucket(self, "AccessLogs", audited="the model artifacts bucket")
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            bucket_name=bucket_name,
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.key,  # pyright: ignore[reportArgumentType]
            bucket_key_enabled=True,  # one KMS call per object, not per GET range, for 10+ GB weights
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="artifacts/",
            lifecycle_rules=[s3.LifecycleRule(noncurrent_version_expiration=Duration.days(7))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        reproducible = (
            "Staged weights are copies of published checkpoints that `peagle stage` can re-create; "
            "cross-region replication would double the storage of 10-70 GB models for no recovery gain."
        )
        acknowledge(self.bucket, "NIST.800.53.R5-S3BucketReplicationEnabled", reproducible)
