"""The instance section: the SageMaker instance type, how many the deploy starts, its GPU host image and
its price."""

from __future__ import annotations

from pydantic import Field, PositiveInt

from peagle.catalog import StrictModel
from peagle.settings.refs import spelled


class InstanceSettings(StrictModel):
    type: str = Field(
        default="ml.g6e.xlarge",
        description="SageMaker instance type (see `peagle catalog`)",
        json_schema_extra=spelled("instance_type", flag="--instance"),
    )
    count: PositiveInt = Field(
        default=1,
        le=100,
        description="initial instances (within autoscaling.min_capacity..max_capacity; in inference_components "
        "mode within endpoint.inference_components.min_instances..max_instances)",
        json_schema_extra=spelled("instance_count", flag="--instance-count"),
    )
    ami_version: str | None = Field(
        default=None,
        json_schema_extra=spelled("inference_ami_version"),
        description="ProductionVariant.InferenceAmiVersion (the GPU host's NVIDIA driver); unset: the one the "
        "serving image needs (peagle/catalog/runtime.yaml). A driver too old for the image fails synth",
    )
    price_per_hour_usd: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        json_schema_extra=spelled("price_per_hour_usd"),
        description="on-demand price per instance-hour in USD, overriding the catalog's (e.g. for a savings plan "
        "or another region); `peagle plan`, the dashboard's cost widgets and the cost alarm use it. Null: the "
        "price in peagle/catalog/instances.yaml (or in custom_instances)",
    )
