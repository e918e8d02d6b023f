"""What to simulate for one deployment: its scalable targets with their unit shapes (from the plan),
the traces, and the assumptions run both ways."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from peagle.client.cold_start import INSTANCE_LAUNCH_ALLOWANCE_S
from peagle.planner import Plan
from peagle.preflight.template import StackTemplate
from peagle.simulate.engine import Setup, Timeline, simulate
from peagle.simulate.scaling_template import SimulationInputError, scaling_of, variant_weights
from peagle.simulate.service import Assumptions, UnitShape
from peagle.simulate.traffic import Trace, built_in
from peagle.simulate.verdicts import Verdict, verdicts

# The deciding assumptions, each run both ways (Assumptions says why).
DECIDING = (
    {"refused_count_as_invocations": False, "conflicts": "largest"},
    {"refused_count_as_invocations": False, "conflicts": "in-turn"},
    {"refused_count_as_invocations": True, "conflicts": "largest"},
    {"refused_count_as_invocations": True, "conflicts": "in-turn"},
)


@dataclass
class Result:
    timeline: Timeline
    verdicts: list[Verdict]

    @property
    def passed(self) -> bool:
        return all(verdict.passed for verdict in self.verdicts)


def base_assumptions(plan: Plan, **overrides) -> Assumptions:
    """The plan's numbers where an assumption has one: start-up = the plan's download and start-up
    timeouts, request time = half the profile's p90 latency SLA."""
    values = {
        "startup_seconds": float(plan.model_download_timeout_seconds + plan.container_startup_timeout_seconds),
        "request_seconds": plan.profile.latency_sla_p90_seconds / 2,
    }
    values.update({key: value for key, value in overrides.items() if value is not None})
    return Assumptions(**values)


def setups(template: StackTemplate, plan: Plan) -> list[Setup]:
    targets = scaling_of(template)
    if not targets:
        raise SimulationInputError(
            f"{template.source} registers no SageMaker scalable target: nothing scales (autoscaling.enabled false?)"
        )
    weights = variant_weights(template)
    components = plan.components
    cold_start = plan.model_download_timeout_seconds + plan.container_startup_timeout_seconds
    found = []
    for target in targets:
        if target.unit == "copies":
            shape = UnitShape(
                kind="copies",
                max_num_seqs=plan.max_num_seqs,
                units_per_instance=components.copies_per_instance,
                max_instances=components.max_instances,
                min_instances=components.min_instances,
                gpus_per_unit=components.accelerators_per_copy,
            )
            initial, share = components.initial_copies, 1.0
            idle = components.scale_to_zero_after_idle_minutes if components.scales_to_zero else None
            budget = cold_start + INSTANCE_LAUNCH_ALLOWANCE_S
        else:
            # An asynchronous instance takes MaxConcurrentInvocationsPerInstance requests at a time
            # (AsyncInferenceClientConfig, SageMaker API reference), not the engine's max_num_seqs.
            per_instance = _asynchronous_endpoints(template).get(target.resource_id.split("/")[1])
            shape = UnitShape(
                kind="instances",
                max_num_seqs=per_instance or plan.max_num_seqs,
                units_per_instance=1,
                max_instances=target.max_capacity,
                min_instances=0,
                gpus_per_unit=plan.instance.gpu_count,
                asynchronous=per_instance is not None,
            )
            initial = max(target.min_capacity, plan.instance_count if target.min_capacity else 1)
            share = weights.get(target.name, 1.0)
            idle, budget = (15 if target.min_capacity == 0 else None), cold_start + INSTANCE_LAUNCH_ALLOWANCE_S
        found.append(
            Setup(
                target=target,
                shape=shape,
                initial_units=min(max(initial, target.min_capacity), target.max_capacity),
                traffic_share=share,
                cold_start_budget_seconds=budget,
                idle_minutes=idle,
            )
        )
    return found


def _asynchronous_endpoints(template: StackTemplate) -> dict[str, int]:
    """Name of each endpoint whose config has an AsyncInferenceConfig -> requests an instance takes at once."""
    found = {}
    for resource in template.of_type("AWS::SageMaker::Endpoint").values():
        props = resource.get("Properties") or {}
        reference = props.get("EndpointConfigName")
        config_id = reference.get("Fn::GetAtt", [None])[0] if isinstance(reference, dict) else None
        asynchronous = (template.properties(config_id) if config_id else {}).get("AsyncInferenceConfig")
        name = template.resolve(props.get("EndpointName"))
        if asynchronous and name:
            client = asynchronous.get("ClientConfig") or {}
            found[name] = int(client.get("MaxConcurrentInvocationsPerInstance") or 1)
    return found


def default_shapes(setup: Setup) -> tuple[str, ...]:
    return ("idle-burst", "spike") if setup.target.min_capacity == 0 else ("spike",)


def run(
    template: StackTemplate,
    plan: Plan,
    *,
    shapes: Sequence[str] | None = None,
    traces: Sequence[Trace] = (),
    assumptions: Assumptions | None = None,
    both_ways: bool = True,
) -> list[Result]:
    """Every target x trace x (the deciding assumptions both ways, or ``assumptions`` alone)."""
    base = assumptions or base_assumptions(plan)
    variants = [base.but(**choice) for choice in DECIDING] if both_ways else [base]
    results = []
    for setup in setups(template, plan):
        # The shapes load this target at their level whatever its share of the endpoint's traffic.
        unit_rpm = setup.unit_rpm(base) / setup.traffic_share
        chosen = list(traces) + [
            built_in(shape, unit_rpm=unit_rpm, min_units=setup.initial_units, max_units=setup.target.max_capacity)
            for shape in (shapes if shapes is not None else ([] if traces else default_shapes(setup)))
        ]
        for trace in chosen:
            for variant in variants:
                timeline = simulate(setup, trace, variant)
                results.append(Result(timeline, verdicts(timeline)))
    return results
