"""What one simulated unit is: a copy of an inference component (several per instance, on a pool of instances that
managed instance scaling keeps) or a variant's instance, built once from what the template's scalable target scales
(peagle/simulate/scenarios.py). What differs between the two is a method here, read by the endpoint model
(peagle/simulate/service.py), the outcomes and the verdicts: none of them asks the kind."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from peagle.simulate.placement import Placement

__all__ = ["UnitShape"]


@dataclass(frozen=True)
class UnitShape:
    """What one unit is: a copy of a component (several per instance, on a pool of instances managed instance scaling
    keeps) or a variant's instance. ``kind`` is what the template's scalable target scales (peagle/simulate/scenarios.py
    reads it there, once); everything that differs between the two is a method here, read by the endpoint model, the
    outcomes and the verdicts."""

    kind: str  # "copies" | "instances"
    max_num_seqs: int
    units_per_instance: int
    max_instances: int
    min_instances: int
    gpus_per_unit: int
    # An asynchronous endpoint queues what it cannot serve, even at zero instances (ApproximateBacklogSize,
    # HasBacklogWithoutCapacity: "Autoscale an asynchronous endpoint",
    # https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-autoscale.html).
    asynchronous: bool = False
    # The component caches the model data SageMaker downloads on each of its instances: the template's
    # DataCacheConfig.EnableCaching, with the weights in the model's ModelDataSource (weights the container
    # downloads itself are not SageMaker's to cache), or SageMaker caches it whatever the template says (instance
    # types with more than 232 GiB of local NVMe storage, peagle/planning/forced_data_cache.py). See the module docstring and
    # the ``data_cache`` reading.
    data_cache: bool = False
    data_cache_forced: bool = False  # cached by the instance type although the template says EnableCaching false
    # Tokens one unit's KV cache holds (the plan's MemoryFit.kv_cache_tokens, a whole replica); None: not known, the
    # slots are max_num_seqs whatever the requests' lengths (service.running_slots).
    kv_cache_tokens: int | None = None
    # Copies: the placement strategy and scale-in policy the template states (peagle/simulate/placement.py).
    placement: Placement = field(default_factory=Placement)

    @property
    def pooled(self) -> bool:
        """Copies placed on a pool of instances (placement, release and consolidation apply); a variant's units are
        its instances."""
        return self.kind == "copies"

    def instances_holding(self, units: int) -> int:
        """The instances ``units`` fill (a variant's unit is one)."""
        return math.ceil(units / self.units_per_instance)

    def instances_needed(self, units: int) -> int:
        """The instances ``units`` need, with the pool's minimum (managed instance scaling keeps it)."""
        return max(self.min_instances if self.pooled else 0, self.instances_holding(units))

    def beyond_pool(self, instances: int) -> bool:
        """More instances than the pool's MaxInstanceCount allows (a variant has no pool: its bound is the target's)."""
        return self.pooled and instances > self.max_instances

    def with_room_for(self, max_units: int) -> UnitShape:
        """The shape with instances enough for ``max_units`` units."""
        return replace(self, max_instances=max(self.max_instances, self.instances_holding(max_units)))

    def start_minutes(self, start: float, launch: float, *, instances_grew: bool) -> float:
        """A new unit's start: a copy waits for an instance's launch only when it needed a new one."""
        return start + launch if instances_grew or not self.pooled else start

    def describe_start(self, copy_start: float, start: float) -> str:
        return f"~{copy_start:.0f} min, ~{start:.0f} with a new instance" if self.pooled else f"~{start:.0f} min"

    def assumed(self) -> list[str]:
        """What the simulation of this target reads from its template and assumes about it, for the report."""
        if not self.pooled:
            return []
        forced = (
            [
                "the component's model data is cached although its template says EnableCaching false: SageMaker "
                "caches it on instance types with more than 232 GiB of local NVMe storage whatever DataCacheConfig "
                "says (CloudFormation schema of AWS::SageMaker::InferenceComponent, CurrentDataCacheConfig)"
            ]
            if self.data_cache_forced
            else []
        )
        return [*self.placement.assumed(), *forced]
