"""Take one grant out of a synthesized app (a copy of its cdk.out), as a user's edit or a library fault would: the
runtime-access check must then name the request it no longer allows."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path


def edited_copy(cdk_out: Path, copy: Path, stack_id: str, edit: Callable[[dict], None]) -> Path:
    """A copy of ``cdk_out`` whose ``stack_id`` template went through ``edit`` (in place)."""
    shutil.copytree(cdk_out, copy)
    path = copy / f"{stack_id}.template.json"
    template = json.loads(path.read_text())
    edit(template)
    path.write_text(json.dumps(template))
    return copy


def policy_statements(template: dict) -> list[dict]:
    """Every statement of the template's managed and inline policies (AWS::IAM::ManagedPolicy, AWS::IAM::Policy)."""
    return [
        statement
        for resource in template["Resources"].values()
        if resource["Type"] in ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy")
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]


def without_statement(sid: str) -> Callable[[dict], None]:
    """Drop the statement with that Sid from the first policy that has one (each role's policy has its own)."""

    def edit(template: dict) -> None:
        for resource in template["Resources"].values():
            document = resource.get("Properties", {}).get("PolicyDocument")
            if resource["Type"] in ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy") and document:
                kept = [statement for statement in document["Statement"] if statement.get("Sid") != sid]
                if len(kept) < len(document["Statement"]):
                    document["Statement"] = kept
                    return
        raise AssertionError(f"no statement has Sid {sid}")

    return edit


def without_action(sid: str, action: str) -> Callable[[dict], None]:
    """Drop one action from the first statement with that Sid, the rest of it kept."""

    def edit(template: dict) -> None:
        statement = next(statement for statement in policy_statements(template) if statement.get("Sid") == sid)
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert action in actions, f"{sid} has {actions}"
        statement["Action"] = [kept for kept in actions if kept != action]

    return edit
