"""The deployment config a `peagle` command works from (the CDK app reads its own in app.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from peagle.settings import DEFAULT_DEPLOYMENT_FILE, DeploymentConfig, config_from_overrides, load_deployment_config


def load_cli_config(deployment: str | None, overrides: dict[str, Any]) -> DeploymentConfig:
    """--deployment, else the default file when it exists (running from the repo), else the
    built-in defaults; CONTEXT_OVERRIDES-keyed overrides apply."""
    if deployment:
        return load_deployment_config(deployment, overrides, passed_as="--deployment <path>")
    if Path(DEFAULT_DEPLOYMENT_FILE).is_file():
        return load_deployment_config(DEFAULT_DEPLOYMENT_FILE, overrides)
    return config_from_overrides(overrides)
