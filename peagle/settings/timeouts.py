"""The timeouts section: the model download and the container's start-up budget."""

from __future__ import annotations

from pydantic import Field

from peagle.catalog import StrictModel
from peagle.settings.refs import spelled


class TimeoutSettings(StrictModel):
    container_startup_seconds: int | None = Field(
        default=None,
        json_schema_extra=spelled("container_startup_timeout"),
        ge=60,
        le=3600,
        description="the launcher's whole start-up budget: engine load, then the speculation self-check (300 s), "
        "then a 30 s margin so the launcher's own error comes before SageMaker stops the container; unset: "
        "sized from the weights (600-3600 s)",
    )
    model_download_seconds: int | None = Field(
        default=None,
        json_schema_extra=spelled("model_download_timeout"),
        ge=60,
        le=3600,
        description="unset: sized from the weights (600-3600 s, SageMaker's range)",
    )
