"""What `peagle smoke` needs to know of a deployment: its endpoint and stack, the plan of the variant it checks
(K, sampling), the component serving that variant and the KPI interval. From the YAML app's deployment file
(planned here, as `cdk synth` plans it), or from any app's cdk.out: the plan each PeagleEndpoint records in its
template (peagle/planning/plan_record.py), whichever door made it, with no deployment file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from peagle.settings.errors import PeagleError

if TYPE_CHECKING:
    from peagle.planning.plan_record import PlanRecord
    from peagle.planning.planner import Plan


@dataclass(frozen=True)
class DeployedPlan:
    source: str  # where it was read, for the step lines: the deployment file, or the template
    endpoint_name: str
    stack_name: str
    plan: Plan  # of the variant smoke checks
    component: str | None  # the inference component serving that variant; None: production variants
    kpi_interval_seconds: int

    @classmethod
    def from_file(cls, path: str, variant: str) -> DeployedPlan:
        from peagle.planning.container_env import BASELINE_VARIANT_NAME
        from peagle.planning.planner import plan_ab_baseline, plan_deployment
        from peagle.settings import load_deployment_config

        config = load_deployment_config(path)
        # The A/B baseline variant runs its own K (often 0); every other variant runs the plan's.
        baseline = variant == BASELINE_VARIANT_NAME and config.ab_test.enabled
        plan = plan_ab_baseline(config) if baseline else plan_deployment(config)
        assert plan is not None  # the baseline is planned when the A/B test is on
        return cls(
            source=path,
            endpoint_name=config.endpoint_name,
            stack_name=f"{config.name}-endpoint",
            plan=plan,
            component=plan.units.component_name(config.inference_component_name(variant)),
            kpi_interval_seconds=config.observability.kpi_interval_seconds,
        )

    @classmethod
    def from_cdk_out(cls, cdk_out: Path, *, stack: str | None, endpoint: str | None, variant: str) -> DeployedPlan:
        """``stack``: the stack to read (default: the one whose template records a plan, peagle.cloud_assembly.
        recorded_stack); ``endpoint``: which of its endpoints (default: its only one)."""
        from peagle.cloud_assembly import Assembly, AssemblyError, recorded_stack, records_of
        from peagle.planning.plan_record import PlanRecordError

        try:
            found = Assembly.from_cdk_out(cdk_out).stack(stack) if stack else recorded_stack(cdk_out, flag="--stack")
        except (AssemblyError, PlanRecordError) as error:
            raise PeagleError(f"--cdk-out {cdk_out}: {error}") from None
        records = records_of(found) if found is not None else []
        if found is None or not records:
            raise PeagleError(
                f"--cdk-out {cdk_out}: no stack records a P-EAGLE plan{f' ({found.path})' if found else ''}; a "
                "PeagleEndpoint of this peagle records the plan it was built from: synthesize the app again with "
                "this peagle, or pass --deployment FILE (the YAML app) or --endpoint NAME"
            )
        record = _endpoint(records, endpoint, source=str(found.path))
        unit, plan = _unit(record, variant, source=str(found.path))
        return cls(
            source=str(found.path),
            endpoint_name=record.endpoint_name,
            stack_name=found.stack_name,
            plan=plan,
            component=plan.units.component_name(unit),
            kpi_interval_seconds=plan.observability.kpi_interval_seconds,
        )


def _endpoint(records: list[PlanRecord], endpoint: str | None, *, source: str) -> PlanRecord:
    names = ", ".join(record.endpoint_name for record in records)
    chosen = [record for record in records if endpoint in (None, record.endpoint_name)]
    if endpoint is not None and not chosen:
        raise PeagleError(f"--endpoint {endpoint!r} is not in {source} (it has: {names})")
    if len(chosen) > 1:
        raise PeagleError(f"{source} has several P-EAGLE endpoints ({names}): pass --endpoint NAME")
    return chosen[0]


def _unit(record: PlanRecord, variant: str, *, source: str) -> tuple[str, Plan]:
    """The serving unit of ``variant``: the variant itself, or the component serving it (PeagleEndpoint names
    its units in the order of its variants, Primary then the A/B Baseline)."""
    from peagle.planning.container_env import BASELINE_VARIANT_NAME, DEFAULT_VARIANT_NAME

    if variant in record.units:
        return variant, record.units[variant]
    order = [DEFAULT_VARIANT_NAME, BASELINE_VARIANT_NAME]
    names = list(record.units)
    # Units are named after their variants, in that order (a variant's unit is the variant itself, found above).
    if variant in order and order.index(variant) < len(names):
        name = names[order.index(variant)]
        return name, record.units[name]
    served = order[: len(names)]
    raise PeagleError(
        f"--variant {variant!r} is not served by {record.endpoint_name} in {source} (its variants: {', '.join(served)})"
    )
