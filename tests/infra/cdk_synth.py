"""Build the real CDK app (app.py's build_app) in-process and read its templates."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import App
from aws_cdk.assertions import Template

import app as cdk_app  # top-level module; pyproject's pytest `pythonpath` puts the repo root on sys.path

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class SynthResult:
    app: App
    templates: dict[str, dict]  # stack id -> template JSON

    def template(self, stack_id: str = "PeagleEndpoint") -> Template:
        return Template.from_json(self.templates[stack_id])

    def resources(self, stack_id: str, resource_type: str) -> dict[str, dict]:
        return {
            logical_id: resource
            for logical_id, resource in self.templates[stack_id]["Resources"].items()
            if resource["Type"] == resource_type
        }

    def container_environment(self) -> dict[str, str]:
        (model,) = self.resources("PeagleEndpoint", "AWS::SageMaker::Model").values()
        return model["Properties"]["PrimaryContainer"]["Environment"]


def synthesize(outdir: Path, **context: object) -> SynthResult:
    """Build and synthesize the real app (with cdk-nag) from the repo root's files."""
    # cdk.json's context (feature flags) applies here exactly as under `cdk synth`.
    cdk_json = json.loads((REPO_ROOT / "cdk.json").read_text())
    context = {**cdk_json["context"], "deployment": str(REPO_ROOT / "deployments" / "default.yaml"), **context}
    app = App(context=context, outdir=str(outdir))
    cdk_app.build_app(app)
    assembly = app.synth()  # raises ValidationFailed on any unacknowledged cdk-nag finding
    templates = {stack.id: stack.template for stack in assembly.stacks}
    return SynthResult(app=app, templates=templates)


def write_deployment(tmp_path: Path, text: str) -> str:
    path = tmp_path / "deployment.yaml"
    path.write_text(text)
    return str(path)


_ASSET_HASH = re.compile(r"[0-9a-f]{64}")


def normalise_template(template: dict) -> dict:
    """Replace volatile values (asset hashes, image tags) so a Dockerfile edit doesn't churn snapshots."""
    return json.loads(_ASSET_HASH.sub("<asset-hash>", json.dumps(template)))
