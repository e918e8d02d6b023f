"""`peagle preflight`: compare the template about to be deployed with the deployed one and
refuse the transitions SageMaker or CloudFormation would fail or could not roll back,
printing the safe sequence of deploys instead (docs/preflight.md).

Exit codes: 0 safe (warnings and notes may be printed); 1 refused; 2 bad arguments or a
template that cannot be read; 3 an AWS credentials, region or access problem.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from peagle.cli_errors import ExitCode
from peagle.cli_options import add_command, exclusive, option
from peagle.cloud_assembly.manifest import ENDPOINT_STACK_ID
from peagle.settings import DEFAULT_DEPLOYMENT_FILE

_FROM_MANIFEST = ""  # --stack given without a name


_OPTIONS = (
    option(
        "--deployment",
        help=f"the YAML app's deployment file being deployed (default {DEFAULT_DEPLOYMENT_FILE}); checked against "
        "cdk.out and named in the safe sequences. An app of your own needs none: the template records the plan and "
        "which door made it, and the safe sequences name your PeagleEndpoint props",
    ),
    option(
        "--new",
        type=Path,
        metavar="TEMPLATE",
        help=f"template to deploy (default: the {ENDPOINT_STACK_ID} stack's template in --cdk-out, else the stack "
        "there whose template records a P-EAGLE plan: your own app's)",
    ),
    option("--cdk-out", type=Path, default=Path("cdk.out"), help="cdk synth's output directory (default cdk.out)"),
    exclusive(
        option(
            "--deployed-template",
            type=Path,
            metavar="FILE",
            help="the deployed template as a JSON/YAML file (no AWS calls)",
        ),
        option(
            "--stack",
            nargs="?",
            const=_FROM_MANIFEST,
            metavar="NAME",
            help="read the deployed template from this CloudFormation stack (needs credentials); "
            "without NAME: the stack cdk.out deploys the new template as",
        ),
        required=True,
    ),
    option("--region", help="AWS region of the stack (default: the AWS config's)"),
    option(
        "--allow-replace",
        action="store_true",
        help="allow replacing the endpoint (a changed endpoint name): clients must switch names",
    ),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers,
        "preflight",
        run_preflight,
        _OPTIONS,
        help="refuse endpoint updates SageMaker/CloudFormation would fail or could not roll back",
        description="Compare the endpoint stack template about to be deployed (--new, default: cdk.out) with the "
        "deployed one (--deployed-template FILE, or --stack: CloudFormation GetTemplate) and refuse: variant changes "
        "under blue/green or rolling updates, instance-type changes of autoscaled variants or of an endpoint whose "
        "component copy counts are autoscaled, a renamed inference component, endpoint replacement (unless "
        "--allow-replace), unstaged weights, log-group names already taken; warns on a component update that may "
        "start at zero copies or reset an autoscaled copy count. Prints each finding with its "
        "source and the safe sequence of deploys. Exit 0 safe, 1 refused, 2 bad input, 3 AWS credentials/access.",
    )


def run_preflight(args: argparse.Namespace) -> int:
    from peagle.aws import AwsCallError
    from peagle.cli_errors import run_reporting_errors
    from peagle.settings.errors import PeagleError

    return run_reporting_errors(_preflight, args, [(AwsCallError, ExitCode.AWS), (PeagleError, ExitCode.BAD_INPUT)])


def _preflight(args: argparse.Namespace) -> int:
    from peagle.cloud_assembly import ENDPOINT, StackTemplate, TemplateError, load_template_file
    from peagle.preflight.rules import CheckContext, check_transition

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
    """The door and model pair the new template's recorded plan names (peagle/planning/plan_record.py): the safe sequences
    speak that door's words. A template of an earlier peagle records none: the deployment file's words."""
    from peagle.planning.plan_record import read_records
    from peagle.settings.refs import Door

    records = read_records(new.body, source=new.source)
    if not records:
        return {}
    recorded = records[0].primary if len(records) == 1 else None
    return {"door": Door(records[0].door), "pair_id": records[0].primary.pair_id, "recorded": recorded}


def _new_template(args: argparse.Namespace) -> tuple[Path, str | None]:
    """The template to deploy and, when known from a cdk manifest, the stack it deploys as."""
    from peagle.cloud_assembly import stack_name_beside, template_to_deploy

    if args.new is not None:
        return args.new, stack_name_beside(args.new)
    stack = template_to_deploy(args.cdk_out, deployment=args.deployment, flag="--new")
    return stack.path, stack.stack_name


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
        return ExitCode.FAILED
    if warnings:
        for finding in findings:
            if finding.severity is Severity.WARN and finding.safe_sequence:
                print(f"\nbefore deploying ({finding.rule}): " + "; ".join(finding.safe_sequence))
    print("\nno illegal transitions" + (f" ({warnings} warning(s) above)" if warnings else ""))
    return ExitCode.OK
