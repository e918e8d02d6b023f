"""AWS plumbing shared by `peagle stage` and `peagle batch`: S3 locations, clients,
and botocore failures turned into messages a user can act on.

Expected failures (no credentials, access denied, a rejected request) become an
``AwsCallError`` naming the call, the permission it needs and AWS's own message;
the CLIs print it without a traceback. boto3 is imported only inside functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from peagle.settings.errors import PeagleError

_S3_URI = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?:/(?P<key>.*))?$")

_ACCESS_DENIED = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "Forbidden", "403", "AllAccessDisabled"}
)
BAD_CREDENTIAL_CODES = frozenset(
    {
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
    }
)
_THROTTLED = frozenset(
    {"Throttling", "ThrottlingException", "TooManyRequestsException", "SlowDown", "RequestLimitExceeded"}
)


class AwsCallError(PeagleError):
    """An AWS call failed for a reason the user can fix (permissions, input, quota, credentials)."""


@dataclass(frozen=True)
class S3Location:
    bucket: str
    key: str  # may be '' (the bucket root); a prefix ends with '/'

    @classmethod
    def parse(cls, uri: str, *, what: str = "S3 location") -> S3Location:
        match = _S3_URI.match(uri)
        if not match:
            raise PeagleError(f"{what} {uri!r} is not an S3 URI; use s3://<bucket>/<key or prefix>")
        return cls(bucket=match["bucket"], key=match["key"] or "")

    def as_prefix(self) -> S3Location:
        """The same location with a trailing '/', so keys under it stay under it."""
        if self.key and not self.key.endswith("/"):
            return S3Location(self.bucket, self.key + "/")
        return self

    def child(self, relative_key: str) -> S3Location:
        return S3Location(self.bucket, self.as_prefix().key + relative_key)

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


def aws_session(region: str | None = None) -> Any:
    import boto3

    return boto3.Session(region_name=region)


def aws_client(session: Any, service: str, **config: Any) -> Any:
    """A client in botocore's ``standard`` retry mode, raising AwsCallError when the region is
    missing. Standard, because "Legacy mode is the default mode used by any Boto3 client you
    create" and retries fewer errors (Boto3 guide, "Retries",
    https://docs.aws.amazon.com/boto3/latest/guide/retries.html)."""
    from botocore.config import Config

    if session.region_name is None:
        raise AwsCallError(
            "No AWS region configured: pass --region or set AWS_DEFAULT_REGION (or AWS_PROFILE with a region)."
        )
    return session.client(service, config=Config(retries={"mode": "standard", "max_attempts": 5}, **config))


def describe_client_error(error: Any, *, doing: str, permission: str) -> str:
    """One sentence from a botocore ``ClientError``: what failed, why, and what to change."""
    details = error.response.get("Error", {})
    code = str(details.get("Code", "Unknown"))
    message = details.get("Message") or str(error)
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code in _ACCESS_DENIED or (status == 403 and code not in BAD_CREDENTIAL_CODES):
        return f"access denied while {doing}: the caller needs {permission} ({code}: {message})"
    if code in BAD_CREDENTIAL_CODES:
        return (
            f"AWS rejected the credentials while {doing} ({code}: {message}); refresh them "
            "(e.g. `aws sso login`, or export fresh AWS_* variables)"
        )
    if code in ("ValidationException", "ValidationError"):
        return f"{doing}: AWS rejected the request: {message}"
    if code == "ResourceLimitExceeded":
        return (
            f"{doing}: account quota reached: {message}. Ask for more in the Service Quotas console "
            "(SageMaker), or use fewer / other instances"
        )
    if code == "ResourceInUse":
        return f"{doing}: {message} (pick another name)"
    if code == "NoSuchBucket":
        return f"{doing}: the bucket does not exist ({message}); deploy the artifacts stack or fix the S3 URI"
    if code in _THROTTLED:
        return f"{doing}: AWS kept throttling the call after retries ({code}); try again in a minute"
    return f"{doing} failed ({code}): {message}"


@contextmanager
def aws_call(doing: str, *, permission: str) -> Iterator[None]:
    """Turn the botocore failures a user can fix into ``AwsCallError`` with ``describe_client_error``."""
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
        TokenRetrievalError,
    )

    try:
        yield
    except ClientError as error:
        raise AwsCallError(describe_client_error(error, doing=doing, permission=permission)) from None
    except (NoCredentialsError, PartialCredentialsError, TokenRetrievalError) as error:
        raise AwsCallError(
            f"no usable AWS credentials while {doing} ({error}); configure them (AWS_PROFILE, `aws sso login`, "
            "or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"
        ) from None
    except NoRegionError:
        raise AwsCallError(f"no AWS region while {doing}: pass --region or set AWS_DEFAULT_REGION") from None
    except EndpointConnectionError as error:
        raise AwsCallError(f"cannot reach AWS while {doing}: {error}") from None


def caller_account(session: Any) -> str:
    with aws_call("looking up the AWS account (STS GetCallerIdentity)", permission="valid AWS credentials"):
        return aws_client(session, "sts").get_caller_identity()["Account"]
