"""The batch record protocol, and its local check.

One JSON object per line of a JSONL file. A Batch Transform job (SplitType Line,
BatchStrategy SingleRecord) POSTs each line, unchanged, as the body of one
``/invocations`` request: the same body `peagle invoke` sends, so ``prompt``
makes a completion and ``messages`` a chat request, with any vLLM sampling field
beside it (``max_tokens``, ``temperature``, ``seed`` ...). Each answer (vLLM's JSON
response, one line) is joined to its input record under ``SageMakerOutput``
(DataProcessing JoinSource Input), so output line N belongs to input line N.

What cannot work is rejected here, before anything is uploaded or paid for, with
every bad line's number at once: lines that are not JSON objects, records with
neither (or both) ``prompt`` and ``messages``, ``"stream": true`` (server-sent
events span many lines, which breaks the one-line-per-record output), and lines
larger than MaxPayloadInMB.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from peagle.settings.errors import PeagleError

DEFAULT_MAX_PAYLOAD_MB = 6  # SageMaker's default, and its InvokeEndpoint body limit
MAX_PAYLOAD_TIMES_CONCURRENCY_MB = 100  # MaxPayloadInMB x MaxConcurrentTransforms <= 100
MB = 1024 * 1024
JOINED_OUTPUT_KEY = "SageMakerOutput"  # where SageMaker's JoinSource=Input puts the answer
ERROR_KEY = "error"  # the local run's failed-record field (SageMaker fails the job instead)
MAX_PROBLEMS_SHOWN = 50


@dataclass(frozen=True)
class BadLine:
    line_number: int  # 1-based, as editors show it
    problem: str


class RecordsError(PeagleError):
    """Some lines cannot be sent as records; lists all of them (up to MAX_PROBLEMS_SHOWN)."""

    def __init__(self, source: str, bad_lines: list[BadLine]):
        self.bad_lines = bad_lines
        shown = [f"  line {bad.line_number}: {bad.problem}" for bad in bad_lines[:MAX_PROBLEMS_SHOWN]]
        if len(bad_lines) > MAX_PROBLEMS_SHOWN:
            shown.append(f"  ... and {len(bad_lines) - MAX_PROBLEMS_SHOWN} more")
        super().__init__(
            f"{source}: {len(bad_lines)} line(s) are not valid batch records (one JSON object per line with "
            "'prompt' or 'messages'):\n" + "\n".join(shown)
        )


def split_records(data: bytes) -> list[bytes]:
    """Lines as SageMaker's SplitType Line sees them; a final newline does not start a record."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def record_problem(line: bytes, *, max_payload_mb: int = DEFAULT_MAX_PAYLOAD_MB) -> str | None:
    if not line.strip():
        return "empty line (SageMaker would send an empty body); remove it"
    if max_payload_mb and len(line) > max_payload_mb * MB:
        return f"{len(line) / MB:.1f} MB is over MaxPayloadInMB {max_payload_mb}; shorten the record or raise --max-payload-mb"
    try:
        record = json.loads(line)
    except UnicodeDecodeError:
        return "not UTF-8 text"
    except json.JSONDecodeError as error:
        return f"not JSON ({error.msg} at column {error.colno})"
    if not isinstance(record, dict):
        return f'a JSON {type(record).__name__}, expected an object like {{"prompt": "..."}}'
    has_prompt, has_messages = "prompt" in record, "messages" in record
    if has_prompt == has_messages:
        return (
            "has both 'prompt' and 'messages'; keep one"
            if has_prompt
            else f"needs 'prompt' (completion) or 'messages' (chat); keys: {', '.join(sorted(record)) or 'none'}"
        )
    if has_prompt and not (isinstance(record["prompt"], str) or _is_token_list(record["prompt"])):
        return "'prompt' must be a string (or a list of token ids)"
    if has_messages and not _is_messages(record["messages"]):
        return "'messages' must be a non-empty list of objects with a 'role'"
    if record.get("stream") is True:
        return "'stream': true returns server-sent events over many lines; remove it (batch answers are one JSON line)"
    if JOINED_OUTPUT_KEY in record:
        return f"has a '{JOINED_OUTPUT_KEY}' key, which the joined output would overwrite; rename it"
    return None


def _is_token_list(value: object) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, int) and not isinstance(item, bool) for item in value)
    )


def _is_messages(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) and "role" in item for item in value)


def find_bad_lines(lines: Iterable[bytes], *, max_payload_mb: int = DEFAULT_MAX_PAYLOAD_MB) -> list[BadLine]:
    bad = []
    for number, line in enumerate(lines, start=1):
        problem = record_problem(line, max_payload_mb=max_payload_mb)
        if problem:
            bad.append(BadLine(number, problem))
    return bad


def read_records(path: Path, *, validate: bool = True, max_payload_mb: int = DEFAULT_MAX_PAYLOAD_MB) -> list[bytes]:
    """The file's records; with ``validate``, raise RecordsError listing every bad line."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise PeagleError(f"cannot read {path}: {error.strerror}") from None
    lines = split_records(data)
    if not lines:
        raise PeagleError(f"{path} has no records; write one JSON object per line")
    if validate:
        bad = find_bad_lines(lines, max_payload_mb=max_payload_mb)
        if bad:
            raise RecordsError(str(path), bad)
    return lines


def with_default_max_tokens(records: list[bytes], max_tokens: int) -> list[bytes]:
    """Records without ``max_tokens`` get the profile's: the server applies no default
    length (a server-side one would cap every request in vLLM 0.32), and an unbounded
    record would generate until max_model_len."""
    filled = []
    for line in records:
        try:
            record = json.loads(line)
        except ValueError:
            filled.append(line)  # reported by validation (or sent as is with --no-validate)
            continue
        if isinstance(record, dict) and "max_tokens" not in record and "max_completion_tokens" not in record:
            record["max_tokens"] = max_tokens
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
        filled.append(line)
    return filled


def joined_output(line: bytes, answer: object) -> dict:
    """What a JoinSource=Input job writes for a record: the input object plus ``SageMakerOutput``
    (a non-object input goes under ``SageMakerInput``, as SageMaker does)."""
    record = _parsed_or_text(line)
    if isinstance(record, dict):
        return {**record, JOINED_OUTPUT_KEY: answer}
    return {"SageMakerInput": record, JOINED_OUTPUT_KEY: answer}


def failed_output(line: bytes, status: int | None, message: str) -> dict:
    record = _parsed_or_text(line)
    error = {"status": status, "message": message}
    if isinstance(record, dict):
        return {**record, ERROR_KEY: error}
    return {"SageMakerInput": record, ERROR_KEY: error}


def _parsed_or_text(line: bytes) -> object:
    try:
        return json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return line.decode("utf-8", errors="replace")
