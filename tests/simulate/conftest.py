"""Real endpoint-stack templates for the simulator: every example deployment synthesized once per
session by the project's own CDK app (tests/conftest.py's shared cache of tests/infra/cdk_synth.py,
so an example another folder synthesized already is not built again)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "infra"))  # the same helper tests/infra uses
from cdk_synth import REPO_ROOT  # noqa: E402


@dataclass(frozen=True)
class Synthesized:
    deployment_file: Path
    cdk_out: Path
    template: Path


@pytest.fixture(scope="session")
def synthesized(cdk_synthesized):
    def _get(name: str) -> Synthesized:
        deployment_file = REPO_ROOT / "deployments" / f"{name}.yaml"
        cdk_out = cdk_synthesized(deployment=str(deployment_file)).outdir
        return Synthesized(deployment_file, cdk_out, cdk_out / "PeagleEndpoint.template.json")

    return _get
