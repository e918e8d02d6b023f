"""One SageMaker Data Capture record to the request body a prompts file keeps, or the reason it cannot.

The record format is SageMaker's, from "Capture data from real-time endpoint", section "View Captured
Data" (https://docs.aws.amazon.com/sagemaker/latest/dg/model-monitor-data-capture-endpoint.html):
"This will return a SageMaker specific JSON-line formatted file", one record per line, e.g.
``{"captureData":{"endpointInput":{"observedContentType":"text/csv","mode":"INPUT","data":"...",
"encoding":"CSV"},"endpointOutput":{"observedContentType":"text/csv; charset=utf-8","mode":"OUTPUT",
"data":"...","encoding":"CSV"}},"eventMetadata":{"eventId":"...","inferenceTime":"2022-02-14T17:25:49Z"},
"eventVersion":"0"}``. ``eventMetadata.inferenceId`` is there when the caller gave one: InvokeEndpoint's
InferenceId, "If you provide a value, it is added to the captured data when you enable data capture on
the endpoint" (SageMaker Runtime API reference, InvokeEndpoint).

``encoding`` is JSON, CSV or BASE64: DataCaptureConfig.CaptureContentTypeHeader, "If no headers are
specified SageMaker AI will by default base64 encode when capturing the data" (SageMaker API reference,
DataCaptureConfig); JsonContentTypes/CsvContentTypes list the content types "SageMaker AI will treat as
JSON"/"as CSV and capture accordingly" (CaptureContentTypeHeader). So an application/json body arrives
as JSON text, or base64 of it when the endpoint config named no JSON content types.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from peagle_serve.contract import REQUEST_MAX_TOKENS_ALIASES, REQUEST_SAMPLING_FIELDS

# What a prompts file keeps of a body besides prompt/messages: its sampling and length parameters. The list is the
# container contract's, since the container's request log keeps the same (peagle_serve/contract.py says why).
SAMPLING_FIELDS = REQUEST_SAMPLING_FIELDS
# OpenAI's chat name for max_tokens; vLLM takes both. The prompts file spells it max_tokens
# (peagle/bench/prompts.py reads that key as the request's output length).
MAX_TOKENS_ALIASES = REQUEST_MAX_TOKENS_ALIASES

# Reasons a record is not used, as the summary counts them.
MALFORMED_LINE = "malformed line (not a JSON capture record)"
NO_INPUT = "no captureData.endpointInput (output-only capture)"
CSV_INPUT = "CSV-encoded input (not a JSON request body)"
UNKNOWN_ENCODING = "unknown encoding"
BAD_BASE64 = "BASE64 data that does not decode"
NOT_JSON = "input is not JSON"
NOT_GENERATION = "not a completion or chat body (no prompt or messages)"
BATCHED_PROMPT = "prompt is not one string (batched prompts or token ids)"
BAD_MESSAGES = "messages is not a list of role/content objects"


@dataclass(frozen=True)
class Decoded:
    """What one record gave: a body to keep, or the reason it is not used."""

    body: dict[str, Any] | None = None
    reason: str | None = None
    output_tokens: int | None = None  # from the captured response's usage, when there is one
    dropped_fields: tuple[str, ...] = ()  # body keys not kept (neither prompt/messages nor sampling)
    endpoint_input_type: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def decode_line(line: str, *, keep_extra: tuple[str, ...] = ()) -> Decoded:
    """One JSON line of a capture file. ``keep_extra``: body keys kept beyond SAMPLING_FIELDS
    (the ones --hash-field names, which are kept hashed)."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return Decoded(reason=MALFORMED_LINE)
    if not isinstance(record, dict) or not isinstance(record.get("captureData"), dict):
        return Decoded(reason=MALFORMED_LINE)
    capture = record["captureData"]
    metadata: dict[str, Any] = record["eventMetadata"] if isinstance(record.get("eventMetadata"), dict) else {}
    endpoint_input = capture.get("endpointInput")
    if not isinstance(endpoint_input, dict):
        return Decoded(reason=NO_INPUT, metadata=metadata)
    payload, reason = _payload(endpoint_input)
    if reason is not None:
        return Decoded(reason=reason, metadata=metadata)
    body, reason, dropped = request_body(payload, keep_extra=keep_extra)
    if reason is not None:
        return Decoded(reason=reason, metadata=metadata)
    output = capture.get("endpointOutput")
    return Decoded(
        body=body,
        output_tokens=_output_tokens(output) if isinstance(output, dict) else None,
        dropped_fields=dropped,
        endpoint_input_type=endpoint_input.get("observedContentType"),
        metadata=metadata,
    )


def _payload(captured: dict[str, Any]) -> tuple[Any, str | None]:
    """The JSON value a captured input or output holds, or why there is none."""
    encoding = str(captured.get("encoding", "")).upper()
    data = captured.get("data")
    if not isinstance(data, str):
        return None, NOT_JSON
    if encoding == "CSV":
        return None, CSV_INPUT
    if encoding == "BASE64":
        try:
            data = base64.b64decode(data, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None, BAD_BASE64
    elif encoding != "JSON":
        return None, f"{UNKNOWN_ENCODING} {encoding or '(none)'}"
    try:
        return json.loads(data), None
    except json.JSONDecodeError:
        return data, NOT_JSON


def request_body(payload: Any, *, keep_extra: tuple[str, ...] = ()) -> tuple[dict | None, str | None, tuple]:
    """(kept body, None, keys dropped) for an OpenAI completion or chat body; (None, reason, ()) otherwise."""
    if not isinstance(payload, dict) or ("prompt" in payload) == ("messages" in payload):
        return None, NOT_GENERATION, ()
    if "prompt" in payload and not isinstance(payload["prompt"], str):
        return None, BATCHED_PROMPT, ()
    if "messages" in payload and not _is_messages(payload["messages"]):
        return None, BAD_MESSAGES, ()
    body: dict[str, Any] = {key: payload[key] for key in ("prompt", "messages") if key in payload}
    for name in SAMPLING_FIELDS + keep_extra:
        if name in payload and payload[name] is not None:
            body[name] = payload[name]
    for alias in MAX_TOKENS_ALIASES:
        if "max_tokens" not in body and payload.get(alias) is not None:
            body["max_tokens"] = payload[alias]
    kept = {"prompt", "messages", *SAMPLING_FIELDS, *keep_extra, *MAX_TOKENS_ALIASES}
    return body, None, tuple(sorted(key for key in payload if key not in kept))


def _is_messages(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(message, dict) and "role" in message for message in value)
    )


def _output_tokens(captured: dict[str, Any]) -> int | None:
    """``usage.completion_tokens`` of a captured response: a JSON body, or an SSE stream whose last
    usage-bearing ``data:`` event carries it (vLLM sends usage in a final chunk when the request asked
    for ``stream_options.include_usage``)."""
    encoding = str(captured.get("encoding", "")).upper()
    data = captured.get("data")
    if not isinstance(data, str) or encoding == "CSV":
        return None
    if encoding == "BASE64":
        try:
            data = base64.b64decode(data, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
    try:
        return _completion_tokens(json.loads(data))
    except json.JSONDecodeError:
        pass
    found = None
    for line in data.splitlines():
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
            try:
                found = _completion_tokens(json.loads(line[5:])) or found
            except json.JSONDecodeError:
                continue
    return found


def _completion_tokens(value: Any) -> int | None:
    usage = value.get("usage") if isinstance(value, dict) else None
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None
