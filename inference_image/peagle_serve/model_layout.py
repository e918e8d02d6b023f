"""Find the target and drafter checkpoints and check the drafter before vLLM loads it.

SageMaker mounts the model data (one S3 prefix holding ``target/`` and ``drafter/``)
at ``/opt/ml/model``. Local mode points at a directory on disk instead. A path that
does not exist, a drafter config vLLM would reject mid-load, or a K the drafter was
not trained for are all reported here, in seconds, instead of after minutes of
weight loading.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from .contract import (
    DRAFTER_DIR,
    SCHEDULE_KEY,
    TARGET_SUBDIR,
    ScheduleBand,
    describe_schedule,
    mask_token_problem,
    schedule_coverage_problems,
    schedule_problems,
    speculative_config,
)
from .errors import ConfigError
from .settings import LauncherSettings

log = logging.getLogger("peagle_serve")

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class Speculation:
    """The speculative decoding the engine is asked to run."""

    config: dict  # the JSON handed to --speculative-config, drafter path resolved
    num_speculative_tokens: int  # with a schedule: its largest K
    parallel_drafting: bool
    schedule: tuple[ScheduleBand, ...] = ()  # K by batch size (contract.SCHEDULE_KEY); empty: always K


def resolve_target(model: str | None, settings: LauncherSettings) -> str:
    """The value for ``--model``: a checked local directory or a hub id."""
    root = settings.model_root_path
    if model is None:
        for candidate in (root / TARGET_SUBDIR, root):
            if (candidate / "config.json").is_file():
                return str(candidate)
        raise ConfigError(
            f"no target model: SM_VLLM_MODEL is not set and neither {root}/target/config.json "
            f"nor {root}/config.json exists. Set SM_VLLM_MODEL to the model directory, or "
            f"put the target under {root}/target/ (PEAGLE_MODEL_ROOT={root})."
        )
    return _resolve_checkpoint(model, root, what="target model (SM_VLLM_MODEL)")


def _resolve_checkpoint(value: str, root: Path, *, what: str) -> str:
    path = Path(value).expanduser()
    looks_like_path = path.is_absolute() or value.startswith((".", "~"))
    candidates = [path] if looks_like_path else [root / value, path]
    for candidate in candidates:
        if candidate.is_dir():
            if not (candidate / "config.json").is_file():
                raise ConfigError(
                    f"{what} directory {candidate} has no config.json: point it at the "
                    "directory that holds the checkpoint's config.json and weights."
                )
            return str(candidate.resolve())
    if not looks_like_path and _HUB_ID.match(value):
        log.warning(
            "%s %r is not a local directory; vLLM will fetch it from the hub (fails under network isolation)",
            what,
            value,
        )
        return value
    tried = ", ".join(str(c) for c in candidates)
    raise ConfigError(
        f"{what} {value!r} not found (looked at {tried}). Check the S3 prefix holds "
        f"{what.split()[0]}/ with config.json, or fix the path."
    )


def parse_speculative_config(raw: str, settings: LauncherSettings, *, max_num_seqs: int | None = None) -> Speculation:
    """Validate ``--speculative-config`` JSON and resolve its drafter path.

    :param max_num_seqs: the server's --max-num-seqs, which a K-by-batch-size schedule must
        cover (contract.schedule_coverage_problems); None: not checked.
    """
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"SM_VLLM_SPECULATIVE_CONFIG is not valid JSON ({error}); expected e.g. "
            + json.dumps(speculative_config(DRAFTER_DIR, 4), separators=(",", ":"))
        ) from None
    if not isinstance(config, dict):
        raise ConfigError("SM_VLLM_SPECULATIVE_CONFIG must be a JSON object")

    problems: list[str] = []
    k = config.get("num_speculative_tokens")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        problems.append(
            f"num_speculative_tokens={k!r} must be an integer >= 1; to turn speculation "
            "off, leave SM_VLLM_SPECULATIVE_CONFIG unset"
        )
    elif settings.drafter_trained_k is not None and k > settings.drafter_trained_k:
        problems.append(
            f"num_speculative_tokens={k} is above the {settings.drafter_trained_k} tokens the "
            f"drafter was trained for (PEAGLE_DRAFTER_TRAINED_K); positions past that are "
            f"never accepted and only cost compute. Use K <= {settings.drafter_trained_k}."
        )
    schedule: tuple[ScheduleBand, ...] = ()
    if config.get(SCHEDULE_KEY) is not None:  # null: no schedule, as in vLLM
        found = schedule_problems(
            config[SCHEDULE_KEY],
            trained_k=settings.drafter_trained_k,
            drafts_at_batch_size_1=settings.speculation_self_check,
        )
        if not found:
            schedule = tuple(tuple(band) for band in config[SCHEDULE_KEY])
            largest = max(band[2] for band in schedule)
            if isinstance(k, int) and k != largest:
                # vLLM cuts a larger band K to num_speculative_tokens and sizes its buffers by it (contract.py).
                found.append(
                    f"its largest K is {largest}, but num_speculative_tokens={k}; set num_speculative_tokens={largest}"
                )
            if max_num_seqs is not None:
                found += schedule_coverage_problems(schedule, max_num_seqs)
        problems += [f"speculative config {SCHEDULE_KEY}: {problem}" for problem in found]
        if not found:
            log.info("dynamic speculation: K by batch size %s", describe_schedule(schedule))
    parallel = config.get("parallel_drafting") is True
    if not parallel:
        # vLLM does not switch parallel drafting on by itself for eagle3 heads: a
        # P-EAGLE drafter would then run sequentially, i.e. as plain EAGLE-3.
        log.warning(
            'speculative config has no "parallel_drafting": true; the drafter '
            "runs autoregressively (EAGLE-3 style), not P-EAGLE"
        )

    drafter = config.get("model")
    if isinstance(drafter, str) and drafter:
        try:
            config["model"] = _resolve_checkpoint(
                drafter, settings.model_root_path, what='drafter (speculative config "model")'
            )
        except ConfigError as error:
            problems += error.problems
        else:
            if parallel and Path(config["model"]).is_dir():
                problem = _mask_token_problem(Path(config["model"]))
                if problem:
                    problems.append(problem)
    elif config.get("method") in ("eagle", "eagle3"):
        problems.append(
            'speculative config has no "model": set it to the drafter directory, e.g. /opt/ml/model/drafter'
        )
    if problems:
        raise ConfigError(problems)
    assert isinstance(k, int), "a num_speculative_tokens that is not an integer >= 1 is among the problems raised above"
    return Speculation(config=config, num_speculative_tokens=k, parallel_drafting=parallel, schedule=schedule)


def _mask_token_problem(drafter_dir: Path) -> str | None:
    config_path = drafter_dir / "config.json"
    try:
        drafter_config = json.loads(config_path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        return f"drafter config {config_path} is unreadable: {error}"
    problem = mask_token_problem(drafter_config)
    return f"drafter config {config_path} {problem}" if problem else None


def drafter_context_warning(speculation: Speculation, served_max_model_len: int | None) -> str | None:
    """Warn when P-EAGLE drafting stops for sequences the server still accepts.

    vLLM 0.32 raises an EAGLE drafter's ``max_position_embeddings`` to the target's
    max_model_len (vllm/config/speculative.py, ``_maybe_override_draft_max_position_embeddings``:
    "Raise an EAGLE draft's max_position_embeddings up to the target's"), but that only
    sizes the drafter's rotary cache. The drafter's ``max_model_len`` was already derived
    from the checkpoint's value when its ModelConfig was built, a few lines earlier, and
    ``_maybe_override_draft_max_model_len`` keeps ``min(draft, target)``. The V1 model
    runner then drafts only while ``common_attn_metadata.max_seq_len +
    num_drafter_query_tokens <= self.effective_drafter_max_model_len`` (that drafter
    max_model_len; vllm/v1/worker/gpu_model_runner.py, ``_input_fits_in_drafter``) and
    otherwise zeroes the whole batch's drafts, which are then all rejected.
    tests/serving/test_serving_self_check.py shows it on the tiny pair.

    Parallel drafting (P-EAGLE) always runs on that V1 runner: vllm/config/vllm.py,
    ``_get_v2_model_runner_unsupported_features``, "V2 EagleSpeculator does not support
    parallel_drafting (for P-Eagle)". Plain EAGLE-3 runs on the V2 runner where it is
    available, whose speculator drafts up to the target's max_model_len
    (vllm/v1/worker/gpu/spec_decode/speculator.py, ``self.draft_max_seq_len =
    self.max_model_len``), so no warning there.
    """
    if not speculation.parallel_drafting:
        return None
    drafter = speculation.config.get("model")
    if not drafter or not Path(drafter).is_dir():
        return None
    try:
        drafter_config = json.loads((Path(drafter) / "config.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    drafter_len = speculation.config.get("max_model_len") or drafter_config.get("max_position_embeddings")
    if isinstance(drafter_len, int) and served_max_model_len and drafter_len < served_max_model_len:
        return (
            f"the drafter's context is {drafter_len} tokens but the server accepts "
            f"{served_max_model_len}: vLLM drafts nothing for a whole batch while any sequence "
            f"in it is longer than {drafter_len - speculation.num_speculative_tokens} tokens "
            f"(the drafter's context less K={speculation.num_speculative_tokens}). Use a "
            f"long-context drafter or lower SM_VLLM_MAX_MODEL_LEN to {drafter_len}."
        )
    return None
