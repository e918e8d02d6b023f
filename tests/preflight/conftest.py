"""Real endpoint-stack templates for preflight: each deployment variant is synthesized once
per session by the project's own CDK app (tests/conftest.py's shared cache of
tests/infra/cdk_synth.py), so the rules are checked against the structure `cdk deploy` really
submits; a variant with the settings of another folder's app reuses that synthesis."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from preflight_deployments import DEPLOYMENTS


@dataclass(frozen=True)
class Synthesized:
    deployment_file: Path
    cdk_out: Path
    template: Path  # the endpoint stack's template, as `cdk deploy` submits it


@pytest.fixture(scope="session")
def synthesized(cdk_synthesized, tmp_path_factory):
    cache: dict[str, Synthesized] = {}

    def _get(name: str) -> Synthesized:
        if name not in cache:
            deployment_file = tmp_path_factory.mktemp(name) / f"{name}.yaml"
            deployment_file.write_text(yaml.safe_dump(DEPLOYMENTS[name]))
            cdk_out = cdk_synthesized(deployment=str(deployment_file)).outdir
            cache[name] = Synthesized(deployment_file, cdk_out, cdk_out / "PeagleEndpoint.template.json")
        return cache[name]

    return _get
