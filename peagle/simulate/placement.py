"""Where SageMaker puts a component's copies and which instances it releases, as the template states them: the
component's Specification.SchedulingConfig.PlacementStrategy and the instance pool's
ManagedInstanceScaling.ScaleInPolicy (peagle_cdk/component_endpoint.py writes both). Read, never assumed: an instance
hosting one copy is billed whole, so how copies sit on instances is what the endpoint costs.

What AWS documents (botocore 1.44.5's SageMaker model; SageMaker API Reference,
InferenceComponentSchedulingConfig and ProductionVariantManagedInstanceScalingScaleInPolicy):

- the placement "determines how inference component copies are placed across available instances when copies are
  added or removed": "SPREAD Distributes copies evenly across available instances for better resilience. BINPACK Packs
  copies onto fewer instances to optimize resource utilization". No default is stated;
- "IDLE_RELEASE Releases instances that have no hosted inference component copies. CONSOLIDATION Consolidates
  inference component copies onto fewer instances to release more instances. Consolidation honors the scheduling
  configuration of each inference component"; CooldownInMinutes "after the last endpoint operation before the endpoint
  evaluates consolidation scale-in opportunities. Default value: 20"; MaximumStepSize "The maximum number of instances
  that the endpoint can terminate at a time during a consolidation scale-in operation. Default value: 1". No default
  strategy is stated.

What AWS leaves open, and the simulator assumes (each printed with the results, ``assumed``): a new copy goes to an
instance with room (BINPACK: the fullest; SPREAD: the emptiest) and a new instance is launched only when none has room;
a scale-in removes starting copies first, then serving ones from the emptiest instance (BINPACK) or the fullest
(SPREAD); a template that states no placement is simulated as SPREAD and one that states no scale-in policy as
IDLE_RELEASE, the readings that bill the most; a consolidation moves copies without a gap in serving. A template that
states a value the simulator has no model for is refused (SimulationInputError), never simulated under a reading.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from peagle.cloud_assembly import StackTemplate
from peagle.simulate.scaling_template import SimulationInputError

# The values AWS documents, each modelled here (the module docstring); a template that states another is refused,
# not simulated under a reading of our choosing: botocore 1.44.5's SageMaker model, InferenceComponentPlacementStrategy
# "enum": ["SPREAD", "BINPACK"] and ManagedInstanceScalingScaleInStrategy "enum": ["IDLE_RELEASE", "CONSOLIDATION"];
# the CloudFormation schema of AWS::SageMaker::EndpointConfig (cfn-lint 1.58.0, 3529e18613d41f86.json), ScaleInPolicy
# Strategy "enum": ["CONSOLIDATION", "IDLE_RELEASE"].
BINPACK, SPREAD = "BINPACK", "SPREAD"
IDLE_RELEASE, CONSOLIDATION = "IDLE_RELEASE", "CONSOLIDATION"
MODELLED_PLACEMENTS = (BINPACK, SPREAD)
MODELLED_SCALE_IN = (IDLE_RELEASE, CONSOLIDATION)
# ScaleInPolicy's documented defaults (above).
CONSOLIDATION_COOLDOWN_MINUTES = 20
CONSOLIDATION_MAX_STEP = 1


@dataclass(frozen=True)
class Placement:
    """A component's placement strategy and its pool's scale-in policy, as its template states them (None: not
    stated, simulated as the costlier reading: SPREAD, IDLE_RELEASE)."""

    strategy: str | None = BINPACK
    scale_in: str | None = IDLE_RELEASE
    cooldown_minutes: int = CONSOLIDATION_COOLDOWN_MINUTES
    max_step: int = CONSOLIDATION_MAX_STEP

    @property
    def packs(self) -> bool:
        """New copies go to the fullest instance with room, and a scale-in empties the emptiest instance."""
        return self.strategy == BINPACK

    @property
    def consolidates(self) -> bool:
        return self.scale_in == CONSOLIDATION

    def assumed(self) -> list[str]:
        """What the simulation takes from the template and assumes about it, for the report."""
        strategy = self.strategy or SPREAD
        stated = (
            f"placement {self.strategy} (the component's SchedulingConfig)"
            if self.strategy
            else "no placement strategy in the template (AWS documents no default): simulated as SPREAD, the "
            "costlier reading"
        )
        scale_in = (
            f"scale-in {self.scale_in} (the instance pool's ManagedInstanceScaling)"
            if self.scale_in
            else "no scale-in policy in the template (AWS documents no default): simulated as IDLE_RELEASE, which "
            "releases only empty instances"
        )
        where = (
            "a new copy goes to the fullest instance with room and a scale-in takes copies from the emptiest, so the "
            "copies hold the fewest instances"
            if strategy == BINPACK
            else "a new copy goes to the emptiest instance with room and a scale-in takes copies from the fullest, so "
            "after a scale-in an instance holding one copy is kept and billed whole"
        )
        lines = [
            f"{stated}; {scale_in}: {where}; a new instance is launched only when no instance has room, and starting "
            "copies are removed before serving ones (AWS does not say which copy a scale-in removes)"
        ]
        if self.consolidates:
            lines.append(
                f"consolidation: {self.cooldown_minutes} min after the last change of copies or instances, up to "
                f"{self.max_step} instance(s) at a time are emptied onto the others and released, whatever the "
                "placement (AWS: it 'honors the scheduling configuration', without saying how); empty instances go at "
                "once, as with IDLE_RELEASE; a moved copy serves throughout its move (AWS documents no interruption)"
            )
        return lines


def placement_of(template: StackTemplate, component_name: str) -> Placement:
    """The placement of the component named ``component_name`` and the scale-in policy of the variant it is placed
    on, as ``template`` states them."""
    component = next((found for found in template.components() if found.name == component_name), None)
    if component is None:
        return Placement(strategy=None, scale_in=None)
    strategy = template.resolve(component.placement_strategy)
    endpoint = next((found for found in template.endpoints() if found.name == component.endpoint_name), None)
    variant = endpoint.variant(component.variant or "") if endpoint is not None else None
    if variant is None and endpoint is not None and len(endpoint.variants) == 1:
        variant = endpoint.variants[0]
    policy = _mapping((variant.managed_scaling if variant is not None else None), "ScaleInPolicy")
    where = f"{template.source}: component {component_name}"
    return Placement(
        strategy=_modelled(strategy, MODELLED_PLACEMENTS, f"{where}: SchedulingConfig.PlacementStrategy"),
        scale_in=_modelled(
            template.resolve(policy.get("Strategy")),
            MODELLED_SCALE_IN,
            f"{where}: its instance pool's ManagedInstanceScaling.ScaleInPolicy.Strategy",
        ),
        cooldown_minutes=_whole(template, policy.get("CooldownInMinutes"), CONSOLIDATION_COOLDOWN_MINUTES),
        max_step=_whole(template, policy.get("MaximumStepSize"), CONSOLIDATION_MAX_STEP),
    )


def _mapping(value: Any, key: str) -> Mapping[str, Any]:
    found = value.get(key) if isinstance(value, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _modelled(value: Any, modelled: tuple[str, ...], what: str) -> str | None:
    """``value`` when the simulator models it; None when the template states none (the costlier reading is then
    simulated, and said); SimulationInputError for a value it has no model for."""
    if value is None or value in modelled:
        return value
    raise SimulationInputError(
        f"{what} is {value!r}, which `peagle simulate` does not model (it models {', '.join(modelled)}): a "
        "simulation under another reading would be a guess; synthesize the template with one of those values, or "
        "teach peagle/simulate/placement.py the new one"
    )


def _whole(template: StackTemplate, value: Any, default: int) -> int:
    try:
        return int(template.resolve(value) or default)
    except ValueError:
        return default
