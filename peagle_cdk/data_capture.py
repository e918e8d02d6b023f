"""SageMaker Data Capture's destination: a private bucket of the endpoint's own, with a lifecycle rule that expires
what was captured, its key, and the endpoint config's DataCaptureConfig that writes there (``capture.method``
data_capture; the other method, the container's request log, needs nothing here: peagle_serve/request_log.py).

Facts behind it:

- Who may use it is not stated by AWS. The "Data capture" page opens with "Amazon SageMaker Model Monitor is no longer
  open to new customers. Existing customers can continue to use the service as normal" (SageMaker Developer Guide,
  https://docs.aws.amazon.com/sagemaker/latest/dg/model-monitor-data-capture.html), other Model Monitor pages date it
  ("close new customer access to Amazon Sagemaker Model Monitor, effective 7/30/26"), and the page it points to,
  "Amazon SageMaker Model Monitor availability change"
  (https://docs.aws.amazon.com/sagemaker/latest/dg/model-monitor-availability-change.html), replaces monitoring
  schedules (CreateMonitoringSchedule) and names Data Capture only as the input of its replacement solutions
  ("Real-time endpoint (Data Capture)"). Neither it nor the API reference (DataCaptureConfig, CreateEndpointConfig;
  botocore 1.44.5) nor the CloudFormation schema says whether an account new to Model Monitor may set
  DataCaptureConfig. So an account may find CreateEndpointConfig refused; docs/production-loop.md says what to use then.

- The endpoint config's DataCaptureConfig "applies to all production variants hosted at the endpoint", and every
  field of it is create-only: "Update requires: Replacement" (CloudFormation, AWS::SageMaker::EndpointConfig
  DataCaptureConfig,
  https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-sagemaker-endpointconfig-datacaptureconfig.html;
  the resource schema shipped with cfn-lint 1.58.0 lists /properties/DataCaptureConfig in createOnlyProperties). A
  new endpoint config makes CloudFormation update the endpoint, and UpdateEndpoint "Deploys the EndpointConfig
  specified in the request to a new fleet of instances" (SageMaker API Reference, UpdateEndpoint): turning capture
  on, off, or changing it rolls the endpoint out under its rollout settings.
- CaptureOptions: "Specify either Input or Output for CaptureMode within the CaptureOptions list", both for both
  ("Capture data from real-time endpoint",
  https://docs.aws.amazon.com/sagemaker/latest/dg/model-monitor-data-capture-endpoint.html, whose example passes
  ``[{"CaptureMode": "Input"}, {"CaptureMode": "Output"}]``).
- CaptureContentTypeHeader: "If no headers are specified SageMaker AI will by default base64 encode when capturing
  the data"; JsonContentTypes: "The list of all content type headers that SageMaker AI will treat as JSON and
  capture accordingly" (SageMaker API Reference, DataCaptureConfig and CaptureContentTypeHeader). The client sends
  application/json (peagle/client/sagemaker_transport.py), so its bodies are captured as JSON text; a streamed
  response (text/event-stream) stays base64, which `peagle prompts` decodes (peagle/prompts_capture/records.py).
- Files land under the destination as "{endpoint-name}/{variant-name}/yyyy/mm/dd/hh/filename.jsonl" (same guide,
  "View Captured Data").
- Who writes: the endpoint's execution role. The guide's setup says of the capture bucket "make sure the role you
  chose ... has s3:PutObject permissions. This is the bucket into which the data is captured" (SageMaker Developer
  Guide, "Capture data", model-monitor-data-capture.md, awsdocs/amazon-sagemaker-developer-guide 1caf36fbc74e).
  With KmsKeyId the objects are SSE-KMS: "To upload an object encrypted with an AWS KMS key to Amazon S3, you need
  kms:GenerateDataKey permissions on the key" (Amazon S3 User Guide, "Using server-side encryption with AWS KMS keys
  (SSE-KMS)", https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingKMSEncryption.html), and where SageMaker
  writes to S3 with a KMS key ARN for a job's output, "the SageMaker execution role must include permissions to call
  kms:Encrypt" (SageMaker API Reference, OutputDataConfig, KmsKeyId). The Data Capture pages name no KMS permission
  of their own, so the role gets both on the capture key, nothing else.
"""

from __future__ import annotations

from typing import Literal

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from peagle_cdk.execution_role import SageMakerExecutionRole
from peagle_cdk.model_artifacts import access_log_bucket
from peagle_cdk.nag import acknowledge

# The key prefix the files go under (no trailing '/': SageMaker adds "/{endpoint-name}/...").
CAPTURE_PREFIX = "capture"
# What each capture mode captures (CaptureMode values, SageMaker API Reference, CaptureOption).
CAPTURE_MODES: dict[str, tuple[str, ...]] = {
    "request": ("Input",),
    "request_and_response": ("Input", "Output"),
}
# Bodies of these content types are captured as JSON text instead of base64.
JSON_CONTENT_TYPES = ("application/json",)


class DataCaptureDestination(Construct):
    """The capture bucket (KMS-encrypted, private, SSL-only, versioned, access-logged), objects expired after
    ``expire_after_days``; it and its access logs outlive the stack (RETAIN) until their lifecycle rules empty them.

    Child ids are a contract: Key (when no ``key`` is given), AccessLogs, Bucket.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        expire_after_days: int,
        key: kms.IKey | None = None,
    ) -> None:
        """
        :param expire_after_days: days after which the lifecycle rule deletes a captured object (its noncurrent
            version a day later).
        :param key: the KMS key of the bucket and of the captured objects (its policy must let the endpoint's role
            use it); default: a new key with rotation, retained with the bucket so what it still holds stays readable.
        """
        super().__init__(scope, id)
        self.key: kms.IKey = key or kms.Key(  # pyright: ignore[reportAttributeAccessIssue]
            self,
            "Key",
            enable_key_rotation=True,
            description="P-EAGLE endpoint data capture (captured requests and responses)",
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.access_logs = access_log_bucket(self, "AccessLogs", audited="the data capture bucket")
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.key,
            bucket_key_enabled=True,  # an S3 Bucket Key: fewer requests from S3 to KMS for the objects written
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="capture/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="ExpireCapturedData",
                    expiration=Duration.days(expire_after_days),
                    noncurrent_version_expiration=Duration.days(1),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            self.bucket,
            "NIST.800.53.R5-S3BucketReplicationEnabled",
            "Captured requests are a sample kept for a few days to size the endpoint; a replica in another region "
            "would be a second copy of user data to protect and expire, for no recovery need.",
        )

    @property
    def destination_s3_uri(self) -> str:
        return f"s3://{self.bucket.bucket_name}/{CAPTURE_PREFIX}"

    def data_capture_config(
        self, *, sampling_percentage: int, mode: Literal["request", "request_and_response"]
    ) -> sagemaker.CfnEndpointConfig.DataCaptureConfigProperty:
        """The endpoint config's DataCaptureConfig: ``mode``'s capture options, into this bucket, with its key."""
        return sagemaker.CfnEndpointConfig.DataCaptureConfigProperty(
            enable_capture=True,
            initial_sampling_percentage=sampling_percentage,
            destination_s3_uri=self.destination_s3_uri,
            kms_key_id=self.key.key_arn,
            capture_options=[
                sagemaker.CfnEndpointConfig.CaptureOptionProperty(capture_mode=capture_mode)
                for capture_mode in CAPTURE_MODES[mode]
            ],
            capture_content_type_header=sagemaker.CfnEndpointConfig.CaptureContentTypeHeaderProperty(
                json_content_types=list(JSON_CONTENT_TYPES)
            ),
        )

    def grant_write(self, role: SageMakerExecutionRole) -> None:
        """The endpoint's role may put objects under the capture prefix and encrypt them with the key (module
        docstring: the sources)."""
        role.grant_put_prefix(
            self.bucket.bucket_name,
            f"{CAPTURE_PREFIX}/",
            sid="WriteDataCapture",
            why="the data capture prefix",
        )
        role.grant_encrypt(self.key, sid="EncryptDataCapture")
