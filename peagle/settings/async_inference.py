"""The async_inference section: a second, asynchronous endpoint on the same Model."""

from __future__ import annotations

from pydantic import Field, PositiveInt

from peagle.catalog import StrictModel
from peagle.settings.refs import spelled


class AsyncInferenceSettings(StrictModel):
    """A second, asynchronous endpoint on the same Model for long jobs (results to S3, SNS on done/failed)."""

    enabled: bool = Field(
        default=False,
        json_schema_extra=spelled(
            "PeagleEndpoint.add_async_endpoint(...)",
            true="a PeagleEndpoint.add_async_endpoint(...) call",
            false="no PeagleEndpoint.add_async_endpoint() call",
        ),
        description="a second endpoint (<name>-async) on the same Model, e.g. for long summarisation: requests "
        "queue, results land under async/output/, SNS topics report success and failure",
    )
    # A construct user sets these as PeagleEndpoint.add_async_endpoint's keyword arguments.
    max_concurrent_invocations_per_instance: int = Field(
        default=4,
        ge=1,
        le=1000,
        description="requests each instance works on at once",
        json_schema_extra=spelled("add_async_endpoint(max_concurrent_invocations_per_instance=...)"),
    )
    min_instances: int = Field(
        default=0,
        ge=0,
        le=100,
        description="0: scale to zero when the queue is empty",
        json_schema_extra=spelled("add_async_endpoint(min_instances=...)"),
    )
    max_instances: PositiveInt = Field(
        default=2,
        le=100,
        description="scaling ceiling of the async endpoint",
        json_schema_extra=spelled("add_async_endpoint(max_instances=...)"),
    )
    target_backlog_per_instance: float = Field(
        default=4.0,
        gt=0,
        description="queued requests per instance the backlog target tracking aims at",
        json_schema_extra=spelled("add_async_endpoint(target_backlog_per_instance=...)"),
    )
