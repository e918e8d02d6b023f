"""`peagle traffic`: an endpoint's (or an inference component's) requests per minute, read from CloudWatch
for a window the user names, written as the trace CSV `peagle simulate --traffic FILE` reads.

Exit codes: 0 the trace was written; 2 bad input (flags, a window CloudWatch cannot serve per minute, an
endpoint SageMaker does not know, no datapoint at all in the window); 3 an AWS credentials, region or
access problem (as `peagle preflight`).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from peagle.cli_errors import ExitCode
from peagle.cli_options import add_command, exclusive, option
from peagle.traffic.window import positive_days

if TYPE_CHECKING:
    from peagle.traffic.cloudwatch_history import Source

DEFAULT_OUT = Path("traffic.csv")
STDOUT = "-"


_OPTIONS = (
    option(
        "--endpoint",
        metavar="NAME",
        help="the endpoint's name. Without --variant, its one production variant is found with SageMaker "
        "DescribeEndpoint (several variants: pass --variant)",
    ),
    exclusive(
        option(
            "--variant",
            metavar="NAME",
            help="the production variant (dimensions EndpointName + VariantName); no DescribeEndpoint call, so a "
            "deleted endpoint's history can be read",
        ),
        option(
            "--inference-component",
            metavar="NAME",
            help="an inference component's traffic instead (dimension InferenceComponentName; --endpoint is then "
            "optional and only recorded in the comments)",
        ),
    ),
    exclusive(
        option(
            "--start",
            metavar="ISO",
            help="the window's start, ISO 8601 (e.g. 2026-12-01T09:00Z; UTC unless an offset is given), rounded down to "
            "a whole minute: minute 0 of the trace",
        ),
        option(
            "--days",
            type=positive_days,
            metavar="N",
            help="the last N days, ending at the current minute (at most 14 for per-minute data: CloudWatch keeps it "
            "15 days)",
        ),
        required=True,
    ),
    option(
        "--end",
        metavar="ISO",
        help="with --start: the window's end, exclusive, rounded up to a whole minute (default: now). A window "
        "covers at most 15 days",
    ),
    option(
        "--coarse",
        action="store_true",
        help="for a start older than 15 days: read 5-minute (up to 63 days old) or hourly (up to 455 days) sums and "
        "spread each evenly over its minutes, said in the CSV's comments (bursts inside a period are lost)",
    ),
    option("--region", help="the endpoint's AWS region (default: the AWS config's)"),
    option(
        "--out",
        default=str(DEFAULT_OUT),
        metavar="FILE",
        help=f"the trace CSV to write (default ./{DEFAULT_OUT}; `-` writes it to stdout and the summary to stderr)",
    ),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers,
        "traffic",
        run_traffic,
        _OPTIONS,
        help="an endpoint's requests per minute from CloudWatch, as a trace CSV for `peagle simulate --traffic`",
        description="Read the AWS/SageMaker Invocations metric (Sum per minute, CloudWatch GetMetricData) of an "
        "endpoint variant or an inference component for a window, and write it as the trace CSV `peagle simulate "
        "--traffic FILE` reads: a first line `# start: <UTC time of minute 0>`, comments naming the source, then "
        "`minute,requests` rows; a minute without a datapoint has no row and counts as no requests. CloudWatch keeps "
        "1-minute data for 15 days: an older start is refused unless --coarse. Exit 0 written, 2 bad input, 3 AWS "
        "credentials/access. docs/production-loop.md, section 3.",
    )


def run_traffic(args: argparse.Namespace) -> int:
    from peagle.aws import AwsCallError
    from peagle.cli_errors import run_reporting_errors
    from peagle.settings.errors import PeagleError

    return run_reporting_errors(_traffic, args, [(AwsCallError, ExitCode.AWS), (PeagleError, ExitCode.BAD_INPUT)])


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _traffic(args: argparse.Namespace) -> int:
    from peagle.traffic import cloudwatch_history as history
    from peagle.traffic.trace_file import minute_counts, trace_csv
    from peagle.traffic.window import TrafficHistoryError, plan_window, utc_text

    # Everything the flags decide is checked before the first AWS call.
    if args.inference_component is None and not args.endpoint:
        raise TrafficHistoryError(
            "no source: pass --endpoint NAME (a production variant's traffic) or --inference-component NAME"
        )
    now = _utc_now()
    window = plan_window(*_asked_window(args, now), now=now, coarse=args.coarse)

    session = history._session(args.region)
    cloudwatch = history._client(session, "cloudwatch")  # raises AwsCallError without a region
    source = _source(args, session)
    region = str(session.region_name)
    if window.minutes_per_period > 1:
        print(
            f"note: the start is older than 15 days, so CloudWatch has only {window.period_seconds}-second sums; each "
            f"is spread evenly over its {window.minutes_per_period} minutes (window aligned to "
            f"{utc_text(window.start)} - {utc_text(window.end)})",
            file=sys.stderr,
        )
    found = history.invocations(cloudwatch, source, window)
    for message in found.messages:
        print(f"note: CloudWatch GetMetricData: {message}", file=sys.stderr)
    if not found.sums:
        raise TrafficHistoryError(
            f"CloudWatch has no {history.NAMESPACE} {history.METRIC_NAME} datapoint for {source.describe()} in "
            f"{region} between {utc_text(window.start)} and {utc_text(window.end)}: check the name(s) and --region "
            f"(`aws cloudwatch list-metrics --namespace {history.NAMESPACE} --metric-name {history.METRIC_NAME} "
            f"--region {region}` lists the ones with data), or choose a window in which it served requests"
        )
    counts = minute_counts(found.sums, window)
    written, summary_stream = _write(args.out, trace_csv(counts, window=window, source=source, region=region))
    peak_minute, peak = counts.peak()
    print(
        f"wrote {written}: {window.minutes} minutes from {utc_text(window.start)} ({source.describe()}, {region}), "
        f"{counts.total:,.0f} requests, {len(counts.requests)} minute(s) with a datapoint, peak {peak:,.1f}/min at "
        f"minute {peak_minute}; replay it with `peagle simulate --traffic {written if args.out != STDOUT else 'FILE'}`",
        file=summary_stream,
    )
    return ExitCode.OK


def _source(args: argparse.Namespace, session) -> Source:
    """The variant or component whose invocations are read; a variant not named is looked up."""
    from peagle.traffic import cloudwatch_history as history

    if args.inference_component is not None:
        return history.Source(args.endpoint, component=args.inference_component)
    variant = args.variant or history.only_variant(history._client(session, "sagemaker"), args.endpoint)
    return history.Source(args.endpoint, variant=variant)


def _write(out: str, text: str) -> tuple[str, TextIO]:
    """Write the trace to ``out`` (``-``: stdout); what was written, and where the summary goes."""
    from peagle.traffic.window import TrafficHistoryError

    if out == STDOUT:
        sys.stdout.write(text)
        return "the trace", sys.stderr
    path = Path(out)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise TrafficHistoryError(
            f"cannot write {path}: {error.strerror or error}; pass --out with a writable path"
        ) from None
    return str(path), sys.stdout


def _asked_window(args: argparse.Namespace, now: datetime) -> tuple[datetime, datetime]:
    from peagle.traffic.window import TrafficHistoryError, parse_time

    if args.days is not None:
        if args.end is not None:
            raise TrafficHistoryError("--end goes with --start; --days N always ends now")
        return now - timedelta(days=args.days), now
    start = parse_time(args.start, flag="--start")
    end = parse_time(args.end, flag="--end") if args.end is not None else now
    return start, end
