"""No template the project writes puts a CloudFormation request's fields (its ResponseURL above all, which lets whoever
reads it answer for the stack) where a build can show them: not in a CodeBuild project's environment or build spec,
not in the build resource's properties, and no CodeBuild event rule carries a build's variables to the handler.
PLAINTEXT build variables "can be displayed in plain text using the CodeBuild console and the CLI" (botocore codebuild
service-2.json, EnvironmentVariable.value). Every shipped deployment builds its image in the account (image.build
defaults to in_account): each one's synthesized templates are read. What the handler passes to StartBuild:
tests/infra/test_image_build_races.py (test_no_value_of_the_request_reaches_the_build)."""

from __future__ import annotations

import json

import pytest
from cdk_synth import REPO_ROOT

from peagle_cdk.serving_image_build import CUSTOM_RESOURCE_TYPE

DEPLOYMENTS = sorted(
    [*(REPO_ROOT / "deployments").glob("*.yaml"), *(REPO_ROOT / "tests" / "infra" / "deployments").glob("*.yaml")]
)
# The fields of a custom-resource request (CloudFormation User Guide, "Custom resource request objects"), as the old
# handler also spelled them in build variables (responseURL, stackId, requestId, ...): compared case-insensitively.
REQUEST_FIELDS = ("responseurl", "stackid", "requestid", "logicalresourceid", "physicalresourceid", "requesttype")


def _mentions_request_field(text: str) -> list[str]:
    folded = text.lower()
    return [name for name in REQUEST_FIELDS if name in folded]


@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=lambda path: path.stem)
def test_no_build_of_a_shipped_deployment_gets_a_request_field(synth, deployment):
    templates = synth(deployment=str(deployment)).templates
    builds = projects = 0
    for template in templates.values():
        for resource in template["Resources"].values():
            properties = resource.get("Properties", {})
            if resource["Type"] == "AWS::CodeBuild::Project":
                projects += 1
                variables = properties.get("Environment", {}).get("EnvironmentVariables", [])
                assert not _mentions_request_field(json.dumps(variables)), variables
                assert not _mentions_request_field(json.dumps(properties.get("Source", {}))), "build spec"
            if resource["Type"] == CUSTOM_RESOURCE_TYPE:
                builds += 1
                assert not _mentions_request_field(" ".join(properties)), sorted(properties)
            if resource["Type"] == "AWS::Events::Rule":
                pattern = json.dumps(properties.get("EventPattern", {}))
                assert "aws.codebuild" not in pattern, "a build's end carried to the handler by an event"
    assert builds >= 1 and projects == 1, f"{deployment.name} does not build its image in the account"
