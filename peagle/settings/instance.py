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
    # Instance pools and ML capacity reservations (docs/deployment.md, "Instance pools and reservations"; the rules
    # across fields are peagle/settings/instance_pools.py's, those that need a plan per type peagle/planning/pool_plans.py's).
    fallback_types: list[str] = Field(
        default=[],
        max_length=4,
        json_schema_extra=spelled("fallback_instance_types"),
        description="instance types SageMaker falls back to, in priority order, when `type` (priority 1) has no "
        'capacity: ProductionVariant.InstancePools ("Valid values: 1 to 5, where 1 is the highest priority", '
        "SageMaker API Reference, InstancePool), so at most 4 besides `type`. Each is planned as its own type and "
        "gets its own Model where its plan differs. Empty: one instance type, no pool",
    )
    provision_timeout_seconds: int | None = Field(
        default=None,
        ge=300,
        le=3600,
        json_schema_extra=spelled("instance_provision_timeout"),
        description="ProductionVariant.VariantInstanceProvisionTimeoutInSeconds (300-3600): how long SageMaker "
        "tries to get capacity, across the pool's types, before the operation fails; it \"does not include the "
        'time for model download or container startup" (botocore 1.44.5 service model). Null: 600 with '
        "`fallback_types` (the instance launch the planner's start budget allows), else unset (SageMaker's default, "
        "not documented)",
    )
    ml_reservation_arn: str | None = Field(
        default=None,
        min_length=20,
        max_length=258,
        pattern=r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:[a-z0-9\-]{1,14}/",
        json_schema_extra=spelled("ml_reservation_arn"),
        description="an ML capacity reservation (a training plan's reserved capacity) to run on: "
        "ProductionVariant.CapacityReservationConfig with CapacityReservationPreference capacity-reservations-only, "
        'the one value SageMaker takes ("SageMaker AI launches instances only into an ML capacity reservation. If '
        'no capacity is available, the instances fail to launch", API Reference, '
        "ProductionVariantCapacityReservationConfig). `type` must be the reservation's instance type (\"The "
        'InstanceType field ... must match the InstanceType of your training plan", SageMaker developer guide, '
        '"Deploy an inference endpoint using the API, AWS CLI"; not checked at synth). Null: on-demand capacity',
    )

    @property
    def pool(self) -> list[str]:
        """The pool's instance types in priority order (priority 1 first): ``type``, then ``fallback_types``."""
        return [self.type, *self.fallback_types]
