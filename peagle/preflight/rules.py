"""The transitions CloudFormation and SageMaker refuse or cannot roll back, one function
per rule over (deployed template, new template), each naming its source.

A rule returns findings: REFUSE (the deploy would fail, or do what nobody asked for),
WARN (needs a check preflight could not make) or NOTE (allowed; worth knowing). Every
REFUSE carries the sequence of deploys that gets to the same place safely, written in
the deployment file's terms.
"""

from __future__ import annotations

from typing import Any

from peagle.cloud_assembly import Endpoint, LogGroup, StackTemplate, canonical
from peagle.preflight.component_rules import COMPONENT_RULES
from peagle.preflight.findings import (
    AUTOSCALING_UPDATE,
    STAGED_CONFIG_KEYS,
    AccountProbe,
    CheckContext,
    Finding,
    Rule,
    Severity,
    label,
    strategy_of,
    updated_in_place,
)
from peagle.preflight.fixed_identifiers import ENDPOINT, FIXED_IDENTIFIERS, LOG_GROUP
from peagle.preflight.name_rules import (
    FixedName,
    NewName,
    fixed_name_duplicate,
    fixed_name_replacement,
    fixed_names,
)
from peagle.settings.refs import setting

__all__ = [
    "AccountProbe",
    "CheckContext",
    "Finding",
    "FixedName",
    "NewName",
    "Rule",
    "Severity",
    "check_transition",
    "fixed_name_duplicate",
    "fixed_name_replacement",
    "fixed_names",
]


# --- 1 ----------------------------------------------------------------------------------

# https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-exclusions.html:
# "When doing a blue/green or rolling deployment, your new endpoint configuration must
# have the same variant name as the old endpoint configuration."
GUARDRAIL_EXCLUSIONS = "https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-exclusions.html"
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_UpdateEndpoint.html,
# RetainDeploymentConfig: "Specifies whether to reuse the last deployment configuration.
# The default value is false (the configuration is not reused)."


def variant_set_under_guardrails(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """Variants added, removed or renamed while the update runs blue/green or rolling."""
    findings = []
    for before, after in updated_in_place(old, new):
        if set(before.variant_names) == set(after.variant_names):
            continue
        if before.hosts_components != after.hosts_components:
            continue  # a change of endpoint.mode: rule endpoint-mode says what to do instead
        removed = [name for name in before.variant_names if name not in after.variant_names]
        added = [name for name in after.variant_names if name not in before.variant_names]
        change = (
            f"{label(after)}: production variants {', '.join(before.variant_names)} -> {', '.join(after.variant_names)}"
            + (f" (removed: {', '.join(removed)})" if removed else "")
            + (f" (added: {', '.join(added)})" if added else "")
        )
        guardrail = after.guardrail or (before.guardrail if after.retain_deployment_config else None)
        if guardrail is None:
            findings.append(
                Finding(
                    rule="variant-set",
                    severity=Severity.NOTE,
                    what=change,
                    why="the update runs without deployment guardrails (no DeploymentConfig): SageMaker's plain update, "
                    "no canary, no baking period and no automatic rollback protects this deploy; watch it, and set "
                    "rollout.strategy back with your next deploy",
                    source=GUARDRAIL_EXCLUSIONS,
                )
            )
            continue
        findings.append(
            Finding(
                rule="variant-set",
                severity=Severity.REFUSE,
                what=change,
                why=f"the update runs {guardrail} (the new template's DeploymentConfig), and SageMaker requires: \"When "
                "doing a blue/green or rolling deployment, your new endpoint configuration must have the same variant "
                'name as the old endpoint configuration." UpdateEndpoint would fail and CloudFormation roll back',
                source=GUARDRAIL_EXCLUSIONS,
                safe_sequence=(
                    f"deploy this change once with `{setting('rollout.strategy', 'none')}` in {context.settings_home} "
                    "(SageMaker's plain update: no guardrails, no auto-rollback)",
                    f"then set the strategy back (`{setting('rollout.strategy', strategy_of(guardrail))}`) with your next deploy",
                ),
            )
        )
    return findings


# --- 2 ----------------------------------------------------------------------------------


def autoscaled_variant_update(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """Instance type changed, or variant removed, while the variant is registered with autoscaling."""
    registered = old.autoscaled_variants()
    findings = []
    for before, after in updated_in_place(old, new):
        for variant in before.variants:
            if (before.name, variant.name) not in registered:
                continue
            replacement = after.variant(variant.name)
            if replacement is None:
                findings.append(_autoscaled_variant_removed(before, variant.name, context))
            elif canonical(replacement.first_instance_type) != canonical(variant.first_instance_type):
                # An instance pool's type of priority 1 stands for the variant's type (rule instance-capacity says what
                # else a pool change does).
                findings.append(
                    _autoscaled_instance_type(
                        old,
                        new,
                        before,
                        variant.first_instance_type,
                        replacement.first_instance_type,
                        variant.name,
                        context,
                    )
                )
    return findings


def _autoscaled_instance_type(
    old: StackTemplate,
    new: StackTemplate,
    endpoint: Endpoint,
    old_type: Any,
    new_type: Any,
    variant: str,
    context: CheckContext,
) -> Finding:
    old_text, new_text = old.render(old_type), new.render(new_type)
    dep = context.settings_home
    if endpoint.asynchronous:
        # The asynchronous endpoint's scaling is part of async_inference (stacks/endpoint_stack.py):
        # it cannot be switched off while the endpoint stays.
        off = f"`{setting('async_inference.enabled', False)}` (deletes the asynchronous endpoint; let its queue drain first)"
        on = f"`{setting('async_inference.enabled', True)}`"
    else:
        off, on = f"`{setting('autoscaling.enabled', False)}`", f"`{setting('autoscaling.enabled', True)}`"
    return Finding(
        rule="autoscaled-instance-type",
        severity=Severity.REFUSE,
        what=f"{label(endpoint)}: variant {variant} instance type {old_text} -> {new_text} while the variant is "
        "registered with Application Auto Scaling",
        why='SageMaker: "If the update would change the instance type for any model that is a target for auto '
        'scaling, the update fails." Disabling autoscaling in the same deploy does not help: CloudFormation '
        "deregisters the scalable target only after the endpoint update",
        source=AUTOSCALING_UPDATE,
        safe_sequence=(
            f"set {off} in {dep}, keep `{setting('instance.type', old_text)}`, and deploy (CloudFormation deletes the "
            "scaling policies and deregisters the scalable target)",
            f"set `{setting('instance.type', new_text)}` and deploy",
            f"set {on} and deploy (registers the new instances with autoscaling)",
        ),
    )


def _autoscaled_variant_removed(endpoint: Endpoint, variant: str, context: CheckContext) -> Finding:
    return Finding(
        rule="autoscaled-instance-type",
        severity=Severity.REFUSE,
        what=f"{label(endpoint)}: variant {variant} is removed while it is registered with Application Auto Scaling",
        why="SageMaker requires a variant to be deregistered from auto scaling before an update removes it; "
        "CloudFormation deregisters the scalable target only after the endpoint update",
        source=AUTOSCALING_UPDATE,
        safe_sequence=(
            f"deploy once with autoscaling of variant {variant} removed (`{setting('autoscaling.enabled', False)}` in "
            f"{context.settings_home}), keeping the variant",
            "then remove the variant and deploy",
        ),
    )


# --- 3 ----------------------------------------------------------------------------------

# https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sagemaker-endpoint.html,
# EndpointName: "Update requires: Replacement". And
# https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/using-cfn-updating-stacks-update-behaviors.html:
# "AWS CloudFormation usually creates the replacement resource first, changes references
# from other dependent resources to point to the replacement resource, and then deletes
# the old resource." The endpoint's log group is named after the endpoint and retained
# (peagle_cdk/endpoint_logs.py: RemovalPolicy.RETAIN), so the old one stays behind.
ENDPOINT_NAME_REPLACEMENT = (
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sagemaker-endpoint.html"
)
UPDATE_BEHAVIORS = (
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/using-cfn-updating-stacks-update-behaviors.html"
)


def endpoint_replacement(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """EndpointName changes: CloudFormation creates a second endpoint, then deletes the first."""
    findings = []
    old_by_id = {endpoint.logical_id: endpoint for endpoint in old.endpoints()}
    for after in new.endpoints():
        before = old_by_id.get(after.logical_id)
        if before is None or before.name == after.name:
            continue
        old_name, new_name = before.name or "(generated)", after.name or "(generated)"
        old_logs = _log_group_of(old, before.name)
        new_logs = _log_group_of(new, after.name)
        retained = (
            f"; its log group {old_logs.name} is retained (DeletionPolicy Retain)"
            if old_logs and old_logs.retained
            else ""
        )
        why = (
            f"EndpointName changes require replacement: CloudFormation creates endpoint {new_name} (a second GPU fleet "
            f"while both run), then deletes {old_name}{retained}. Clients calling {old_name} fail once it is deleted"
        )
        if new_logs:
            why += f". The new log group {new_logs.name} must not exist yet: one left from an earlier deploy makes the create fail"
        sequence = []
        if new_logs:
            sequence.append(
                f"if {new_logs.name} exists (`aws logs describe-log-groups --log-group-name-prefix {new_logs.name}`), "
                f"export what you need and delete it: `aws logs delete-log-group --log-group-name {new_logs.name}`"
            )
        sequence += [
            "run preflight again with --allow-replace, then deploy: CloudFormation creates the new endpoint before it "
            "deletes the old one (both fleets run for a while: mind the instance quota)",
            f"switch clients to {new_name} (stack output EndpointName)"
            + (
                f"; delete {old_logs.name} when its logs are no longer needed" if old_logs and old_logs.retained else ""
            ),
        ]
        findings.append(
            Finding(
                rule="endpoint-replacement",
                severity=Severity.NOTE if context.allow_replace else Severity.REFUSE,
                what=f"endpoint {old_name} is replaced by {new_name} (EndpointName changes)"
                + (" (allowed by --allow-replace)" if context.allow_replace else ""),
                why=why,
                source=ENDPOINT_NAME_REPLACEMENT,
                safe_sequence=() if context.allow_replace else tuple(sequence),
            )
        )
    return findings


def physical_name_reused(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """An endpoint, a log group or another resource whose name the template fixes keeps its name under a new
    logical id (a construct id renamed)."""
    findings = []
    moves = [
        (
            "endpoint",
            {e.name: e.logical_id for e in old.endpoints() if e.name},
            {e.name: e.logical_id for e in new.endpoints() if e.name},
        ),
        (
            "log group",
            {name: g.logical_id for name, g in old.named_log_groups().items()},
            {name: g.logical_id for name, g in new.named_log_groups().items()},
        ),
    ]
    # Every other type whose name the template fixes (fixed_identifiers.py): the same create-before-delete.
    for row in FIXED_IDENTIFIERS.values():
        if row.resource_type in (ENDPOINT, LOG_GROUP):
            continue  # read above, as the other rules read them
        moves.append(
            (
                row.kind,
                {named.name: named.logical_id for named in fixed_names(old) if named.row is row},
                {named.name: named.logical_id for named in fixed_names(new) if named.row is row},
            )
        )
    for kind, before, after in moves:
        for name, new_id in after.items():
            old_id = before.get(name)
            if old_id is None or old_id == new_id:
                continue
            findings.append(
                Finding(
                    rule="physical-name-reused",
                    severity=Severity.REFUSE,
                    what=f"{kind} {name} moves from logical id {old_id} to {new_id} (a construct id was renamed)",
                    why=f"a new logical id is a new resource: CloudFormation creates {new_id} before deleting {old_id}, "
                    f"and the name {name} is still taken, so the create fails",
                    source=UPDATE_BEHAVIORS,
                    safe_sequence=(
                        f"restore the construct id that produced {old_id} (construct ids are a contract: "
                        "a rename replaces the resource), then deploy",
                    ),
                )
            )
    return findings


def _log_group_of(template: StackTemplate, endpoint_name: str | None) -> LogGroup | None:
    """The template's log group for an endpoint: SageMaker logs to /aws/sagemaker/Endpoints/<name>."""
    if not endpoint_name:
        return None
    return next((g for name, g in template.named_log_groups().items() if name.endswith(f"/{endpoint_name}")), None)


# --- 4 ----------------------------------------------------------------------------------

# A Model whose ModelDataSource prefix is empty or incomplete fails only when the
# endpoint's instances start (the container finds no target/config.json), after the GPU
# fleet was provisioned; peagle stage writes the layout (docs/batch-and-stage.md).
STAGING_DOC = "docs/batch-and-stage.md"


def weights_prefix(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """The Models' S3 weights prefix changes (or appears): it must be staged before deploying."""
    before = {canonical(uri): uri for uri in old.weights_uris().values()}
    after = {canonical(uri): uri for uri in new.weights_uris().values()}
    findings = []
    old_text = ", ".join(sorted(old.render(uri) for uri in before.values())) or "none"
    for key, uri in sorted(after.items()):
        if key in before:
            continue
        shown = new.render(uri)
        stage = f"stage it first: `{context.stage_command(shown)}`"
        what = f"weights prefix {old_text} -> {shown}"
        if context.account is None:
            findings.append(
                Finding(
                    rule="weights-prefix",
                    severity=Severity.WARN,
                    what=what,
                    why=f"the Model reads {' and '.join(STAGED_CONFIG_KEYS)} under the new prefix when the instances "
                    "start; without --stack preflight cannot look: make sure it is staged before deploying",
                    source=STAGING_DOC,
                    safe_sequence=(stage,),
                )
            )
            continue
        resolved = context.account.resolve(new, uri)
        if resolved is None:
            findings.append(
                Finding(
                    rule="weights-prefix",
                    severity=Severity.WARN,
                    what=what,
                    why="the prefix cannot be resolved outside CloudFormation (it refers to more than the account's "
                    "pseudo parameters); make sure it is staged before deploying",
                    source=STAGING_DOC,
                    safe_sequence=(stage,),
                )
            )
            continue
        missing = context.account.missing_objects(resolved, STAGED_CONFIG_KEYS)
        if missing:
            findings.append(
                Finding(
                    rule="weights-prefix",
                    severity=Severity.REFUSE,
                    what=f"{what} ({resolved})",
                    why=f"{', '.join(resolved + key for key in missing)} not found: the endpoint's instances would start, "
                    "find no weights and fail the health check",
                    source=STAGING_DOC,
                    safe_sequence=(stage, "then run preflight again and deploy"),
                )
            )
        else:
            findings.append(
                Finding(
                    rule="weights-prefix",
                    severity=Severity.NOTE,
                    what=f"{what} ({resolved})",
                    why=f"staged: {' and '.join(STAGED_CONFIG_KEYS)} found",
                    source=STAGING_DOC,
                )
            )
    if before and not after:
        findings.append(
            Finding(
                rule="weights-prefix",
                severity=Severity.WARN,
                what=f"weights prefix {old_text} -> none",
                why="the Models no longer read weights from S3: with `{setting('artifacts.source', 'hub')}` the "
                f"container downloads target and drafter at start-up (`{setting('network.isolation', False)}`)",
                source=STAGING_DOC,
            )
        )
    return findings


# --- 5 ----------------------------------------------------------------------------------

# https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_CreateLogGroup.html
# lists ResourceAlreadyExistsException, "The specified resource already exists.", and
# the endpoint's log groups are retained after the stack lets go of them (docs/deployment.md,
# "Deleting": "the next deploy with the same name fails on the existing log group").
CREATE_LOG_GROUP = "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_CreateLogGroup.html"


def log_group_name_taken(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """A named log group the deploy creates already exists in the account (left by an earlier stack)."""
    findings = []
    existing = old.named_log_groups()
    for name in sorted(set(new.named_log_groups()) - set(existing)):
        if context.account is None:
            findings.append(
                Finding(
                    rule="log-group-name",
                    severity=Severity.NOTE,
                    what=f"log group {name} is created",
                    why="a log group with this name left by an earlier deploy (they are retained) makes the create "
                    f"fail; --stack checks it (`aws logs describe-log-groups --log-group-name-prefix {name}`)",
                    source=CREATE_LOG_GROUP,
                )
            )
        elif context.account.log_group_exists(name):
            findings.append(
                Finding(
                    rule="log-group-name",
                    severity=Severity.REFUSE,
                    what=f"log group {name} is created, but it already exists in the account",
                    why="CreateLogGroup fails with ResourceAlreadyExistsException; it was left by an earlier deploy "
                    "(the endpoint's log groups are retained)",
                    source=CREATE_LOG_GROUP,
                    safe_sequence=(
                        f"export what you need from it, then `aws logs delete-log-group --log-group-name {name}`",
                        "run preflight again and deploy",
                    ),
                )
            )
    return findings


# --- 7 ----------------------------------------------------------------------------------

# No AWS document we found describes UpdateEndpoint between an endpoint config whose variants
# serve models and one for inference components (managed instance scaling, no ModelName), or
# back: the UpdateEndpoint reference and the deployment-guardrails pages cover variant
# configs, the inference-component pages create new endpoints. What we cannot show works on
# a live endpoint, we refuse, with a sequence that never updates across modes.
UPDATE_ENDPOINT = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_UpdateEndpoint.html"


def endpoint_mode_switch(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """endpoint.mode changed on an endpoint that keeps its name."""
    findings = []
    for before, after in updated_in_place(old, new):
        if before.hosts_components == after.hosts_components:
            continue
        modes = ("production variants", "inference components")
        findings.append(
            Finding(
                rule="endpoint-mode",
                severity=Severity.REFUSE,
                what=f"{label(after)}: {modes[before.hosts_components]} -> {modes[after.hosts_components]} "
                "(endpoint.mode)",
                why="the endpoint would be updated in place to a config of the other kind; no AWS document describes "
                "that update, and a failed one leaves the live endpoint to CloudFormation's rollback",
                source=UPDATE_ENDPOINT,
                safe_sequence=(
                    f"deploy the new mode as a second endpoint: set a new `{setting('name')}` in {context.settings_home} "
                    "(a new stack and endpoint beside the old one)",
                    "move clients to it (with inference components: `--inference-component <name>-primary`) and "
                    "check it with `peagle smoke`",
                    "delete the old stack (`cdk destroy <old name>-endpoint`); its log group is retained",
                ),
            )
        )
    return findings


# AWS::SageMaker::Model: PrimaryContainer is create-only ("createOnlyProperties" of the resource's schema, as
# shipped with cfn-lint 1.58.0, cfnlint/data/schemas/resources/f713429cd3f0c181.json; CloudFormation User Guide,
# AWS::SageMaker::Model, PrimaryContainer "Update requires: Replacement").
MODEL_REPLACEMENT = "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-model.html"
IMAGE_PATHS = {
    "in_account": "built in CodeBuild during the deploy (no Docker here)",
    "local_docker": "built and pushed by this machine's Docker",
    "repository": "an image you pushed",
}


def image_source(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """The serving image's source changes (local Docker <-> in-account build): allowed, and what it does."""
    before, after = old.image_sources(), new.image_sources()
    findings = []
    for logical_id, source in sorted(after.items()):
        previous = before.get(logical_id)
        if previous is None or previous == source:
            continue
        build = (
            "; the first in-account build runs before them (docs/deployment.md: how to follow it)"
            if source == "in_account"
            else ""
        )
        findings.append(
            Finding(
                rule="image-source",
                severity=Severity.NOTE,
                what=f"serving image of {logical_id}: {IMAGE_PATHS[previous]} -> {IMAGE_PATHS[source]}",
                why="the same build context and vLLM base from another place: the Model and its endpoint config are "
                "replaced (a Model's container is create-only) and the endpoint updates in place onto them, as with any "
                f"image change, under its rollout policy{build}",
                source=MODEL_REPLACEMENT,
            )
        )
    return findings


# --- routing ----------------------------------------------------------------------------

# CloudFormation Template Reference, AWS::SageMaker::EndpointConfig RoutingConfig
# (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-sagemaker-endpointconfig-routingconfig.html):
# PrefixAwareRoutingConfig and RoutingStrategy, each "Update requires: Replacement"; so do the two fields of
# PrefixAwareRoutingConfig (aws-properties-sagemaker-endpointconfig-prefixawareroutingconfig.html). The endpoint config
# is replaced and the endpoint, which names it, is updated onto the new one (UpdateEndpoint) under its DeploymentConfig:
# "If this update policy is specified, SageMaker creates a new fleet during the deployment while maintaining the old
# fleet" (SageMaker API Reference, DeploymentConfig, BlueGreenUpdatePolicy).
ROUTING_REPLACEMENT = (
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
    "aws-properties-sagemaker-endpointconfig-routingconfig.html"
)
_DEFAULT_ROUTING = {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}


def _routing_words(template: StackTemplate, routing: Any) -> str:
    config = routing if isinstance(routing, dict) else _DEFAULT_ROUTING
    strategy = template.render(config.get("RoutingStrategy"))
    prefix = config.get("PrefixAwareRoutingConfig")
    if isinstance(prefix, dict):
        strategy += (
            f" (prefix {template.render(prefix.get('PrefixLength'))} bytes, "
            f"threshold {template.render(prefix.get('ConcurrencyThreshold'))})"
        )
    return strategy


def routing_change(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """A variant's RoutingConfig changes: the endpoint config is replaced and the endpoint updated onto it."""
    findings = []
    for before, after in updated_in_place(old, new):
        for variant in after.variants:
            previous = before.variant(variant.name)
            if previous is None:
                continue  # a variant added: rule variant-set
            was = previous.routing if previous.routing is not None else _DEFAULT_ROUTING
            now = variant.routing if variant.routing is not None else _DEFAULT_ROUTING
            if canonical(was) == canonical(now):
                continue
            findings.append(
                Finding(
                    rule="routing",
                    severity=Severity.WARN if after.hosts_components else Severity.NOTE,
                    what=f"{label(after)}: variant {variant.name} routing {_routing_words(old, was)} -> "
                    f"{_routing_words(new, now)} ({setting('endpoint.routing')})",
                    why='RoutingConfig "Update requires: Replacement": CloudFormation creates a new endpoint config '
                    f"and updates the endpoint onto it, {_config_update_words(before, after)}. The endpoint keeps its "
                    "name and serves throughout; a prefix-aware instance's prefix cache starts empty",
                    source=ROUTING_REPLACEMENT,
                )
            )
    return findings


def _config_update_words(before: Endpoint, after: Endpoint) -> str:
    """What updating an endpoint onto a new endpoint config does, under its DeploymentConfig."""
    guardrail = after.guardrail or (before.guardrail if after.retain_deployment_config else None)
    if after.hosts_components:
        return (
            "the endpoint that hosts the inference components; no AWS page says what that update does to "
            "their running copies: expect them to start again (a model download and vLLM start each), and "
            "deploy it when a cold start is acceptable"
        )
    if guardrail == "blue/green":
        return (
            "blue/green (the endpoint's DeploymentConfig): a second fleet of the same size starts, takes the "
            "traffic in its steps and serves beside the first until the baking period ends; both fleets are "
            "billed meanwhile"
        )
    if guardrail == "rolling":
        return "rolling (the endpoint's DeploymentConfig): instances are replaced a batch at a time"
    return "SageMaker's plain update (no DeploymentConfig): a new fleet, with no guardrails or auto-rollback"


# --- metrics config ---------------------------------------------------------------------

# CloudFormation resource schema of AWS::SageMaker::EndpointConfig (cfn-lint 1.58.0's copy,
# src/cfnlint/data/schemas/resources/3529e18613d41f86.json): "/properties/MetricsConfig" is one of its
# createOnlyProperties, so a change replaces the endpoint config and the endpoint is updated onto the new one, as for
# routing above. Left out, EnableDetailedObservability is on: "The default value for new endpoint configurations is
# True. For existing endpoint configurations created before this feature, the value is False unless explicitly set"
# (SageMaker API Reference, MetricsConfig, botocore 1.44.5), so a deployed config that stated none may have had it
# either way; the new one states it (peagle_cdk/endpoint_metrics_config.py).
METRICS_CONFIG = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_MetricsConfig.html"


def _metrics_words(template: StackTemplate, metrics: Any) -> str:
    if not isinstance(metrics, dict):
        return "not stated (SageMaker's default)"
    return ", ".join(f"{key} {template.render(value)}" for key, value in sorted(metrics.items()))


def metrics_config_change(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """An endpoint config's MetricsConfig changes (or is stated for the first time): the config is replaced and the
    endpoint updated onto it."""
    findings = []
    for before, after in updated_in_place(old, new):
        if canonical(before.metrics_config) == canonical(after.metrics_config):
            continue
        unstated = (
            " The deployed config stated none: SageMaker turns detailed observability on for configs created after "
            "June 17, 2026 and leaves it off for older ones, so it may have been on, and billed, until now"
            if before.metrics_config is None
            else ""
        )
        findings.append(
            Finding(
                rule="metrics-config",
                severity=Severity.WARN if after.hosts_components else Severity.NOTE,
                what=f"{label(after)}: MetricsConfig {_metrics_words(old, before.metrics_config)} -> "
                f"{_metrics_words(new, after.metrics_config)} ({setting('observability.detailed_observability')}, "
                f"{setting('observability.metric_publish_frequency_seconds')})",
                why="MetricsConfig is create-only on AWS::SageMaker::EndpointConfig: CloudFormation creates a new "
                f"endpoint config and updates the endpoint onto it, {_config_update_words(before, after)}. The "
                f"endpoint keeps its name and serves throughout.{unstated}",
                source=METRICS_CONFIG,
            )
        )
    return findings


# --- instance pools, provision timeout, capacity reservation ---------------------------------

# CloudFormation resource schema of AWS::SageMaker::EndpointConfig (cfn-lint 1.58.0's copy,
# src/cfnlint/data/schemas/resources/3529e18613d41f86.json): "/properties/ProductionVariants" is one of its
# createOnlyProperties, and InstancePools, VariantInstanceProvisionTimeoutInSeconds and CapacityReservationConfig are
# ProductionVariant's: adding, removing or reordering a pool type, or changing the timeout or the reservation, creates a
# new endpoint config and updates the endpoint onto it. How SageMaker provisions the new fleet's types: "Deploy to
# multiple instance types with instance pools" (below).
INSTANCE_POOLS = "https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-heterogeneous.html"


def _capacity_words(template: StackTemplate, capacity: Any) -> str:
    pools = capacity.get("InstancePools")
    words = []
    if isinstance(pools, list):
        ordered = sorted((p for p in pools if isinstance(p, dict)), key=lambda p: str(p.get("Priority")))
        words.append("pool " + " > ".join(template.render(p.get("InstanceType")) for p in ordered))
    if "VariantInstanceProvisionTimeoutInSeconds" in capacity:
        words.append(f"provision timeout {template.render(capacity['VariantInstanceProvisionTimeoutInSeconds'])} s")
    reservation = capacity.get("CapacityReservationConfig")
    if isinstance(reservation, dict):
        words.append(f"reservation {template.render(reservation.get('MlReservationArn'))}")
    return ", ".join(words) or "one instance type, on demand"


def _capacity_shape(capacity: Any) -> Any:
    """What a change is judged on: the pool's types by priority (not the override Models' generated names: a Model
    replaced replaces the config anyway), the timeout, the reservation."""
    pools = capacity.get("InstancePools")
    types = (
        sorted((str(p.get("Priority")), canonical(p.get("InstanceType"))) for p in pools if isinstance(p, dict))
        if isinstance(pools, list)
        else None
    )
    rest = {key: canonical(value) for key, value in capacity.items() if key != "InstancePools"}
    return (types, sorted(rest.items()))


def capacity_change(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    """A variant's instance pool, provision timeout or capacity reservation changes: the endpoint config is replaced
    and the endpoint updated onto it, its new fleet provisioned by the new pool's priorities."""
    findings = []
    registered = old.autoscaled_variants()
    for before, after in updated_in_place(old, new):
        for variant in after.variants:
            previous = before.variant(variant.name)
            if previous is None or _capacity_shape(previous.capacity) == _capacity_shape(variant.capacity):
                continue
            scaled = (
                " The variant is registered with Application Auto Scaling, which fails an update that changes "
                "a scaled model's instance type; whether a changed pool counts as one is not documented (not "
                "checked): deploy it when a failed update is acceptable, or follow rule autoscaled-instance-type's "
                "sequence"
                if (before.name, variant.name) in registered
                else ""
            )
            findings.append(
                Finding(
                    rule="instance-capacity",
                    severity=Severity.WARN if scaled else Severity.NOTE,
                    what=f"{label(after)}: variant {variant.name} {_capacity_words(old, previous.capacity)} -> "
                    f"{_capacity_words(new, variant.capacity)} ({setting('instance.fallback_types')}, "
                    f"{setting('instance.provision_timeout_seconds')}, {setting('instance.ml_reservation_arn')})",
                    why="ProductionVariants are create-only on AWS::SageMaker::EndpointConfig: CloudFormation creates "
                    f"a new endpoint config and updates the endpoint onto it, {_config_update_words(before, after)}. "
                    'The new fleet is provisioned by priority ("If SageMaker AI encounters an insufficient capacity '
                    'error (ICE) for the current instance type, it automatically falls back to the next pool")'
                    + scaled,
                    source=INSTANCE_POOLS,
                )
            )
    return findings


RULES: tuple[Rule, ...] = (
    variant_set_under_guardrails,
    endpoint_mode_switch,
    autoscaled_variant_update,
    endpoint_replacement,
    physical_name_reused,
    fixed_name_replacement,
    fixed_name_duplicate,
    weights_prefix,
    log_group_name_taken,
    image_source,
    routing_change,
    metrics_config_change,
    capacity_change,
)


def check_transition(old: StackTemplate, new: StackTemplate, context: CheckContext) -> list[Finding]:
    return [
        finding.in_words(context.door, context.recorded)
        for rule in (*RULES, *COMPONENT_RULES)
        for finding in rule(old, new, context)
    ]
