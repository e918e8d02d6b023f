"""The fixed-name rules on small hand-written templates: a create-only property that changes on a resource whose
name the template fixes (fixed-name-replacement), two resources with one fixed name (fixed-name-duplicate), and
such a resource moved to a new logical id (physical-name-reused). One synthesized pull-through cache template
checks the rule on what the app really writes."""

from __future__ import annotations

import copy
import json

import pytest
from test_preflight_stack import StubbedAccount, aws  # noqa: F401 - the fixture, for the first-deploy test
from test_preflight_transitions import preflight

from peagle.cloud_assembly import StackTemplate
from peagle.preflight.rules import (
    CheckContext,
    Finding,
    Severity,
    check_transition,
    fixed_name_duplicate,
    fixed_name_replacement,
    fixed_names,
    physical_name_reused,
)
from peagle.settings.refs import Door

SECRET = "arn:aws:secretsmanager:us-east-1:111122223333:secret:ecr-pullthroughcache/dockerhub-AbCdEf"
NEW_SECRET = "arn:aws:secretsmanager:us-east-1:111122223333:secret:ecr-pullthroughcache/dockerhub-XyZ123"
CONTEXT = CheckContext(deployment_file="deployments/mine.yaml")


def cache_rule(prefix="docker-hub", credential=SECRET, **extra) -> dict:
    return {
        "Type": "AWS::ECR::PullThroughCacheRule",
        "Properties": {
            "EcrRepositoryPrefix": prefix,
            "UpstreamRegistry": "docker-hub",
            "UpstreamRegistryUrl": "registry-1.docker.io",
            "CredentialArn": credential,
            **extra,
        },
    }


def repository(name=None, kms_key="alias/one", **extra) -> dict:
    properties = {"EncryptionConfiguration": {"EncryptionType": "KMS", "KmsKey": kms_key}, **extra}
    if name is not None:
        properties["RepositoryName"] = name
    return {"Type": "AWS::ECR::Repository", "Properties": properties}


def endpoint() -> dict:
    """What the CLI needs of an endpoint stack: an endpoint (named, as the app names it)."""
    return {
        "Type": "AWS::SageMaker::Endpoint",
        "Properties": {"EndpointName": "peagle-endpoint", "EndpointConfigName": "config"},
    }


def stack(**resources: dict) -> StackTemplate:
    return StackTemplate({"Resources": {"Endpoint": endpoint(), **resources}}, source="test")


def only(findings: list[Finding], rule: str) -> list[Finding]:
    return [finding for finding in findings if finding.rule == rule]


# --- fixed-name-replacement: the pull-through cache rule ------------------------------------------------


def test_a_new_secret_under_the_same_prefix_is_refused():
    old, new = stack(Cache=cache_rule()), stack(Cache=cache_rule(credential=NEW_SECRET))

    (finding,) = fixed_name_replacement(old, new, CONTEXT)

    assert finding.severity is Severity.REFUSE
    assert finding.rule == "fixed-name-replacement"
    assert finding.what == (
        f"pull-through cache rule docker-hub (AWS::ECR::PullThroughCacheRule Cache) is replaced under the same name: "
        f"create-only CredentialArn {SECRET} -> {NEW_SECRET}"
    )
    assert "it creates the new one first, while docker-hub is still taken, and the create fails" in finding.why
    assert "AlreadyExists error code if the resource already existed before the create request" in finding.why
    assert "If you must replace the resource, specify a new name." in finding.why
    assert "aws-properties-name.html" in finding.source and "resource-type-test-contract.html" in finding.source
    assert "cfnlint/data/schemas/resources/25ab0343333b54d0.json" in finding.source


def test_the_refusal_names_the_settings_that_give_the_rule_a_new_prefix():
    old, new = stack(Cache=cache_rule()), stack(Cache=cache_rule(credential=NEW_SECRET))

    (finding,) = fixed_name_replacement(old, new, CONTEXT)

    first, second = finding.safe_sequence
    assert "a new prefix (remove `image.pull_through_cache_prefix` from deployments/mine.yaml" in first
    assert "derived from the stack and the secret; or set another) and deploy" in first
    assert first.endswith("then deletes docker-hub")
    assert "remove `image.pull_through_cache_secret_arn`" in second and "deployments/mine.yaml" in second
    assert "with the new secret, and deploy" in second


def test_an_app_made_with_props_is_told_the_props_that_give_the_rule_a_new_prefix():
    old, new = stack(Cache=cache_rule()), stack(Cache=cache_rule(credential=NEW_SECRET))

    (finding,) = fixed_name_replacement(old, new, CheckContext(deployment_file="unused.yaml", door=Door.PROPS))

    first, second = finding.safe_sequence
    assert (
        "a new prefix (remove `BaseImage.pull_through_cache(repository_prefix=...)` from your app's PeagleEndpoint "
        "props, for one derived from the stack and the secret" in first
    )
    assert (
        "remove `ServingImage.build_in_account(base=BaseImage.pull_through_cache(...))` and "
        "`BaseImage.pull_through_cache(repository_prefix=...)` from your app's PeagleEndpoint props" in second
    )
    assert "unused.yaml" not in first + second and "image." not in first + second


@pytest.mark.parametrize(
    ("changed", "shown"),
    [
        (
            {"UpstreamRegistryUrl": "registry.example.com"},
            "UpstreamRegistryUrl registry-1.docker.io -> registry.example.com",
        ),
        ({"UpstreamRegistry": "quay"}, "UpstreamRegistry docker-hub -> quay"),
        (
            {"CustomRoleArn": "arn:aws:iam::111122223333:role/cache"},
            "CustomRoleArn (absent) -> arn:aws:iam::111122223333:role/cache",
        ),
        ({"UpstreamRepositoryPrefix": "library"}, "UpstreamRepositoryPrefix (absent) -> library"),
    ],
)
def test_every_other_property_of_the_rule_is_create_only_too(changed, shown):
    old, new = stack(Cache=cache_rule()), stack(Cache=cache_rule(**changed))

    (finding,) = fixed_name_replacement(old, new, CONTEXT)

    assert finding.what.endswith(f"create-only {shown}")


def test_a_property_removed_is_a_change():
    old = stack(Cache=cache_rule(CustomRoleArn="arn:aws:iam::111122223333:role/cache"))

    (finding,) = fixed_name_replacement(old, stack(Cache=cache_rule()), CONTEXT)

    assert "CustomRoleArn arn:aws:iam::111122223333:role/cache -> (absent)" in finding.what


def test_a_new_prefix_with_the_new_secret_passes():
    """The replacement takes the new prefix: created beside the old rule, which is deleted after."""
    old, new = stack(Cache=cache_rule()), stack(Cache=cache_rule(prefix="docker-hub-2", credential=NEW_SECRET))

    assert fixed_name_replacement(old, new, CONTEXT) == []
    assert not [f for f in check_transition(old, new, CONTEXT) if f.severity is Severity.REFUSE]


def test_an_unchanged_rule_passes():
    assert fixed_name_replacement(stack(Cache=cache_rule()), stack(Cache=cache_rule()), CONTEXT) == []


def test_a_rule_the_deployed_stack_does_not_have_is_a_create_not_a_replacement():
    assert fixed_name_replacement(stack(), stack(Cache=cache_rule(credential=NEW_SECRET)), CONTEXT) == []


def test_the_same_value_written_another_way_is_no_change():
    joined = {
        "Fn::Join": [
            "",
            ["arn:aws:secretsmanager:us-east-1:111122223333:secret:", "ecr-pullthroughcache/dockerhub-AbCdEf"],
        ]
    }
    assert fixed_name_replacement(stack(Cache=cache_rule()), stack(Cache=cache_rule(credential=joined)), CONTEXT) == []


def test_allow_replace_does_not_lift_it():
    old, new = stack(Cache=cache_rule()), stack(Cache=cache_rule(credential=NEW_SECRET))

    (finding,) = fixed_name_replacement(old, new, CheckContext(deployment_file="d.yaml", allow_replace=True))

    assert finding.severity is Severity.REFUSE and "--allow-replace cannot make that create succeed" in finding.why


# --- fixed-name-replacement: other types -----------------------------------------------------------------


def test_a_named_repository_whose_encryption_key_changes_is_refused_naming_the_key():
    old, new = stack(Images=repository("peagle-images")), stack(Images=repository("peagle-images", "alias/two"))

    (finding,) = fixed_name_replacement(old, new, CONTEXT)

    assert finding.what == (
        "ECR repository peagle-images (AWS::ECR::Repository Images) is replaced under the same name: create-only "
        "EncryptionConfiguration.KmsKey alias/one -> alias/two"
    )
    assert finding.safe_sequence[0].startswith("either give the ECR repository another RepositoryName and deploy")
    assert "remove it from the template and deploy" in finding.safe_sequence[1]


def test_a_repository_whose_name_cloudformation_generates_is_replaced_freely():
    assert (
        fixed_name_replacement(stack(Images=repository()), stack(Images=repository(kms_key="alias/two")), CONTEXT) == []
    )


@pytest.mark.parametrize(
    "name",
    [
        {"Ref": "RepositoryNameParameter"},
        {"Fn::GetAtt": ["Other", "Arn"]},
        {"Fn::Join": ["-", [{"Ref": "Other"}, "x"]]},
    ],
)
def test_a_name_another_resource_or_a_parameter_decides_is_not_fixed(name):
    old, new = stack(Images=repository(name)), stack(Images=repository(name, "alias/two"))

    assert "Images" not in {named.logical_id for named in fixed_names(new)}
    assert fixed_name_replacement(old, new, CONTEXT) == []


def test_a_name_built_from_the_stacks_region_is_fixed():
    name = {"Fn::Sub": "peagle-images-${AWS::Region}"}
    old, new = stack(Images=repository(name)), stack(Images=repository(name, "alias/two"))

    (finding,) = fixed_name_replacement(old, new, CONTEXT)

    assert finding.what.startswith("ECR repository peagle-images-${AWS::Region} (AWS::ECR::Repository Images)")


def test_a_repository_property_that_is_not_create_only_is_updated_in_place():
    old = stack(Images=repository("peagle-images", ImageTagMutability="MUTABLE"))
    new = stack(Images=repository("peagle-images", ImageTagMutability="IMMUTABLE"))

    assert fixed_name_replacement(old, new, CONTEXT) == []


def test_a_named_log_group_is_never_replaced_under_its_name():
    """Only LogGroupName is create-only: key, retention and class are updated in place."""
    group = {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "/aws/sagemaker/Endpoints/peagle-endpoint"}}
    changed = copy.deepcopy(group)
    changed["Properties"].update({"KmsKeyId": "arn:aws:kms:us-east-1:111122223333:key/k", "RetentionInDays": 30})
    changed["Properties"]["LogGroupClass"] = "INFREQUENT_ACCESS"

    assert fixed_name_replacement(stack(Logs=group), stack(Logs=changed), CONTEXT) == []


# --- fixed-name-duplicate ----------------------------------------------------------------------------------


def test_two_cache_rules_with_one_prefix_are_refused():
    new = stack(CacheA=cache_rule(), CacheB=cache_rule(credential=NEW_SECRET))

    (finding,) = fixed_name_duplicate(stack(), new, CONTEXT)

    assert finding.severity is Severity.REFUSE
    assert finding.what == (
        "pull-through cache rule docker-hub is defined 2 times in the new template "
        "(AWS::ECR::PullThroughCacheRule CacheA, CacheB)"
    )
    assert "the first create takes it and the next fails" in finding.why
    assert "Resource names must be unique across all your active stacks." in finding.why
    (step,) = finding.safe_sequence
    assert step.startswith(
        "give all but one of them a new prefix (remove `image.pull_through_cache_prefix` from deployments/mine.yaml"
    )


def test_two_rules_with_their_own_prefixes_pass():
    new = stack(CacheA=cache_rule(), CacheB=cache_rule(prefix="docker-hub-b", credential=NEW_SECRET))

    assert fixed_name_duplicate(stack(), new, CONTEXT) == []


def test_two_log_groups_with_one_name_are_refused():
    group = {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "/aws/sagemaker/Endpoints/peagle-endpoint"}}

    (finding,) = fixed_name_duplicate(stack(), stack(LogsA=group, LogsB=group), CONTEXT)

    assert finding.what.startswith("log group /aws/sagemaker/Endpoints/peagle-endpoint is defined 2 times")
    assert "another LogGroupName" in finding.safe_sequence[0]


def test_two_scalable_targets_for_one_variant_are_refused_by_their_composite_key():
    target = {
        "Type": "AWS::ApplicationAutoScaling::ScalableTarget",
        "Properties": {
            "ResourceId": {
                "Fn::Join": ["", ["endpoint/", {"Fn::GetAtt": ["Endpoint", "EndpointName"]}, "/variant/Primary"]]
            },
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "ServiceNamespace": "sagemaker",
            "MinCapacity": 1,
            "MaxCapacity": 2,
        },
    }
    other_variant = copy.deepcopy(target)
    other_variant["Properties"]["ResourceId"] = "endpoint/peagle-endpoint/variant/Baseline"

    (finding,) = fixed_name_duplicate(stack(), stack(TargetA=target, TargetB=target, TargetC=other_variant), CONTEXT)

    assert finding.what == (
        "scalable target ResourceId=endpoint/peagle-endpoint/variant/Primary, "
        "ScalableDimension=sagemaker:variant:DesiredInstanceCount, ServiceNamespace=sagemaker is defined 2 times in "
        "the new template (AWS::ApplicationAutoScaling::ScalableTarget TargetA, TargetB)"
    )


def test_two_repositories_whose_names_cloudformation_generates_pass():
    assert fixed_name_duplicate(stack(), stack(A=repository(), B=repository()), CONTEXT) == []


def test_the_same_name_on_two_types_is_no_duplicate():
    """A log group and a repository may share a name: names are unique per type."""
    group = {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "peagle"}}

    assert fixed_name_duplicate(stack(), stack(Logs=group, Images=repository("peagle")), CONTEXT) == []


# --- physical-name-reused: the same name under a new logical id ------------------------------------------


def test_a_cache_rule_moved_to_a_new_logical_id_keeping_its_prefix_is_refused():
    (finding,) = only(
        physical_name_reused(stack(Cache=cache_rule()), stack(CacheRule=cache_rule()), CONTEXT), "physical-name-reused"
    )

    assert finding.severity is Severity.REFUSE
    assert finding.what == (
        "pull-through cache rule docker-hub moves from logical id Cache to CacheRule (a construct id was renamed)"
    )


def test_a_cache_rule_moved_with_a_new_prefix_passes():
    old, new = stack(Cache=cache_rule()), stack(CacheRule=cache_rule(prefix="docker-hub-2"))

    assert physical_name_reused(old, new, CONTEXT) == []


# --- through the CLI ------------------------------------------------------------------------------------------


def write(tmp_path, name: str, template: StackTemplate) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"Resources": template.resources}))
    return str(path)


def test_the_cli_refuses_a_new_secret_under_the_same_prefix_with_the_safe_sequence(capsys, tmp_path):
    old = write(tmp_path, "deployed.json", stack(Cache=cache_rule()))
    new = write(tmp_path, "new.json", stack(Cache=cache_rule(credential=NEW_SECRET)))

    code, out, _ = preflight(capsys, "--deployment", "deployments/mine.yaml", "--new", new, "--deployed-template", old)

    assert code == 1, out
    assert (
        "REFUSED [fixed-name-replacement] pull-through cache rule docker-hub (AWS::ECR::PullThroughCacheRule Cache)"
        in out
    )
    assert "safe sequence 1 (fixed-name-replacement):\n  1. either give the pull-through cache rule a new prefix" in out
    assert "\n  2. or keep the name and delete the old pull-through cache rule first, in two deploys" in out


def test_a_first_deploy_with_two_rules_of_one_prefix_is_refused(capsys, tmp_path, aws):  # noqa: F811
    new = write(tmp_path, "new.json", stack(CacheA=cache_rule(), CacheB=cache_rule(credential=NEW_SECRET)))
    aws.no_stack()

    code, out, err = preflight(capsys, "--new", new, "--stack", "peagle-endpoint")

    assert code == 1, out + err
    assert "first deploy: nothing to compare" in out
    assert "REFUSED [fixed-name-duplicate] pull-through cache rule docker-hub is defined 2 times" in out
    aws.assert_all_called()


# --- the app's own cache rule -----------------------------------------------------------------------------


def test_the_apps_cache_rule_with_a_recreated_secret_is_refused(capsys, synthesized, tmp_path):
    deployed = synthesized("pull-through")
    template = json.loads(deployed.template.read_text())
    (rule,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::ECR::PullThroughCacheRule"]
    prefix = rule["Properties"]["EcrRepositoryPrefix"]
    rule["Properties"]["CredentialArn"] = rule["Properties"]["CredentialArn"][:-6] + "XyZ123"  # a new ARN suffix
    new = tmp_path / "new-secret-same-prefix.json"
    new.write_text(json.dumps(template))

    code, out, _ = preflight(
        capsys,
        "--deployment",
        str(deployed.deployment_file),
        "--new",
        str(new),
        "--deployed-template",
        str(deployed.template),
    )

    assert code == 1, out
    assert f"REFUSED [fixed-name-replacement] pull-through cache rule {prefix} " in out
    assert "create-only CredentialArn" in out and out.count("REFUSED") == 1


def test_the_apps_cache_rule_redeployed_unchanged_passes(capsys, synthesized):
    deployed = synthesized("pull-through")

    code, out, _ = preflight(capsys, "--new", str(deployed.template), "--deployed-template", str(deployed.template))

    assert code == 0, out
    assert "fixed-name" not in out and "REFUSED" not in out
