"""Captured requests to prompts (Data Capture lines, or the container's request log): decode, drop or hash
fields, drop duplicates, count what was not used, and summarise what matters for measuring (input lengths,
max_tokens, sampling, output tokens). Both sources go through the same ``convert``, so the privacy controls
(--drop-field, --hash-field) and the summary are the same for both.

Hashing is salted with a random salt drawn once per run and never written: equal values stay
equal within one prompts file (duplicates and per-user counts survive), but a hash cannot be
matched against a list of guessed values (short ids, e-mail addresses) or against another run's.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from peagle.prompts_capture.records import SAMPLING_FIELDS, Decoded, decode_line
from peagle.prompts_capture.source import CaptureFile

SUMMARY_SCHEMA = "peagle-prompts-summary/1"


@dataclass
class Conversion:
    """What a run kept and what it did not use, and why."""

    bodies: list[dict[str, Any]] = field(default_factory=list)
    output_tokens: list[int] = field(default_factory=list)  # of kept prompts whose response was captured
    records: int = 0
    files: set[str] = field(default_factory=set)
    skipped: Counter = field(default_factory=Counter)  # reason -> records
    duplicates: int = 0
    fields_not_kept: Counter = field(default_factory=Counter)  # body key -> records it was dropped from
    endpoints: Counter = field(default_factory=Counter)  # "{endpoint}/{variant}" from the key layout
    inference_times: list[str] = field(default_factory=list)
    limited: bool = False


@dataclass(frozen=True)
class SourcedRecord:
    """One request as a source gave it: decoded, with where it came from."""

    where: str  # the capture file (s3://... or a path) or the log stream, for the summary's count
    unit: str | None  # "{endpoint}/{variant}", when the source says
    decoded: Decoded


def hash_kept_fields(hash_fields: Sequence[str]) -> tuple[str, ...]:
    """The --hash-field keys a decoder keeps beyond the sampling fields (they are hashed afterwards)."""
    return tuple(name for name in hash_fields if name not in SAMPLING_FIELDS)


def capture_records(
    lines: Iterable[tuple[CaptureFile, str]], *, keep_extra: tuple[str, ...]
) -> Iterator[SourcedRecord]:
    """Data Capture lines as records; the unit is the key layout's {endpoint}/{variant}."""
    for capture, line in lines:
        parts = capture.relative.split("/")
        unit = "/".join(parts[:2]) if len(parts) >= 3 else None
        yield SourcedRecord(capture.where, unit, decode_line(line, keep_extra=keep_extra))


def convert(
    records: Iterable[SourcedRecord],
    *,
    drop_fields: Sequence[str] = (),
    hash_fields: Sequence[str] = (),
    limit: int | None = None,
    salt: bytes | None = None,
) -> Conversion:
    """Records from any source (capture_records, or the request log's) to the prompts kept, with every record not
    kept counted by its reason. ``hash_fields`` must be the ones the records were decoded to keep
    (hash_kept_fields)."""
    salt = secrets.token_bytes(16) if salt is None else salt
    result = Conversion()
    seen: set[str] = set()
    for record in records:
        if limit is not None and len(result.bodies) >= limit:
            result.limited = True
            break
        result.records += 1
        result.files.add(record.where)
        decoded = record.decoded
        if decoded.body is None:
            result.skipped[decoded.reason] += 1
            continue
        result.fields_not_kept.update(decoded.dropped_fields)
        body = {key: value for key, value in decoded.body.items() if key not in drop_fields}
        for name in hash_fields:
            if name in body:
                body[name] = _hashed(name, body[name], salt)
        key = json.dumps(body, sort_keys=True, ensure_ascii=False)
        if key in seen:
            result.duplicates += 1
            continue
        seen.add(key)
        result.bodies.append(body)
        if decoded.output_tokens is not None:
            result.output_tokens.append(decoded.output_tokens)
        if record.unit:
            result.endpoints[record.unit] += 1
        if isinstance(decoded.metadata.get("inferenceTime"), str):
            result.inference_times.append(decoded.metadata["inferenceTime"])
    return result


def _hashed(name: str, value: Any, salt: bytes) -> Any:
    """SHA-256 hex of the salted value; for ``messages``, of each message's content (roles kept, so
    the file stays a chat prompt)."""

    def digest(item: Any) -> str:
        text = item if isinstance(item, str) else json.dumps(item, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(salt + text.encode("utf-8")).hexdigest()

    if name == "messages" and isinstance(value, list):
        return [{**message, "content": digest(message.get("content"))} for message in value]
    return digest(value)


def input_text(body: dict[str, Any]) -> str:
    """The text a body sends: the prompt, or the messages' text contents joined."""
    if "prompt" in body:
        return str(body["prompt"])
    parts = []
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):  # OpenAI content parts: keep the text ones
            parts += [str(part.get("text", "")) for part in content if isinstance(part, dict)]
    return "\n".join(parts)


def summarise(conversion: Conversion, *, token_counts: Sequence[int] | None = None) -> dict[str, Any]:
    """The distributions that matter for measuring with these prompts, as the summary JSON holds them."""
    bodies = conversion.bodies
    chat = sum("messages" in body for body in bodies)
    max_tokens = [body["max_tokens"] for body in bodies if isinstance(body.get("max_tokens"), int)]
    summary: dict[str, Any] = {
        "schema": SUMMARY_SCHEMA,
        "records_read": conversion.records,
        "capture_files": len(conversion.files),
        "kept": len(bodies),
        "kept_by_kind": {"chat": chat, "completion": len(bodies) - chat},
        "dropped": {
            "duplicate": conversion.duplicates,
            **{reason: count for reason, count in conversion.skipped.most_common()},
        },
        "stopped_at_limit": conversion.limited,
        "endpoints_variants": dict(conversion.endpoints.most_common()),
        "inference_time": (
            {"first": min(conversion.inference_times), "last": max(conversion.inference_times)}
            if conversion.inference_times
            else None
        ),
        "input_characters": _spread([len(input_text(body)) for body in bodies]),
        "input_tokens": _spread(list(token_counts)) if token_counts is not None else None,
        "max_tokens": {
            "spread": _spread(max_tokens),
            "not_set": len(bodies) - len(max_tokens),
        },
        "output_tokens_captured": _spread(conversion.output_tokens),
        "sampling": {
            name: _values(bodies, name) for name in ("temperature", "top_p", "top_k", "min_p", "seed", "stop")
        },
        "fields_not_kept": dict(conversion.fields_not_kept.most_common()),
    }
    return summary


def _spread(values: Sequence[float]) -> dict[str, float] | None:
    from peagle.bench.stats import percentile

    if not values:
        return None
    ordered = sorted(values)
    return {
        "count": len(ordered),
        "min": ordered[0],
        "p50": round(percentile(ordered, 0.5), 1),
        "p90": round(percentile(ordered, 0.9), 1),
        "p99": round(percentile(ordered, 0.99), 1),
        "max": ordered[-1],
        "mean": round(sum(ordered) / len(ordered), 2),
        # The population standard deviation: what a token-distribution workload (a SageMaker AI benchmark job's
        # prompt_input_tokens_stddev, `peagle capacity --sagemaker-benchmark`) takes beside the mean.
        "stdev": round(statistics.pstdev(ordered), 2),
    }


def _values(bodies: Sequence[dict[str, Any]], name: str) -> dict[str, int]:
    """Each value seen (JSON text) and how many prompts set it; "not set" for the rest."""
    counts = Counter(json.dumps(body[name]) if name in body else "not set" for body in bodies)
    return dict(counts.most_common())
