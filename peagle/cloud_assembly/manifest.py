"""manifest.json, read in this one place: the stacks of a cloud assembly (cdk.out), their templates, names,
environments and tags, nested assemblies (CDK Stages) included."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from peagle.settings.errors import PeagleError

MANIFEST = "manifest.json"
# The YAML app's endpoint stack: its construct id in app.py, which is its artifact id in manifest.json (docs/
# deployment.md, "Stacks, names and outputs": cdk selects stacks by their construct ids); app.py tags every
# stack with the deployment's name under DEPLOYMENT_TAG.
ENDPOINT_STACK_ID = "PeagleEndpoint"
DEPLOYMENT_TAG = "peagle:deployment"
# CDK's cloud-assembly-api 2.5.0 (in CDK 2.275), lib/environment.js: "AWS_ENV_REGEX =
# /aws\:\/\/([a-z0-9A-Z\-\@\.\_]+)\/([a-z\-0-9]+)/", "UNKNOWN_ACCOUNT = 'unknown-account'",
# "UNKNOWN_REGION = 'unknown-region'" (what an environment-agnostic stack's manifest entry says).
_ENVIRONMENT = re.compile(r"^aws://([a-zA-Z0-9@._-]+)/([a-z0-9-]+)$")
_UNKNOWN = ("unknown-account", "unknown-region")


class AssemblyError(PeagleError):
    """No readable cloud assembly where one was expected."""


@dataclass(frozen=True, eq=False)  # identity equality: one object per stack, and a template is not hashable
class AssemblyStack:
    id: str  # artifact id in manifest.json (e.g. "PeagleEndpoint"), or the template file's stem
    stack_name: str  # properties.stackName from the manifest if known, else id
    path: Path  # the template file
    template: Mapping[str, Any] = field(repr=False)
    account: str | None = None  # the manifest's "aws://<account>/<region>" when concrete, else None
    region: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict, repr=False)  # the stack's tags in the manifest

    def resources(self, resource_type: str | None = None) -> dict[str, Mapping[str, Any]]:
        """Logical id -> resource definition, of one type or all, in template order."""
        resources = self.template.get("Resources") or {}
        return {key: value for key, value in resources.items() if resource_type in (None, value.get("Type"))}

    def placeholder(self, name: str) -> str:
        """The symbol for something of this stack only known once deployed: ``${<id>/<name>}``."""
        return "${" + f"{self.id}/{name}" + "}"


def read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AssemblyError(f"{path}: no such {what}: run `cdk synth` to write the cloud assembly") from None
    except (OSError, ValueError) as error:
        raise AssemblyError(f"{path}: unreadable {what} ({error}): run `cdk synth` again to rewrite it") from None
    if not isinstance(data, dict):
        raise AssemblyError(f"{path}: not a {what} (expected a JSON object): run `cdk synth` again to rewrite it")
    return data


def stacks_in(directory: Path) -> Iterator[AssemblyStack]:
    """Every CloudFormation stack the manifest.json in ``directory`` lists, its nested assemblies' included."""
    # CDK cloud-assembly-schema 55.4.0 (cloud-assembly.schema.json): artifact "type" one of "aws:cloudformation:stack",
    # "cdk:cloud-assembly", ...; AwsCloudFormationStackProperties.templateFile "A file relative to the assembly root
    # which contains the CloudFormation template for this stack"; NestedCloudAssemblyProperties.directoryName
    # "Relative path to the nested cloud assembly" (a CDK Stage's stacks live there).
    manifest = read_json(directory / MANIFEST, "cloud assembly manifest")
    for artifact_id, artifact in (manifest.get("artifacts") or {}).items():
        properties = artifact.get("properties") or {}
        if artifact.get("type") == "aws:cloudformation:stack":
            yield stack_of(directory, artifact_id, artifact)
        elif artifact.get("type") == "cdk:cloud-assembly" and properties.get("directoryName"):
            yield from stacks_in(directory / properties["directoryName"])


def stack_of(directory: Path, artifact_id: str, artifact: Mapping[str, Any]) -> AssemblyStack:
    properties = artifact.get("properties") or {}
    if not properties.get("templateFile"):
        raise AssemblyError(f"{directory / MANIFEST}: stack {artifact_id} names no templateFile: run `cdk synth` again")
    path = directory / properties["templateFile"]
    account, region = _environment(artifact.get("environment"))
    # AwsCloudFormationStackProperties.stackName: "The name to use for the CloudFormation stack. (Default - name
    # derived from artifact ID)"; .tags: "Values for CloudFormation stack tags that should be passed when the stack
    # is deployed".
    name = properties.get("stackName") or artifact_id
    tags = properties.get("tags")
    tags = tags if isinstance(tags, Mapping) else {}
    template = read_json(path, "stack template")
    return AssemblyStack(artifact_id, name, path, template, account, region, tags)


def _environment(text: Any) -> tuple[str | None, str | None]:
    found = _ENVIRONMENT.match(text) if isinstance(text, str) else None
    if found is None:
        return None, None
    account, region = found.groups()
    return (None if account == _UNKNOWN[0] else account), (None if region == _UNKNOWN[1] else region)


def manifest_entries(directory: Path) -> dict[Path, tuple[str, Mapping[str, Any]]]:
    """Template path -> (artifact id, artifact) for the stacks of a manifest.json in ``directory``; {} when there
    is none or it cannot be read (the file stems stand in)."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        artifacts = manifest.get("artifacts") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    return {
        (directory / artifact["properties"]["templateFile"]).resolve(): (artifact_id, artifact)
        for artifact_id, artifact in artifacts.items()
        if isinstance(artifact, Mapping)
        and artifact.get("type") == "aws:cloudformation:stack"
        and (artifact.get("properties") or {}).get("templateFile")
    }


def stack_name_beside(template: Path) -> str | None:
    """The stack name cdk gave a template in the manifest next to it, if there is one."""
    known = manifest_entries(template.parent).get(template.resolve())
    if known is None:
        return None
    artifact_id, artifact = known
    return (artifact.get("properties") or {}).get("stackName") or artifact_id
