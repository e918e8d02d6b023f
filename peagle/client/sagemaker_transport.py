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

from collections.abc import Generator
from typing import Any

from peagle.client.errors import (
    AwsConfigurationError,
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
        # Connections kept for reuse, not a cap: botocore hands urllib3 only ``maxsize``
        # (botocore/httpsession.py), and urllib3 blocks at it only with ``block`` ("If set to True, no more
        # than maxsize connections will be used at a time", urllib3 ``HTTPConnectionPool``), so a load past
        # it opens more connections rather than waiting for one.
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
        self.inference_component = inference_component
        self._routing = routing_parameters(target_variant=target_variant, inference_component=inference_component)

    def stream_bytes(self, body: bytes, request_id: str) -> Generator[bytes, None, None]:
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
            raise error_from_client_error(error, inference_component=self.inference_component) from error
        except (NoCredentialsError, NoRegionError) as error:
            raise AwsConfigurationError(
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


def routing_parameters(*, target_variant: str | None, inference_component: str | None) -> dict[str, str]:
    """InvokeEndpoint / InvokeEndpointWithResponseStream's routing headers, only those given.

    botocore 1.44.5, ``botocore/data/sagemaker-runtime/2017-05-13/service-2.json``, both operations:
    - ``TargetVariant`` (header X-Amzn-SageMaker-Target-Variant): "Specify the production variant to send
      the inference request to when invoking an endpoint that is running two or more variants. Note that
      this parameter overrides the default behavior for the endpoint, which is to distribute the invocation
      traffic based on the variant weights."
    - ``InferenceComponentName`` (header X-Amzn-SageMaker-Inference-Component; at most 63 characters,
      pattern ``^[a-zA-Z0-9]([\\-a-zA-Z0-9]*[a-zA-Z0-9])?$``): "If the endpoint hosts one or more inference
      components, this parameter specifies the name of inference component to invoke." (the streaming
      operation adds "for a streaming response").
    Neither description says the two exclude each other, so both may be sent; SageMaker checks the pair.
    """
    routing: dict[str, str] = {}
    if target_variant:
        routing["TargetVariant"] = target_variant
    if inference_component:
        routing["InferenceComponentName"] = inference_component
    return routing


def error_from_client_error(error: Any, *, inference_component: str | None = None) -> PeagleClientError:
    """Map botocore's ClientError (or EventStreamError) fields onto the retry classification;
    ``inference_component`` names the component the request went to, for a cold start's message."""
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
        inference_component=inference_component,
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
