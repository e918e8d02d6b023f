"""The network section: network isolation and the private subnets the model runs in."""

from __future__ import annotations

from pydantic import Field, model_validator

from peagle.catalog import StrictModel
from peagle.settings.refs import spelled


class VpcSettings(StrictModel):
    """Run the model in private subnets: your own (subnet_ids + security_group_ids), or a new VPC
    (create: true) with isolated subnets, no NAT, a security group without ingress and the VPC
    endpoints SageMaker needs to pull the image, read weights and write logs and metrics."""

    create: bool = Field(default=False, description="a new VPC for the model instead of your own subnets")
    max_azs: int = Field(default=2, ge=2, le=6, description="with create: availability zones to span")
    subnet_ids: list[str] = Field(default=[], description="your private subnets for the model")
    security_group_ids: list[str] = Field(default=[], description="your security groups for the model")

    @model_validator(mode="after")
    def _one_source(self) -> VpcSettings:
        own = bool(self.subnet_ids) or bool(self.security_group_ids)
        if self.create and own:
            raise ValueError("network.vpc: give either create: true or subnet_ids + security_group_ids, not both")
        if not self.create and not (self.subnet_ids and self.security_group_ids):
            raise ValueError(
                "network.vpc: give subnet_ids and security_group_ids of your private subnets, or create: true "
                "for a new VPC"
            )
        return self


class NetworkSettings(StrictModel):
    isolation: bool = Field(
        default=True,
        description="no network and no AWS credentials in the container",
        json_schema_extra=spelled("network_isolation"),
    )
    vpc: VpcSettings | None = Field(
        default=None,
        description="private subnets for the model; the execution role then gets the ENI permissions SageMaker needs",
    )
