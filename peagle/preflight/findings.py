"""What a preflight rule returns and what it is given: a finding (its severity, what changes, why, the source and
the safe sequence of deploys), the context of one check, and the helpers every rule module uses
(peagle/preflight/rules.py, component_rules.py, name_rules.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from peagle.cloud_assembly import Endpoint, StackTemplate
from peagle.settings.refs import Door
from peagle.settings.words import in_words

if TYPE_CHECKING:
    from peagle.planning.planner import Plan

# What `peagle stage` writes under a weights prefix (peagle/stage/plan.py's layout), and
# what the launcher looks for first (inference_image/peagle_serve/model_layout.py).
STAGED_CONFIG_KEYS = ("target/config.json", "drafter/config.json")


class Severity(str, Enum):
    REFUSE = "refuse"
    WARN = "warn"
    NOTE = "note"


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    what: str  # what changes
    why: str  # why AWS refuses it, or what to know
    source: str  # the document that says so
    safe_sequence: tuple[str, ...] = ()

    def in_words(self, door: Door, recorded: Plan | None = None) -> Finding:
        """This finding with the settings it names spelled for ``door`` (peagle.settings.words); ``recorded``: the plan
        the new template records, whose settings a props step keeps (the whole prop, peagle/settings/props_values.py)."""
        return replace(
            self,
            what=in_words(self.what, door, recorded),
            why=in_words(self.why, door, recorded),
            safe_sequence=tuple(in_words(step, door, recorded) for step in self.safe_sequence),
        )


class AccountProbe(Protocol):
    """Read-only questions to the target account (``--stack`` mode); absent in file mode."""

    def resolve(self, template: StackTemplate, value: Any) -> str | None:
        """A template value with the account's pseudo parameters (AWS::AccountId, AWS::Region ...) filled in."""
        ...

    def missing_objects(self, prefix_uri: str, relative_keys: Sequence[str]) -> list[str]:
        """Which of ``relative_keys`` do not exist under the S3 prefix."""
        ...

    def log_group_exists(self, name: str) -> bool: ...


@dataclass(frozen=True)
class CheckContext:
    deployment_file: str  # named in the safe sequences of a file-made endpoint
    allow_replace: bool = False
    account: AccountProbe | None = None
    # Whose words the safe sequences are in: the door that made the new template's endpoint, as its recorded plan
    # says (peagle/planning/plan_record.py). Rules name settings with peagle.settings.refs.setting(); the report spells them.
    door: Door = Door.FILE
    pair_id: str | None = None  # the model pair the new template serves, from its recorded plan
    # The plan the new template's only endpoint records: a props step is the whole prop with the app's settings kept.
    # None (an earlier peagle's template, or several endpoints, whose findings do not say whose plan): spelled alone.
    recorded: Plan | None = field(default=None, compare=False, repr=False)

    def stage_command(self, prefix: str) -> str:
        """The command that stages the weights under ``prefix``: from the deployment file, or (props) by pair."""
        if self.door is Door.FILE:
            return f"peagle stage --deployment {self.deployment_file}"
        return f"peagle stage --model {self.pair_id or '<pair id>'} --s3-uri {prefix}"

    @property
    def settings_home(self) -> str:
        """Where the caller changes a setting."""
        return self.deployment_file if self.door is Door.FILE else "your app's PeagleEndpoint props"


def strategy_of(guardrail: str) -> str:
    """rollout.strategy's value for a DeploymentConfig guardrail."""
    return "rolling" if guardrail == "rolling" else "blue_green"


Rule = Callable[[StackTemplate, StackTemplate, CheckContext], list[Finding]]


def updated_in_place(old: StackTemplate, new: StackTemplate) -> list[tuple[Endpoint, Endpoint]]:
    """Endpoints CloudFormation updates with UpdateEndpoint: same logical id, same EndpointName."""
    new_by_id = {endpoint.logical_id: endpoint for endpoint in new.endpoints()}
    return [
        (before, new_by_id[before.logical_id])
        for before in old.endpoints()
        if before.logical_id in new_by_id and before.name == new_by_id[before.logical_id].name
    ]


def label(endpoint: Endpoint) -> str:
    return f"endpoint {endpoint.name or endpoint.logical_id}"


# https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-scaling-update.html ("Update
# endpoints that use auto scaling"): "When you update an endpoint, Application Auto
# Scaling checks to see whether any of the models on that endpoint are targets for auto
# scaling. If the update would change the instance type for any model that is a target
# for auto scaling, the update fails." Its note names the two changes that need the
# variant deregistered first: changing the instance type of, and removing, a production
# variant that has auto scaling configured.
#
# The old template decides: CloudFormation deletes the resources a template drops only
# in the stack's UPDATE_COMPLETE_CLEANUP_IN_PROGRESS phase, after every create and update
# (stack status codes, https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/using-cfn-describing-stacks.html),
# so a ScalableTarget removed by the same deploy is still registered when UpdateEndpoint runs.
AUTOSCALING_UPDATE = "https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-scaling-update.html"
