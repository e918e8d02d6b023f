"""docs/catalog.md's "What waits on CloudFormation" is the pinned API minus the pinned CloudFormation schema.

For each shape the project writes, the fields botocore's sagemaker model has and CloudFormation's resource schema
(shipped with cfn-lint) lacks are computed here and must be exactly the table's first column, and the schema date
the page names must be the one cfn-lint ships. A new botocore or cfn-lint pin then says what it added or unblocked.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import botocore.session
import cfnlint

DOC = Path(__file__).resolve().parents[2] / "docs" / "catalog.md"
SCHEMAS = Path(cfnlint.__file__).parent / "data" / "schemas"

# (botocore shape, CloudFormation type, the schema definitions that hold its fields: None is the resource itself).
# botocore's one InferenceComponentSpecification is two definitions in CloudFormation (Specification, and one entry
# of Specifications with its InstanceType), so both are read.
SHAPES = [
    ("CreateEndpointConfigInput", "AWS::SageMaker::EndpointConfig", [None]),
    ("ProductionVariant", "AWS::SageMaker::EndpointConfig", ["ProductionVariant"]),
    ("MetricsConfig", "AWS::SageMaker::EndpointConfig", ["MetricsConfig"]),
    ("CreateModelInput", "AWS::SageMaker::Model", [None]),
    ("ContainerDefinition", "AWS::SageMaker::Model", ["ContainerDefinition"]),
    ("CreateInferenceComponentInput", "AWS::SageMaker::InferenceComponent", [None]),
    (
        "InferenceComponentSpecification",
        "AWS::SageMaker::InferenceComponent",
        ["InferenceComponentSpecification", "InferenceComponentSpecificationForInstanceType"],
    ),
    (
        "InferenceComponentContainerSpecification",
        "AWS::SageMaker::InferenceComponent",
        ["InferenceComponentContainerSpecification"],
    ),
    ("CreateEndpointInput", "AWS::SageMaker::Endpoint", [None]),
]
# How the table names a field of a request shape: the operation, not botocore's input shape.
SPELLED = {"CreateEndpointConfigInput": "CreateEndpointConfig", "CreateModelInput": "CreateModel"}


@cache
def _schemas() -> dict[str, dict]:
    found = {}
    for path in (SCHEMAS / "resources").glob("*.json"):
        schema = json.loads(path.read_text())
        if str(schema.get("typeName", "")).startswith("AWS::SageMaker::"):
            found[schema["typeName"]] = schema
    return found


def _cloudformation_fields(type_name: str, definitions: list[str | None]) -> set[str]:
    schema = _schemas()[type_name]
    fields: set[str] = set()
    for name in definitions:
        fields |= set((schema if name is None else schema["definitions"][name])["properties"])
    return fields


def _botocore_only() -> set[str]:
    model = botocore.session.get_session().get_service_model("sagemaker")
    missing = set()
    for shape, type_name, definitions in SHAPES:
        absent = set(model.shape_for(shape).members) - _cloudformation_fields(type_name, definitions)
        missing |= {f"{SPELLED.get(shape, shape)}.{field}" for field in absent}
    return missing


def _section() -> str:
    text = DOC.read_text()
    return text[text.index("## What waits on CloudFormation") :]


def test_the_table_is_the_api_minus_the_schema():
    listed = set(re.findall(r"^\| `([A-Za-z]+\.[A-Za-z]+)` \|", _section(), flags=re.MULTILINE))
    assert listed == _botocore_only(), (
        "docs/catalog.md 'What waits on CloudFormation' is out of date with the pinned botocore / cfn-lint: "
        f"add {sorted(_botocore_only() - listed)}, drop {sorted(listed - _botocore_only())} (now in the schema: "
        "build it through the settings model)"
    )


def test_the_page_names_the_schema_date_cfn_lint_ships():
    shipped = json.loads((SCHEMAS / "version.json").read_text())["schema_date"]
    named = re.search(r"<!-- schema-date -->(.+?)<!-- /schema-date -->", _section())
    assert named is not None and named.group(1) == shipped


def test_what_the_project_builds_is_in_the_schema():
    """The settings this project writes on a variant are CloudFormation's, not a call behind its back."""
    variant = _cloudformation_fields("AWS::SageMaker::EndpointConfig", ["ProductionVariant"])
    assert {"InstancePools", "CapacityReservationConfig", "VariantInstanceProvisionTimeoutInSeconds"} <= variant
    assert "ContainerMetricsConfig" in _cloudformation_fields(
        "AWS::SageMaker::InferenceComponent", ["InferenceComponentContainerSpecification"]
    )
