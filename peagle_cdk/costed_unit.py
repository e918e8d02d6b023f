"""What one serving unit's units cost, as metric math: instances of a variant at the instance price, or copies of a
component priced as the instances they hold. Each kind of unit makes its own (ServingUnits.costed_unit); the fleet's
figures and the reasons behind the expressions are peagle_cdk/fleet_metrics.py's."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CostedUnit:
    """A serving unit's KPI dimension (the variant or component name) and what its units cost: instances of a
    variant, each at the instance price; or copies of a component, priced as the whole instances they need
    (copies / copies per instance, rounded up; peagle_cdk/fleet_metrics.py's docstring says why and what it assumes)."""

    name: str
    price_per_instance_hour_usd: float
    units_per_instance: int = 1  # copies per instance in inference-component mode
    copies: bool = False  # inference-component mode: the units are copies, billed as whole instances
    placement: str = "BINPACK"  # the component's SchedulingConfig.PlacementStrategy, as its template states it
    # The pool's ManagedInstanceScaling.ScaleInPolicy.Strategy, as its template states it (the plan's pool settings).
    scale_in: str = "IDLE_RELEASE"
    max_instances: int = 1  # managed instance scaling's MaxInstanceCount

    @property
    def packed(self) -> bool:
        """Copies hold the fewest instances: BINPACK placement, or CONSOLIDATION whatever the placement
        (peagle_cdk/fleet_metrics.py's docstring cites both)."""
        return self.scale_in == "CONSOLIDATION" or self.placement == "BINPACK"

    @property
    def price(self) -> str:
        """The price per instance-hour as metric math: ``2.336``."""
        return f"{self.price_per_instance_hour_usd:g}"

    def instances_expression(self, reports_id: str, interval_seconds: int) -> str:
        """The instances a component's copies need, as metric math: the copies reporting (SampleCount x I / P) to
        the nearest whole copy, over the copies an instance holds, rounded up."""
        copies = f"FLOOR({reports_id} * {interval_seconds} / PERIOD({reports_id}) + 0.5)"
        if self.packed:
            return f"CEIL({copies} / {self.units_per_instance})"
        return f"IF({copies} > {self.max_instances}, {self.max_instances}, {copies})"

    def pricing_note(self) -> str:
        """How the dashboard's cost text says the units are priced (nothing to add for instances)."""
        if not self.copies:
            return ""
        if self.packed:
            how = "CONSOLIDATION scale-in" if self.scale_in == "CONSOLIDATION" else "BINPACK placement"
            return (
                f"; copies are priced as the whole instances they need ({self.units_per_instance} to an "
                f"instance, rounded up: {how}), each component on instances of its own"
            )
        return (
            f"; copies are priced at up to one instance each (at most {self.max_instances}): "
            f"{self.placement} placement keeps every instance that still holds a copy after a "
            "scale-in, so the figure is the most it can bill, each component on instances of its own"
        )

    def describe(self) -> str:
        if not self.copies:
            return f"instances x ${self.price_per_instance_hour_usd:,g}/hour"
        if self.packed:
            return (
                f"instances (copies / {self.units_per_instance}, rounded up) x "
                f"${self.price_per_instance_hour_usd:,g}/hour"
            )
        return (
            f"instances (one per copy, at most {self.max_instances}: {self.placement} placement keeps an instance per "
            f"copy after a scale-in) x ${self.price_per_instance_hour_usd:,g}/hour"
        )
