"""`peagle access`: the runtime-access check on a synthesized app (docs/security.md, "What AWS will allow").

Reads a cloud assembly (`cdk synth`'s cdk.out, any app's: the YAML app's, or your own with PeagleEndpoint), lists
what each principal must be able to do once deployed and decides each request as IAM would from the templates'
policies. A request whose deciding policy is not in the templates (a key, bucket, repository, secret or topic named
by ARN; a role passed in; whoever deploys the stack) is listed as not checked, with what the templates say and what
to verify by hand. Exit codes: 0 no grant is missing (requests not checked are listed), 1 a grant is certainly
missing, 2 no readable cloud assembly.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from peagle.cli_errors import ExitCode, run_reporting_errors
from peagle.cli_options import add_command, option

_OPTIONS = (
    option("--cdk-out", type=Path, default=Path("cdk.out"), help="cdk synth's output directory (default cdk.out)"),
    option("--verbose", action="store_true", help="also list every granted request and what allowed it"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers,
        "access",
        run_access,
        _OPTIONS,
        help="check that every role of a synthesized app may do what AWS will ask of it at runtime",
        description="From a cloud assembly (cdk.out), list what each principal must be able to do at runtime (the "
        "SageMaker execution role: pull its image, list and read its weights and decrypt them, create and write its "
        "logs, put metrics, read a Hub token, its rollback alarms, async inputs, results and notifications, Data "
        "Capture; whoever deploys the stack: a grant on the volume key; the image build's roles: read the build "
        "context, pull the base, push the image, start the build) and evaluate each request against the templates' "
        "identity, key, bucket and repository policies as IAM does (an explicit deny wins; wildcards; the "
        "conditions the templates use). A missing grant is printed with the principal, action, resource, what "
        "decided and the prop or deployment-file key that fixes it; a request whose deciding policy is not in the "
        "templates is printed as not checked, with what was found and what to verify by hand. Exit 0 nothing "
        "missing, 1 a grant certainly missing, 2 bad input.",
    )


def run_access(args: argparse.Namespace) -> int:
    from peagle.cloud_assembly import AssemblyError

    return run_reporting_errors(_access, args, [(AssemblyError, ExitCode.BAD_INPUT)])


def _access(args: argparse.Namespace) -> int:
    from peagle.access.check import check_runtime_access, report_lines
    from peagle.cloud_assembly import Assembly

    outcomes = check_runtime_access(Assembly.from_cdk_out(args.cdk_out))
    if args.verbose:
        for outcome in outcomes:
            if outcome.granted:
                print(f"granted  {outcome.principal} {outcome.need.action} on {outcome.need.resource}")
    for line in report_lines(outcomes):
        print(line)
    return ExitCode.FAILED if any(outcome.missing for outcome in outcomes) else ExitCode.OK
