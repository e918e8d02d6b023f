"""Client for P-EAGLE endpoints: one API over a SageMaker endpoint or a plain URL.

    from peagle.client import GenerationRequest, PeagleClient

    with PeagleClient.for_endpoint("my-endpoint", region="us-east-1") as client:
        result = client.generate(GenerationRequest.with_profile("chatbot", prompt="Hello"))

boto3 and httpx are imported only when a transport is built.
"""

from peagle.client.client import PeagleClient, Transport
from peagle.client.errors import (
    AwsConfigurationError,
    ClientConfigurationError,
    ConnectionFailedError,
    InvalidRequestError,
    ModelNotReadyError,
    ModelServerError,
    NoCapacityError,
    PeagleClientError,
    ResponseTimeoutError,
    ServiceError,
    StreamInterruptedError,
    ThrottledError,
)
from peagle.client.request import GenerationRequest, GenerationResult, Timings
from peagle.client.retry import RetryPolicy
from peagle.client.stream_chunks import SpecDecodeMetrics, Usage

__all__ = [
    "AwsConfigurationError",
    "ClientConfigurationError",
    "ConnectionFailedError",
    "GenerationRequest",
    "GenerationResult",
    "InvalidRequestError",
    "ModelNotReadyError",
    "ModelServerError",
    "NoCapacityError",
    "PeagleClient",
    "PeagleClientError",
    "ResponseTimeoutError",
    "RetryPolicy",
    "ServiceError",
    "SpecDecodeMetrics",
    "StreamInterruptedError",
    "ThrottledError",
    "Timings",
    "Transport",
    "Usage",
]
