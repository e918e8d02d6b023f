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
  enforces that, these functions only classify failures before it);
- an inference component with no copy (scaled to zero) is waited for, for at most
  ``RetryPolicy.cold_start_wait_s`` (see ``NO_CAPACITY_MARKER``); those sends are bounded
  by that time, not by ``max_attempts``.

Waits use exponential backoff with full jitter (uniformly random in
[0, min(cap, base * 2**n)]) so that many throttled clients do not retry in step.
``send_with_retries`` is the one loop that applies these rules (``PeagleClient`` and
`peagle smoke`'s non-streamed invocation both send through it).
"""

from __future__ import annotations

import math
import random as _random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from peagle.client.errors import (
    InvalidRequestError,
    ModelNotReadyError,
    ModelServerError,
    NoCapacityError,
    PeagleClientError,
    ServiceError,
    ThrottledError,
)

T = TypeVar("T")

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
# An inference component scaled to zero fails an invocation at once with a ValidationError (HTTP 400),
# not ModelNotReadyException (whose documentation, botocore 1.44.5 sagemaker-runtime service-2.json,
# covers only "a serverless endpoint variant's resources are still being provisioned, or a multi-model
# endpoint is still downloading or loading the target model"). AWS's scale-to-zero launch post
# ("Unlock cost savings with the new scale down to zero feature in SageMaker Inference", AWS Machine
# Learning Blog, 2024-12-03) shows the error: "If we try to invoke our endpoint while instances are
# scaled down to zero, we get a validation error: An error occurred (ValidationError) when calling the
# InvokeEndpoint operation: Inference Component has no capacity to process this request.
# ApplicationAutoScaling may be in-progress (if configured) or try to increase the capacity by invoking
# UpdateInferenceComponentRuntimeConfig API." The developer guide ("Scale an endpoint to zero
# instances") adds: "Be aware that the provisioning process takes several minutes. During that time,
# any attempts to invoke the endpoint will produce an error." Matched on the code and this phrase,
# lower-cased, so that every other ValidationError stays final.
NO_CAPACITY_MARKER = "no capacity"
SCALE_OUT_HINT = (
    "aws sagemaker update-inference-component-runtime-config --inference-component-name {name} "
    "--desired-runtime-config CopyCount=1"
)


@dataclass(frozen=True)
class RetryPolicy:
    """The one retry layer: ``max_attempts`` bounds the sends of one call (botocore sends each
    attempt once, see ``sagemaker_transport``; httpx does not retry)."""

    max_attempts: int = 5
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    # How long to wait for an inference component scaled to zero to get a copy (0: fail at once with
    # what to do). A cold start is minutes, so it has its own, slower backoff.
    cold_start_wait_s: float = 0.0
    cold_start_basis: str = "--cold-start-wait"  # why that long, for the notice (peagle/client/cold_start.py)
    cold_start_base_delay_s: float = 5.0
    cold_start_max_delay_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if not (math.isfinite(self.cold_start_wait_s) and self.cold_start_wait_s >= 0):
            raise ValueError(f"cold_start_wait_s must be a finite number >= 0, got {self.cold_start_wait_s}")

    def delay_before_retry(self, retry_number: int, random: Callable[[], float] = _random.random) -> float:
        """Seconds to wait before retry ``retry_number`` (1 = the first retry)."""
        ceiling = min(self.max_delay_s, self.base_delay_s * (2 ** (retry_number - 1)))
        return random() * ceiling

    def delay_before_cold_start_retry(self, retry_number: int, random: Callable[[], float] = _random.random) -> float:
        """Seconds to wait before cold-start retry ``retry_number``: between half and all of
        min(cap, base * 2**(n-1)), so waiting clients spread out without polling every few ms."""
        ceiling = min(self.cold_start_max_delay_s, self.cold_start_base_delay_s * (2 ** (retry_number - 1)))
        return ceiling / 2 + random() * ceiling / 2


@dataclass(frozen=True)
class Sent(Generic[T]):
    """What ``send_with_retries`` got: the value, how many sends it took, and the cold start, if any."""

    value: T
    sends: int
    cold_start_wait_s: float = 0.0  # from the first no-capacity answer to the send that found a copy
    cold_start_ended_at: float | None = None  # clock() when the wait ended and the next send began; None: none


def send_with_retries(
    send: Callable[[], T],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
    random: Callable[[], float] = _random.random,
    notify: Callable[[str], None] | None = None,
) -> Sent[T]:
    """Call ``send`` until it returns, retrying only what the rules above allow.

    ``send`` raises ``PeagleClientError``. A retryable failure is sent again at most
    ``max_attempts`` times in all; ``NoCapacityError`` (a component scaled to zero) is sent
    again until ``cold_start_wait_s`` has passed since the first one, ``notify`` being told
    once why, and once when a copy answered.
    """
    sends = failures = cold_start_retries = 0
    cold_start_began: float | None = None
    cold_start_ended_at: float | None = None
    while True:
        sends += 1
        try:
            value = send()
        except NoCapacityError as error:
            error.attempts = sends
            now = clock()
            if cold_start_began is None:
                cold_start_began = now
                if policy.cold_start_wait_s > 0 and notify is not None:
                    notify(_cold_start_notice(error, policy))
            deadline = cold_start_began + policy.cold_start_wait_s
            if now >= deadline:
                raise _no_copy_in_time(error, policy, waited_s=now - cold_start_began) from error
            cold_start_retries += 1
            sleep(min(policy.delay_before_cold_start_retry(cold_start_retries, random), deadline - now))
            cold_start_ended_at = clock()
            continue
        except PeagleClientError as error:
            error.attempts = sends
            failures += 1
            if not error.retryable or failures >= policy.max_attempts:
                raise
            sleep(policy.delay_before_retry(failures, random))
            continue
        if cold_start_began is None or cold_start_ended_at is None:
            return Sent(value, sends)
        waited = cold_start_ended_at - cold_start_began
        if notify is not None:
            notify(f"cold start over: a copy answered after {waited:.0f} s ({sends} sends)")
        return Sent(value, sends, waited, cold_start_ended_at)


def _cold_start_notice(error: NoCapacityError, policy: RetryPolicy) -> str:
    return (
        f"cold start: {error.message} If the component scales out from zero, SageMaker is starting a copy "
        "now: an instance if none runs, then the model download, vLLM's start-up and the speculation "
        f"self-check (minutes). Retrying with backoff for up to {policy.cold_start_wait_s:.0f} s "
        f"({policy.cold_start_basis}); the wait is not counted in the request's timings."
    )


def _no_copy_in_time(error: NoCapacityError, policy: RetryPolicy, *, waited_s: float) -> NoCapacityError:
    start_one = SCALE_OUT_HINT.format(name=error.component or "<component>")
    if policy.cold_start_wait_s <= 0:
        what = (
            "Not waited for (cold-start wait 0 s): pass --cold-start-wait SECONDS (e.g. 900) to wait for a copy, "
            f"or start one yourself: {start_one}"
        )
    else:
        what = (
            f"No copy was ready after {waited_s:.0f} s (cold-start wait {policy.cold_start_wait_s:.0f} s). "
            "A cold start is an instance (when none runs), the model download, vLLM's "
            "start-up and the speculation self-check: up to the component's download and start-up timeouts. "
            "If the component scales out from zero (a step scaling policy on the NoCapacityInvocationFailures "
            "alarm), run again with a longer --cold-start-wait; otherwise start a copy yourself: "
            f"{start_one}"
        )
    return NoCapacityError(
        f"{error.message} {what}",
        component=error.component,
        status=error.status,
        code=error.code,
        attempts=error.attempts,
    )


def error_for_sagemaker_failure(
    code: str,
    message: str,
    *,
    http_status: int | None = None,
    original_status: int | None = None,
    log_stream_arn: str | None = None,
    inference_component: str | None = None,
) -> PeagleClientError:
    """Turn a SageMaker runtime error (code + fields of botocore's ClientError) into a typed error;
    ``inference_component`` is the InferenceComponentName the request named, if any."""
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
    if code == "ValidationError" and NO_CAPACITY_MARKER in message.lower():
        name = f"Inference component {inference_component}" if inference_component else "The inference component"
        return NoCapacityError(
            f"{name} has no copy to serve the request: it is scaled to zero (SageMaker: {message.rstrip('.')}).",
            component=inference_component,
            status=http_status,
            code=code,
        )
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
