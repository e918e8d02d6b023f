"""The deployment's settings, section by section, and what follows from them (the scaling bounds, the names).

Each section validates itself (its module); DeploymentConfig (peagle/settings/deployment.py) adds the rules that look
across sections (peagle/settings/rules.py). Build DeploymentConfig, never this base, which those rules have not seen."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from peagle.catalog import InstanceType, ModelPair, ProfileName, StrictModel, load_catalog
from peagle.settings.ab_testing import AbTestSettings
from peagle.settings.alarms import AlarmSettings
from peagle.settings.artifacts import ArtifactsSettings
from peagle.settings.async_inference import AsyncInferenceSettings
from peagle.settings.autoscaling import AutoscalingSettings
from peagle.settings.batch import BatchSettings
from peagle.settings.capture import CaptureSettings
from peagle.settings.endpoint import EndpointSettings
from peagle.settings.image import ImageSettings
from peagle.settings.instance import InstanceSettings
from peagle.settings.network import NetworkSettings
from peagle.settings.observability import ObservabilitySettings
from peagle.settings.profile import ProfileOverrides, SloSettings
from peagle.settings.refs import spelled
from peagle.settings.rollout import RolloutSettings
from peagle.settings.speculation import SpeculationSettings
from peagle.settings.timeouts import TimeoutSettings


class DeploymentSections(StrictModel):
    name: str = Field(
        default="peagle",
        json_schema_extra=spelled("name"),
        pattern=r"^[a-z][a-z0-9-]{0,23}$",
        description="lower-case prefix of stack, endpoint and bucket names (<name>-endpoint, "
        "<name>-models-<account>-<region>), so several deployments can live in one account",
    )
    model: str = Field(
        default="gpt-oss-20b",
        description="a catalog pair id or a key of custom_pairs",
        json_schema_extra=spelled("model", flag="--model"),
    )
    custom_pairs: dict[str, ModelPair] = Field(
        default={},
        json_schema_extra=spelled("custom_pair"),
        description="model pairs only this deployment needs, by id, with the fields of peagle/catalog/pairs.yaml "
        "and the same validation; model may then name one",
    )
    custom_instances: dict[str, InstanceType] = Field(
        default={},
        json_schema_extra=spelled("instance_facts"),
        description="instance types the catalog lacks, by SageMaker name, with their GPU facts (the fields of "
        "peagle/catalog/instances.yaml); instance.type may then name one",
    )
    instance: InstanceSettings = InstanceSettings()
    endpoint: EndpointSettings = EndpointSettings()
    profile: ProfileName = Field(
        default=ProfileName.CHATBOT,
        json_schema_extra=spelled("profile", flag="--profile"),
        description="the workload profile (peagle/catalog/profiles.yaml): sampling, context, concurrency, "
        "latency SLA and SLO the planner sizes for",
    )
    profile_overrides: ProfileOverrides = Field(
        default=ProfileOverrides(),
        json_schema_extra=spelled("profile_overrides"),
        description="sampling, context, concurrency and SLA of the profile, overridden",
    )
    slo: SloSettings = Field(default=SloSettings(), json_schema_extra=spelled("slo"))
    speculation: SpeculationSettings = Field(default=SpeculationSettings(), json_schema_extra=spelled("speculation"))
    artifacts: ArtifactsSettings = Field(default=ArtifactsSettings(), json_schema_extra=spelled("weights"))
    network: NetworkSettings = NetworkSettings()
    image: ImageSettings = ImageSettings()
    timeouts: TimeoutSettings = Field(
        default=TimeoutSettings(), description="model download and container start-up; unset: sized from the weights"
    )
    autoscaling: AutoscalingSettings = Field(default=AutoscalingSettings(), json_schema_extra=spelled("autoscaling"))
    alarms: AlarmSettings = AlarmSettings()
    observability: ObservabilitySettings = ObservabilitySettings()
    rollout: RolloutSettings = Field(default=RolloutSettings(), json_schema_extra=spelled("rollout"))
    ab_test: AbTestSettings = Field(default=AbTestSettings(), json_schema_extra=spelled("ab_baseline"))
    batch: BatchSettings = BatchSettings()
    async_inference: AsyncInferenceSettings = AsyncInferenceSettings()
    capture: CaptureSettings = Field(default=CaptureSettings(), json_schema_extra=spelled("capture"))
    vllm_args: dict[str, bool | int | float | str] = Field(
        default={},
        json_schema_extra=spelled("vllm_args"),
        description="extra vLLM flags (name without '--'), passed through as SM_VLLM_*",
    )

    @property
    def uses_inference_components(self) -> bool:
        return self.endpoint.mode == "inference_components"

    @property
    def min_capacity(self) -> int:
        """The scaling floor in serving units (instances, or copies in inference_components mode): the one given,
        else 1 instance or 0 copies; with autoscaling off, the units the deploy starts (nothing scales them)."""
        given = self.autoscaling.min_capacity
        if given is not None:
            return given
        if not self.autoscaling.enabled:
            return (
                self.endpoint.inference_components.initial_copies
                if self.uses_inference_components
                else self.instance.count
            )
        return 0 if self.uses_inference_components else 1

    @property
    def max_capacity(self) -> int | None:
        """The scaling ceiling in serving units: the one given, else 2 instances; copies: None, as many as
        endpoint.inference_components.max_instances hold (the plan knows how many that is)."""
        given = self.autoscaling.max_capacity
        if given is not None or self.uses_inference_components:
            return given
        return 2 if self.autoscaling.enabled else self.instance.count

    def blue_green_traffic(self) -> Literal["canary", "linear", "all_at_once"]:
        """The traffic shifting a blue/green update uses: 'auto' resolved against the instance count."""
        traffic = self.rollout.blue_green.traffic
        if traffic == "auto":
            return "canary" if self.instance.count >= 2 else "all_at_once"
        return traffic

    @property
    def endpoint_name(self) -> str:
        """Known before deploy, so the log group, metric filters and alarms can be created with it."""
        return f"{self.name}-endpoint"

    @property
    def async_endpoint_name(self) -> str:
        return f"{self.name}-async"

    def inference_component_name(self, variant: str) -> str:
        """Inference-component mode: the component serving ``variant`` ("Primary", "Baseline"), a physical
        name so its log group, scaling target and alarms can be created with it (peagle-primary)."""
        return f"{self.name}-{variant.lower()}"

    def pair(self) -> ModelPair:
        return self.custom_pairs.get(self.model) or load_catalog().pairs[self.model]

    def instance_facts(self) -> InstanceType:
        """The GPU and host facts of instance.type: its catalog row, or its custom_instances entry."""
        return self.custom_instances.get(self.instance.type) or load_catalog().instances[self.instance.type]
