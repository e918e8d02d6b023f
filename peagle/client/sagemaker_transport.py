"""SageMaker transport: ``InvokeEndpointWithResponseStream`` on ``sagemaker-runtime``.

One layer decides retries, the client's loop (``client.py`` with ``retry.py``), so
botocore sends each attempt once (``total_max_attempts: 1``: "a value of 1 indicates
that no requests will be retried", ``botocore/config.py``). Only the client's loop
knows what is safe to send again: it classifies ``ModelError`` by its
``OriginalStatusCode``, retries ``ModelNotReadyException`` (botocore does not), and
stops once the first streamed byte has arrived. botocore's ``standard`` mode stacked
under it multiplied the sends (3 per attempt: up to 15 for one throttled call) and
resent after a read timeout (``botocore/retries/standard.py`` retries every
``HTTPClientError``, ``ReadTimeoutError`` included), paying again for a generation
that may still be running. The read timeout is above SageMaker's 60 s invocation
limit so SageMaker, not the socket, ends a slow request.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from peagle.client.errors import (
    ClientConfigurationError,
    ConnectionFailedError,
    PeagleClientError,
    ResponseTimeoutError,
)
from peagle.client.retry import error_for_sagemaker_failure

MIN_READ_TIMEOUT_S = 70.0


def make_runtime_client(
    region: str | None = None,
    *,
    read_timeout_s: float = 75.0,
    connect_timeout_s: float = 5.0,
    max_pool_connections: int = 64,
) -> Any:
    """A ``sagemaker-runtime`` client for the client's retry loop: one botocore attempt per call
    (see the module docstring), a read timeout above the 60 s invocation limit."""
    import boto3
    from botocore.config import Config

    if read_timeout_s < MIN_READ_TIMEOUT_S:
        raise ClientConfigurationError(
            f"read timeout {read_timeout_s} s is below {MIN_READ_TIMEOUT_S} s: SageMaker allows 60 s per "
            "invocation and a shorter socket timeout makes botocore resend a generation still running."
        )
    config = Config(
        retries={"mode": "standard", "total_max_attempts": 1},
        read_timeout=read_timeout_s,
        connect_timeout=connect_timeout_s,
        max_pool_connections=max_pool_connections,
    )
    return boto3.client("sagemaker-runtime", region_name=region, config=config)


class SageMakerTransport:
    def __init__(
        self,
        endpoint_name: str,
        *,
        runtime_client: Any = None,
        region: str | None = None,
        target_variant: str | None = None,
        inference_component: str | None = None,
    ) -> None:
        self.endpoint_name = endpoint_name
        self._client = runtime_client if runtime_client is not None else _runtime_client_or_explain(region)
        self._routing: dict[str, str] = {}
        if target_variant:
            self._routing["TargetVariant"] = target_variant
        if inference_component:
            self._routing["InferenceComponentName"] = inference_component

    def stream_bytes(self, body: bytes, request_id: str) -> Iterator[bytes]:
        """Yield PayloadPart bytes as they arrive; raise typed errors.

        Mid-stream ``ModelStreamError`` / ``InternalStreamFailure`` events surface from
        botocore's EventStream as ``EventStreamError`` (a ``ClientError``) and are mapped
        the same way; the client decides they are final once bytes were received.
        """
        from botocore.exceptions import (
            ClientError,
            ConnectTimeoutError,
            EndpointConnectionError,
            NoCredentialsError,
            NoRegionError,
            ReadTimeoutError,
        )
        from urllib3.exceptions import HTTPError as Urllib3HTTPError
        from urllib3.exceptions import ReadTimeoutError as Urllib3ReadTimeoutError

        try:
            response = self._client.invoke_endpoint_with_response_stream(
                EndpointName=self.endpoint_name,
                Body=body,
                ContentType="application/json",
                Accept="text/event-stream",
                # No idempotency token exists; a request id in CustomAttributes lets
                # the request be found in the container's logs.
                CustomAttributes=f"peagle-request-id={request_id}",
                **self._routing,
            )
            for event in response["Body"]:
                payload = event.get("PayloadPart", {}).get("Bytes")
                if payload:
                    yield payload
        except ClientError as error:
            raise error_from_client_error(error) from error
        except (NoCredentialsError, NoRegionError) as error:
            raise ClientConfigurationError(
                f"{error}. Configure AWS credentials (AWS_PROFILE, environment or instance role) and a region (--region or AWS_DEFAULT_REGION)."
            ) from error
        except (ReadTimeoutError, Urllib3ReadTimeoutError) as error:
            raise ResponseTimeoutError(
                f"No data from endpoint {self.endpoint_name} within the read timeout: {error}"
            ) from error
        except (ConnectTimeoutError, EndpointConnectionError) as error:
            raise ConnectionFailedError(f"Cannot reach the SageMaker runtime: {error}") from error
        except Urllib3HTTPError as error:
            raise ConnectionFailedError(f"The connection to the SageMaker runtime broke: {error!r}") from error

    def close(self) -> None:
        close = getattr(self._client, "close", None)
        if close is not None:
            close()


def error_from_client_error(error: Any) -> PeagleClientError:
    """Map botocore's ClientError (or EventStreamError) fields onto the retry classification."""
    response = error.response
    details = response.get("Error", {})
    code = details.get("Code", "Unknown")
    message = details.get("Message", "") or str(error)
    if code == "ModelStreamError" and details.get("ErrorCode"):
        message = f"{message} (model error code {details['ErrorCode']})"
    original_status = response.get("OriginalStatusCode")
    return error_for_sagemaker_failure(
        code,
        message,
        http_status=response.get("ResponseMetadata", {}).get("HTTPStatusCode"),
        original_status=int(original_status) if original_status is not None else None,
        log_stream_arn=response.get("LogStreamArn"),
    )


def _runtime_client_or_explain(region: str | None) -> Any:
    try:
        return make_runtime_client(region)
    except Exception as error:  # botocore raises NoRegionError at client creation
        if type(error).__name__ == "NoRegionError":
            raise ClientConfigurationError(
                "No AWS region configured: pass --region or set AWS_DEFAULT_REGION."
            ) from error
        raise
