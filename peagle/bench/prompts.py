"""The prompts a benchmark sends: a built-in synthetic set in length buckets, plus
an optional user JSONL file.

The synthetic prompts are deterministic (same seed, same text) so two runs, e.g.
speculation on and off, see exactly the same requests. They are ordinary English
so that acceptance on a real drafter resembles chat traffic; the buckets are word
counts (about 1.3 tokens per word on BPE tokenizers, one token per character on the
local tiny pair).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Context words per bucket, before the instruction. The default buckets (short,
# medium, long) fit, with 128 output tokens, in the local tiny pair's 1024-token
# context (one token per character there). "xlong" (~1000 BPE tokens) is for real
# deployments; add real traffic with --prompts-file for anything longer.
BUCKET_WORDS: Mapping[str, int] = {"short": 16, "medium": 48, "long": 112, "xlong": 768}
DEFAULT_BUCKETS = ("short", "medium", "long")

_INSTRUCTIONS = (
    "Summarise the notes above in three sentences.",
    "List the main risks mentioned above.",
    "Write a short reply to the team based on the notes above.",
    "Explain the notes above to a new engineer.",
)

# How each answer starts. Prompts that all ended in the same cue ("Answer:") would put a
# deterministic pair (the local pairs follow a rule from the last token) on one and the same
# output path for every request, so acceptance would be measured at one point of the pair's
# behaviour; the openings end in different characters, so requests start in different places.
_OPENINGS = ("The", "In short", "Key points", "Overall", "Hi team", "Briefly", "First", "To summarise")

_SENTENCES = (
    "The service answers customer questions about orders, refunds and delivery times.",
    "Latency matters most during the evening peak, when traffic doubles within an hour.",
    "The team moved the model to a larger instance last month to cut response time.",
    "Each request carries a short history of the conversation and a system prompt.",
    "Operators watch the error rate and the time to the first token on a dashboard.",
    "A cache of frequent answers was tried and removed because it served stale data.",
    "Nightly jobs summarise support tickets and write the results to a data lake.",
    "The budget review asked for the cost of one million generated tokens per month.",
    "Code suggestions must appear while the developer is still typing the line.",
    "Scaling out takes several minutes because each new instance loads the weights.",
    "Some prompts include long documents such as contracts and product manuals.",
    "The drafter model proposes several tokens that the target model then verifies.",
)


@dataclass(frozen=True)
class PromptCase:
    """One benchmark request's content. ``max_tokens`` overrides the run's default."""

    name: str
    bucket: str
    prompt: str | None = None
    messages: Sequence[Mapping[str, Any]] | None = None
    max_tokens: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def synthetic_prompts(buckets: Sequence[str], *, per_bucket: int = 4, seed: int = 0) -> list[PromptCase]:
    """``per_bucket`` completion prompts for each bucket, interleaved across buckets."""
    unknown = [bucket for bucket in buckets if bucket not in BUCKET_WORDS]
    if unknown:
        raise ValueError(f"unknown prompt bucket(s) {unknown}; valid: {', '.join(BUCKET_WORDS)}")
    rng = random.Random(seed)
    by_bucket = [[_synthetic_case(bucket, index, rng) for index in range(per_bucket)] for bucket in buckets]
    # Interleave so that any prefix of the set (a short run) still mixes lengths.
    return [case for group in zip(*by_bucket, strict=False) for case in group]


def _synthetic_case(bucket: str, index: int, rng: random.Random) -> PromptCase:
    words: list[str] = []
    while len(words) < BUCKET_WORDS[bucket]:
        words.extend(rng.choice(_SENTENCES).split())
    notes = " ".join(words[: BUCKET_WORDS[bucket]])
    instruction = _INSTRUCTIONS[index % len(_INSTRUCTIONS)]
    prompt = f"Notes: {notes}\n\n{instruction}\nAnswer: {rng.choice(_OPENINGS)}"
    return PromptCase(name=f"{bucket}-{index}", bucket=bucket, prompt=prompt)


def load_prompt_file(path: Path) -> list[PromptCase]:
    """Read a JSONL file: one object per line with ``prompt`` or ``messages``; optional
    ``max_tokens``, ``bucket`` (default "file") and ``name``; other keys go to the body."""
    cases = []
    for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{line_number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{where}: not JSON ({error})") from error
        if not isinstance(record, dict) or ("prompt" in record) == ("messages" in record):
            raise ValueError(f'{where}: each line needs exactly one of "prompt" or "messages"')
        known = {"prompt", "messages", "max_tokens", "bucket", "name"}
        cases.append(
            PromptCase(
                name=str(record.get("name", f"{path.stem}-{line_number}")),
                bucket=str(record.get("bucket", "file")),
                prompt=record.get("prompt"),
                messages=record.get("messages"),
                max_tokens=record.get("max_tokens"),
                extra={key: value for key, value in record.items() if key not in known},
            )
        )
    if not cases:
        raise ValueError(f"{path}: no prompts in the file")
    return cases


# Keys a prompts-file line may carry that change how its request is sampled: they go into the body
# after the run's own sampling (runner.build_requests), so they override --temperature / the profile.
SAMPLING_OVERRIDES = ("temperature", "top_p", "top_k", "min_p")

SYNTHETIC_PROMPTS_NOTE = (
    "synthetic prompts: the answer depends on the prompts (their lengths, and how predictable the answers are "
    "for the drafter); measure with a production prompts file: `peagle prompts` turns the endpoint's Data "
    "Capture into one, then pass --prompts-file"
)


def describe_prompts_file(path: Path, cases: Sequence[PromptCase]) -> str:
    """ "<path> (sha256 <first 12 hex of its bytes>, N prompts)": which file, by its content; with
    "; temperature set by K" when lines carry their own sampling, which overrides the run's."""
    import hashlib

    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    overrides = "".join(f"; {name} set by {count}" for name, count in sampling_overrides(cases).items())
    return f"{path} (sha256 {digest}, {len(cases)} prompts{overrides})"


def describe_synthetic_prompts(buckets: Sequence[str], seed: int) -> str:
    return f"synthetic prompts (buckets {','.join(buckets) or 'none'}, seed {seed})"


def sampling_overrides(cases: Sequence[PromptCase]) -> dict[str, int]:
    """How many prompts set each of SAMPLING_OVERRIDES, and max_tokens, themselves (only the ones set at least
    once): a line's max_tokens wins over the run's too (runner.build_requests), so a figure must say so."""
    counts = {name: sum(name in case.extra for case in cases) for name in SAMPLING_OVERRIDES}
    counts["max_tokens"] = sum(case.max_tokens is not None for case in cases)
    return {name: count for name, count in counts.items() if count}
