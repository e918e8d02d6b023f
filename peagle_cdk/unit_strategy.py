"""The one place outside the planner that looks at the kind of serving unit a plan calls for: ``strategy_for`` picks
the strategy once, from the plans' unit plans (peagle/planning/unit_plan.py), and PeagleEndpoint asks the strategy from then
on: how its units are named, which construct serves them (VariantEndpoint or ComponentEndpoint, each a ServingUnits
that scales and prices its own units: peagle_cdk/serving_unit.py), and which units log on their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from peagle.planning.unit_plan import ComponentPool
from peagle_cdk.component_endpoint import ComponentEndpoint, ComponentSpec
from peagle_cdk.variant_endpoint import VariantEndpoint

if TYPE_CHECKING:
    from peagle.planning.planner import Plan
    from peagle_cdk.peagle_model import PeagleModel
    from peagle_cdk.serving_unit import ServingUnits
    from peagle_cdk.settings_model import DeploymentConfig


class UnitBuilder(Protocol):
    """What a strategy builds with: PeagleEndpoint, which holds the models, the role and the network."""

    unit_names: list[str]

    def _unit_models_and_plans(self) -> tuple[list[PeagleModel], list[Plan]]: ...

    def _variant_endpoint(self) -> VariantEndpoint: ...

    def _component_endpoint(self, specs: list[ComponentSpec]) -> ComponentEndpoint: ...


@dataclass(frozen=True)
class VariantStrategy:
    """Production variants: one unit per variant, named as the variant; the endpoint is the managed unit."""

    endpoint_class = VariantEndpoint

    def unit_name(self, config: DeploymentConfig, variant: str) -> str:
        return variant

    def component_names(self, units: list[str]) -> list[str]:
        return []

    def build(self, owner: UnitBuilder) -> ServingUnits:
        """The variants' endpoint (PeagleEndpoint._variant_endpoint)."""
        return owner._variant_endpoint()


@dataclass(frozen=True)
class ComponentStrategy:
    """An inference-component pool: one component per variant (``<name>-primary``), each with its pool."""

    pools: tuple[ComponentPool, ...]  # each unit's pool, the primary first

    endpoint_class = ComponentEndpoint

    def unit_name(self, config: DeploymentConfig, variant: str) -> str:
        return config.inference_component_name(variant)

    def component_names(self, units: list[str]) -> list[str]:
        return list(units)

    def build(self, owner: UnitBuilder) -> ServingUnits:
        """The pool's endpoint with each component whole: its name, model, plan and pool."""
        models, plans = owner._unit_models_and_plans()
        specs = [
            ComponentSpec(name=name, model=model, plan=plan, pool=pool)
            for name, model, plan, pool in zip(owner.unit_names, models, plans, self.pools, strict=True)
        ]
        return owner._component_endpoint(specs)


UnitStrategy = VariantStrategy | ComponentStrategy


def strategy_for(plans: Sequence[Plan]) -> UnitStrategy:
    """The strategy of the units ``plans`` call for (the primary's plan first, then an A/B baseline's): the planner
    gives every unit of one endpoint the same kind."""
    pools = tuple(plan.units for plan in plans if isinstance(plan.units, ComponentPool))
    if not pools:
        return VariantStrategy()
    if len(pools) != len(plans):
        raise ValueError("an endpoint's units are all production variants or all inference components")
    return ComponentStrategy(pools)
