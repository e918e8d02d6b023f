"""peagle/preflight/fixed_identifiers.py against the CloudFormation resource schemas cfn-lint ships (a dev
dependency; preflight itself runs without it): a schema change, or a cfn-lint upgrade that moves a cited file,
turns these red. And every type this app's endpoint-stack templates give a fixed name is in the table."""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

import pytest
from preflight_deployments import DEPLOYMENTS

from peagle.cloud_assembly import StackTemplate, at_pointer
from peagle.preflight.fixed_identifiers import CFN_LINT, FIXED_IDENTIFIERS

SCHEMAS = files("cfnlint") / "data" / "schemas"
ROWS = sorted(FIXED_IDENTIFIERS)


@cache
def _providers() -> dict[str, str]:
    """Resource type -> its schema's file name, as cfn-lint's provider index for us-east-1 lists them."""
    return json.loads((SCHEMAS / "providers" / "us-east-1.json").read_text(encoding="utf-8"))


@cache
def schema(resource_type: str) -> dict:
    return json.loads((SCHEMAS / "resources" / f"{_providers()[resource_type]}.json").read_text(encoding="utf-8"))


def test_the_table_cites_the_installed_cfn_lint():
    from importlib.metadata import version

    assert f"cfn-lint {version('cfn-lint')}" == CFN_LINT, "re-check every row against the new schemas, then re-cite"


@pytest.mark.parametrize("resource_type", ROWS)
def test_the_cited_file_is_the_schema_cfn_lint_ships_for_the_type(resource_type):
    row = FIXED_IDENTIFIERS[resource_type]

    assert f"{_providers()[resource_type]}.json" == row.schema_file
    assert schema(resource_type)["typeName"] == resource_type


@pytest.mark.parametrize("resource_type", ROWS)
def test_primary_identifier_and_create_only_properties_are_the_schemas(resource_type):
    row, shipped = FIXED_IDENTIFIERS[resource_type], schema(resource_type)

    assert list(row.primary_identifier) == shipped["primaryIdentifier"]
    assert sorted(row.create_only) == sorted(shipped.get("createOnlyProperties", []))


@pytest.mark.parametrize("resource_type", ROWS)
def test_the_name_is_the_primary_identifier_or_what_the_assigned_arn_is_built_from(resource_type):
    row, shipped = FIXED_IDENTIFIERS[resource_type], schema(resource_type)
    read_only = set(shipped.get("readOnlyProperties", []))

    for pointer in row.name:
        assert pointer.startswith("/properties/") and "*" not in pointer
        assert pointer.removeprefix("/properties/") in shipped["properties"]
        assert pointer not in read_only  # a template can set it
    if row.name != row.primary_identifier:
        # SageMaker: the identifier is the ARN SageMaker assigns (read-only), named after the resource's name.
        (arn,) = row.primary_identifier
        assert arn in read_only and arn.endswith("Arn")
        assert arn.removesuffix("Arn") == row.name[0].removesuffix("Name")


@pytest.mark.parametrize("resource_type", ROWS)
def test_replacement_creates_before_it_deletes(resource_type):
    """The rules assume the default replacement order; a delete_then_create type would replace fine."""
    assert schema(resource_type).get("replacementStrategy", "create_then_delete") == "create_then_delete"


# --- the app's templates -------------------------------------------------------------------------------

# Deployments whose endpoint stacks together hold every resource type the app makes (a cache rule only with
# credentials for it).
COVERED = ("default", "ab", "s2z", "pull-through")


def test_every_type_the_app_names_in_its_templates_is_in_the_table(synthesized):
    assert set(COVERED) <= set(DEPLOYMENTS)
    unlisted = set()
    for deployment in COVERED:
        path = synthesized(deployment).template
        template = StackTemplate(json.loads(path.read_text()), source=str(path))
        for logical_id, resource in template.resources.items():
            resource_type = resource["Type"]
            if resource_type not in _providers() or resource_type in FIXED_IDENTIFIERS:
                continue  # custom resources have no schema
            properties = template.properties(logical_id)
            identifier = schema(resource_type).get("primaryIdentifier", [])
            if identifier and all(template.fixed(at_pointer(properties, p)) is not None for p in identifier):
                replaced_first = schema(resource_type).get("replacementStrategy") == "delete_then_create"
                if not replaced_first:
                    unlisted.add(f"{resource_type} ({deployment}: {logical_id})")

    assert not unlisted, "fixed names preflight does not know about; add rows to fixed_identifiers.py"


def test_the_cache_rule_the_app_makes_is_named_by_its_prefix(synthesized):
    template = json.loads(synthesized("pull-through").template.read_text())
    rules = [r for r in template["Resources"].values() if r["Type"] == "AWS::ECR::PullThroughCacheRule"]

    assert len(rules) == 1
    assert isinstance(rules[0]["Properties"]["EcrRepositoryPrefix"], str)
