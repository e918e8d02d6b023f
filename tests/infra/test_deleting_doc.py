"""docs/deployment.md's "Deleting" section against the templates: every KMS key an example deployment keeps after
`cdk destroy` (DeletionPolicy Retain) is one of the kinds its table lists, and the counts it states are the
templates' counts, so a key added to the stacks without a word to the user turns this red."""

from __future__ import annotations

import re

import pytest
from cdk_synth import REPO_ROOT

DOC = REPO_ROOT / "docs" / "deployment.md"
DEPLOYMENTS = sorted(path.stem for path in (REPO_ROOT / "deployments").glob("*.yaml"))
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def _deleting_section() -> str:
    text = DOC.read_text()
    return text[text.index("## Deleting") :]


def _documented_kinds() -> list[re.Pattern[str]]:
    """The key descriptions in the table's first column, `<...>` standing for any name."""
    kinds = []
    for row in _deleting_section().splitlines():
        if not row.startswith("| `"):
            continue
        for described in re.findall(r"`([^`]+)`", row.split("|")[1]):
            parts = re.split(r"<[^>]+>", described)
            kinds.append(re.compile("^" + ".+".join(re.escape(part) for part in parts) + "$"))
    return kinds


def _stated_counts() -> dict[str, int]:
    """ "`deployments/default.yaml` leaves three keys", "async-summarization leaves six", ..."""
    section = " ".join(_deleting_section().split())
    stated = {}
    for name, number in re.findall(r"(?:`deployments/)?([a-z-]+?)(?:\.yaml`)? leaves (\w+)", section):
        if number in NUMBERS:
            stated[name] = NUMBERS[number]
    return stated


def _retained_keys(templates: dict[str, dict]) -> list[str]:
    return [
        resource["Properties"].get("Description", "")
        for template in templates.values()
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::KMS::Key" and resource.get("DeletionPolicy") == "Retain"
    ]


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_every_key_an_example_keeps_is_documented_and_counted(synth, deployment):
    kept = _retained_keys(synth(deployment=str(REPO_ROOT / "deployments" / f"{deployment}.yaml")).templates)
    kinds = _documented_kinds()
    assert kinds, "the Deleting section's key table is gone"
    undocumented = [description for description in kept if not any(kind.match(description) for kind in kinds)]
    assert not undocumented, f"{deployment} keeps keys docs/deployment.md does not list: {undocumented}"
    stated = _stated_counts()
    if deployment in stated:
        assert len(kept) == stated[deployment], f"{deployment}: the doc says {stated[deployment]}, kept {len(kept)}"


def test_the_doc_states_counts_for_the_default_and_the_examples_with_more():
    assert {"default", "async-summarization", "private-vpc"} <= set(_stated_counts())
