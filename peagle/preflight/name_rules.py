"""Preflight's rules on the names a template fixes: a custom-named resource cannot be replaced under its name, and
two resources cannot share one (rule 8 of peagle/preflight/rules.py's list).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from peagle.cloud_assembly import StackTemplate, at_pointer, canonical
from peagle.preflight.findings import CheckContext, Finding, Severity
from peagle.preflight.fixed_identifiers import FIXED_IDENTIFIERS, PULL_THROUGH_CACHE_RULE, FixedIdentifier
from peagle.settings.refs import setting
from peagle.settings.words import in_words

# --- 8 ----------------------------------------------------------------------------------

# A resource whose name the template fixes cannot be replaced under that name. CloudFormation User Guide, "Name
# type" (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-name.html), Important:
# "You can't perform an update that causes a custom-named resource to be replaced. If you must replace the
# resource, specify a new name." The same page: "Resource names must be unique across all your active stacks."
# Why the update fails rather than waits: a changed create-only property is a replacement, created before the old
# resource is deleted (fixed_identifiers.py quotes the resource schema's semantics; UPDATE_BEHAVIORS in rules.py), and
# the create meets the old resource's name: "A create handler MUST return FAILED with an AlreadyExists error code
# if the resource already existed before the create request." (CloudFormation CLI User Guide, "Resource type
# handler contract", https://docs.aws.amazon.com/cloudformation-cli/latest/userguide/resource-type-test-contract.html;
# earlier editions: "prior to the create request");
# for the cache rule, ECR's CreatePullThroughCacheRule lists PullThroughCacheRuleAlreadyExistsException, "A pull
# through cache rule with these settings already exists for the private registry.", botocore 1.44.5). The stack
# then rolls back. --allow-replace does not apply: no flag makes that create succeed.
NAME_TYPE = "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-name.html"
HANDLER_CONTRACT = "https://docs.aws.amazon.com/cloudformation-cli/latest/userguide/resource-type-test-contract.html"
_CUSTOM_NAME = (
    "\"You can't perform an update that causes a custom-named resource to be replaced. If you must replace the "
    'resource, specify a new name."'
)
_ALREADY_EXISTS = (
    '"A create handler MUST return FAILED with an AlreadyExists error code if the resource already existed before '
    'the create request."'
)


@dataclass(frozen=True)
class NewName:
    """How this app's settings give a fixed-name resource another name (``rename``: what to set), or take it out
    of the stack for one deploy (``drop``) and bring it back (``restore``); ``{home}`` is filled in (where the
    settings are, peagle.preflight.rules.CheckContext.settings_home)."""

    rename: str
    drop: str
    restore: str


# The one place the fixed-name rules name settings and construct props: adjust it when they move. (The cache
# rule's prefix is chosen in peagle_cdk/serving_image_build.py.) Types not listed get the generic wording.
NEW_NAMES: dict[str, NewName] = {
    PULL_THROUGH_CACHE_RULE: NewName(
        rename=f"a new prefix (remove `{setting('image.pull_through_cache_prefix')}` from {{home}}, for one derived "
        "from the stack and the secret; or set another)",
        drop=f"remove `{setting('image.pull_through_cache_secret_arn')}` and "
        f"`{setting('image.pull_through_cache_prefix')}` from {{home}} and deploy: the stack deletes the rule (an "
        "image this deploy builds pulls the vLLM base from Docker Hub anonymously)",
        restore="set them again, with the new secret, and deploy: the rule is created with the new settings",
    ),
}


@dataclass(frozen=True)
class FixedName:
    """A resource of a fixed_identifiers.py type whose name the template fixes."""

    logical_id: str
    row: FixedIdentifier
    name: str  # for messages and comparison: the name, or Property=value, ... for a composite key


def fixed_names(template: StackTemplate) -> list[FixedName]:
    """The template's resources whose name it fixes; a name CloudFormation generates (absent) or that another
    resource decides (a Ref, an attribute) is left out: replacing such a resource picks a new name."""
    found = []
    for logical_id, resource in template.resources.items():
        row = FIXED_IDENTIFIERS.get(str(resource.get("Type", "")))
        if row is None:
            continue
        properties = resource.get("Properties") or {}
        fixed = [template.fixed(at_pointer(properties, pointer)) for pointer in row.name]
        parts = [part for part in fixed if part is not None]
        if len(parts) != len(fixed):
            continue
        name = (
            parts[0]
            if len(parts) == 1
            else ", ".join(f"{_property(pointer)}={part}" for pointer, part in zip(row.name, parts, strict=True))
        )
        found.append(FixedName(logical_id, row, name))
    return found


def _property(pointer: str) -> str:
    return pointer.removeprefix("/properties/").replace("/", ".")


def _naming(row: FixedIdentifier, context: CheckContext) -> NewName:
    settings = NEW_NAMES.get(row.resource_type)
    if settings is not None:
        home = context.settings_home
        return NewName(
            in_words(settings.rename.format(home=home), context.door),
            in_words(settings.drop.format(home=home), context.door),
            settings.restore,
        )
    return NewName(
        rename=f"another {' and '.join(_property(pointer) for pointer in row.name)}",
        drop="remove it from the template and deploy: CloudFormation deletes it",
        restore="add it back with the new properties and deploy",
    )


def _same_value(old: StackTemplate, new: StackTemplate, before: Any, after: Any) -> bool:
    if canonical(before) == canonical(after):
        return True
    fixed_before, fixed_after = old.fixed(before), new.fixed(after)
    return fixed_before is not None and fixed_before == fixed_after


def _shown(template: StackTemplate, value: Any) -> str:
    return "(absent)" if value is None else template.render(value)


def fixed_name_replacement(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """A create-only property changes on a resource that keeps its fixed name: a replacement that cannot be created."""
    deployed = {(named.logical_id, named.row.resource_type): named for named in fixed_names(old)}
    findings = []
    for after in fixed_names(new):
        before = deployed.get((after.logical_id, after.row.resource_type))
        if before is None or before.name != after.name:
            continue  # new here, or renamed: the replacement takes a name of its own
        old_props, new_props = old.properties(after.logical_id), new.properties(after.logical_id)
        changed = [
            pointer
            for pointer in after.row.create_only
            if pointer not in after.row.name
            and not _same_value(old, new, at_pointer(old_props, pointer), at_pointer(new_props, pointer))
        ]
        # The deepest pointers say what changed (EncryptionConfiguration.KmsKey rather than EncryptionConfiguration).
        changed = [pointer for pointer in changed if not any(other.startswith(pointer + "/") for other in changed)]
        if not changed:
            continue
        row, kind, name = after.row, after.row.kind, after.name
        changes = "; ".join(
            f"{_property(pointer)} {_shown(old, at_pointer(old_props, pointer))} -> "
            f"{_shown(new, at_pointer(new_props, pointer))}"
            for pointer in changed
        )
        naming = _naming(row, context)
        findings.append(
            Finding(
                rule="fixed-name-replacement",
                severity=Severity.REFUSE,
                what=f"{kind} {name} ({row.resource_type} {after.logical_id}) is replaced under the same name: "
                f"create-only {changes}",
                why=f"a create-only property changes, so CloudFormation replaces the {kind}: it creates the new one "
                f"first, while {name} is still taken, and the create fails ({_ALREADY_EXISTS}); the stack "
                f"rolls back, and --allow-replace cannot make that create succeed. CloudFormation: {_CUSTOM_NAME}",
                source=f"{NAME_TYPE}; {HANDLER_CONTRACT}; createOnlyProperties of {row.source}",
                safe_sequence=(
                    f"either give the {kind} {naming.rename} and deploy: CloudFormation creates it under the new name, "
                    f"then deletes {name}",
                    f"or keep the name and delete the old {kind} first, in two deploys: {naming.drop}; then "
                    f"{naming.restore}",
                ),
            )
        )
    return findings


def fixed_name_duplicate(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """Two resources of the new template fix the same name: one of the creates fails (also on a first deploy)."""
    by_name: dict[tuple[str, str], list[FixedName]] = {}
    for named in fixed_names(new):
        by_name.setdefault((named.row.resource_type, named.name), []).append(named)
    findings = []
    for (_, name), resources in sorted(by_name.items()):
        if len(resources) < 2:
            continue
        row = resources[0].row
        ids = ", ".join(sorted(named.logical_id for named in resources))
        findings.append(
            Finding(
                rule="fixed-name-duplicate",
                severity=Severity.REFUSE,
                what=f"{row.kind} {name} is defined {len(resources)} times in the new template ({row.resource_type} "
                f"{ids})",
                why=f"each would be created under the same name: the first create takes it and the next fails "
                f'({_ALREADY_EXISTS}); CloudFormation: "Resource names must be unique across all your active stacks."',
                source=f"{NAME_TYPE}; {HANDLER_CONTRACT}",
                safe_sequence=(
                    f"give all but one of them {_naming(row, context).rename}, or let them share one {row.kind}; "
                    "then run preflight again and deploy",
                ),
            )
        )
    return findings
