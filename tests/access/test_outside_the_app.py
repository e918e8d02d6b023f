"""The runtime-access check where the policy that decides is not in the templates (peagle/access/unchecked.py): a
user's app whose weights bucket and capture key live outside it (tests/access/outside_app.py) synthesizes, and
`peagle access` reports those requests as not checked, saying what the role's own policies grant and what to
verify by hand; only what the templates decide for certain (a Deny in the role's policies) fails."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from cdk_synth import REPO_ROOT
from outside_app import ACCOUNT, CAPTURE_KEY, STACK, WEIGHTS_BUCKET, WEIGHTS_KEY, build
from template_edits import edited_copy, without_statement

from peagle.access.check import check_runtime_access
from peagle.cli import main as peagle_main
from peagle.cloud_assembly import Assembly
from peagle_cdk import ModelWeights, PeagleEndpoint, RuntimeAccessChecks


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    """Synthesized with the runtime-access plugin: a DENIED here would have raised ValidationFailed (before this
    check learnt "not checked", the capture key did)."""
    return build(tmp_path_factory.mktemp("outside") / "cdk.out")


def _access(cdk_out: Path, capsys) -> tuple[int, str]:
    code = peagle_main(["access", "--cdk-out", str(cdk_out)])
    return code, capsys.readouterr().out


def _block(out: str, head: str) -> str:
    """The report's lines for the first request whose head line starts with ``head``."""
    lines = out.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith(head))
    end = next((index for index in range(start + 1, len(lines)) if not lines[index].startswith("  ")), len(lines))
    return "\n".join(lines[start:end])


def test_a_capture_key_outside_the_app_is_not_checked_and_names_what_its_key_policy_must_allow(outside, capsys):
    code, out = _access(outside, capsys)
    assert code == 0, out
    block = _block(
        out, next(line for line in out.splitlines() if line.endswith(f"kms:GenerateDataKey on {CAPTURE_KEY}"))
    )
    assert "found: this role's policies allow it (Allow Sid 'EncryptDataCapture'" in block
    assert f"verify: the key policy of {CAPTURE_KEY} (not in this app) must allow arn:aws:iam::{ACCOUNT}:role/" in block
    assert (
        f"(or its account, arn:aws:iam::{ACCOUNT}:root, with this role's policy granting it) kms:GenerateDataKey"
        in block
    )
    assert "via s3.us-east-1.amazonaws.com" in block
    summary = out.splitlines()[-1]
    assert "0 missing" in summary and "granted" in summary


def test_an_imported_weights_bucket_is_not_checked_and_says_its_key_may_be_needed(outside, capsys):
    _, out = _access(outside, capsys)
    head = f"not checked: {STACK}/ChatExecutionRole"
    reads = [
        line
        for line in out.splitlines()
        if line.startswith(head) and f"s3:GetObject on arn:aws:s3:::{WEIGHTS_BUCKET}/" in line
    ]
    assert len(reads) == 2  # target/ and drafter/ configs
    block = _block(out, reads[0])
    assert f"the bucket policy of arn:aws:s3:::{WEIGHTS_BUCKET} (not in this app) must not deny" in block
    assert "may encrypt its objects with a KMS key of its own (SSE-KMS), not in this app: then kms:Decrypt" in block
    # What the role's side has: the key given as ModelWeights.from_bucket(..., key=...).
    assert f"this role's policies allow kms:Decrypt on {WEIGHTS_KEY} (Sid 'DecryptModelWeights')" in block
    assert any(
        line.startswith(head) and line.endswith(f"s3:ListBucket on arn:aws:s3:::{WEIGHTS_BUCKET}")
        for line in out.splitlines()
    )


def test_without_a_key_for_the_imported_bucket_the_report_says_the_role_can_decrypt_with_none(tmp_path, capsys):
    cdk_out = build(tmp_path / "cdk.out", weights_key=False)
    code, out = _access(cdk_out, capsys)
    assert code == 0
    read = next(line for line in out.splitlines() if f"s3:GetObject on arn:aws:s3:::{WEIGHTS_BUCKET}/" in line)
    assert "this role's policies allow kms:Decrypt on no key" in _block(out, read)
    assert (
        "to grant it: ModelWeights.from_bucket(bucket, prefix) takes the bucket's encryption_key (or key=...)"
        in _block(out, read)
    )


def test_the_synth_passes_without_a_word_for_what_it_could_not_check(outside):
    """Only a certain missing grant is a violation: a warning on every synth trains users to skip the ones that
    matter (tests/infra/test_app_checks.py), so what is not checked is listed by `peagle access` alone."""
    report_path = outside / "validation-report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    plugins = [entry for entry in report.get("pluginReports", []) if entry.get("pluginName") == "peagle-runtime-access"]
    assert plugins == [], plugins


def test_a_grant_taken_away_from_a_role_on_an_outside_key_stays_not_checked_naming_the_role_itself(
    outside, tmp_path, capsys
):
    """Without its own Allow, the role can still be allowed by a key policy that names it: not a certain DENY."""
    broken = edited_copy(outside, tmp_path / "cdk.out", STACK, without_statement("EncryptDataCapture"))
    code, out = _access(broken, capsys)
    assert code == 0
    head = next(line for line in out.splitlines() if line.endswith(f"kms:GenerateDataKey on {CAPTURE_KEY}"))
    block = _block(out, head)
    assert "found: this role's policies do not allow it" in block
    assert "must allow arn:aws:iam::111122223333:role/" in block and "itself kms:GenerateDataKey" in block
    assert "so allowing its account is not enough" in block


def test_a_deny_in_the_roles_own_policy_is_a_certain_missing_grant_whatever_the_outside_policy_says(
    outside, tmp_path, capsys
):
    """IAM: "An explicit deny in any of the policies overrides the allow", so the key policy cannot matter."""

    def deny_kms(template: dict) -> None:
        (policy,) = [
            resource
            for logical_id, resource in template["Resources"].items()
            if resource["Type"] == "AWS::IAM::ManagedPolicy" and logical_id.startswith("ChatExecutionRolePolicy")
        ]
        policy["Properties"]["PolicyDocument"]["Statement"].append(
            {"Sid": "NoKms", "Effect": "Deny", "Action": "kms:*", "Resource": "*"}
        )

    broken = edited_copy(outside, tmp_path / "cdk.out", STACK, deny_kms)
    code, out = _access(broken, capsys)
    assert code == 1
    missing = [line for line in out.splitlines() if line.startswith("MISSING")]
    assert any(f"may not kms:GenerateDataKey on {CAPTURE_KEY}" in line for line in missing), out
    assert "explicitly denied by Deny Sid 'NoKms'" in out
    outcomes = check_runtime_access(Assembly.from_cdk_out(broken))
    assert all(
        outcome.decision and outcome.decision.reason == "explicit-deny" for outcome in outcomes if outcome.missing
    )


def test_the_deployment_files_capture_kms_key_arn_synthesizes_and_is_not_checked(synth, tmp_path, capsys):
    """The issue's case: `capture.kms_key_arn` (a documented key) used to stop `cdk synth` with "DENIED ... the key
    policy neither allows this principal nor its account". The YAML app synthesizes with the plugin on."""
    settings = yaml.safe_load((REPO_ROOT / "tests" / "infra" / "deployments" / "data-capture.yaml").read_text())
    settings["capture"]["kms_key_arn"] = CAPTURE_KEY
    deployment = tmp_path / "capture-key.yaml"
    deployment.write_text(yaml.safe_dump(settings))
    cdk_out = synth(deployment=str(deployment)).outdir
    code, out = _access(cdk_out, capsys)
    assert code == 0, out
    head = next(line for line in out.splitlines() if line.endswith(f"kms:GenerateDataKey on {CAPTURE_KEY}"))
    assert head.startswith("not checked: PeagleEndpoint/ExecutionRole")
    assert f"the key policy of {CAPTURE_KEY} (not in this app) must allow" in _block(out, head)


def test_a_bucket_of_the_app_encrypted_with_a_key_outside_it_asks_for_that_key_not_checked(tmp_path, capsys):
    """The bucket's default encryption names the key, so the need is known; the key's policy is not: the decrypt
    is reported, not skipped."""
    app = cdk.App(outdir=str(tmp_path / "cdk.out"))
    stack = cdk.Stack(app, STACK, env=cdk.Environment(account=ACCOUNT, region="us-east-1"))
    key = kms.Key.from_key_arn(stack, "TeamKey", WEIGHTS_KEY)
    bucket = s3.Bucket(stack, "Weights", encryption=s3.BucketEncryption.KMS, encryption_key=key, enforce_ssl=True)
    PeagleEndpoint(stack, "Chat", name="chat", weights=ModelWeights.from_bucket(bucket, "models/gpt-oss-20b/"))
    cdk.Validations.of(app).add_plugins(RuntimeAccessChecks())  # pyright: ignore[reportArgumentType]
    app.synth()
    code, out = _access(tmp_path / "cdk.out", capsys)
    assert code == 0, out
    head = next(line for line in out.splitlines() if line.endswith(f"kms:Decrypt on {WEIGHTS_KEY}"))
    assert head.startswith(f"not checked: {STACK}/ChatExecutionRole")
    block = _block(out, head)
    assert "this role's policies allow it (Allow Sid 'DecryptModelWeights'" in block
    assert f"the key policy of {WEIGHTS_KEY} (not in this app) must allow" in block
    # The bucket itself is in the app: its reads are decided.
    outcomes = check_runtime_access(Assembly.from_cdk_out(tmp_path / "cdk.out"))
    assert all(
        outcome.granted
        for outcome in outcomes
        if outcome.need.action == "s3:GetObject" and "models/" in outcome.need.resource
    )
