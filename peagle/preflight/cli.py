"""`peagle preflight`: compare the template about to be deployed with the deployed one and
refuse the transitions SageMaker or CloudFormation would fail or could not roll back,
printing the safe sequence of deploys instead (docs/preflight.md).

Exit codes: 0 safe (warnings and notes may be printed); 1 refused; 2 bad arguments or a
template that cannot be read; 3 an AWS credentials, region or access problem.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from peagle.config import DEFAULT_DEPLOYMENT_FILE

EXIT_OK, EXIT_REFUSED, EXIT_BAD_INPUT, EXIT_AWS = 0, 1, 2, 3
DEPLOYMENT_TAG = "peagle:deployment"  # app.py tags every stack with the deployment's name
# The endpoint stack's construct id in app.py: the artifact id in cdk.out/manifest.json
# (docs/deployment.md, "Stacks, names and outputs": cdk selects stacks by their construct ids).
ENDPOINT_STACK_ID = "PeagleEndpoint"
_FROM_MANIFEST = ""  # --stack given without a name


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "preflight",
        help="refuse endpoint updates SageMaker/CloudFormation would fail or could not roll back",
        description="Compare the endpoint stack template about to be deployed (--new, default: cdk.out) with the "
        "deployed one (--deployed-template FILE, or --stack: CloudFormation GetTemplate) and refuse: variant changes "
        "under blue/green or rolling updates, instance-type changes of autoscaled variants or of an endpoint whose "
        "component copy counts are autoscaled, a renamed inference component, endpoint replacement (unless "
        "--allow-replace), unstaged weights, log-group names already taken; warns on a component update that may "
        "start at zero copies or reset an autoscaled copy count. Prints each finding with its "
        "source and the safe sequence of deploys. Exit 0 safe, 1 refused, 2 bad input, 3 AWS credentials/access.",
    )
    parser.add_argument(
        "--deployment",
        help=f"the YAML app's deployment file being deployed (default {DEFAULT_DEPLOYMENT_FILE}); checked against "
        "cdk.out and named in the safe sequences. An app of your own needs none: the template records the plan and "
        "which door made it, and the safe sequences name your PeagleEndpoint props",
    )
    parser.add_argument(
        "--new",
        type=Path,
        metavar="TEMPLATE",
        help=f"template to deploy (default: the {ENDPOINT_STACK_ID} stack's template in --cdk-out, else the stack "
        "there whose template records a P-EAGLE plan: your own app's)",
    )
    parser.add_argument(
        "--cdk-out", type=Path, default=Path("cdk.out"), help="cdk synth's output directory (default cdk.out)"
    )
    deployed = parser.add_mutually_exclusive_group(required=True)
    deployed.add_argument(
        "--deployed-template",
        type=Path,
        metavar="FILE",
        help="the deployed template as a JSON/YAML file (no AWS calls)",
    )
    deployed.add_argument(
        "--stack",
        nargs="?",
        const=_FROM_MANIFEST,
        metavar="NAME",
        help="read the deployed template from this CloudFormation stack (needs credentials); "
        "without NAME: the stack cdk.out deploys the new template as",
    )
    parser.add_argument("--region", help="AWS region of the stack (default: the AWS config's)")
    parser.add_argument(
        "--allow-replace",
        action="store_true",
        help="allow replacing the endpoint (a changed endpoint name): clients must switch names",
    )
    parser.set_defaults(handler=run_preflight)


def run_preflight(args: argparse.Namespace) -> int:
    from peagle.aws import AwsCallError
    from peagle.cli_errors import run_reporting_errors
    from peagle.errors import PeagleError

    return run_reporting_errors(_preflight, args, [(AwsCallError, EXIT_AWS), (PeagleError, EXIT_BAD_INPUT)])


def _preflight(args: argparse.Namespace) -> int:
    from peagle.preflight.rules import CheckContext, check_transition
    from peagle.preflight.template import ENDPOINT, StackTemplate, TemplateError, load_template_file

    deployment_file = args.deployment or DEFAULT_DEPLOYMENT_FILE
    new_path, stack_name = _new_template(args)
    new = load_template_file(new_path)
    if not new.of_type(ENDPOINT):
        raise TemplateError(f"{new_path} has no {ENDPOINT}: pass the endpoint stack's template ({ENDPOINT_STACK_ID})")

    account = None
    if args.deployed_template is not None:
        old = load_template_file(args.deployed_template)
        if not old.of_type(ENDPOINT):
            raise TemplateError(
                f"{args.deployed_template} has no {ENDPOINT}: pass the deployed endpoint stack's template"
            )
        print(f"preflight: {new_path} against {old.source}")
    else:
        from peagle.preflight import deployed

        stack_name = args.stack or stack_name
        if not stack_name:
            raise TemplateError(f"no stack name for {new_path}: pass --stack NAME")
        session = deployed._session(args.region)
        account = deployed.AwsAccount(session, stack_name=stack_name)
        found = deployed.deployed_template(session, stack_name)
        print(f"preflight: {new_path} against stack {stack_name} in {session.region_name}")
        if found is None:
            print(f"first deploy: nothing to compare (stack {stack_name} does not exist); checking what a create needs")
            found = StackTemplate.empty(source=f"stack {stack_name} (none)")
        old = found

    context = CheckContext(
        deployment_file=deployment_file, allow_replace=args.allow_replace, account=account, **_made_by(new)
    )
    return _report(check_transition(old, new, context))


def _made_by(new) -> dict:
    """The door and model pair the new template's recorded plan names (peagle/plan_record.py): the safe sequences
    speak that door's words. A template of an earlier peagle records none: the deployment file's words."""
    from peagle.plan_record import read_records
    from peagle.setting_refs import Door

    records = read_records(new.body, source=new.source)
    if not records:
        return {}
    recorded = records[0].primary if len(records) == 1 else None
    return {"door": Door(records[0].door), "pair_id": records[0].primary.pair_id, "recorded": recorded}


def _new_template(args: argparse.Namespace, *, flag: str = "--new") -> tuple[Path, str | None]:
    """The template to deploy and, when known from a cdk manifest, the stack it deploys as (``flag``:
    the option that names a template instead, for the message)."""
    from peagle.preflight.template import TemplateError

    if args.new is not None:
        return args.new, _stack_name_beside(args.new)
    manifest_path = args.cdk_out / "manifest.json"
    synth = (
        f"run `npx cdk synth -c deployment={args.deployment or DEFAULT_DEPLOYMENT_FILE}` (or `make synth`), or your "
        f"own app's `cdk synth`, first, or pass {flag}"
    )
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise TemplateError(f"cannot read {manifest_path} ({error}); {synth}") from None
    artifact = manifest.get("artifacts", {}).get(ENDPOINT_STACK_ID)
    if not artifact or "templateFile" not in artifact.get("properties", {}):
        return _recording_stack(args.cdk_out, flag=flag, synth=synth)
    properties = artifact["properties"]
    if args.deployment:
        from peagle.config import load_deployment_config

        expected = load_deployment_config(args.deployment, {}).name
        synthesized = properties.get("tags", {}).get(DEPLOYMENT_TAG)
        if synthesized != expected:
            raise TemplateError(
                f"{args.cdk_out} holds deployment {synthesized!r}, not {expected!r} ({args.deployment}); {synth}"
            )
    return args.cdk_out / properties["templateFile"], properties.get("stackName")


def _recording_stack(cdk_out: Path, *, flag: str, synth: str) -> tuple[Path, str | None]:
    """An app of your own (no YAML app's endpoint stack): its stack whose template records a P-EAGLE plan."""
    from peagle.access.assembly import AssemblyError
    from peagle.plan_record import PlanRecordError, recorded_stack
    from peagle.preflight.template import TemplateError

    try:
        stack = recorded_stack(cdk_out, flag=flag)
    except (AssemblyError, PlanRecordError) as error:
        raise TemplateError(str(error)) from None
    if stack is None:
        raise TemplateError(
            f"{cdk_out / 'manifest.json'} has no {ENDPOINT_STACK_ID} stack and no stack whose template records a "
            f"P-EAGLE plan (a PeagleEndpoint of this peagle records one); {synth}"
        )
    return stack.path, stack.stack_name


def _stack_name_beside(template: Path) -> str | None:
    """The stack name cdk gave a template in the manifest next to it, if there is one."""
    try:
        manifest = json.loads((template.parent / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for artifact in manifest.get("artifacts", {}).values():
        properties = artifact.get("properties") or {}
        if properties.get("templateFile") == template.name:
            return properties.get("stackName")
    return None


def _report(findings) -> int:
    from peagle.preflight.rules import Severity

    refused = [finding for finding in findings if finding.severity is Severity.REFUSE]
    labels = {Severity.REFUSE: "REFUSED", Severity.WARN: "WARNING", Severity.NOTE: "note"}
    for finding in findings:
        print(f"\n{labels[finding.severity]} [{finding.rule}] {finding.what}")
        print(f"  why: {finding.why}")
        print(f"  source: {finding.source}")
    for number, finding in enumerate(refused, 1):
        print(f"\nsafe sequence {number} ({finding.rule}):")
        for step, text in enumerate(finding.safe_sequence, 1):
            print(f"  {step}. {text}")
    warnings = sum(finding.severity is Severity.WARN for finding in findings)
    if refused:
        print(
            f"\nrefused: {len(refused)} illegal transition(s); do not deploy this template, follow the safe sequence above"
        )
        return EXIT_REFUSED
    if warnings:
        for finding in findings:
            if finding.severity is Severity.WARN and finding.safe_sequence:
                print(f"\nbefore deploying ({finding.rule}): " + "; ".join(finding.safe_sequence))
    print("\nno illegal transitions" + (f" ({warnings} warning(s) above)" if warnings else ""))
    return EXIT_OK
