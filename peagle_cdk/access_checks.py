"""The runtime-access check as a CDK policy-validation plugin, beside cdk-nag:

    Validations.of(app).add_plugins(AwsSolutionsChecks(app), RuntimeAccessChecks())

After the app synthesizes, CDK hands every stack's template to each plugin ("Policy Validation", aws-cdk-lib
README: a plugin implements IPolicyValidationPluginBeta1 and its validate() receives the template paths); this
one evaluates, as IAM would, whether each principal may do what AWS will ask of it at runtime
(peagle/access/check.py) and fails the synth on a missing grant, naming the principal, action, resource and
the prop that grants it. A request the templates cannot decide (a key or bucket named by ARN, the CDK bootstrap's
asset bucket) lets the synth pass without a word, and `peagle access` lists each with what to verify by hand: a
warning here would print on every synth of an app that builds its image in the account (its build context is in
the bootstrap's bucket), and a warning on every synth trains users to skip the ones that matter.

Why a plugin as well as `peagle access`: a synth that would deploy an endpoint unable to read its own weights
should not pass, in any app, without a second command to remember; the command checks an assembly already
synthesized (a CI job's artifact), with the same engine and the same words.
"""

from __future__ import annotations

from pathlib import Path

import jsii
from aws_cdk import (
    IPolicyValidationContextBeta1,
    IPolicyValidationPluginBeta1,
    PolicyValidationPluginReportBeta1,
    PolicyViolatingResourceBeta1,
    PolicyViolationBeta1,
)

from peagle.access.check import Outcome, check_runtime_access, fix_for
from peagle.cloud_assembly import Assembly

RULE = "peagle-runtime-access"


@jsii.implements(IPolicyValidationPluginBeta1)
class RuntimeAccessChecks:
    """A missing runtime grant fails the synth (one violation per principal and action)."""

    @property
    def name(self) -> str:
        return "peagle-runtime-access"

    @property
    def version(self) -> str | None:
        return None

    @property
    def rule_ids(self) -> list[str] | None:
        return [RULE]

    def validate(self, context: IPolicyValidationContextBeta1) -> PolicyValidationPluginReportBeta1:
        paths = list(context.template_paths)
        outcomes = check_runtime_access(Assembly.from_template_files(paths))
        violations = [_violation(outcome, paths) for outcome in outcomes if outcome.missing]
        return PolicyValidationPluginReportBeta1(success=not violations, violations=violations)


def _violation(outcome: Outcome, paths: list[str]) -> PolicyViolationBeta1:
    need, decision = outcome.need, outcome.decision
    assert decision is not None, "a missing grant is a decision that denies"
    template = next((path for path in paths if Path(path).stem.startswith(need.stack.id)), paths[0])
    # The resource to point at: the role, or for a request by whoever deploys the stack, the resource asked for.
    logical_id = need.resource_in[1] if need.deployer and need.resource_in else outcome.principal.split("/", 1)[-1]
    return PolicyViolationBeta1(
        rule_name=RULE,
        description=f"{outcome.principal} may not {need.action} on {need.resource}: needed because {need.why}. "
        f"{decision.explain()}",
        fix=fix_for(outcome),
        severity="error",
        violating_resources=[
            PolicyViolatingResourceBeta1(resource_logical_id=logical_id, template_path=template, locations=[])
        ],
    )
