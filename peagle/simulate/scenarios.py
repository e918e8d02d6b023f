"""What to simulate for one deployment: its scalable targets with their unit shapes (from the plan),
the traces, and every reading of the rules AWS leaves open."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from peagle.catalog import load_catalog
from peagle.cloud_assembly import StackTemplate
from peagle.planning.forced_data_cache import caching_forced
from peagle.planning.planner import (
    DOWNLOAD_BYTES_PER_SECOND,
    INSTANCE_LAUNCH_ALLOWANCE_S,
    TYPICAL_INSTANCE_LAUNCH_SECONDS,
    Plan,
)
from peagle.planning.unit_plan import ComponentPool, pool_of
from peagle.settings.refs import Door
from peagle.simulate.engine import SettingKeys, Setup, Timeline, simulate
from peagle.simulate.outcomes import Outcome, outcome
from peagle.simulate.placement import placement_of
from peagle.simulate.scaling_template import MetricQuery, SimulationInputError, scaling_of, variant_weights
from peagle.simulate.service import MODELLED_METRICS, READING_FIELDS, READINGS, Assumptions, UnitShape
from peagle.simulate.traffic import Trace, built_in
from peagle.simulate.verdicts import Verdict, verdicts

# Every combination of the open readings (READINGS), each run by default (a target a reading does not apply to,
# Reading.inapplicable, runs only the combinations of the others: scenarios.run).
ALL_READINGS = tuple(
    dict(zip((reading.field for reading in READINGS), values, strict=True))
    for values in itertools.product(*((value for value, _, _ in reading.values) for reading in READINGS))
)


@dataclass
class Result:
    timeline: Timeline
    outcome: Outcome
    verdicts: list[Verdict]

    @property
    def passed(self) -> bool:
        return all(verdict.passed for verdict in self.verdicts)


def base_assumptions(plan: Plan, *, startup: str = "typical", **overrides) -> Assumptions:
    """The plan's numbers where an assumption has one. ``startup``: "typical" (the planner's estimate,
    ``Plan.typical_model_start_seconds`` after an instance's typical launch) or "budget" (the plan's
    download and start-up timeouts and its instance allowance: the slowest start SageMaker still accepts).
    Request time: the planner's estimate (half the profile's p90 latency SLA); output tokens: half its
    max_tokens; a client's cold-start wait: what peagle.client waits for a component (download + start-up
    timeouts + the instance allowance). A copy whose instance holds the component's cached data (the
    ``data_cache`` reading ``on-instance``) starts without the model download: typical, without the weights'
    download at the planner's rate; budget, the start-up timeout alone; a start given in seconds, less the
    download's share of the typical start."""
    budget = float(plan.model_download_timeout_seconds + plan.container_startup_timeout_seconds)
    typical = plan.typical_model_start_seconds
    download = (plan.pair.target.weight_bytes + plan.pair.drafter.weight_bytes) / DOWNLOAD_BYTES_PER_SECOND
    if startup == "budget":
        values = {
            "startup_seconds": budget,
            "startup_basis": "the plan's download and start-up timeouts, the slowest start SageMaker accepts",
            "instance_launch_seconds": float(INSTANCE_LAUNCH_ALLOWANCE_S),
            "cached_startup_seconds": float(plan.container_startup_timeout_seconds),
        }
    else:
        values = {
            "startup_seconds": round(typical),
            "startup_basis": "typical: the weights at the planner's transfer rates, then vLLM's start",
            "instance_launch_seconds": float(TYPICAL_INSTANCE_LAUNCH_SECONDS),
            "cached_startup_seconds": float(round(typical - download)),
        }
    if overrides.get("startup_seconds") is not None and overrides.get("cached_startup_seconds") is None:
        values["cached_startup_seconds"] = float(round(overrides["startup_seconds"] * (1 - download / typical)))
    values |= {
        "request_seconds": plan.request_seconds_estimate,
        "output_tokens": plan.profile.sampling.max_tokens / 2,
        "cold_start_wait_seconds": float(plan.cold_start_wait_seconds),
    }
    values.update({key: value for key, value in overrides.items() if value is not None})
    if values.get("service") is None:
        values["estimates"] = _estimates(plan)
    return Assumptions(**values)


def _estimates(plan: Plan) -> tuple:
    """The roofline estimate's low and high bounds for the plan's unit, or none where it has no figures."""
    from peagle.simulate.service_estimate import estimated_curve

    curves = tuple(estimated_curve(plan, bound=bound) for bound in ("low", "high"))
    return curves if all(curve is not None for curve in curves) else ()


# The deployment file's keys of each kind of target's settings; the door that made the endpoint spells them.
SETTING_KEYS: dict[str, SettingKeys] = {
    "copies": SettingKeys(
        min_units="autoscaling.min_capacity",
        max_units="autoscaling.max_capacity",
        target="autoscaling.target_concurrency",
        idle_minutes="endpoint.inference_components.scale_to_zero_after_idle_minutes",
        max_instances="endpoint.inference_components.max_instances",
        scale_in_cooldown="autoscaling.scale_in_cooldown_seconds",
    ),
    "instances": SettingKeys(
        "autoscaling.min_capacity",
        "autoscaling.max_capacity",
        "autoscaling.target_concurrency",
        scale_in_cooldown="autoscaling.scale_in_cooldown_seconds",
    ),
    "async": SettingKeys(
        "async_inference.min_instances",
        "async_inference.max_instances",
        "async_inference.target_backlog_per_instance",
        scale_in_cooldown="autoscaling.scale_in_cooldown_seconds",
        # The file has no cooldown of the asynchronous endpoint's own: it takes autoscaling's, whose props spelling
        # (Autoscaling(scale_in_cooldown=...)) is the real-time endpoint's; a construct user sets the asynchronous
        # endpoint's alone with add_async_endpoint's, which no field of the model holds.
        props=(("scale_in_cooldown", "add_async_endpoint(scale_in_cooldown=...)"),),
    ),
}


def _refuse_unmodelled_metrics(target) -> None:
    """A policy or scaling alarm on a metric the simulated endpoint does not publish (service.py's
    MODELLED_METRICS) would read no data every minute, and a policy with no data does nothing: its endpoint would
    be simulated as if the policy were not there, a verdict of the simulator's choosing. Refused instead, as an
    unmodelled predefined metric is (scaling_template.py)."""
    queries = [(policy.logical_id, policy.query) for policy in target.target_tracking]
    queries += [(alarm.logical_id, alarm.query) for alarm in target.alarms]
    for logical_id, query in queries:
        unmodelled = sorted(name for name in _metric_names(query) if name not in MODELLED_METRICS)
        if unmodelled:
            raise SimulationInputError(
                f"{logical_id} scales {target.logical_id} on {', '.join(map(repr, unmodelled))}, which the simulator "
                f"does not model (it models {', '.join(sorted(MODELLED_METRICS))}); it cannot tell what that policy "
                "would do, so it simulates no template that has it. Simulate the deployment without that policy"
            )


def _metric_names(query: MetricQuery) -> set[str]:
    if query.stat is not None:
        return {query.stat.name}
    return {name for inner in query.inputs.values() for name in _metric_names(inner)}


def setups(
    template: StackTemplate, plan: Plan, *, door: str = "file", endpoint: str | None = None, name_suffix: str = ""
) -> list[Setup]:
    """The template's scalable targets with the plan's unit shapes; ``endpoint``: only those of the endpoint of
    that name and its components (a template with several endpoints, each with its own plan); ``door``: the words
    of the suggested changes (``file`` keys or ``props``); ``name_suffix``: after each target's name (an instance
    pool's fallback reading, peagle/simulate/pool_fallback.py)."""
    targets = [
        target for target in scaling_of(template) if endpoint is None or _of_endpoint(template, target, endpoint)
    ]
    if not targets:
        raise SimulationInputError(
            f"{template.source} registers no SageMaker scalable target: nothing scales (autoscaling.enabled false?)"
        )
    for target in targets:
        _refuse_unmodelled_metrics(target)
    weights = variant_weights(template)
    price = getattr(plan, "price_per_hour_usd", plan.instance.price_per_hour_usd)
    asynchronous = _asynchronous_endpoints(template)
    cached = _caching_components(template, plan)
    titles = template.unit_titles()  # a component by the endpoint name the user gave, not its generated one
    found = []
    for target in targets:
        parts = target.resource_id.split("/")
        if target.unit == "copies":  # the template's scalable target says what a unit is (the one reading)
            components = _pool(template, plan, target.name)
            shape = UnitShape(
                kind="copies",
                max_num_seqs=plan.max_num_seqs,
                units_per_instance=components.copies_per_instance,
                max_instances=components.max_instances,
                min_instances=components.min_instances,
                gpus_per_unit=components.accelerators_per_copy,
                kv_cache_tokens=plan.memory.kv_cache_tokens,
                data_cache=target.name in cached,
                data_cache_forced=cached.get(target.name) == "instance type",
                placement=placement_of(template, target.name),
            )
            initial, share, name = components.initial_copies, 1.0, titles.get(target.name, target.name)
            idle = components.scale_to_zero_after_idle_minutes if components.scales_to_zero else None
            keys = SETTING_KEYS["copies"]
        else:
            # An asynchronous instance takes MaxConcurrentInvocationsPerInstance requests at a time
            # (AsyncInferenceClientConfig, SageMaker API reference), not the engine's max_num_seqs.
            endpoint_name = parts[1] if len(parts) > 1 else target.name
            per_instance = asynchronous.get(endpoint_name)
            shape = UnitShape(
                kind="instances",
                max_num_seqs=per_instance or plan.max_num_seqs,
                units_per_instance=1,
                max_instances=target.max_capacity,
                min_instances=0,
                gpus_per_unit=plan.instance.gpu_count,
                kv_cache_tokens=plan.memory.kv_cache_tokens,
                asynchronous=per_instance is not None,
            )
            initial = max(target.min_capacity, plan.instance_count if target.min_capacity else 1)
            share = weights.get((endpoint_name, target.name), 1.0)
            idle = 15 if target.min_capacity == 0 else None
            name = f"{endpoint_name}/{target.name}"
            keys = SETTING_KEYS["async" if per_instance is not None else "instances"]
        found.append(
            Setup(
                target=target,
                name=name + name_suffix,
                shape=shape,
                initial_units=min(max(initial, target.min_capacity), target.max_capacity),
                traffic_share=share,
                cold_start_budget_seconds=plan.cold_start_wait_seconds,
                idle_minutes=idle,
                price_per_instance_hour=price,
                start_budget_seconds=plan.unit_start_budget_seconds,
                slo_attainment=plan.profile.slo.attainment,
                slo=plan.profile.slo,
                keys=replace(keys, recorded=plan),  # the settings a props suggestion keeps
                door=Door(door),
            )
        )
    return found


def _pool(template: StackTemplate, plan: Plan, name: str) -> ComponentPool:
    try:
        return pool_of(plan.units)
    except ValueError:
        raise SimulationInputError(
            f"{template.source}: {name} scales inference-component copies, but its recorded plan is for production "
            "variants: synthesize the app again with this peagle"
        ) from None


def _of_endpoint(template: StackTemplate, target, endpoint: str) -> bool:
    """A variant target of that endpoint (endpoint/<name>/variant/...), or a component hosted on it."""
    parts = target.resource_id.split("/")
    if parts[0] == "endpoint":
        return len(parts) > 1 and parts[1] == endpoint
    for component in template.of_type("AWS::SageMaker::InferenceComponent").values():
        props = component.get("Properties") or {}
        if template.resolve(props.get("InferenceComponentName")) == target.name:
            return template.resolve(props.get("EndpointName")) == endpoint
    return False


def _caching_components(template: StackTemplate, plan: Plan) -> dict[str, str]:
    """Names of the components whose data SageMaker caches, and whose model has SageMaker download its weights
    (PrimaryContainer.ModelDataSource): SageMaker caches "the model artifacts and container image"
    (InferenceComponentDataCacheConfig); weights a container downloads itself (artifacts.source hub) are not among
    them, and the image pull is not part of the simulated start. It caches where the Specification has
    DataCacheConfig.EnableCaching true, and on an instance type with more than 232 GiB of local NVMe storage whatever
    that says (peagle/planning/forced_data_cache.py): the instance type is the one the component's endpoint config names.
    Each name maps to why: "template" or "instance type"."""
    found = {}
    for component in template.components():
        specification = component.properties.get("Specification") or {}
        caching = (specification.get("DataCacheConfig") or {}).get("EnableCaching")
        stated = caching is True or str(template.resolve(caching)).lower() == "true"  # a boolean, or "true"
        if not stated and not _caching_forced_on(template, component, plan):
            continue
        model = template.properties(component.model_id) if component.model_id else {}
        container = model.get("PrimaryContainer") or {}
        if component.name and (container.get("ModelDataSource") or container.get("ModelDataUrl")):
            found[component.name] = "template" if stated else "instance type"
    return found


def _caching_forced_on(template: StackTemplate, component, plan: Plan) -> bool:
    """SageMaker caches the component's data on the instance type its endpoint config names whatever the template
    says (the plan's facts for the plan's type, custom_instances included; else the catalog's). An instance type
    neither knows, or whose storage size is not known, counts as not caching: the template's word stands."""
    endpoint = next((found for found in template.endpoints() if found.name == component.endpoint_name), None)
    variant = endpoint.variant(component.variant or "") if endpoint is not None else None
    instance_type = template.resolve(variant.instance_type) if variant is not None else plan.instance_type
    instance = (
        plan.instance if instance_type == plan.instance_type else load_catalog().instances.get(instance_type or "")
    )
    return instance is not None and caching_forced(instance) is True


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
    return ("idle-burst", "sparse", "surge") if setup.target.min_capacity == 0 else ("surge",)


def run(
    template: StackTemplate,
    plan: Plan,
    *,
    door: str = "file",
    endpoint: str | None = None,
    shapes: Sequence[str] | None = None,
    traces: Sequence[Trace] = (),
    assumptions: Assumptions | None = None,
    readings: Sequence[dict] | None = None,
    attainment: float | None = None,
    start: datetime | None = None,
    name_suffix: str = "",
) -> list[Result]:
    """Every target x trace x reading (``readings``: default every combination of the open rules,
    ``ALL_READINGS``; ``[{}]``: ``assumptions`` alone). ``attainment``: the share of requests that must
    be answered, instead of the profile's SLO attainment."""
    base = assumptions or base_assumptions(plan)
    variants = [base.but(**choice) for choice in (ALL_READINGS if readings is None else readings)]
    results = []
    for setup in setups(template, plan, door=door, endpoint=endpoint, name_suffix=name_suffix):
        if attainment is not None:
            setup = replace(setup, slo_attainment=attainment)
        chosen_variants = _applicable(variants, setup)
        # The shapes load this target at their level whatever its share of the endpoint's traffic.
        unit_rpm = setup.unit_rpm(base) / setup.traffic_share
        chosen = list(traces) + [
            built_in(shape, unit_rpm=unit_rpm, min_units=setup.initial_units, max_units=setup.target.max_capacity)
            for shape in (shapes if shapes is not None else ([] if traces else default_shapes(setup)))
        ]
        chosen = [replace(trace, start=start) for trace in chosen] if start is not None else chosen
        for trace in chosen:
            results += _every_reading(setup, trace, chosen_variants)
    return results


def _applicable(variants: list[Assumptions], setup: Setup) -> list[Assumptions]:
    """``variants`` as they apply to ``setup``: the ``data_cache`` reading only where its component caches its
    model data (``UnitShape.data_cache``, from the template): elsewhere "off", and the variants it doubled run
    once. A caching component given no reading of it runs the cautious one, ``no-gain``."""
    found: list[Assumptions] = []
    for variant in variants:
        if not setup.shape.data_cache:
            variant = variant.but(data_cache="off")
        elif variant.data_cache == "off":
            variant = variant.but(data_cache="no-gain")
        if variant not in found:
            found.append(variant)
    return found


def _every_reading(setup: Setup, trace: Trace, variants: list[Assumptions]) -> list[Result]:
    """A result for each of ``variants``, simulating only those whose timeline can differ: a run under one
    reading stands for every reading that agrees with it on the rules it consulted (``Timeline.consulted``);
    each consulted rule is then tried the other way."""
    by_reading: dict[Assumptions, Result] = {}
    pending = [variants[0]] if variants else []
    while pending:
        variant = pending.pop(0)
        if variant in by_reading:
            if not pending:
                pending = [other for other in variants if other not in by_reading][:1]
            continue
        timeline = simulate(setup, trace, variant)
        seen = outcome(timeline)
        for other in variants:
            if other not in by_reading and all(
                getattr(other, field) == getattr(variant, field) for field in timeline.consulted
            ):
                same = timeline if other == variant else replace(timeline, assumptions=other)
                by_reading[other] = Result(same, seen, verdicts(same, seen))
        for field in timeline.consulted:
            pending += [
                other for other in variants if other not in by_reading and _differs_only_in(other, variant, field)
            ]
        if not pending:  # a reading no flip reached: run it too
            pending = [other for other in variants if other not in by_reading][:1]
    return [by_reading[variant] for variant in variants]


def _differs_only_in(one: Assumptions, other: Assumptions, field: str) -> bool:
    return getattr(one, field) != getattr(other, field) and all(
        getattr(one, name) == getattr(other, name) for name in READING_FIELDS if name != field
    )
