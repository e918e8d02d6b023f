"""Errors a caller of the client can act on.

Every failure that reaches the caller is a ``PeagleClientError`` whose class says
what happened and whose message says what to do. ``retryable`` records how the
failure was classified (see ``retry.py``); ``attempts`` how many times the request
was sent before giving up.
"""

from __future__ import annotations


class PeagleClientError(Exception):
    """Base class: the request did not produce a complete generation."""

    #: Whether the client's retry loop may send the request again.
    retryable: bool = False

    def __init__(self, message: str, *, status: int | None = None, code: str = "", attempts: int = 1):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.attempts = attempts

    def __str__(self) -> str:
        suffix = f" (after {self.attempts} attempts)" if self.attempts > 1 else ""
        return f"{self.message}{suffix}"


class InvalidRequestError(PeagleClientError):
    """The endpoint or the model rejected the request (4xx). Never retried: fix the request."""


class ThrottledError(PeagleClientError):
    """SageMaker or the server throttled the request and retries ran out."""

    retryable = True


class ModelNotReadyError(PeagleClientError):
    """The model is not loaded yet (ModelNotReadyException, or a local server still starting)."""

    retryable = True


class ModelServerError(PeagleClientError):
    """The model container failed (5xx, or status 0: no response) and retries ran out."""

    retryable = True


class ServiceError(PeagleClientError):
    """SageMaker itself failed (InternalFailure, ServiceUnavailable) and retries ran out."""

    retryable = True


class NoCapacityError(PeagleClientError):
    """The inference component has no copy to serve the request: it is scaled to zero (SageMaker's
    ``ValidationError`` "Inference Component has no capacity to process this request"). Not retried
    by ``max_attempts``: the client's loop waits for a copy for ``RetryPolicy.cold_start_wait_s``
    instead (see ``retry.py``), and raises this with what to do when no copy came in time."""

    def __init__(self, message: str, *, component: str | None = None, **kwargs):
        super().__init__(message, **kwargs)
        self.component = component


class ConnectionFailedError(PeagleClientError):
    """No connection could be made; the request never reached the server."""

    retryable = True


class ResponseTimeoutError(PeagleClientError):
    """No response within the read timeout. Not retried: the generation may still be
    running server-side and a resend would pay for it twice."""


class ClientConfigurationError(PeagleClientError):
    """The client cannot send at all (no AWS credentials or region, bad URL)."""


class AwsConfigurationError(ClientConfigurationError):
    """No AWS credentials or region to call the endpoint with: `peagle invoke` exits 3 (ExitCode.AWS), as every
    command does when AWS cannot be called, not 2 (the request itself is fine)."""


class StreamInterruptedError(PeagleClientError):
    """The stream broke after the first byte arrived. Never retried (a resend would
    repeat the whole generation); ``partial_text`` holds what was received."""

    def __init__(self, message: str, *, partial_text: str = "", **kwargs):
        super().__init__(message, **kwargs)
        self.partial_text = partial_text
