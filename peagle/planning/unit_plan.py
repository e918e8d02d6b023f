"""The serving units a plan calls for, tagged by kind: production variants (instances, one replica each) or an
inference-component pool (copies packed on managed instances, with the pool's own settings carried whole).

The planner decides the kind once (peagle/planning/planner.py, ``Plan.units``) and everything downstream asks the unit plan,
never the kind: what one unit is called ("instance" or "copy"), how many run on an instance, what its GPU metrics
sum, what it adds to ``peagle plan``'s summary. peagle_cdk picks the strategy that builds the units from the unit
plan's class once (peagle_cdk/unit_strategy.py).

The recorded form (peagle/planning/plan_record.py) is the one the plan always had: the key ``components`` holds the pool's
fields, or null for production variants, so a template synthesized before the unit plan reads the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from pydantic import PlainSerializer, PlainValidator, TypeAdapter

from peagle.planning.forced_data_cache import data_cache_warning
from peagle.settings import InferenceComponentSettings
from peagle.settings.errors import PlanError
from peagle.settings.refs import setting

if TYPE_CHECKING:
    from peagle.catalog import InstanceType
    from peagle.settings import DeploymentConfig

# Inference-component mode: the share of an instance's vCPUs and memory left to the host (SageMaker's
# agents, the OS) when the copies on it divide the rest evenly. Our choice, not a SageMaker figure.
HOST_RESERVE_SHARE = 0.1
# How long the copies but one must carry a light load before one goes (peagle/planning/planner.py, LIGHT_LOAD_SHARE, says
# where the figure comes from).
LIGHT_LOAD_MINUTES = 15


class StartBudget(Protocol):
    """What the pool's summary says of a cold start (peagle.planning.planner.Plan has it)."""

    @property
    def model_download_timeout_seconds(self) -> int: ...
    @property
    def container_startup_timeout_seconds(self) -> int: ...
    @property
    def cold_start_wait_seconds(self) -> int: ...


@dataclass(frozen=True)
class VariantUnits:
    """Production variants: each unit is an instance holding one replica of the model."""

    unit_word = "instance"
    replicas_per_instance = 1
    scales_to_zero = False
    floor_is_instances = True  # autoscaling.min_capacity bounds the instances (instance.count must be within it)

    @property
    def component_settings(self) -> InferenceComponentSettings | None:
        """The pool's settings as given: none, variants have no pool."""
        return None

    def gpus_per_metric(self, instance: InstanceType) -> int:
        """A variant's GPUUtilization is 0-100 x the instance's GPUs ("Amazon SageMaker AI metrics in Amazon
        CloudWatch", https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html)."""
        return instance.gpu_count

    def scaling_ceiling(self, variants_ceiling: int | None) -> int | None:
        return variants_ceiling

    def traffic_percent(self, variant_share: float) -> float:
        """The share of the endpoint's requests this variant gets (the A/B split)."""
        return variant_share

    def component_name(self, unit: str) -> str | None:
        """The inference component a request names for ``unit``: none, a variant is reached by the endpoint."""
        return None

    def notes(self, instance_type: str, instance: InstanceType) -> list[str]:
        return []

    def summary_lines(self, plan: StartBudget) -> list[str]:
        return []

    def cost_note(self, price_per_hour_usd: float) -> str:
        return ""

    def as_json(self) -> dict[str, Any] | None:
        """The recorded form (and `peagle plan --json`'s inference_components): none."""
        return None


@dataclass(frozen=True)
class ComponentPool:
    """Inference-component mode: one copy's compute requirements, the copy and instance bounds, and the pool's
    settings whole (placement, scale-in policy, data cache: read where the pool is built, priced and simulated)."""

    accelerators_per_copy: int  # NumberOfAcceleratorDevicesRequired = vLLM tensor_parallel_size
    copies_per_instance: int
    cpu_cores_per_copy: int  # NumberOfCpuCoresRequired
    memory_mb_per_copy: int  # MinMemoryRequiredInMb
    initial_copies: int
    min_copies: int
    max_copies: int
    min_instances: int
    max_instances: int
    scale_to_zero_after_idle_minutes: int

    # The component's settings as the file or the props gave them: a setting that acts only where the component is
    # built (peagle_cdk/component_endpoint.py) is read from here, so adding one touches the model and that place.
    settings: InferenceComponentSettings = field(default_factory=InferenceComponentSettings)

    light_load_minutes: int = LIGHT_LOAD_MINUTES

    unit_word = "copy"
    floor_is_instances = False  # autoscaling.min_capacity bounds the copies; the instances have their own bounds

    @property
    def scales_to_zero(self) -> bool:
        return self.min_copies == 0

    @property
    def replicas_per_instance(self) -> int:
        return self.copies_per_instance

    @property
    def component_settings(self) -> InferenceComponentSettings | None:
        return self.settings

    @property
    def placement(self) -> str:
        """SchedulingConfig.PlacementStrategy of the pool's components."""
        return self.settings.placement

    def gpus_per_metric(self, instance: InstanceType) -> int:
        """A component's ...Normalized GPU metrics are already per GPU of its copy (same page as VariantUnits')."""
        return 1

    def scaling_ceiling(self, variants_ceiling: int | None) -> int | None:
        return self.max_copies

    def traffic_percent(self, variant_share: float) -> float:
        """Components have no split (each request names its component): 100."""
        return 100.0

    def component_name(self, unit: str) -> str | None:
        return unit

    def notes(self, instance_type: str, instance: InstanceType) -> list[str]:
        """data_cache false where SageMaker caches anyway (peagle/planning/forced_data_cache.py)."""
        cache = data_cache_warning(instance_type, instance, data_cache=self.settings.data_cache)
        return [cache] if cache else []

    def cost_note(self, price_per_hour_usd: float) -> str:
        if self.min_instances:
            return ""
        return f"; ${price_per_hour_usd:,.2f} per running instance, $0 while scaled to zero"

    def as_json(self) -> dict[str, Any] | None:
        return _pools().dump_python(self, mode="json")

    def summary_lines(self, plan: StartBudget) -> list[str]:
        """`peagle plan`'s lines on the pool (``plan``: the peagle.planning.planner.Plan it belongs to)."""
        idle = (
            f"; the last copy goes after {self.scale_to_zero_after_idle_minutes} min without a request"
            if self.scales_to_zero
            else ""
        )
        download, startup = plan.model_download_timeout_seconds, plan.container_startup_timeout_seconds
        cold_start = (
            [
                f"cold start      a copy from zero: an instance if none runs, then the model download (up to "
                f"{download} s) and vLLM's start-up with the self-check (up to {startup} s), {download + startup} s "
                f"in all; invoke, bench and smoke wait that long plus an instance's launch and the wake-up, "
                f"{plan.cold_start_wait_seconds} s, by default"
            ]
            if self.scales_to_zero
            else []
        )
        copies = self.copies_per_instance
        return [
            f"components      {copies} cop{'y' if copies == 1 else 'ies'} per instance, "
            f"each {self.accelerators_per_copy} GPU(s) (tensor_parallel_size), {self.cpu_cores_per_copy} vCPUs, "
            f"{self.memory_mb_per_copy:,} MiB host memory (the memory lines above are one copy's)",
            f"scaling         copies {self.min_copies}..{self.max_copies} (deploy starts {self.initial_copies}), "
            f"instances {self.min_instances}..{self.max_instances} (managed instance scaling){idle}",
            f"placement       {self.placement}: {self._placement_text()}",
            *cold_start,
        ]

    def _placement_text(self) -> str:
        """What placement and scale-in policy do together after a scale-in (peagle/simulate/placement.py quotes
        SageMaker's definitions of both). The IDLE_RELEASE wording is the dashboard's since 0.1.0: kept as it was."""
        if self.settings.scale_in_policy == "CONSOLIDATION":
            copies = (
                "packed onto as few instances as hold them"
                if self.placement == "BINPACK"
                else "spread over the instances"
            )
            return (
                f"copies {copies}; scale-in CONSOLIDATION moves copies onto fewer instances and releases the freed "
                "ones, after the pool's cooldown"
            )
        if self.placement == "BINPACK":
            return (
                "copies packed onto as few instances as hold them, so a scale-in empties instances and IDLE_RELEASE "
                "releases them"
            )
        return (
            "copies spread over the instances; after a scale-in an instance that still holds one copy is kept and "
            "billed whole (IDLE_RELEASE releases only empty ones)"
        )

    def with_idle_window(self, minutes: int) -> ComponentPool:
        return replace(self, scale_to_zero_after_idle_minutes=minutes)


@lru_cache(maxsize=1)
def _pools() -> TypeAdapter[ComponentPool]:
    return TypeAdapter(ComponentPool)


def _recorded(units: VariantUnits | ComponentPool) -> dict[str, Any] | None:
    """The recorded form: the pool's fields, or null for production variants (the module docstring)."""
    return units.as_json()


def _read(value: Any) -> VariantUnits | ComponentPool:
    if isinstance(value, VariantUnits | ComponentPool):
        return value
    return VariantUnits() if value is None else _pools().validate_python(value)


# Plan.units: one of the two, recorded as the plan always recorded its ``components``.
UnitPlan = Annotated[VariantUnits | ComponentPool, PlainValidator(_read), PlainSerializer(_recorded)]


def pool_of(units: VariantUnits | ComponentPool) -> ComponentPool:
    """The pool of a plan for inference components (its rules read the pool's fields); ValueError for variants."""
    if isinstance(units, VariantUnits):
        raise ValueError("a plan for production variants has no inference-component pool")
    return units


def plan_pool(config: DeploymentConfig, instance: InstanceType, tp: int) -> ComponentPool:
    """The component pool of ``tp`` GPUs per copy on ``config``'s instance type (its idle window is resolved once the
    start budget is known: peagle/planning/planner.py)."""
    settings = config.endpoint.inference_components
    per_instance = instance.gpu_count // tp
    # Each copy asks for an equal share of the host's vCPUs and memory, less HOST_RESERVE_SHARE for
    # SageMaker's own agents, so that exactly per_instance copies are placed on one instance.
    share = (1 - HOST_RESERVE_SHARE) / per_instance
    capacity = per_instance * settings.max_instances
    max_copies = config.max_capacity or capacity
    if max_copies > capacity:
        raise PlanError(
            f"{setting('autoscaling.max_capacity')} {max_copies} copies do not fit: {settings.max_instances} x "
            f"{config.instance.type} hold {capacity} copies of {tp} GPU(s) each ({per_instance} per instance); "
            f"raise {setting('endpoint.inference_components.max_instances', math.ceil(max_copies / per_instance))} "
            f"or lower {setting('autoscaling.max_capacity', capacity)}"
        )
    if settings.initial_copies > per_instance * config.instance.count:
        raise PlanError(
            f"{setting('endpoint.inference_components.initial_copies')} {settings.initial_copies} need "
            f"{math.ceil(settings.initial_copies / per_instance)} x {config.instance.type} ({per_instance} copies "
            f"of {tp} GPU(s) per instance), but {setting('instance.count')} starts {config.instance.count}; raise "
            "it or lower initial_copies"
        )
    return ComponentPool(
        accelerators_per_copy=tp,
        copies_per_instance=per_instance,
        cpu_cores_per_copy=max(1, math.floor(instance.vcpus * share)),
        memory_mb_per_copy=math.floor(instance.memory_gib * 1024 * share),
        initial_copies=settings.initial_copies,
        min_copies=config.min_capacity,
        max_copies=max_copies,
        min_instances=settings.min_instances,
        max_instances=settings.max_instances,
        # Unset: resolved once the start budget is known (plan_deployment: the shortest window that is safe).
        scale_to_zero_after_idle_minutes=settings.scale_to_zero_after_idle_minutes or 0,
        settings=settings,
    )
