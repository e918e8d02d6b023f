"""`peagle smoke`: prove a deployed endpoint (or a local server) works, one line per step.

Exit codes: 0 every step passed or was skipped; 1 a step failed (named on stderr); 2 bad
arguments or deployment file; 3 no usable AWS credentials or region; 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from peagle.catalog import ProfileName
from peagle.cli_errors import ExitCode, report_error
from peagle.cli_options import add_command, added_by, option
from peagle.client.cli import (
    MEASURED_PROFILE_DEFAULT,
    add_cold_start_wait_argument,
    add_inference_component_argument,
    add_target_arguments,
    cold_start_wait_error,
)
from peagle.planning.container_env import DEFAULT_VARIANT_NAME

if TYPE_CHECKING:
    from peagle.smoke.deployed_plan import DeployedPlan

KPI_INTERVALS_TO_WAIT = 3  # a KPI line per interval; three intervals absorb the metric filters' delay


_OPTIONS = (
    added_by(add_target_arguments, required=False),  # without either: the --deployment's endpoint
    option(
        "--deployment",
        help="deployment YAML: its name gives the endpoint (<name>-endpoint, when --endpoint is not given) and the "
        "stack, its plan whether speculation is on (K > 0), its KPI interval the default --kpi-wait-seconds",
    ),
    option(
        "--cdk-out",
        type=Path,
        help="your app's synthesized cdk.out, instead of --deployment: the plan its PeagleEndpoint records in the "
        "template gives the endpoint, the stack, whether speculation is on, the sampling, the component and the KPI "
        "interval, whichever door (deployment file or construct props) made it",
    ),
    option(
        "--stack",
        help="CloudFormation stack holding the alarms (default: --cdk-out's stack, else <deployment name>-endpoint); "
        "with --cdk-out, also the stack whose template is read",
    ),
    option(
        "--variant",
        default=DEFAULT_VARIANT_NAME,
        help=f"production variant to invoke and read metrics of (default {DEFAULT_VARIANT_NAME}); with an inference "
        "component it only picks the plan (Primary or the A/B Baseline) and the component a --deployment names",
    ),
    added_by(
        add_inference_component_argument,
        repeatable=False,
        help_text="invoke this inference component (InvokeEndpoint InferenceComponentName, no TargetVariant) and read "
        "its KPI metrics, for an endpoint in inference-component mode (default with a --deployment in that mode: "
        "<name>-<variant>, e.g. peagle-primary)",
    ),
    added_by(add_cold_start_wait_argument),
    option(
        "--expect-speculation",
        choices=("auto", "on", "off"),
        default="auto",
        help="off skips speculation-on (K=0); auto: from the plan of --deployment or --cdk-out, else on (default auto)",
    ),
    option(
        "--wait-seconds",
        type=float,
        default=0.0,
        help="poll DescribeEndpoint this long while Creating/Updating (default 0: no waiting)",
    ),
    option(
        "--kpi-wait-seconds",
        type=float,
        help=f"wait this long for KPI datapoints (default {KPI_INTERVALS_TO_WAIT} KPI intervals: 180 s at the default 60 s)",
    ),
    option(
        "--metrics-window-minutes", type=int, default=10, help="how far back to look for KPI datapoints (default 10)"
    ),
    option("--max-tokens", type=int, default=32, help="tokens per smoke completion (default 32)"),
    option(
        "--profile",
        choices=[profile.value for profile in ProfileName],
        help="catalog profile whose temperature and top_p the streamed request, and so the speculation check, is "
        f"sampled at (default: --deployment's profile, with its profile_overrides, else {MEASURED_PROFILE_DEFAULT}); "
        "the plain request stays greedy, for acceptance beside it",
    ),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers,
        "smoke",
        run_smoke_command,
        _OPTIONS,
        help="prove a deployed endpoint works: status, invocations, speculation, KPI metrics, alarms",
        description="Check a deployed endpoint step by step, printing one line per step (ok / FAIL / skip and what "
        "was seen): endpoint-in-service (DescribeEndpoint), plain-invocation (InvokeEndpoint), "
        "streamed-invocation (InvokeEndpointWithResponseStream), speculation-on (SpecAcceptanceRate > 0 in "
        "CloudWatch), kpi-metrics (KpiReports datapoints), alarms-ok (none of the endpoint's own health alarms in ALARM; "
        "the stack's scaling alarms and other endpoints' alarms are skipped and named). With --url "
        "(a local server) only the HTTP steps run, and speculation is read from the server's /metrics counters. "
        "Exit codes: 0 all steps passed or were skipped; 1 a step failed (named on stderr); 2 bad arguments or "
        "deployment file; 3 no AWS credentials or region; 130 interrupted (Ctrl-C).",
    )


def run_smoke_command(args: argparse.Namespace) -> int:
    return execute(args)


def execute(args: argparse.Namespace, *, aws=None, timing=None) -> int:
    """The command; ``aws`` (AwsClients) and ``timing`` are injectable for tests."""
    from peagle.settings.errors import PeagleError
    from peagle.smoke.cloud import AwsSetupError
    from peagle.smoke.runner import run_smoke
    from peagle.smoke.step import StepStatus, Timing

    try:
        try:
            options = resolve_options(args)
        except PeagleError as error:  # scoped: a PeagleError from a step is a bug, and keeps its traceback
            return report_error(error, ExitCode.BAD_INPUT)
        try:
            if options.url is None and aws is None:
                aws = connect_aws(args.region)
            results = run_smoke(options, aws=aws, timing=timing or Timing(), report=_print_step)
        except AwsSetupError as error:
            return report_error(error, ExitCode.AWS)
    except KeyboardInterrupt:
        print("interrupted: nothing was changed; the checks so far are above", file=sys.stderr)
        return ExitCode.INTERRUPTED

    failed = [result.name for result in results if result.status is StepStatus.FAIL]
    skipped = sum(result.status is StepStatus.SKIP for result in results)
    if failed:
        print(f"smoke test FAILED at: {', '.join(failed)}", file=sys.stderr)
        return ExitCode.FAILED
    print(f"smoke test passed: {len(results) - skipped} step(s) ok, {skipped} skipped")
    return ExitCode.OK


def _print_step(result) -> None:
    print(result.line(), flush=True)


def resolve_options(args: argparse.Namespace):
    """SmokeOptions from the arguments and the deployment (--deployment or --cdk-out); PeagleError when they do not
    add up."""
    from peagle.settings import DeploymentConfig, ObservabilitySettings
    from peagle.settings.errors import PeagleError
    from peagle.smoke.runner import SmokeOptions

    _check_arguments(args)
    deployed = _deployed(args)
    endpoint_name = args.endpoint or (deployed.endpoint_name if deployed is not None and not args.url else None)
    if not args.url and not endpoint_name:
        raise PeagleError(
            "give --endpoint NAME, or --deployment FILE (its endpoint is <name>-endpoint), or --cdk-out DIR (the "
            "endpoint your app's template records), or --url for a local server"
        )
    component = args.inference_component
    if component is None and deployed is not None and not args.url:
        component = deployed.component
    default_stack = f"{DeploymentConfig.model_fields['name'].default}-endpoint"
    kpi_interval = deployed.kpi_interval_seconds if deployed else ObservabilitySettings().kpi_interval_seconds
    expect, source = _expected_speculation(args, deployed)
    return SmokeOptions(
        endpoint_name=None if args.url else endpoint_name,
        url=args.url,
        variant_name=args.variant,
        stack_name=args.stack or (deployed.stack_name if deployed else default_stack),
        expect_speculation=expect,
        speculation_source=source,
        wait_seconds=args.wait_seconds,
        kpi_wait_seconds=args.kpi_wait_seconds
        if args.kpi_wait_seconds is not None
        else KPI_INTERVALS_TO_WAIT * kpi_interval,
        metrics_window_minutes=args.metrics_window_minutes,
        max_tokens=args.max_tokens,
        max_attempts=args.max_attempts,
        sampling=_deployed_sampling(args, deployed),
        inference_component=component,
        cold_start_wait_seconds=args.cold_start_wait,
    )


def _check_arguments(args: argparse.Namespace) -> None:
    from peagle.settings.errors import PeagleError

    if args.deployment and args.cdk_out:
        raise PeagleError(
            "give --deployment FILE (the YAML app) or --cdk-out DIR (any app's synthesized templates), not both"
        )
    if args.url and args.inference_component:
        raise PeagleError(
            "--inference-component names an inference component of an endpoint (InvokeEndpoint "
            "InferenceComponentName); a --url server has none: give --endpoint or --deployment instead of --url"
        )
    refused = cold_start_wait_error(args.cold_start_wait)
    if refused:
        raise PeagleError(refused)
    for flag, value, minimum in (
        ("--wait-seconds", args.wait_seconds, 0),
        ("--kpi-wait-seconds", args.kpi_wait_seconds, 0),
        ("--metrics-window-minutes", args.metrics_window_minutes, 1),
        ("--max-tokens", args.max_tokens, 1),
        ("--max-attempts", args.max_attempts, 1),
    ):
        if value is not None and value < minimum:
            raise PeagleError(f"{flag} must be >= {minimum}, got {value}")


def _deployed(args: argparse.Namespace) -> DeployedPlan | None:
    from peagle.smoke.deployed_plan import DeployedPlan

    if args.deployment:
        return DeployedPlan.from_file(args.deployment, args.variant)
    if args.cdk_out:
        # With --url the endpoint is local: --endpoint does not pick one of the template's endpoints.
        endpoint = None if args.url else args.endpoint
        return DeployedPlan.from_cdk_out(args.cdk_out, stack=args.stack, endpoint=endpoint, variant=args.variant)
    return None


def _expected_speculation(args: argparse.Namespace, deployed: DeployedPlan | None) -> tuple[bool, str]:
    if args.expect_speculation != "auto":
        return args.expect_speculation == "on", f"--expect-speculation {args.expect_speculation}"
    if deployed is None:
        return True, "default"
    plan = deployed.plan
    return plan.speculation_enabled, f"{deployed.source}: K={plan.speculative_tokens} for variant {args.variant}"


def _deployed_sampling(args: argparse.Namespace, deployed: DeployedPlan | None):
    """--profile's sampling; else the deployment's (its profile, with its profile_overrides, as the plan has
    it); else the default profile's."""
    from peagle.bench.results import Sampling

    if args.profile or deployed is None:
        return Sampling.of_profile(args.profile or MEASURED_PROFILE_DEFAULT)
    plan = deployed.plan
    profile, served = plan.profile_name.value, plan.profile.sampling
    catalogs = Sampling.of_profile(profile)
    if (served.temperature, served.top_p) == catalogs.key:
        return catalogs
    # What the deployment serves, not a deviation from it: a greedy override is the deployed sampling here.
    return Sampling(served.temperature, served.top_p, profile=f"{profile} with profile_overrides")


def connect_aws(region: str | None):
    """The four clients, after checking that a region and credentials exist (else AwsSetupError)."""
    from botocore.exceptions import BotoCoreError

    from peagle.aws import AwsCallError, aws_client, aws_session
    from peagle.client.sagemaker_transport import make_runtime_client
    from peagle.smoke.cloud import NO_CREDENTIALS_MESSAGE, AwsSetupError
    from peagle.smoke.runner import AwsClients

    try:
        session = aws_session(region)
        clients = AwsClients(
            sagemaker=aws_client(session, "sagemaker"),  # raises AwsCallError without a region
            runtime=make_runtime_client(session.region_name),
            cloudwatch=aws_client(session, "cloudwatch"),
            cloudformation=aws_client(session, "cloudformation"),
        )
        credentials = session.get_credentials()
    except AwsCallError as error:
        raise AwsSetupError(str(error)) from None
    except BotoCoreError as error:  # e.g. ProfileNotFound for a bad AWS_PROFILE
        raise AwsSetupError(f"the AWS configuration is not usable: {error}") from None
    if credentials is None:
        raise AwsSetupError(NO_CREDENTIALS_MESSAGE)
    return clients
