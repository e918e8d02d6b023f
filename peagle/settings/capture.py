"""The capture section: a sample of the endpoint's requests, for `peagle prompts`."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from peagle.catalog import StrictModel
from peagle.settings.refs import setting, spelled


class CaptureSettings(StrictModel):
    """A sample of the endpoint's requests, what `peagle prompts` turns into a prompts file (docs/production-loop.md,
    "Capture"). ``method`` data_capture: SageMaker Data Capture on the real-time endpoint (variants mode), the requests
    (and, on request, the responses) written as JSON lines under a prefix of a bucket the stack creates, expired after
    ``expire_after_days``. ``method`` request_log: the container prints the sampled requests to the endpoint's log
    group (peagle_serve/request_log.py), for an account that may not be able to use Data Capture."""

    # Who may use Data Capture: AWS closed Model Monitor to new customers ("After careful consideration, we have made
    # the decision to close new customer access to Amazon Sagemaker Model Monitor, effective 7/30/26. Existing
    # customers can continue to use the service as normal", SageMaker Developer Guide, Model Monitor pages), and the
    # "Data capture" page carries the same notice ("Amazon SageMaker Model Monitor is no longer open to new
    # customers", model-monitor-data-capture.md). Neither that notice, the availability-change page
    # (model-monitor-availability-change.md) nor the API reference (DataCaptureConfig, CreateEndpointConfig; botocore
    # 1.44.5) says whether an account new to Model Monitor may set DataCaptureConfig on an endpoint: not stated by
    # AWS. Hence method request_log, which needs nothing of SageMaker's but the endpoint's log group.

    # SageMaker's rules (SageMaker API Reference, DataCaptureConfig,
    # https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DataCaptureConfig.html; botocore 1.44.5):
    # InitialSamplingPercentage "The percentage of requests SageMaker AI will capture", "Valid Range: Minimum value of
    # 0. Maximum value of 100"; CaptureOptions: CaptureMode "Valid Values: Input | Output | InputAndOutput"
    # (API_CaptureOption.html); KmsKeyId: "The Amazon Resource Name (ARN) of an AWS Key Management Service key that
    # SageMaker AI uses to encrypt the captured data at rest using Amazon S3 server-side encryption". What the
    # construct builds from these settings, and why: peagle_cdk/data_capture.py.

    PROP_TYPE: ClassVar[str] = "DataCapture"  # PeagleEndpoint's capture prop (peagle_cdk/endpoint_props.py)

    enabled: bool = Field(
        default=False,
        json_schema_extra=spelled(
            "capture",
            true="capture=DataCapture(...)",
            false="capture=None",
        ),
        description="off by default: captured requests are your users' prompts. On: the endpoint config gets a "
        "DataCaptureConfig (method data_capture), or the container its request log (method request_log); either "
        "replaces the endpoint config or the model and rolls the endpoint out (docs/production-loop.md)",
    )
    method: Literal["data_capture", "request_log"] = Field(
        default="data_capture",
        json_schema_extra=spelled("DataCapture(method=...)"),
        description="data_capture: SageMaker Data Capture into a bucket of the stack's (AWS does not say whether an "
        "account new to Model Monitor may use it, docs/production-loop.md). request_log: the container prints the "
        "sampled requests (prompt or messages and sampling parameters only, other keys by name) to the endpoint's "
        "CloudWatch Logs group, kept observability.log_retention_days and encrypted with the log group's key; no "
        "SageMaker feature needed, works under network isolation and in inference_components mode; `peagle prompts "
        "--from-logs` reads it. request_log takes mode request only and no kms_key_arn",
    )
    sampling_percentage: int = Field(
        default=10,
        description="share of requests captured, 1-100 (SageMaker's InitialSamplingPercentage; with request_log the "
        "container's PEAGLE_REQUEST_LOG_SAMPLING_PERCENT); it bounds the S3 objects, PUT requests and storage, or the "
        "log lines ingested and stored, capture costs",
    )
    mode: Literal["request", "request_and_response"] = Field(
        default="request",
        description="request: the request bodies only (CaptureMode Input; all `peagle prompts` needs); "
        "request_and_response: the responses too (Input and Output; output token counts, and the answers your "
        "users got, stored as well)",
    )
    # At least 1: S3's LifecycleExpiration Days "The value must be a non-zero positive integer" (Amazon S3 API
    # Reference; botocore 1.44.5). At most 3650: our bound, not S3's; ten years is no longer a sample kept to size an
    # endpoint.
    expire_after_days: int = Field(
        default=30,
        ge=1,
        le=3650,
        json_schema_extra=spelled("DataCapture(expire_after=Duration.days(...))"),
        description="the capture bucket's lifecycle rule deletes captured objects this many days after they were "
        "written (their noncurrent versions one day later). With request_log the lines stay as long as the endpoint's "
        "log group keeps its logs, which must not be longer: observability.log_retention_days <= this",
    )
    kms_key_arn: str | None = Field(
        default=None,
        json_schema_extra=spelled("DataCapture(key=...)"),
        description="a KMS key ARN (not an alias: the role's grant names the key) that encrypts the capture bucket "
        "and the captured objects; its key policy must let the endpoint's role use it. Null: a new KMS key "
        "of the stack's, with rotation",
    )

    @field_validator("sampling_percentage", mode="before")
    @classmethod
    def _sampling(cls, value: Any) -> Any:
        # SageMaker takes 0-100 (above); 0 captures nothing, which turning capture off says better.
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100:
            why = (
                "0 would capture nothing"
                if value == 0 and not isinstance(value, bool)
                else "SageMaker's InitialSamplingPercentage is a whole number of percent, 0-100 (SageMaker API "
                "Reference, DataCaptureConfig)"
            )
            raise ValueError(
                f"{value!r} is not a share of requests to capture: {why}; set a whole number 1-100 (e.g. "
                f"{setting('capture.sampling_percentage', 10)}), or {setting('capture.enabled', False)} to capture nothing"
            )
        return value

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, value: Any) -> Any:
        # CaptureMode "Valid Values: Input | Output | InputAndOutput" (SageMaker API Reference, CaptureOption); the
        # responses alone (Output) hold no prompt, so they are not offered.
        if value not in ("request", "request_and_response"):
            raise ValueError(
                f"{value!r} is not a capture mode; use 'request' (SageMaker's CaptureMode Input: the prompts and "
                "their sampling settings) or 'request_and_response' (Input and Output: the answers too). Capturing "
                "responses alone (Output) is not offered: they hold no prompt to replay"
            )
        return value

    @field_validator("kms_key_arn", mode="before")
    @classmethod
    def _key_arn(cls, value: Any) -> Any:
        if value is not None and not (isinstance(value, str) and _KMS_KEY_ARN.match(value)):
            raise ValueError(
                f"{value!r} is not a KMS key ARN; give arn:aws:kms:<region>:<account>:key/<key-id> (SageMaker also "
                "takes a key id or an alias, but the endpoint role's kms:GenerateDataKey grant must name the key "
                "itself), or leave it unset for a new key"
            )
        return value

    @model_validator(mode="after")
    def _request_log_takes(self) -> CaptureSettings:
        """What the request log cannot do: it logs requests only, into the endpoint's log group and its key."""
        if not self.enabled or self.method != "request_log":
            return self
        problems = []
        if self.mode != "request":
            problems.append(
                f"{setting('capture.mode', self.mode)} needs Data Capture; the container's request log holds the "
                f"requests only: use {setting('capture.mode', 'request')}, or {setting('capture.method', 'data_capture')}"
            )
        if self.kms_key_arn is not None:
            problems.append(
                f"{setting('capture.kms_key_arn')} encrypts the Data Capture bucket; the request log is in the "
                "endpoint's CloudWatch Logs group, encrypted with that group's own key (created by the stack, with "
                f"rotation): leave it unset, or use {setting('capture.method', 'data_capture')}"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def uses_data_capture(self) -> bool:
        """The endpoint config gets a DataCaptureConfig (and the stack a capture bucket)."""
        return self.enabled and self.method == "data_capture"

    @property
    def request_log_sampling_percentage(self) -> int:
        """The container's request log share, in percent; 0: off."""
        return self.sampling_percentage if self.enabled and self.method == "request_log" else 0


_KMS_KEY_ARN = re.compile(r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+$")
