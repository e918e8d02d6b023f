"""What a staged pair must contain, checked before a byte is uploaded.

The endpoint mounts one S3 prefix at /opt/ml/model and vLLM reads
``target/`` and ``drafter/`` under it (peagle_serve.contract). A checkpoint that
vLLM would reject is cheaper to catch here than after a GPU instance has spent
minutes downloading it, so:

- the target needs ``config.json`` and ``*.safetensors`` weights (every shard a
  ``*.safetensors.index.json`` names);
- the drafter needs ``config.json`` naming the parallel-drafting mask token (vLLM's
  rule, vllm/v1/spec_decode/llm_base_proposer.py; the check is the container
  contract's, ``peagle_serve.contract.mask_token_problem``, which the launcher runs too)
  unless it is a speculators-format checkpoint, which vLLM maps itself, and weights.

The checks work on a file listing (relative path -> bytes) plus the parsed
config, so a local directory and a Hub repository listing go through the same code.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from peagle.settings.errors import PeagleError
from peagle_serve.contract import mask_token_problem

# Sub-folders some repositories carry that vLLM never reads: gpt-oss ships its
# weights a second and third time under original/ and metal/ (~13 GB each for 20b).
SKIPPED_FOLDERS = ("original", "metal")
DRAFTER_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")


class CheckpointError(PeagleError):
    """The checkpoints are not what the endpoint can serve; lists every problem."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("the pair cannot be staged:\n" + "\n".join(f"  - {problem}" for problem in problems))


@dataclass(frozen=True)
class CheckpointFiles:
    """One checkpoint's files to stage: relative path (posix) -> size in bytes."""

    role: str  # "target" or "drafter"
    root: Path | None  # local directory; None for a Hub listing not yet downloaded
    files: Mapping[str, int]
    skipped: tuple[str, ...] = ()

    @property
    def total_bytes(self) -> int:
        return sum(self.files.values())


def is_staged_path(relative: str) -> bool:
    """Hidden files (``.cache/huggingface`` of a Hub download, ``.git*``) and SKIPPED_FOLDERS stay behind."""
    parts = relative.split("/")
    return not any(part.startswith(".") for part in parts) and not (len(parts) > 1 and parts[0] in SKIPPED_FOLDERS)


def list_local_checkpoint(root: Path, role: str) -> CheckpointFiles:
    files: dict[str, int] = {}
    skipped: list[str] = []
    if root.is_dir():
        for path in sorted(root.rglob("*")):
            if not path.is_file():
                continue
            relative = path.relative_to(root).as_posix()
            if is_staged_path(relative):
                files[relative] = path.stat().st_size
            else:
                skipped.append(relative)
    return CheckpointFiles(role=role, root=root, files=files, skipped=tuple(skipped))


def read_local_config(checkpoint: CheckpointFiles) -> dict | None:
    if checkpoint.root is None or "config.json" not in checkpoint.files:
        return None
    try:
        return json.loads((checkpoint.root / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def target_problems(target: CheckpointFiles, config: dict | None) -> list[str]:
    where = target.root or "the target repository"
    if not target.files:
        return [
            f"target: {where} is missing or empty; it must hold the target checkpoint (config.json + *.safetensors)"
        ]
    problems = []
    if "config.json" not in target.files:
        problems.append(f"target: no config.json in {where}")
    elif config is None:
        problems.append(f"target: {where}/config.json is not valid JSON")
    top_level = [name for name in target.files if "/" not in name]
    weights = [name for name in top_level if name.endswith(".safetensors")]
    if not weights:
        problems.append(
            f"target: no *.safetensors weights in {where} (vLLM loads safetensors; convert .bin checkpoints first)"
        )
    problems += _missing_shards(target)
    return problems


def _missing_shards(checkpoint: CheckpointFiles) -> list[str]:
    """Shards an index names but the listing lacks (an interrupted download, a partial copy)."""
    problems = []
    for index_name in (name for name in checkpoint.files if name.endswith(".safetensors.index.json")):
        if checkpoint.root is None:
            continue  # a Hub listing is complete by construction
        try:
            weight_map = json.loads((checkpoint.root / index_name).read_text(encoding="utf-8")).get("weight_map", {})
        except (OSError, json.JSONDecodeError, AttributeError):
            problems.append(f"{checkpoint.role}: {index_name} is not a valid safetensors index")
            continue
        missing = sorted(set(weight_map.values()) - set(checkpoint.files))
        if missing:
            problems.append(f"{checkpoint.role}: {index_name} names shards that are not there: {', '.join(missing)}")
    return problems


def is_speculators_config(config: Mapping) -> bool:
    """speculators-format checkpoints (e.g. RedHatAI/*.peagle) carry their own config that vLLM maps."""
    return "speculators_config" in config or "speculators_model_type" in config


def drafter_problems(drafter: CheckpointFiles, config: dict | None, *, drafter_format: str) -> list[str]:
    where = drafter.root or "the drafter repository"
    if not drafter.files:
        return [f"drafter: {where} is missing or empty; it must hold the P-EAGLE drafter (config.json + weights)"]
    problems = []
    if "config.json" not in drafter.files:
        problems.append(f"drafter: no config.json in {where}")
    elif config is None:
        problems.append(f"drafter: {where}/config.json is not valid JSON")
    elif drafter_format != "speculators" and not is_speculators_config(config):
        problem = mask_token_problem(config)  # the container contract's rule, so stage and serve agree
        if problem:
            problems.append(f"drafter: {where}/config.json {problem}")
    if not any(name.endswith(DRAFTER_WEIGHT_SUFFIXES) for name in drafter.files if "/" not in name):
        problems.append(f"drafter: no weights (*.safetensors) in {where}")
    problems += _missing_shards(drafter)
    return problems


def safetensors_tensor_names(path: Path) -> set[str]:
    """Tensor names from a safetensors header (8-byte length + JSON), without loading weights."""
    with path.open("rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        if length > 100 * 1024 * 1024:
            return set()
        header = json.loads(handle.read(length))
    return {name for name in header if name != "__metadata__"}


def drafter_warnings(drafter: CheckpointFiles, config: dict | None, *, drafter_format: str) -> list[str]:
    """Not fatal, but worth a look: a P-EAGLE drafter without ``mask_hidden`` runs mask positions on zeros."""
    if drafter.root is None or drafter_format == "speculators" or (config and is_speculators_config(config)):
        return []
    names: set[str] = set()
    for name in drafter.files:
        if name.endswith(".safetensors") and "/" not in name:
            try:
                names |= safetensors_tensor_names(drafter.root / name)
            except (OSError, ValueError, struct.error):
                return [f"drafter: {name} has an unreadable safetensors header"]
    if names and "mask_hidden" not in names:
        return [
            "drafter: no `mask_hidden` tensor in the weights; vLLM then uses zeros at parallel-drafting "
            "positions (or refuses to start); check this is a P-EAGLE drafter"
        ]
    return []
