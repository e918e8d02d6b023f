"""Which failures are retried, and how long to wait between attempts.

The rules (the errors are InvokeEndpoint's, SageMaker Runtime API Reference,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpoint.html;
what botocore retries by itself: Boto3 guide, "Retries",
https://docs.aws.amazon.com/boto3/latest/guide/retries.html):
- throttling (SageMaker ``ThrottlingException`` and friends, HTTP 429) is retried;
- ``ModelNotReadyException`` (429) is retried: botocore's standard mode does not;
- ``ModelError`` (424) is retried only when the container's original status is 5xx
  or 0 (no response): botocore never retries it, and a 4xx from the model means
  the request itself is wrong;
- SageMaker's own ``InternalFailure`` / ``ServiceUnavailable`` are retried;
- every other 4xx is final;
- nothing is retried once the first streamed byte has arrived (``client.py``
  enforces that, these functions only classify failures before it).

Waits use exponential backoff with full jitter (uniformly random in
[0, min(cap, base * 2**n)]) so that many throttled clients do not retry in step.
"""

from __future__ import annotations

import random as _random
from collections.abc import Callable
from dataclasses import dataclass

from peagle.client.errors import (
    InvalidRequestError,
    ModelNotReadyError,
    ModelServerError,
    PeagleClientError,
    ServiceError,
    ThrottledError,
)

# Error codes AWS services use for throttling (botocore's standard retry list).
THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "SlowDown",
    }
)
SERVICE_FAILURE_CODES = frozenset(
    {"InternalFailure", "ServiceUnavailable", "InternalDependencyException", "InternalStreamFailure"}
)


@dataclass(frozen=True)
class RetryPolicy:
    """The one retry layer: ``max_attempts`` bounds the sends of one call (botocore sends each
    attempt once, see ``sagemaker_transport``; httpx does not retry)."""

    max_attempts: int = 5
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")

    def delay_before_retry(self, retry_number: int, random: Callable[[], float] = _random.random) -> float:
        """Seconds to wait before retry ``retry_number`` (1 = the first retry)."""
        ceiling = min(self.max_delay_s, self.base_delay_s * (2 ** (retry_number - 1)))
        return random() * ceiling


def error_for_sagemaker_failure(
    code: str,
    message: str,
    *,
    http_status: int | None = None,
    original_status: int | None = None,
    log_stream_arn: str | None = None,
) -> PeagleClientError:
    """Turn a SageMaker runtime error (code + fields of botocore's ClientError) into a typed error."""
    if code in THROTTLING_CODES:
        return ThrottledError(
            f"SageMaker throttled the request ({code}): {message}. Lower the request rate or "
            "ask for a higher invocation quota.",
            status=http_status,
            code=code,
        )
    if code == "ModelNotReadyException":
        return ModelNotReadyError(
            f"The endpoint's model is not ready ({message}). Wait until the endpoint is InService "
            "and the container answers /ping.",
            status=http_status,
            code=code,
        )
    if code == "ModelError":
        return _model_error(message, original_status, log_stream_arn, http_status)
    if code in SERVICE_FAILURE_CODES:
        return ServiceError(f"SageMaker failed to serve the request ({code}): {message}", status=http_status, code=code)
    if code == "ValidationError" and "not found" in message.lower():
        return InvalidRequestError(
            f"{message}. Check the endpoint name and region (`aws sagemaker list-endpoints`).",
            status=http_status,
            code=code,
        )
    if http_status is not None and http_status >= 500:
        return ServiceError(f"SageMaker failed ({code}, HTTP {http_status}): {message}", status=http_status, code=code)
    return InvalidRequestError(f"The request was rejected ({code}): {message}", status=http_status, code=code)


def _model_error(
    message: str, original_status: int | None, log_stream_arn: str | None, http_status: int | None
) -> PeagleClientError:
    where = f" Container logs: {log_stream_arn}." if log_stream_arn else ""
    if original_status is None or original_status == 0 or original_status >= 500:
        status_text = "no response" if not original_status else f"status {original_status}"
        return ModelServerError(
            f"The model container failed ({status_text}): {message}.{where}",
            status=original_status,
            code="ModelError",
        )
    return InvalidRequestError(
        f"The model rejected the request (status {original_status}): {message}.{where}",
        status=original_status,
        code="ModelError",
    )


def error_for_http_status(status: int, message: str) -> PeagleClientError:
    """Turn a non-200 answer of the server's /invocations (local mode) into a typed error."""
    if status == 429:
        return ThrottledError(f"The server throttled the request (HTTP 429): {message}", status=status)
    if status == 503:
        return ModelNotReadyError(
            f"The server is not ready (HTTP 503): {message}. Wait until GET /ping answers 200.",
            status=status,
        )
    if status >= 500:
        return ModelServerError(f"The server failed (HTTP {status}): {message}", status=status)
    return InvalidRequestError(f"The server rejected the request (HTTP {status}): {message}", status=status)
