"""The endpoint config's KmsKeyId (the ML storage volume's key): "The KMS key policy must grant permission to the IAM
role that you specify in your CreateEndpoint, UpdateEndpoint requests" (botocore 1.44.5), and CreateEndpoint's
caller needs "kms:CreateGrant (required only if the associated EndPointConfig has a KmsKeyId specified)" (SageMaker
API permissions reference). That caller is whoever deploys the stack, never in the templates, so the check reads the
key's side only (peagle/access/endpoint_needs.py, _volume_key_needs).

No instance type the planner accepts gets a volume key (every one but V100 has local NVMe, and vLLM refuses V100),
so these tests give a shipped deployment's endpoint config a key the way CloudFormation would read one."""

from __future__ import annotations

from pathlib import Path

import pytest
from cdk_synth import REPO_ROOT
from template_edits import edited_copy

from peagle.access.check import check_runtime_access
from peagle.access.requirements import FIXES
from peagle.cli import main as peagle_main
from peagle.cloud_assembly import Assembly

OUTSIDE_KEY = "arn:aws:kms:us-east-1:111122223333:key/0000aaaa-1111-2222-3333-444444444444"
# What CDK writes for kms.Key without a policy of its own (@aws-cdk/aws-kms:defaultKeyPolicies): the account may use
# IAM policies for every action.
ACCOUNT_KEY_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {
                "AWS": {
                    "Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":iam::", {"Ref": "AWS::AccountId"}, ":root"]]
                }
            },
            "Action": "kms:*",
            "Resource": "*",
        }
    ],
}
DECRYPT_ONLY_KEY_POLICY = {
    "Version": "2012-10-17",
    "Statement": [{**ACCOUNT_KEY_POLICY["Statement"][0], "Action": ["kms:Decrypt", "kms:DescribeKey"]}],
}


def _with_volume_key(key_policy: dict | None, key_arn: str | None = None):
    def edit(template: dict) -> None:
        if key_arn is None:
            template["Resources"]["VolumeKeyUnderTest"] = {
                "Type": "AWS::KMS::Key",
                "Properties": {"KeyPolicy": key_policy},
            }
        (config,) = [
            resource
            for resource in template["Resources"].values()
            if resource["Type"] == "AWS::SageMaker::EndpointConfig"
        ]
        config["Properties"]["KmsKeyId"] = key_arn or {"Fn::GetAtt": ["VolumeKeyUnderTest", "Arn"]}

    return edit


@pytest.fixture(scope="module")
def default_app(cdk_synthesized) -> Path:
    return cdk_synthesized(deployment=str(REPO_ROOT / "deployments" / "default.yaml")).outdir


def _access(cdk_out: Path, capsys) -> tuple[int, str]:
    code = peagle_main(["access", "--cdk-out", str(cdk_out)])
    return code, capsys.readouterr().out


def _grant_outcomes(cdk_out: Path):
    return [
        outcome
        for outcome in check_runtime_access(Assembly.from_cdk_out(cdk_out))
        if outcome.need.action == "kms:CreateGrant"
    ]


def test_a_volume_key_whose_policy_delegates_to_the_account_is_left_to_the_deploying_identity(
    default_app, tmp_path, capsys
):
    cdk_out = edited_copy(default_app, tmp_path / "cdk.out", "PeagleEndpoint", _with_volume_key(ACCOUNT_KEY_POLICY))
    (outcome,) = _grant_outcomes(cdk_out)  # one request, by the deployer: nothing asked of the execution role
    assert outcome.need.deployer and outcome.principal == "the identity that deploys peagle-endpoint"
    assert outcome.not_checked and "cfn-exec-role" in outcome.not_checked
    assert (
        outcome.found
        and "key policy of PeagleEndpoint/VolumeKeyUnderTest allows kms:CreateGrant in statement #0" in outcome.found
    )
    code, out = _access(cdk_out, capsys)
    assert code == 0 and "not checked: the identity that deploys peagle-endpoint kms:CreateGrant on arn:aws:kms:" in out


def test_a_volume_key_whose_policy_allows_kms_create_grant_to_no_one_fails(default_app, tmp_path, capsys):
    cdk_out = edited_copy(
        default_app, tmp_path / "cdk.out", "PeagleEndpoint", _with_volume_key(DECRYPT_ONLY_KEY_POLICY)
    )
    code, out = _access(cdk_out, capsys)
    assert code == 1
    missing = [line for line in out.splitlines() if line.startswith("MISSING")]
    assert missing == [
        next(line for line in missing if "the identity that deploys peagle-endpoint may not kms:CreateGrant on" in line)
    ]
    assert "the key policy neither allows this principal nor its account" in out
    assert f"fix: {FIXES['volume-key']}" in out


def test_a_volume_key_outside_the_app_is_not_checked(default_app, tmp_path):
    cdk_out = edited_copy(default_app, tmp_path / "cdk.out", "PeagleEndpoint", _with_volume_key(None, OUTSIDE_KEY))
    (outcome,) = _grant_outcomes(cdk_out)
    assert outcome.decision is None
    assert outcome.found == "neither the key's policy nor the deploying identity is in this app"
    assert outcome.not_checked and outcome.not_checked.startswith(
        f"the key policy of {OUTSIDE_KEY} (not in this app) must allow kms:CreateGrant"
    )
