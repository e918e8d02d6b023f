"""`peagle preflight` in file mode on pairs of real synthesized endpoint-stack templates:
deployed = one deployment file, new = the same file after one change a user would make."""

from __future__ import annotations

import json

import pytest

from peagle.cli import main


def preflight(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["preflight", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def compare(capsys, synthesized, deployed: str, new: str, *extra: str) -> tuple[int, str, str]:
    return preflight(
        capsys,
        "--deployment",
        str(synthesized(new).deployment_file),
        "--new",
        str(synthesized(new).template),
        "--deployed-template",
        str(synthesized(deployed).template),
        *extra,
    )


def test_an_unchanged_redeploy_passes(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "default", "default")

    assert code == 0, out
    assert "no illegal transitions" in out
    assert "REFUSED" not in out and "WARNING" not in out


def test_turning_ab_off_under_blue_green_is_refused_with_the_none_sequence(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "ab", "ab-off")

    assert code == 1, out
    assert (
        "REFUSED [variant-set] endpoint peagle-ab-endpoint: production variants Primary, Baseline -> Primary (removed: Baseline)"
        in out
    )
    assert "must have the same variant name as the old endpoint configuration" in out
    assert "deployment-guardrails-exclusions.html" in out
    assert "deploy this change once with `rollout.strategy: none`" in out
    assert "set the strategy back (`rollout.strategy: blue_green`) with your next deploy" in out


def test_turning_ab_off_with_rollout_strategy_none_passes(capsys, synthesized):
    new = json.loads(synthesized("ab-off-none").template.read_text())
    (endpoint,) = [r for r in new["Resources"].values() if r["Type"] == "AWS::SageMaker::Endpoint"]
    assert "DeploymentConfig" not in endpoint["Properties"]  # what `rollout.strategy: none` synthesizes

    code, out, _ = compare(capsys, synthesized, "ab", "ab-off-none")

    assert code == 0, out
    assert "note [variant-set]" in out and "no automatic rollback" in out
    assert "REFUSED" not in out


def test_changing_the_instance_type_of_an_autoscaled_variant_is_refused(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "default", "bigger-instance")

    assert code == 1, out
    assert (
        "REFUSED [autoscaled-instance-type] endpoint peagle-endpoint: variant Primary instance type "
        "ml.g6e.xlarge -> ml.g6e.12xlarge"
    ) in out
    assert "the update fails" in out and "endpoint-scaling-update.html" in out
    assert "1. set `autoscaling.enabled: false`" in out
    assert "2. set `instance.type: ml.g6e.12xlarge` and deploy" in out
    assert "3. set `autoscaling.enabled: true` and deploy" in out


def test_changing_the_instance_type_once_autoscaling_is_deregistered_passes(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "no-autoscaling", "bigger-instance")

    assert code == 0, out
    assert "REFUSED" not in out


def test_a_scalable_target_resource_id_written_as_fn_join_is_understood(capsys, synthesized, tmp_path):
    deployed = json.loads(synthesized("default").template.read_text())
    (endpoint_id,) = [lid for lid, r in deployed["Resources"].items() if r["Type"] == "AWS::SageMaker::Endpoint"]
    (target,) = [
        r for r in deployed["Resources"].values() if r["Type"] == "AWS::ApplicationAutoScaling::ScalableTarget"
    ]
    assert target["Properties"]["ResourceId"] == "endpoint/peagle-endpoint/variant/Primary"  # what CDK writes today
    target["Properties"]["ResourceId"] = {
        "Fn::Join": ["", ["endpoint/", {"Fn::GetAtt": [endpoint_id, "EndpointName"]}, "/variant/Primary"]]
    }
    joined = tmp_path / "deployed.json"
    joined.write_text(json.dumps(deployed))

    code, out, _ = preflight(
        capsys, "--new", str(synthesized("bigger-instance").template), "--deployed-template", str(joined)
    )

    assert code == 1, out
    assert "REFUSED [autoscaled-instance-type]" in out


def test_renaming_the_endpoint_is_refused_unless_replacement_is_allowed(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "default", "renamed")

    assert code == 1, out
    assert "REFUSED [endpoint-replacement] endpoint peagle-endpoint is replaced by peagle-b-endpoint" in out
    assert "its log group /aws/sagemaker/Endpoints/peagle-endpoint is retained" in out
    assert "aws logs delete-log-group --log-group-name /aws/sagemaker/Endpoints/peagle-b-endpoint" in out

    code, out, _ = compare(capsys, synthesized, "default", "renamed", "--allow-replace")

    assert code == 0, out
    assert "note [endpoint-replacement]" in out and "(allowed by --allow-replace)" in out


def test_a_changed_weights_prefix_is_a_warning_in_file_mode(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "default", "own-prefix")

    assert code == 0, out
    assert (
        "WARNING [weights-prefix] weights prefix s3://peagle-models-${AWS::AccountId}-${AWS::Region}/models/gpt-oss-20b/ "
        "-> s3://my-weights-bucket/models/gpt-oss-20b/"
    ) in out
    assert f"stage it first: `peagle stage --deployment {synthesized('own-prefix').deployment_file}`" in out
    assert "no illegal transitions (1 warning(s) above)" in out


def test_a_renamed_construct_id_keeping_the_endpoint_name_is_refused(capsys, synthesized, tmp_path):
    new = json.loads(synthesized("default").template.read_text())
    (endpoint_id,) = [lid for lid, r in new["Resources"].items() if r["Type"] == "AWS::SageMaker::Endpoint"]
    text = json.dumps(new).replace(f'"{endpoint_id}"', '"RenamedEndpoint0A1B2C3D"')
    renamed = tmp_path / "new.json"
    renamed.write_text(text)

    code, out, _ = preflight(capsys, "--new", str(renamed), "--deployed-template", str(synthesized("default").template))

    assert code == 1, out
    assert (
        f"REFUSED [physical-name-reused] endpoint peagle-endpoint moves from logical id {endpoint_id} "
        "to RenamedEndpoint0A1B2C3D"
    ) in out


def test_the_new_template_defaults_to_cdk_out_for_the_deployment(capsys, synthesized, monkeypatch):
    ab_off = synthesized("ab-off")
    monkeypatch.chdir(ab_off.cdk_out.parent)

    code, out, _ = preflight(
        capsys, "--deployment", str(ab_off.deployment_file), "--deployed-template", str(synthesized("ab").template)
    )

    assert code == 1, out
    assert "preflight: cdk.out/PeagleEndpoint.template.json against" in out

    code, _, err = preflight(
        capsys,
        "--deployment",
        str(synthesized("default").deployment_file),
        "--deployed-template",
        str(synthesized("ab").template),
    )

    assert code == 2
    assert "cdk.out holds deployment 'peagle-ab', not 'peagle'" in err
    assert "npx cdk synth -c deployment=" in err


def test_a_template_that_cannot_be_read_is_bad_input(capsys, synthesized, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{ not: [valid")

    code, _, err = preflight(capsys, "--new", str(synthesized("default").template), "--deployed-template", str(broken))
    assert code == 2
    assert err.startswith(f"error: {broken} is neither JSON nor YAML")

    code, _, err = preflight(
        capsys, "--new", str(synthesized("default").template), "--deployed-template", str(tmp_path / "missing.json")
    )
    assert code == 2
    assert "cannot read template" in err


def test_yaml_templates_with_short_form_tags_are_read(capsys, synthesized, tmp_path):
    """`aws cloudformation get-template` output saved as YAML uses !Ref/!GetAtt/!Join/!Sub."""
    deployed = json.loads(synthesized("default").template.read_text())
    (endpoint_id,) = [lid for lid, r in deployed["Resources"].items() if r["Type"] == "AWS::SageMaker::Endpoint"]
    (target_id,) = [
        lid for lid, r in deployed["Resources"].items() if r["Type"] == "AWS::ApplicationAutoScaling::ScalableTarget"
    ]
    (config_id,) = [lid for lid, r in deployed["Resources"].items() if r["Type"] == "AWS::SageMaker::EndpointConfig"]
    variant = deployed["Resources"][config_id]["Properties"]["ProductionVariants"][0]
    yaml_text = f"""
Resources:
  {config_id}:
    Type: AWS::SageMaker::EndpointConfig
    Properties:
      ProductionVariants:
        - VariantName: Primary
          InstanceType: {variant["InstanceType"]}
          ModelName: !GetAtt SomeModel.ModelName
  {endpoint_id}:
    Type: AWS::SageMaker::Endpoint
    Properties:
      EndpointName: !Join ["-", [peagle, endpoint]]
      EndpointConfigName: !GetAtt {config_id}.EndpointConfigName
  {target_id}:
    Type: AWS::ApplicationAutoScaling::ScalableTarget
    Properties:
      ServiceNamespace: sagemaker
      ScalableDimension: sagemaker:variant:DesiredInstanceCount
      ResourceId: !Sub "endpoint/${{{endpoint_id}.EndpointName}}/variant/Primary"
      RoleARN: !Ref AWS::NoValue
"""
    deployed_yaml = tmp_path / "deployed.yaml"
    deployed_yaml.write_text(yaml_text)

    code, out, _ = preflight(
        capsys, "--new", str(synthesized("bigger-instance").template), "--deployed-template", str(deployed_yaml)
    )

    assert code == 1, out
    assert "REFUSED [autoscaled-instance-type] endpoint peagle-endpoint: variant Primary" in out


@pytest.mark.parametrize(("deployed", "new"), [("default", "components"), ("components", "default")])
def test_switching_the_endpoint_mode_in_place_is_refused_with_a_side_by_side_sequence(
    capsys, synthesized, deployed, new
):
    code, out, _ = compare(capsys, synthesized, deployed, new)

    assert code == 1, out
    assert "REFUSED [endpoint-mode] endpoint peagle-endpoint:" in out
    assert "set a new `name`" in out and "delete the old stack" in out
    assert "[variant-set]" not in out  # its `rollout.strategy: none` advice does not apply across modes


def test_an_unchanged_component_endpoint_redeploys(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "components", "components")

    assert code == 0, out
    assert "REFUSED" not in out


def test_a_routing_change_is_noted_with_the_replacement_and_the_fleet_it_starts(capsys, synthesized):
    """RoutingConfig "Update requires: Replacement": allowed, and preflight says what the update does."""
    code, out, _ = compare(capsys, synthesized, "prefix-aware-by-load", "prefix-aware")

    assert code == 0, out
    assert (
        "note [routing] endpoint peagle-prefix-endpoint: variant Primary routing LEAST_OUTSTANDING_REQUESTS -> " in out
    )
    assert "PREFIX_AWARE (prefix 8192 bytes, threshold" in out
    assert '"Update requires: Replacement"' in out and "a second fleet of the same size" in out
    assert "REFUSED" not in out


def test_a_routing_change_of_a_component_endpoint_is_a_warning(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "s2z", "s2z-random")

    assert code == 0, out
    assert "WARNING [routing] endpoint peagle-s2z-endpoint:" in out
    assert "LEAST_OUTSTANDING_REQUESTS -> RANDOM" in out and "no AWS page says" in out
