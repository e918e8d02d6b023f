"""Which stack of a synthesized app holds its P-EAGLE endpoints, and the plan each endpoint records there
(peagle/planning/plan_record.py writes and reads the record; this module finds it in a cloud assembly)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from peagle.cloud_assembly.assembly import Assembly
from peagle.cloud_assembly.manifest import DEPLOYMENT_TAG, ENDPOINT_STACK_ID, MANIFEST, AssemblyError, AssemblyStack

if TYPE_CHECKING:  # the plan record and the settings load the planner: imported when a record is read
    from peagle.planning.plan_record import PlanRecord


def records_of(stack: AssemblyStack) -> list[PlanRecord]:
    """The plan each P-EAGLE endpoint of ``stack`` records, in template order (empty: none recorded)."""
    from peagle.planning.plan_record import read_records

    return read_records(stack.template, source=str(stack.path))


def recorded_stack(cdk_out: str | Path, *, flag: str) -> AssemblyStack | None:
    """The stack of the app synthesized into ``cdk_out`` whose template records a P-EAGLE plan: the YAML app's
    endpoint stack (ENDPOINT_STACK_ID) when it records one, else the only stack that does; None when none does (an
    assembly of an earlier peagle). PlanRecordError when several stacks do and none is the YAML app's (``flag``: the
    caller's option that names a template instead); AssemblyError when ``cdk_out`` is no cloud assembly."""
    from peagle.planning.plan_record import PlanRecordError

    stacks = Assembly.from_cdk_out(cdk_out).stacks
    recording = [stack for stack in stacks if records_of(stack)]
    preferred = [stack for stack in recording if stack.id == ENDPOINT_STACK_ID]
    if len(recording) > 1 and not preferred:
        names = ", ".join(f"{stack.id} ({stack.path})" for stack in recording)
        raise PlanRecordError(
            f"{cdk_out} has several stacks with P-EAGLE endpoints: {names}; pass {flag} with one of them"
        )
    return (preferred or recording or [None])[0]


def template_to_deploy(cdk_out: Path, *, deployment: str | None, flag: str) -> AssemblyStack:
    """The endpoint stack synthesized into ``cdk_out``: the YAML app's (checked to be ``deployment``'s when it is
    given), else the stack whose template records a P-EAGLE plan (an app of your own). ``flag``: the caller's
    option that names a template instead, for the messages. AssemblyError when there is none, or when
    ``deployment`` is not what ``cdk_out`` holds."""
    from peagle.settings import DEFAULT_DEPLOYMENT_FILE

    synth = (
        f"run `npx cdk synth -c deployment={deployment or DEFAULT_DEPLOYMENT_FILE}` (or `make synth`), or your "
        f"own app's `cdk synth`, first, or pass {flag}"
    )
    try:
        stacks = Assembly.from_cdk_out(cdk_out).stacks
    except AssemblyError as error:
        raise AssemblyError(f"{error}; {synth}") from None
    yaml_app = next((stack for stack in stacks if stack.id == ENDPOINT_STACK_ID), None)
    if yaml_app is None:
        return _recording_stack(cdk_out, deployment=deployment, flag=flag, synth=synth)
    if deployment:
        from peagle.settings import load_deployment_config

        expected = load_deployment_config(deployment, {}).name
        synthesized = yaml_app.tags.get(DEPLOYMENT_TAG)
        if synthesized != expected:
            raise AssemblyError(f"{cdk_out} holds deployment {synthesized!r}, not {expected!r} ({deployment}); {synth}")
    return yaml_app


def _recording_stack(cdk_out: Path, *, deployment: str | None, flag: str, synth: str) -> AssemblyStack:
    """An app of your own (no YAML app's endpoint stack): its stack whose template records a P-EAGLE plan."""
    from peagle.planning.plan_record import PlanRecordError

    try:
        stack = recorded_stack(cdk_out, flag=flag)
    except PlanRecordError as error:
        raise AssemblyError(str(error)) from None
    if stack is None:
        raise AssemblyError(
            f"{cdk_out / MANIFEST} has no {ENDPOINT_STACK_ID} stack and no stack whose template records a "
            f"P-EAGLE plan (a PeagleEndpoint of this peagle records one); {synth}"
        )
    if deployment:
        _check_deployment_of_own_app(stack, deployment)
    return stack


def _check_deployment_of_own_app(stack: AssemblyStack, deployment: str) -> None:
    """``--deployment FILE`` given for an app of your own: it holds when one of the stack's endpoints was made from
    that file (PeagleEndpoint.from_config) under the name the file gives it; an endpoint made from props has no file
    to compare, so the flag would be silently ignored: refuse it instead."""
    from peagle.settings import load_deployment_config

    records = records_of(stack)
    from_file = [record for record in records if record.door == "file"]
    where = f"{stack.path} (stack {stack.stack_name})"
    if not from_file:
        names = ", ".join(record.endpoint_name for record in records)
        raise AssemblyError(
            f"--deployment {deployment} names a deployment file, but the app in {where} builds its endpoints "
            f"({names}) from PeagleEndpoint props, not from a file: drop --deployment (the template records the plan "
            "it was built from, and the tools read that)"
        )
    expected = load_deployment_config(deployment, {}).endpoint_name
    if expected not in {record.endpoint_name for record in from_file}:
        names = ", ".join(record.endpoint_name for record in from_file)
        raise AssemblyError(
            f"--deployment {deployment} describes endpoint {expected!r}, but {where} records endpoint(s) made from a "
            f"deployment file named {names}: pass the file that app's PeagleEndpoint.from_config reads, or drop "
            "--deployment"
        )


def unit_titles(records: list[PlanRecord]) -> dict[str, str]:
    """Each recorded serving unit's name in the template (a production variant's, or an inference component's,
    generated from the construct's name: ``llmplatform-nig-a9787d3d-primary``) -> its title in the words the user
    gave: the endpoint's name, which ``--endpoint`` takes, and the variant the unit serves (``night-endpoint/
    Primary``). PeagleEndpoint records its units in the order of its variants, Primary then the A/B Baseline."""
    from peagle.planning.container_env import BASELINE_VARIANT_NAME, DEFAULT_VARIANT_NAME

    return {
        unit: f"{record.endpoint_name}/{variant}"
        for record in records
        for unit, variant in zip(record.units, (DEFAULT_VARIANT_NAME, BASELINE_VARIANT_NAME), strict=False)
    }
