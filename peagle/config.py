"""The deployment config: one validated model, loaded once (by app.py or the CLI).

A deployment file (YAML) names a model pair, an instance type and a workload
profile, and may override anything the planner would pick. CDK context keys
(`-c model=... -c instanceType=...`) override the file; see CONTEXT_OVERRIDES.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, PositiveInt, ValidationError, field_validator, model_validator

from peagle.catalog import ModelPair, ProfileName, StrictModel, load_catalog
from peagle.errors import ConfigError

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


class InstanceSettings(StrictModel):
    type: str = Field("ml.g6e.xlarge", description="SageMaker instance type (see `peagle catalog`)")
    count: PositiveInt = Field(1, le=100, description="initial instance count")


class SpeculationSettings(StrictModel):
    speculative_tokens: int | None = Field(
        None,
        ge=0,
        le=64,
        description="K, draft tokens per step; 0 turns speculation off; "
        "unset = the pair's recommended K for the profile",
    )


class ProfileOverrides(StrictModel):
    """Any profile field, overridden for this deployment only."""

    temperature: float | None = Field(None, ge=0.0, le=2.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    max_tokens: PositiveInt | None = None
    max_model_len: PositiveInt | None = None
    min_model_len: PositiveInt | None = None
    max_num_seqs: PositiveInt | None = Field(None, le=1024)
    typical_context_tokens: PositiveInt | None = None
    latency_sla_p90_seconds: float | None = Field(None, gt=0)
    ttft_target_seconds: float | None = Field(None, gt=0)


_S3_PREFIX = re.compile(r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/[^\s]*)?/$")


class ArtifactsSettings(StrictModel):
    s3_uri: str | None = Field(
        None,
        description="s3://bucket/prefix/ holding target/ and drafter/ side by side. "
        "Unset: the project's artifacts bucket (stack <name>-artifacts), prefix models/<pair>/",
    )
    kms_key_arn: str | None = Field(None, description="KMS key the artifacts are encrypted with")

    @field_validator("s3_uri")
    @classmethod
    def _s3_prefix(cls, value: str | None) -> str | None:
        if value is not None and not _S3_PREFIX.match(value):
            raise ValueError(
                f"{value!r} is not an S3 prefix; use s3://<bucket>/<prefix>/ (ending in '/') "
                "with target/ and drafter/ under it"
            )
        return value


class VpcSettings(StrictModel):
    subnet_ids: list[str] = Field(min_length=1)
    security_group_ids: list[str] = Field(min_length=1)


class NetworkSettings(StrictModel):
    isolation: bool = Field(True, description="no network and no AWS credentials in the container")
    vpc: VpcSettings | None = None


class TimeoutSettings(StrictModel):
    container_startup_seconds: int | None = Field(None, ge=60, le=3600)
    model_download_seconds: int | None = Field(None, ge=60, le=3600)


class DeploymentConfig(StrictModel):
    name: str = Field(
        "peagle",
        pattern=r"^[a-z][a-z0-9-]{0,23}$",
        description="lower-case prefix of stack and bucket names (<name>-endpoint, <name>-models-<account>-<region>)",
    )
    model: str = Field("gpt-oss-20b", description="a catalog pair id or a key of custom_pairs")
    custom_pairs: dict[str, ModelPair] = {}
    instance: InstanceSettings = InstanceSettings()
    profile: ProfileName = ProfileName.CHATBOT
    profile_overrides: ProfileOverrides = ProfileOverrides()
    speculation: SpeculationSettings = SpeculationSettings()
    artifacts: ArtifactsSettings = ArtifactsSettings()
    network: NetworkSettings = NetworkSettings()
    timeouts: TimeoutSettings = TimeoutSettings()
    vllm_args: dict[str, bool | int | float | str] = Field(
        {}, description="extra vLLM flags (name without '--'), passed through as SM_VLLM_*"
    )

    @model_validator(mode="after")
    def _names_exist(self) -> DeploymentConfig:
        catalog = load_catalog()
        problems = []
        clashes = sorted(set(self.custom_pairs) & set(catalog.pairs))
        if clashes:
            problems.append(f"custom_pairs redefine catalog pairs {clashes}; pick new ids")
        pairs = sorted({*catalog.pairs, *self.custom_pairs})
        if self.model not in pairs:
            problems.append(f"model {self.model!r} is not a known pair; use one of {pairs} or declare it under custom_pairs")
        if self.instance.type not in catalog.instances:
            problems.append(
                f"instance.type {self.instance.type!r} is not in the instance catalog; "
                f"use one of {sorted(catalog.instances)}"
            )
        for name in self.vllm_args:
            if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
                problems.append(f"vllm_args key {name!r} must be a vLLM flag name like 'max-num-batched-tokens'")
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def pair(self) -> ModelPair:
        return self.custom_pairs.get(self.model) or load_catalog().pairs[self.model]


def _set_path(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = data
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[path[-1]] = value


def _format_validation_error(source: str, error: ValidationError) -> str:
    lines = [f"{source}: invalid deployment config ({error.error_count()} problem(s)):"]
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "(top level)"
        message = item["msg"].removeprefix("Value error, ")
        given = item.get("input")
        shown = "" if isinstance(given, dict) or item["type"] == "value_error" else f" (given: {given!r})"
        for line in message.splitlines():  # a model-level check may report several problems
            lines.append(f"  - {line}" if where == "(top level)" else f"  - {where}: {line}{shown}")
    return "\n".join(lines)


def parse_deployment_config(data: dict[str, Any], *, source: str = "deployment config") -> DeploymentConfig:
    try:
        return DeploymentConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_format_validation_error(source, error)) from None


def load_deployment_config(
    path: str | Path = DEFAULT_DEPLOYMENT_FILE, overrides: dict[str, Any] | None = None
) -> DeploymentConfig:
    """Read the deployment file and apply CDK-context-style overrides (CONTEXT_OVERRIDES keys).

    Overrides whose value is None are ignored, so callers can pass every key.
    """
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(
            f"deployment file {str(path)!r} not found; pass an existing file with "
            f"-c deployment=<path> (default {DEFAULT_DEPLOYMENT_FILE})"
        ) from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level, got {type(raw).__name__}")
    return config_from_overrides(overrides, base=raw, source=str(path))


def config_from_overrides(
    overrides: dict[str, Any] | None, *, base: dict[str, Any] | None = None, source: str = "command line"
) -> DeploymentConfig:
    """Apply CONTEXT_OVERRIDES-keyed values (None = not given) to ``base`` and validate."""
    raw = dict(base or {})
    for key, value in (overrides or {}).items():
        if key not in CONTEXT_OVERRIDES:
            raise ConfigError(f"unknown override {key!r}; allowed: {sorted(CONTEXT_OVERRIDES)}")
        if value is not None:
            _set_path(raw, CONTEXT_OVERRIDES[key], value)
    return parse_deployment_config(raw, source=source)
