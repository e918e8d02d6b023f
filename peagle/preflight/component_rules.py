"""Transitions of inference components (endpoint.mode inference_components) that SageMaker
refuses, or that may do what nobody asked for: the rules of rules.py, for
AWS::SageMaker::InferenceComponent and its copy count's scalable target.

Facts every rule here builds on, from the CloudFormation resource schema of
AWS::SageMaker::InferenceComponent (`aws cloudformation describe-type --type RESOURCE
--type-name AWS::SageMaker::InferenceComponent`; the copy read here ships with cfn-lint 1.58.0,
aws-cloudformation/cfn-lint src/cfnlint/data/schemas/resources/eddb9f584c0b6de8.json):

- it has no "createOnlyProperties": a change to any property, InferenceComponentName and
  EndpointName included, is an update of the same resource, never a replacement;
- "writeOnlyProperties" include "/properties/RuntimeConfig/CopyCount" and
  "/properties/DeploymentConfig": CloudFormation cannot read the live copy count back, it only
  knows what the template said;
- the update handler's permissions are "sagemaker:UpdateInferenceComponent",
  "sagemaker:UpdateInferenceComponentRuntimeConfig", "sagemaker:DescribeInferenceComponent" and
  the tag actions.

The handler's source is not public (aws-cloudformation/aws-cloudformation-resource-providers-sagemaker,
at a9c8d47, has no aws-sagemaker-inferencecomponent), so what exactly it sends on update is not
known; the rules that depend on it warn, and say what is known and what is assumed.

CloudFormation calls the update handler only for resources whose template changed ("Understand
update behaviors of stack resources",
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/using-cfn-updating-stacks-update-behaviors.html:
"CloudFormation updates resources based on differences between what you submit and the stack's
current template. Resources that haven't changed run without disruption during the update
process."). A component also changes when its Model is replaced (a Model's properties require
replacement, so its generated ModelName changes).
"""

from __future__ import annotations

from typing import Any

from peagle.cloud_assembly import Component, StackTemplate, canonical
from peagle.preflight.findings import (
    AUTOSCALING_UPDATE,
    CheckContext,
    Finding,
    Rule,
    Severity,
    label,
    updated_in_place,
)
from peagle.settings.refs import setting

COMPONENT_SCHEMA = (
    "CloudFormation resource schema of AWS::SageMaker::InferenceComponent (no createOnlyProperties; "
    "writeOnlyProperties RuntimeConfig/CopyCount, DeploymentConfig)"
)
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_UpdateInferenceComponent.html (and
# botocore 1.44.5's SageMaker model): the request names the component to update, "InferenceComponentName
# ... The name of the inference component." (required), and otherwise takes Specification(s),
# RuntimeConfig and DeploymentConfig: no new name, no EndpointName.
UPDATE_INFERENCE_COMPONENT = (
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_UpdateInferenceComponent.html"
)
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentRollingUpdatePolicy.html,
# MaximumBatchSize: "The value must be between 5% to 50% of the copy count of the inference component."
# And API_InferenceComponentCapacitySize.html, Value: "Valid Range: Minimum value of 1."
ROLLING_UPDATE_POLICY = (
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentRollingUpdatePolicy.html"
)
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentRuntimeConfig.html,
# CopyCount: "The number of runtime copies of the model container to deploy with the inference
# component. Each copy can serve inference requests." (required in the API's RuntimeConfig).
RUNTIME_CONFIG = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentRuntimeConfig.html"


def component_pairs(old: StackTemplate, new: StackTemplate) -> list[tuple[Component, Component]]:
    """Components in both templates (same logical id): CloudFormation updates them in place."""
    new_by_id = {component.logical_id: component for component in new.components()}
    return [(before, new_by_id[before.logical_id]) for before in old.components() if before.logical_id in new_by_id]


def component_updated(old: StackTemplate, new: StackTemplate, before: Component, after: Component) -> bool:
    """CloudFormation calls the component's update handler: a property changed, or its Model is replaced."""
    if canonical(before.properties) != canonical(after.properties):
        return True
    if before.model_id is None or after.model_id is None:
        return False
    return canonical(old.properties(before.model_id)) != canonical(new.properties(after.model_id))


def _same_identity(before: Component, after: Component) -> bool:
    return all(
        canonical(before.properties.get(key)) == canonical(after.properties.get(key))
        for key in ("InferenceComponentName", "EndpointName")
    )


def _number(template: StackTemplate, value: Any) -> float | None:
    try:
        return float(template.resolve(value) or "")
    except ValueError:
        return None


def _name(component: Component) -> str:
    return component.name or component.logical_id


def _describe_copy_count(name: str) -> str:
    return (
        f"read the live copy count: `aws sagemaker describe-inference-component --inference-component-name {name} "
        "--query RuntimeConfig.CurrentCopyCount`"
    )


# --- 1 ----------------------------------------------------------------------------------

# https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-scaling-update.html ("Update endpoints that
# use auto scaling"): "When you update an endpoint, Application Auto Scaling checks to see whether any of
# the models on that endpoint are targets for auto scaling. If the update would change the instance type
# for any model that is a target for auto scaling, the update fails." On an inference-component endpoint
# the models are the components' and their scaling targets are the copy counts; the page predates
# components and names variants only, so this rule applies its wording, not a sentence about components.
# The deployed template decides, as in rules.py rule 2: CloudFormation deletes a dropped ScalableTarget
# only in the cleanup phase, after the endpoint update.


def component_instance_type(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """The instance pool's instance type changes while component copy counts are scaling targets."""
    targets = old.copy_count_targets()
    findings = []
    for before, after in updated_in_place(old, new):
        if not (before.hosts_components and after.hosts_components):
            continue  # a change of endpoint.mode: rule endpoint-mode
        scaled = sorted(
            component.name
            for component in old.components()
            if component.name in targets and component.endpoint_name == before.name
        )
        if not scaled:
            continue
        for variant in before.variants:
            replacement = after.variant(variant.name)
            if replacement is None or canonical(replacement.instance_type) == canonical(variant.instance_type):
                continue
            old_type, new_type = old.render(variant.instance_type), new.render(replacement.instance_type)
            dep = context.settings_home
            # A copy count may scale to zero only with autoscaling on (peagle/planning/deployment_rules.py, rule
            # inference-components): while it is off, the floor must be a fixed count.
            to_zero = [name for name in scaled if _number(old, targets[name].min_capacity) == 0]
            fixed = (
                f" with `{setting('autoscaling.min_capacity')}` unset (a fixed count of "
                f"`{setting('endpoint.inference_components.initial_copies')}`; "
                f"{', '.join(to_zero)} may scale to zero only with autoscaling on)"
                if to_zero
                else ""
            )
            findings.append(
                Finding(
                    rule="component-instance-type",
                    severity=Severity.REFUSE,
                    what=f"{label(before)}: instance type {old_type} -> {new_type} (variant {variant.name}, the "
                    f"instances the components run on) while the copy counts of {', '.join(scaled)} are registered "
                    "with Application Auto Scaling",
                    why='SageMaker: "If the update would change the instance type for any model that is a target for '
                    'auto scaling, the update fails." The models on this endpoint are its components, and their '
                    "scaling targets are the copy counts (the page names variants; it has no sentence about "
                    "components, so this applies its wording). Disabling autoscaling in the same deploy does not "
                    "help: CloudFormation deregisters the scalable targets only after the endpoint update",
                    source=AUTOSCALING_UPDATE,
                    safe_sequence=(
                        f"set `{setting('autoscaling.enabled', False)}` in {dep}{fixed}, keep "
                        f"`{setting('instance.type', old_type)}`, and deploy "
                        "(CloudFormation deletes the copy-count scaling policies and deregisters the targets; the "
                        "copy counts stay where autoscaling left them)",
                        f"set `{setting('instance.type', new_type)}` and deploy",
                        f"set `{setting('autoscaling.enabled', True)}` and deploy (registers the copy counts again)"
                        + (f", with `{setting('autoscaling.min_capacity', 0)}` again" if to_zero else ""),
                    ),
                )
            )
    return findings


# --- 2 ----------------------------------------------------------------------------------

# No create-only property (COMPONENT_SCHEMA), so a new InferenceComponentName or EndpointName under the
# same logical id is an in-place update; UpdateInferenceComponent identifies the component by its name
# and has no field for a new name or endpoint (UPDATE_INFERENCE_COMPONENT). Whatever the handler then
# does (look up the new name and fail, or something undocumented), it cannot rename or move the
# component. Refused: --allow-replace accepts an endpoint replacement, and does not cover this.


def component_rename(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """A component renamed, or moved to another endpoint, under the same logical id."""
    findings = []
    for before, after in component_pairs(old, new):
        if _same_identity(before, after):
            continue
        old_name = old.render(before.properties.get("InferenceComponentName", "(generated)"))
        new_name = new.render(after.properties.get("InferenceComponentName", "(generated)"))
        old_endpoint = old.render(before.properties.get("EndpointName"))
        new_endpoint = new.render(after.properties.get("EndpointName"))
        changes = []
        if old_name != new_name:
            changes.append(f"InferenceComponentName {old_name} -> {new_name}")
        if old_endpoint != new_endpoint:
            changes.append(f"EndpointName {old_endpoint} -> {new_endpoint}")
        findings.append(
            Finding(
                rule="component-rename",
                severity=Severity.REFUSE,
                what=f"inference component {old_name} (logical id {before.logical_id}): {'; '.join(changes)}",
                why="no property of AWS::SageMaker::InferenceComponent is create-only, so CloudFormation updates this "
                "component in place instead of creating a new one; UpdateInferenceComponent identifies the component "
                'by "InferenceComponentName ... The name of the inference component." and has no field for a new '
                "name or endpoint. The update handler's source is not public and no AWS document says what it does "
                "here; it cannot rename or move the component, so expect the update to fail and CloudFormation to "
                "roll back (--allow-replace does not cover this)",
                source=UPDATE_INFERENCE_COMPONENT,
                safe_sequence=(
                    f"keep the component's name and endpoint in this stack: restore `{setting('name')}` in "
                    f"{context.settings_home} (the component is named `<name>-primary`, the endpoint "
                    "`<name>-endpoint`), or the construct's component name",
                    f"to serve as {new_name}, deploy it as a second stack beside this one: a new `name` is a new stack "
                    "(`peagle preflight --stack` reports a first deploy), then deploy it",
                    f"move clients to `--inference-component {new_name}` and check it with `peagle smoke`; then "
                    f"delete the old stack (`cdk destroy {old_endpoint}` in this app, where stack and endpoint share "
                    "the name); its log groups are retained",
                ),
            )
        )
    return findings


# --- 3 ----------------------------------------------------------------------------------

# ROLLING_UPDATE_POLICY: a batch is "between 5% to 50% of the copy count", and at least 1 copy. A
# component whose copy count may scale to 0 (MinCapacity 0 is allowed for inference components:
# RegisterScalableTarget MinCapacity, "For the following resources, the minimum value allowed is 0.
# ... SageMaker inference components", botocore 1.44.5) can be at 0 copies when the update starts,
# where no batch meets those bounds. No SageMaker page we found (the UpdateInferenceComponent and
# rolling-policy references, "Scale an endpoint to zero instances",
# https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-zero-instances.html) says
# what a rolling update of a component with 0 copies does: a warning, not a refusal.


def component_rolling_update_at_zero(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """A rolling update of a component whose copy count may be 0 when the update runs."""
    targets = old.copy_count_targets()
    findings = []
    for before, after in component_pairs(old, new):
        policy = after.rolling_update_policy
        target = targets.get(before.name or "")
        if policy is None or target is None or not _same_identity(before, after):
            continue
        if _number(old, target.min_capacity) != 0 or not component_updated(old, new, before, after):
            continue
        name = _name(before)
        batch = policy.get("MaximumBatchSize") or {}
        batch_text = f"{new.render(batch.get('Value'))} {new.render(batch.get('Type'))}" if batch else "unset"
        findings.append(
            Finding(
                rule="component-rolling-at-zero",
                severity=Severity.WARN,
                what=f"inference component {name} is updated with a rolling update (MaximumBatchSize {batch_text}) "
                f"while its scaling target allows 0 copies (MinCapacity 0, max {old.render(target.max_capacity)})",
                why='the update may start while the component is scaled to zero. SageMaker: MaximumBatchSize "must '
                'be between 5% to 50% of the copy count of the inference component", and a batch is at least 1 '
                "copy: at 0 copies no batch meets that. No SageMaker document we found says what a rolling update "
                "of a component with 0 copies does (fail, wait, or start copies first). Preflight cannot see the "
                "live copy count",
                source=ROLLING_UPDATE_POLICY,
                safe_sequence=(
                    _describe_copy_count(name),
                    "if it is 0, wake the component first (`peagle invoke --endpoint "
                    f"{before.endpoint_name or '<endpoint>'} --inference-component {name} --prompt hello`; the client "
                    "waits through the cold start), then deploy while a copy serves, within "
                    f"`{setting('endpoint.inference_components.scale_to_zero_after_idle_minutes')}`",
                ),
            )
        )
    return findings


# --- 4 ----------------------------------------------------------------------------------

# Known (COMPONENT_SCHEMA): CopyCount is write-only, so CloudFormation holds the template's value, not
# the live one; the update handler may call UpdateInferenceComponentRuntimeConfig, whose only setting is
# the copy count, and UpdateInferenceComponent takes RuntimeConfig.CopyCount too (RUNTIME_CONFIG).
# Assumed (the handler's source is not public): an update of the component sends the template's
# CopyCount, so the copy count autoscaling set is reset to it. Variant endpoints have
# RetainAllVariantProperties for this (UpdateEndpoint); UpdateInferenceComponent has no such flag.


def component_copy_count_reset(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """An update of a component whose copy count autoscaling owns: the template's CopyCount may be sent."""
    targets = old.copy_count_targets()
    findings = []
    for before, after in component_pairs(old, new):
        target = targets.get(before.name or "")
        if target is None or not _same_identity(before, after) or not component_updated(old, new, before, after):
            continue
        name = _name(before)
        old_count, new_count = old.render(before.copy_count), new.render(after.copy_count)
        changed = canonical(before.copy_count) != canonical(after.copy_count)
        bounds = f"{old.render(target.min_capacity)}..{old.render(target.max_capacity)}"
        findings.append(
            Finding(
                rule="component-copy-count-reset",
                severity=Severity.WARN,
                what=f"inference component {name} is updated while Application Auto Scaling owns its copy count "
                f"({bounds}); the template's RuntimeConfig.CopyCount "
                + (f"changes {old_count} -> {new_count}" if changed else f"is {new_count}"),
                why="known: in CloudFormation's schema RuntimeConfig.CopyCount is write-only (CloudFormation cannot "
                "read the live count) and the update handler has permission to call UpdateInferenceComponentRuntimeConfig; "
                "UpdateInferenceComponent has no flag to keep the live count. Assumed (the handler's source is not "
                f"public): the update sends the template's CopyCount {new_count}, resetting the count autoscaling "
                f"set: a component serving on more copies drops to {new_count} until scale-out acts again, one at 0 "
                f"starts {new_count}"
                + (". The template's CopyCount changes, so it is sent on any reading" if changed else ""),
                source=RUNTIME_CONFIG,
                safe_sequence=(
                    _describe_copy_count(name),
                    f"deploy while the live count is close to {new_count} (low traffic), or set "
                    f"`{setting('endpoint.inference_components.initial_copies')}` in {context.settings_home} to the live "
                    "count for "
                    "this deploy; autoscaling moves it from there",
                ),
            )
        )
    return findings


COMPONENT_RULES: tuple[Rule, ...] = (
    component_instance_type,
    component_rename,
    component_rolling_update_at_zero,
    component_copy_count_reset,
)
