"""Local-mode transport: POST the body to a server's /invocations over plain HTTP.

Talks to the same route SageMaker calls inside the container, so local mode
exercises the container contract. Used for ``peagle local`` and any server that
speaks it (``http://127.0.0.1:8080``).
"""

from __future__ import annotations

import json
from collections.abc import Generator

import httpx

from peagle.client.errors import ClientConfigurationError, ConnectionFailedError, ModelServerError, ResponseTimeoutError
from peagle.client.retry import error_for_http_status

# Idle connections kept for reuse when the pool is not capped; more are opened as the load needs them.
KEEPALIVE_CONNECTIONS = 64


class HttpTransport:
    def __init__(
        self,
        base_url: str,
        *,
        read_timeout_s: float = 75.0,
        connect_timeout_s: float = 5.0,
        max_connections: int | None = None,
    ) -> None:
        """``max_connections`` None (the default): as many connections as requests in flight. httpx holds a
        request past its limit until a connection is free ("The maximum number of concurrent connections
        that may be established", httpx ``Limits``), and a load test would count that wait in the request's
        TTFT, so only a caller that wants a cap (``peagle batch``'s --concurrency) sets one."""
        if not base_url.startswith(("http://", "https://")):
            raise ClientConfigurationError(f"URL must start with http:// or https://, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._client = httpx.Client(
            base_url=self.base_url,
            timeout=httpx.Timeout(read_timeout_s, connect=connect_timeout_s),
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections or KEEPALIVE_CONNECTIONS
            ),
        )

    def stream_bytes(self, body: bytes, request_id: str) -> Generator[bytes, None, None]:
        """Yield the response body as it arrives; raise a typed error for a non-200 answer."""
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream", "X-Request-Id": request_id}
        try:
            with self._client.stream("POST", "/invocations", content=body, headers=headers) as response:
                if response.status_code != 200:
                    raise error_for_http_status(response.status_code, _error_detail(response.read()))
                yield from response.iter_bytes()
        except httpx.ConnectError as error:
            raise ConnectionFailedError(
                f"Cannot connect to {self.base_url} ({error}). Is the server running (`make local`)?"
            ) from error
        except httpx.TimeoutException as error:
            raise ResponseTimeoutError(f"No response from {self.base_url} within the timeout ({error!r}).") from error
        except httpx.TransportError as error:
            # The server closed the connection (crash, restart): no status was sent.
            raise ModelServerError(f"The connection to {self.base_url} broke: {error!r}", status=0) from error

    def close(self) -> None:
        self._client.close()


def _error_detail(body: bytes) -> str:
    """The human part of vLLM's error body ({"error": {"message": ...}}), else the raw text."""
    text = body.decode("utf-8", errors="replace")
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        return text[:500]
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if payload.get("message"):
            return str(payload["message"])
    return text[:500]
