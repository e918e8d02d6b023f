"""Real endpoint-stack templates for the simulator: every example deployment synthesized once per
session by the project's own CDK app (tests/infra/cdk_synth.py), ~5 s each."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "infra"))  # the same helper tests/infra uses
from cdk_synth import REPO_ROOT, synthesize  # noqa: E402

EXAMPLE_DEPLOYMENTS = sorted(path.stem for path in (REPO_ROOT / "deployments").glob("*.yaml"))


@dataclass(frozen=True)
class Synthesized:
    deployment_file: Path
    cdk_out: Path
    template: Path


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory):
    cache: dict[str, Synthesized] = {}

    def _get(name: str) -> Synthesized:
        if name not in cache:
            deployment_file = REPO_ROOT / "deployments" / f"{name}.yaml"
            cdk_out = tmp_path_factory.mktemp(name) / "cdk.out"
            synthesize(cdk_out, deployment=str(deployment_file))
            cache[name] = Synthesized(deployment_file, cdk_out, cdk_out / "PeagleEndpoint.template.json")
        return cache[name]

    return _get
