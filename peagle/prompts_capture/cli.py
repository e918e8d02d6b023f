"""`peagle prompts`: an endpoint's SageMaker Data Capture (an S3 prefix or a local copy), or its container's
request log (CloudWatch Logs, --from-logs), to a prompts file that `peagle bench`, `peagle tune` and
`peagle capacity` read with --prompts-file.

Writes --out (JSON Lines, peagle/bench/prompts.py's format: prompt or messages, with the sampling
parameters the requests carried) and, next to it, <out stem>.summary.json (what was kept, what was
dropped and why, the distributions that matter for measuring). Exit 0 ok; 2 bad arguments, or no usable
record under the location; 3 S3 or CloudWatch Logs could not be read (credentials, permissions), as every
command that calls AWS exits (peagle/cli_errors.py, ExitCode.AWS).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from peagle.cli_errors import ExitCode
from peagle.cli_options import add_command, exclusive, group, option
from peagle.traffic.window import positive_days, utc_text

SUMMARY_SUFFIX = ".summary.json"


class NoUsablePrompts(ValueError):
    """The location held capture records, but none was a completion or chat request."""


_OPTIONS = (
    option(
        "capture",
        metavar="CAPTURE",
        nargs="?",
        help="s3://bucket/prefix (any prefix of the layout) or a directory; or give --from-logs",
    ),
    group(
        "the request log (capture.method: request_log)",
        option(
            "--from-logs",
            metavar="LOG_GROUP",
            help="read the container's peagle_request lines from this CloudWatch Logs group instead of CAPTURE: "
            "/aws/sagemaker/Endpoints/<endpoint> (an inference component's: /aws/sagemaker/InferenceComponents/<name>)",
        ),
        exclusive(
            option(
                "--start",
                metavar="ISO",
                help="with --from-logs: from this time, ISO 8601 (UTC unless an offset is given)",
            ),
            option("--days", type=positive_days, metavar="N", help="with --from-logs: the last N days"),
        ),
        option("--end", metavar="ISO", help="with --from-logs and --start: until this time (default: now)"),
    ),
    option("--out", type=Path, required=True, help="prompts file to write (JSON Lines)"),
    option(
        "--drop-field",
        action="append",
        default=[],
        metavar="FIELD",
        help="remove this key from every request kept, e.g. seed or stop (repeatable); temperature and top_p "
        "for `peagle tune`, whose --temperatures decide them",
    ),
    option(
        "--hash-field",
        action="append",
        default=[],
        metavar="FIELD",
        help="replace this key's value by a SHA-256 hex, salted with a random per-run salt that is not kept "
        "(repeatable): equal values stay equal within the file, and a key otherwise not kept (e.g. user) is kept "
        "hashed. For messages, each message's content is hashed and its role kept; a hashed prompt no longer has "
        "the original's length, so measure with unhashed prompts",
    ),
    option("--limit", type=int, metavar="N", help="stop after N prompts (in key order: the earliest hours first)"),
    option("--region", help="AWS region of the bucket or log group (default: the environment's)"),
    option(
        "--tokenizer",
        metavar="PATH",
        help="a local tokenizer (a model folder with tokenizer files) to count input tokens with; needs "
        "transformers (`make serving-deps`)",
    ),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers,
        "prompts",
        run_prompts,
        _OPTIONS,
        help="turn an endpoint's Data Capture records (or its request log) into a prompts file for bench, tune and "
        "capacity",
        description="Read SageMaker Data Capture files ({endpoint}/{variant}/yyyy/mm/dd/hh/*.jsonl) under CAPTURE, "
        "an s3:// prefix or a local directory copied from one, or, with --from-logs, the container's request log "
        "(capture.method: request_log) in the endpoint's CloudWatch Logs group; decode each captured request (JSON "
        "or BASE64), keep its prompt or messages and sampling parameters, drop duplicates, and write --out plus a "
        "summary (<out stem>.summary.json: kept/dropped by reason, input lengths, max_tokens, sampling seen, output "
        "tokens when responses were captured). Records it cannot use (CSV, not JSON, not a completion or chat body) "
        "are counted by reason. Exit 0 ok, 2 bad arguments or no usable record, 3 S3 or CloudWatch Logs could not "
        "be read (AWS credentials/access).",
    )


def run_prompts(args: argparse.Namespace) -> int:
    from peagle.aws import AwsCallError
    from peagle.cli_errors import run_reporting_errors
    from peagle.settings.errors import PeagleError

    return run_reporting_errors(
        _prompts,
        args,
        [(AwsCallError, ExitCode.AWS), ((PeagleError, NoUsablePrompts, ValueError), ExitCode.BAD_INPUT)],
    )


def summary_path(out: Path) -> Path:
    """prompts.jsonl -> prompts.summary.json, beside it."""
    return out.with_name(out.stem + SUMMARY_SUFFIX)


def _prompts(args: argparse.Namespace) -> int:
    from peagle.prompts_capture.convert import convert, hash_kept_fields, summarise
    from peagle.prompts_capture.token_counts import input_token_counts

    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit {args.limit}: at least 1 prompt")
    both = sorted(set(args.drop_field) & set(args.hash_field))
    if both:
        raise ValueError(f"{', '.join(both)}: given to both --drop-field and --hash-field; give each field to one")
    where, records = _source(args, keep_extra=hash_kept_fields(args.hash_field))
    conversion = convert(
        records,
        drop_fields=tuple(args.drop_field),
        hash_fields=tuple(args.hash_field),
        limit=args.limit,
    )
    if not conversion.bodies:
        reasons = "; ".join(f"{count} {reason}" for reason, count in conversion.skipped.most_common())
        raise NoUsablePrompts(
            f"no usable request in {where}: {conversion.records} record(s) from {len(conversion.files)} "
            f"{'log stream' if args.from_logs else 'file'}(s), none a JSON completion or chat body "
            f"({reasons or 'no records'}). " + (_NO_LOGGED_REQUEST if args.from_logs else _NO_CAPTURED_REQUEST)
        )
    token_counts = input_token_counts(args.tokenizer, conversion.bodies) if args.tokenizer else None
    summary = summarise(conversion, token_counts=token_counts)
    if args.from_logs:
        summary["log_streams"] = summary.pop("capture_files")
    summary["source"] = "request_log" if args.from_logs else "data_capture"
    summary["capture"] = where
    summary["prompts_file"] = str(args.out)
    summary["drop_fields"], summary["hash_fields"] = list(args.drop_field), list(args.hash_field)
    summary["tokenizer"] = args.tokenizer
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        "".join(json.dumps(body, ensure_ascii=False) + "\n" for body in conversion.bodies), encoding="utf-8"
    )
    summary_path(args.out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    _print_summary(summary, args.out)
    return ExitCode.OK


_NO_CAPTURED_REQUEST = (
    "peagle prompts reads OpenAI-style bodies with prompt or messages, captured as JSON or BASE64: make the "
    "endpoint capture application/json requests (DataCaptureConfig.CaptureContentTypeHeader.JsonContentTypes, or "
    "the default BASE64), and give the prefix of this endpoint's capture"
)
_NO_LOGGED_REQUEST = (
    "The request log is written by the container when the deployment has capture.method: request_log (the "
    "container's PEAGLE_REQUEST_LOG_SAMPLING_PERCENT > 0): check the log group's name, --region, and a window in "
    "which the endpoint served completion or chat requests with it on"
)


def _source(args: argparse.Namespace, *, keep_extra: tuple[str, ...]):
    """(where the records come from, in words; the records), from CAPTURE or --from-logs."""
    if (args.capture is None) == (args.from_logs is None):
        raise ValueError(
            "give either CAPTURE (an s3:// prefix or a directory of Data Capture files) or --from-logs LOG_GROUP "
            "(the container's request log), not both or neither"
        )
    if args.from_logs is None:
        from peagle.prompts_capture.convert import capture_records
        from peagle.prompts_capture.source import capture_lines

        if args.start or args.end or args.days:
            raise ValueError("--start, --end and --days go with --from-logs; CAPTURE is read whole")
        return args.capture, capture_records(capture_lines(args.capture, region=args.region), keep_extra=keep_extra)
    from peagle.prompts_capture.request_log import log_events, log_records

    start, end = _log_window(args)
    where = f"log group {args.from_logs} from {utc_text(start)} to {utc_text(end)}"
    events = log_events(args.from_logs, start=start, end=end, region=args.region)
    return where, log_records(events, keep_extra=keep_extra)


def _log_window(args: argparse.Namespace) -> tuple[datetime, datetime]:
    from peagle.traffic.window import parse_time

    now = _utc_now()
    if args.days is not None:
        if args.end is not None:
            raise ValueError("--end goes with --start; --days N always ends now")
        return now - timedelta(days=args.days), now
    if args.start is None:
        raise ValueError("--from-logs needs a window: --start ISO [--end ISO], or --days N")
    start = parse_time(args.start, flag="--start")
    end = parse_time(args.end, flag="--end") if args.end is not None else now
    if end <= start:
        raise ValueError(f"--end {utc_text(end)} is not after --start {utc_text(start)}; give an end after the start")
    return start, end


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _spread_text(spread: dict | None, unit: str) -> str:
    if not spread:
        return "none"
    return (
        f"p50 {spread['p50']:g}, p90 {spread['p90']:g}, p99 {spread['p99']:g}, max {spread['max']:g} {unit} "
        f"({spread['count']} prompts)"
    )


def _print_summary(summary: dict, out: Path) -> None:
    dropped = ", ".join(f"{count} {reason}" for reason, count in summary["dropped"].items() if count) or "none"
    kinds = summary["kept_by_kind"]
    sources = (
        f"{summary['log_streams']} log stream(s)"
        if "log_streams" in summary
        else f"{summary['capture_files']} capture file(s)"
    )
    print(
        f"prompts: {summary['kept']} kept ({kinds['chat']} chat, {kinds['completion']} completion) of "
        f"{summary['records_read']} records in {sources}"
        + (" (stopped at --limit)" if summary["stopped_at_limit"] else "")
    )
    print(f"  dropped: {dropped}")
    print(f"  input characters: {_spread_text(summary['input_characters'], 'chars')}")
    if summary["input_tokens"]:
        print(f"  input tokens: {_spread_text(summary['input_tokens'], 'tokens')}")
    max_tokens = summary["max_tokens"]
    print(
        f"  max_tokens: {_spread_text(max_tokens['spread'], 'tokens')}"
        + (f"; not set on {max_tokens['not_set']}" if max_tokens["not_set"] else "")
    )
    output = summary["output_tokens_captured"]
    print(
        f"  output tokens (captured responses' usage): {_spread_text(output, 'tokens')}"
        if output
        else "  output tokens: no captured response carried usage; a measurement's output lengths come from "
        "max_tokens only"
    )
    for name in ("temperature", "top_p"):
        values = ", ".join(f"{value} x{count}" for value, count in summary["sampling"][name].items())
        print(f"  {name}: {values}")
    if summary["fields_not_kept"]:
        print("  fields not kept: " + ", ".join(f"{k} ({n})" for k, n in summary["fields_not_kept"].items()))
    print(f"written: {out}, {summary_path(out)}")
    print(
        f"use: peagle capacity ... --prompts-file {out}; peagle tune ... --prompts-file {out} (without "
        "temperature/top_p: --drop-field); peagle bench ... --buckets none --prompts-file " + str(out),
        file=sys.stderr,
    )
