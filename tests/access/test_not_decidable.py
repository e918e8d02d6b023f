"""A request IAM's documentation does not settle is reported as not checked, never granted or denied.

peagle.access.policy_eval raises NotDecidable where the pages leave the answer open (its docstring lists the cases);
the check (peagle/access/check.py) turns that into a "not checked" item with what to verify, and `peagle access`
still exits 0 when nothing is certainly missing. Here the default deployment's execution-role policy gets a Deny
whose Bool condition holds a policy variable: the Condition operators page says Boolean operators take variables,
the Variables page says they cannot ("You can't use a policy variable with ... Boolean ... operators")."""

from __future__ import annotations

from pathlib import Path

import pytest
from cdk_synth import REPO_ROOT
from template_edits import edited_copy

from peagle.access.check import check_runtime_access
from peagle.cli import main as peagle_main
from peagle.cloud_assembly import Assembly

UNDECIDED_DENY = {
    "Sid": "UndecidedDeny",
    "Effect": "Deny",
    "Action": "cloudwatch:PutMetricData",
    "Resource": "*",
    "Condition": {"Bool": {"aws:SecureTransport": "${aws:PrincipalTag/secure}"}},
}


@pytest.fixture(scope="module")
def default_app(cdk_synthesized) -> Path:
    return cdk_synthesized(deployment=str(REPO_ROOT / "deployments" / "default.yaml")).outdir


def _with_undecided_deny(template: dict) -> None:
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::IAM::ManagedPolicy":
            statements = resource["Properties"]["PolicyDocument"]["Statement"]
            if any(statement.get("Sid") == "PublishMetrics" for statement in statements):
                statements.append(UNDECIDED_DENY)
                return
    raise AssertionError("no managed policy grants PublishMetrics")


def test_a_request_the_pages_do_not_settle_is_not_checked(default_app, tmp_path, capsys):
    cdk_out = edited_copy(default_app, tmp_path / "cdk.out", "PeagleEndpoint", _with_undecided_deny)
    outcomes = check_runtime_access(Assembly.from_cdk_out(cdk_out))
    (metrics,) = [outcome for outcome in outcomes if outcome.need.action == "cloudwatch:PutMetricData"]
    assert metrics.decision is None and not metrics.granted and not metrics.missing
    assert metrics.found and "cannot be decided from the templates" in metrics.found and "Bool" in metrics.found
    assert metrics.not_checked and "IAM policy simulator" in metrics.not_checked
    # Every other request is still decided: one undecidable statement does not stop the check.
    assert sum(outcome.granted for outcome in outcomes) == len(outcomes) - 1 - sum(
        bool(outcome.not_checked) and outcome is not metrics for outcome in outcomes
    )
    code = peagle_main(["access", "--cdk-out", str(cdk_out)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "not checked: " in out and "cloudwatch:PutMetricData" in out
