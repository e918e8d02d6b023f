"""The endpoint section: production variants or inference components, and the routing."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from peagle.catalog import StrictModel
from peagle.settings.inference_components import InferenceComponentSettings
from peagle.settings.refs import spelled
from peagle.settings.routing import RoutingSettings


class EndpointSettings(StrictModel):
    mode: Literal["variants", "inference_components"] = Field(
        default="variants",
        json_schema_extra=spelled(
            "mode",
            **{
                '"variants"': "mode=EndpointMode.variants()",
                '"inference_components"': "mode=EndpointMode.inference_components(...)",
            },
        ),
        description="variants: production variants, one model replica per instance, at least one instance "
        "always running; inference_components: the model as a component, several copies per instance, "
        "copies and instances may scale to zero",
    )
    inference_components: InferenceComponentSettings = Field(
        default=InferenceComponentSettings(), json_schema_extra=spelled("mode=EndpointMode.inference_components(...)")
    )
    routing: RoutingSettings = Field(
        default=RoutingSettings(),
        json_schema_extra=spelled("routing=Routing...(...)"),
        description="how SageMaker spreads requests over the instances (real-time endpoints)",
    )
