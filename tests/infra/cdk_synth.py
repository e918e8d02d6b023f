"""Build the real CDK app (app.py's build_app) in-process and read its templates.

``synthesize`` always builds anew (for tests that change something around the app first);
``SynthCache`` builds each distinct (deployment, context) once and shares the result. One
``SynthCache`` serves the whole session (tests/conftest.py's ``cdk_synthesized``), so tests/infra,
tests/preflight and tests/simulate never synthesize the same app twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml
from aws_cdk import App
from aws_cdk.assertions import Template

import app as cdk_app  # top-level module; pyproject's pytest `pythonpath` puts the repo root on sys.path

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class SynthResult:
    app: App
    templates: dict[str, dict]  # stack id -> template JSON
    outdir: Path  # the cloud assembly (manifest.json, templates, assets), a directory named cdk.out

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


def _app_context(context: dict[str, object]) -> dict[str, object]:
    # cdk.json's context (feature flags) applies here exactly as under `cdk synth`.
    cdk_json = json.loads((REPO_ROOT / "cdk.json").read_text())
    return {**cdk_json["context"], "deployment": str(REPO_ROOT / "deployments" / "default.yaml"), **context}


def synthesize(outdir: Path, **context: object) -> SynthResult:
    """Build and synthesize the real app (with cdk-nag) from the repo root's files."""
    app = App(context=_app_context(context), outdir=str(outdir))
    cdk_app.build_app(app)
    assembly = app.synth()  # raises ValidationFailed on any unacknowledged cdk-nag finding
    templates = {stack.id: stack.template for stack in assembly.stacks}
    return SynthResult(app=app, templates=templates, outdir=Path(outdir))


def synth_key(context: dict[str, object]) -> str:
    """What a synthesis depends on: the context, with the deployment file as its parsed content.

    The app reads the file's path only into error messages, so two files with the same settings (the
    repo's default.yaml and preflight's rewritten copy of it) are one synthesis, and a file rewritten
    in place is a new one. Failures are never cached, so an unreadable file keys by its path.
    """
    full = _app_context(context)
    deployment = str(full.pop("deployment"))
    try:
        settings: object = yaml.safe_load(Path(deployment).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        settings = {"unreadable deployment file": deployment}
    return json.dumps({"deployment": settings, "context": full}, sort_keys=True, default=str)


class SynthCache:
    """``cache(**context)`` -> the SynthResult for that context, synthesized on first use only.

    ``new_root()`` gives an empty directory per synthesis; the assembly goes to ``<root>/cdk.out``
    (the name `peagle preflight` and `peagle simulate` default to). Results are shared: read them,
    don't change them or write into their cdk.out.
    """

    def __init__(self, new_root: Callable[[], Path]) -> None:
        self._new_root = new_root
        self._results: dict[str, SynthResult] = {}

    def __call__(self, **context: object) -> SynthResult:
        key = synth_key(context)
        if key not in self._results:
            self._results[key] = synthesize(self._new_root() / "cdk.out", **context)
        return self._results[key]


def write_deployment(tmp_path: Path, text: str) -> str:
    path = tmp_path / "deployment.yaml"
    path.write_text(text)
    return str(path)


_ASSET_HASH = re.compile(r"[0-9a-f]{64}")
# The in-account build's image tag: the hash of the build context (peagle_cdk/serving_image_build.py image_tag).
_IMAGE_TAG = re.compile(r"peagle-[0-9a-f]{24}")
# Catalog prices and their date reach the dashboard (the plan summary, the cost row's text, labels and
# expressions: "2.336 * reports0", "(37.604 / 8) * reports0"); a price edit does not churn the snapshots.
_PRICES = (
    (re.compile(r"\$[\d,]+(?:\.\d+)?/(instance-)?hour"), r"$<price>/\1hour"),
    (re.compile(r"prices of \d{4}-\d{2}-\d{2}"), "prices of <date>"),
    (re.compile(r"\d+(?:\.\d+)?(?=(?: / \d+\))? \* reports\d)"), "<price>"),
)


def dashboard_widgets(body: dict | str) -> list[dict]:
    """A DashboardBody (a JSON string, or an Fn::Join of strings and tokens) as its widget list.

    Tokens (alarm ARNs, the region) sit inside JSON strings; each becomes "<Ref:Id>" /
    "<Id.Attr>" so the body parses while still saying what it pointed at.
    """
    if isinstance(body, dict):
        parts = []
        for part in body["Fn::Join"][1]:
            if isinstance(part, str):
                parts.append(part)
            elif "Ref" in part:
                parts.append(f"<Ref:{part['Ref']}>")
            else:
                parts.append("<{}.{}>".format(*part["Fn::GetAtt"]))
        body = "".join(parts)
    return json.loads(body)["widgets"]


def normalise_template(template: dict) -> dict:
    """Volatile values out (asset hashes, image tags, catalog prices and dates), so a Dockerfile or catalog edit
    doesn't churn snapshots; dashboards as one widget per entry instead of one JSON string."""
    text = _IMAGE_TAG.sub("peagle-<image-tag>", _ASSET_HASH.sub("<asset-hash>", json.dumps(template)))
    for pattern, placeholder in _PRICES:
        text = pattern.sub(placeholder, text)
    normalised = json.loads(text)
    for resource in normalised.get("Resources", {}).values():
        # The recorded plan (peagle/planning/plan_record.py) holds the catalog's numbers and prices: kept as what it names,
        # its content is tests/constructs/test_plan_record.py's.
        record = (resource.get("Metadata") or {}).get("peagle:plan")
        if record is not None:
            record["units"] = {name: "<plan>" for name in record["units"]}
        if resource["Type"] == "AWS::CloudWatch::Dashboard":
            widgets = dashboard_widgets(resource["Properties"]["DashboardBody"])
            resource["Properties"]["DashboardBody"] = [json.dumps(widget, sort_keys=True) for widget in widgets]
    return normalised
