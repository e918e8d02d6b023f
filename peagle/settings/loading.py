"""The deployment file, read and validated once (by app.py or the CLI), and a validation error in the caller's words.

A deployment file (YAML) names a model pair, an instance type and a workload profile, and may override anything the
planner would pick. CDK context keys (`-c model=... -c instanceType=...`) override the file; see CONTEXT_OVERRIDES."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from peagle.settings.deployment import DeploymentConfig
from peagle.settings.errors import ConfigError
from peagle.settings.refs import Door, duration, setting
from peagle.settings.words import field_words, in_words

DEFAULT_DEPLOYMENT_FILE = "deployments/default.yaml"

# CDK context key -> path in the deployment file. Keep these names stable:
# users' scripts and CI pass them with `cdk synth -c key=value`.
CONTEXT_OVERRIDES: dict[str, tuple[str, ...]] = {
    "model": ("model",),
    "instanceType": ("instance", "type"),
    "instanceCount": ("instance", "count"),
    "speculativeTokens": ("speculation", "speculative_tokens"),
    "profile": ("profile",),
}


def _set_path(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = data
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[path[-1]] = value


# pydantic's bound errors, reworded so a bound carries the field's unit ("at least Duration.minutes(5)").
_BOUNDS = {
    "greater_than_equal": ("ge", "at least"),
    "greater_than": ("gt", "more than"),
    "less_than_equal": ("le", "at most"),
    "less_than": ("lt", "less than"),
}


def format_validation_error(
    source: str, error: ValidationError, *, door: Door | str = Door.FILE, prefix: str = ""
) -> str:
    """A validation error in the caller's words: each field named as ``door`` spells it (the file's key path,
    the construct's prop, the CLI's flag), each bound and given value with the field's unit. ``prefix``: the
    path of the section ``error`` came from when it was built alone (a construct's value type)."""
    door = Door(door)
    subject = "invalid props" if door is Door.PROPS else "invalid deployment config"
    lines: list[str] = []
    for item in error.errors():
        path = ".".join(part for part in [prefix, *(str(p) for p in item["loc"])] if part)
        words = field_words(path) if path else {}
        message = item["msg"].removeprefix("Value error, ")
        given = item.get("input")
        bound = _BOUNDS.get(item["type"])
        if bound and words.get("unit"):
            limit = (item.get("ctx") or {}).get(bound[0])
            message = f"should be {bound[1]} {_with_unit(limit, words['unit'], door, bound=True)}"
        shown = (
            ""
            if isinstance(given, dict) or item["type"] == "value_error"
            else f" (given: {_with_unit(given, words.get('unit'), door)})"
        )
        where = in_words(setting(path), door) if path else ""
        for line in in_words(message, door).splitlines():  # a model-level check may report several problems
            lines.append(f"  - {where}: {line}{shown}" if where else f"  - {line}")
    # Counted as listed: a model-level check reports its several problems as one error's lines.
    return "\n".join([f"{source}: {subject} ({len(lines)} problem(s)):", *lines])


def _with_unit(value: Any, unit: str | None, door: Door, *, bound: bool = False) -> str:
    """A number of a field in seconds or minutes: a Duration for a construct user; for the file and the CLI the
    key names the unit, so only a bound spells it."""
    if unit is None or not isinstance(value, int | float) or isinstance(value, bool):
        return repr(value)
    if door is Door.PROPS:
        return duration(value, unit)
    return f"{value:g} {unit}" if bound else repr(value)


def parse_deployment_config(
    data: dict[str, Any], *, source: str = "deployment config", door: Door | str = Door.FILE
) -> DeploymentConfig:
    try:
        return DeploymentConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(format_validation_error(source, error, door=door)) from None


def load_deployment_config(
    path: str | Path = DEFAULT_DEPLOYMENT_FILE,
    overrides: dict[str, Any] | None = None,
    *,
    passed_as: str = "-c deployment=<path>",
    door: Door | str = Door.FILE,
) -> DeploymentConfig:
    """Read the deployment file and apply CDK-context-style overrides (CONTEXT_OVERRIDES keys).

    Overrides whose value is None are ignored, so callers can pass every key. ``passed_as`` is how the
    caller names the file in a "not found" error: the CDK app's context key, or a CLI's option; ``door``
    how errors name settings (peagle/settings/words.py).
    """
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(
            f"deployment file {str(path)!r} not found; pass an existing file with "
            f"{passed_as} (default {DEFAULT_DEPLOYMENT_FILE})"
        ) from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level, got {type(raw).__name__}")
    return config_from_overrides(overrides, base=raw, source=str(path), door=door)


def config_from_overrides(
    overrides: dict[str, Any] | None,
    *,
    base: dict[str, Any] | None = None,
    source: str = "command line",
    door: Door | str = Door.FILE,
) -> DeploymentConfig:
    """Apply CONTEXT_OVERRIDES-keyed values (None = not given) to ``base`` and validate."""
    raw = dict(base or {})
    for key, value in (overrides or {}).items():
        if key not in CONTEXT_OVERRIDES:
            raise ConfigError(f"unknown override {key!r}; allowed: {sorted(CONTEXT_OVERRIDES)}")
        if value is not None:
            _set_path(raw, CONTEXT_OVERRIDES[key], value)
    return parse_deployment_config(raw, source=source, door=door)
