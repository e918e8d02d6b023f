"""The container's request log read back: its ``peagle_request`` lines from the endpoint's CloudWatch Logs group,
put back together per request and decoded like a Data Capture record (the same kept fields and reasons).

The lines' rules are the container contract's (peagle_serve/contract.py; the writer is
peagle_serve/request_log.py): a request's kept body is cut into ``parts`` lines sharing an ``id``, written one
after the other by one process, so they are joined per log stream and id. A request whose lines did not all
arrive in the window (it straddles --start or --end, or a line was lost or cut on its way) is counted, not guessed.

CloudWatch Logs (Amazon CloudWatch Logs API Reference, FilterLogEvents; botocore 1.44.5 logs model): "You must have
the logs:FilterLogEvents permission to perform this operation"; "FilterLogEvents is a paginated operation ...
Partially full or empty pages don't necessarily mean that pagination is finished. If the results include a
nextToken, there might be more log events available" (the paginator passes each nextToken on); startTime and
endTime are "the number of milliseconds after Jan 1, 1970 00:00:00 UTC", events before startTime or "later than"
endTime are not returned. The filter pattern keeps the transfer to the request lines: a JSON pattern,
``{ $.eventType = "UpdateTrail" }`` "Filter on the event type being UpdateTrail" (CloudWatch Logs User Guide,
"Filter pattern syntax", https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/FilterAndPatternSyntax.html),
the form of the KPI metric filters' own pattern (peagle_cdk/kpi_metrics.py). Reading a log group encrypted with a
KMS key: "CloudWatch Logs decrypts this data whenever it is requested", and AWS asks that the roles which call
CloudWatch Logs be allowed kms:Decrypt on the key with the condition kms:ViaService logs.<region>.amazonaws.com
(CloudWatch Logs User Guide, "Encrypt log data in CloudWatch Logs using AWS Key Management Service",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from peagle.prompts_capture.convert import SourcedRecord
from peagle.prompts_capture.records import Decoded, request_body
from peagle_serve.contract import REQUEST_LOG_EVENT, REQUEST_LOG_TOO_LARGE

LOG_FILTER_PATTERN = f'{{ $.event = "{REQUEST_LOG_EVENT}" }}'

# Reasons a logged request is not used, as the summary counts them (beside records.py's).
MALFORMED_LOG_LINE = "malformed request log line (the marker, but not a line of the container contract)"
INCOMPLETE = "request log lines missing (the request straddles the window's start or end, or a line was lost)"
TOO_LARGE = "request over the container's PEAGLE_REQUEST_LOG_MAX_BODY_BYTES (logged by size only)"


@dataclass(frozen=True)
class LogEvent:
    stream: str
    message: str


def logs_client(region: str | None) -> Any:
    """The CloudWatch Logs client the lines are read with (tests put a stubbed one in its place)."""
    from peagle.aws import aws_client, aws_session

    return aws_client(aws_session(region), "logs")


def read_permission(log_group: str) -> str:
    return (
        f"logs:FilterLogEvents on the log group {log_group} (arn:aws:logs:<region>:<account>:log-group:{log_group}), "
        "and kms:Decrypt on its KMS key with kms:ViaService logs.<region>.amazonaws.com"
    )


def log_events(log_group: str, *, start: datetime, end: datetime, region: str | None) -> Iterator[LogEvent]:
    """Every request log line of ``log_group`` between ``start`` and ``end``, page after page, oldest first."""
    from peagle.aws import aws_call

    with aws_call(f"reading {log_group} (CloudWatch Logs FilterLogEvents)", permission=read_permission(log_group)):
        pages = (
            logs_client(region)
            .get_paginator("filter_log_events")
            .paginate(
                logGroupName=log_group,
                startTime=_milliseconds(start),
                endTime=_milliseconds(end),
                filterPattern=LOG_FILTER_PATTERN,
            )
        )
        for page in pages:
            for event in page.get("events", []):
                yield LogEvent(str(event.get("logStreamName", "")), str(event.get("message", "")))


def _milliseconds(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def log_records(events: Iterable[LogEvent], *, keep_extra: tuple[str, ...] = ()) -> Iterator[SourcedRecord]:
    """One record per logged request (its lines joined), in the order its last line arrived; requests whose
    lines did not all arrive come last, each counted as INCOMPLETE."""
    pending: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for event in events:
        line = _line(event.message)
        if line is None:
            yield SourcedRecord(event.stream, None, Decoded(reason=MALFORMED_LOG_LINE))
            continue
        parts = pending.setdefault((event.stream, line["id"]), {})
        parts[line["part"]] = line
        if len(parts) == line["parts"]:
            del pending[(event.stream, line["id"])]
            yield _record(event.stream, [parts[number] for number in sorted(parts)], keep_extra)
    for (stream, _), parts in pending.items():
        first = parts[min(parts)]
        yield SourcedRecord(stream, _unit(first), Decoded(reason=INCOMPLETE))


def _line(message: str) -> dict[str, Any] | None:
    """A parsed line of the contract, or None (not JSON, not the marker, or a part number out of range)."""
    try:
        line = json.loads(message)
    except json.JSONDecodeError:
        return None
    if not isinstance(line, dict) or line.get("event") != REQUEST_LOG_EVENT:
        return None
    part, parts = line.get("part"), line.get("parts")
    if not (
        isinstance(line.get("id"), str) and isinstance(part, int) and isinstance(parts, int) and 1 <= part <= parts
    ):
        return None
    if line.get("body") is not None and not isinstance(line.get("body"), str):
        return None
    return line


def _unit(line: dict[str, Any]) -> str | None:
    endpoint, variant = line.get("endpoint_name"), line.get("variant_name")
    return f"{endpoint}/{variant}" if isinstance(endpoint, str) and isinstance(variant, str) else None


def _record(stream: str, lines: list[dict[str, Any]], keep_extra: tuple[str, ...]) -> SourcedRecord:
    first = lines[0]
    metadata = {"inferenceTime": first["time"]} if isinstance(first.get("time"), str) else {}
    if first.get("skipped") == REQUEST_LOG_TOO_LARGE:
        return SourcedRecord(stream, _unit(first), Decoded(reason=TOO_LARGE, metadata=metadata))
    if any(line.get("body") is None for line in lines):
        return SourcedRecord(stream, _unit(first), Decoded(reason=MALFORMED_LOG_LINE, metadata=metadata))
    try:
        payload = json.loads("".join(line["body"] for line in lines))
    except json.JSONDecodeError:
        return SourcedRecord(stream, _unit(first), Decoded(reason=MALFORMED_LOG_LINE, metadata=metadata))
    body, reason, dropped = request_body(payload, keep_extra=keep_extra)
    if reason is not None:
        return SourcedRecord(stream, _unit(first), Decoded(reason=reason, metadata=metadata))
    not_kept = [str(name) for name in first.get("not_kept") or [] if isinstance(name, str)]
    return SourcedRecord(
        stream,
        _unit(first),
        Decoded(body=body, dropped_fields=tuple(sorted({*dropped, *not_kept})), metadata=metadata),
    )
