"""`peagle preflight` on pairs of real synthesized inference-component templates: deployed =
deployments/scale-to-zero.yaml (copy counts registered with MinCapacity 0, rolling updates) or
one change of it, new = the change a user would make. Each rule fires on its bad pair and stays
quiet on the safe one. The scaling policies of scale-to-zero.yaml are not asserted on."""

from __future__ import annotations

import json

import pytest
from test_preflight_transitions import compare, preflight


def findings(out: str, rule: str) -> list[str]:
    """The finding lines (REFUSED/WARNING/note) of one rule."""
    return [line for line in out.splitlines() if f"[{rule}]" in line and not line.startswith("safe sequence")]


def test_an_unchanged_scale_to_zero_endpoint_redeploys_quietly(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "s2z", "s2z")

    assert code == 0, out
    assert "REFUSED" not in out and "WARNING" not in out


# --- component-instance-type ------------------------------------------------------------


def test_changing_the_instance_type_while_copy_counts_are_scaling_targets_is_refused(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "s2z", "s2z-other-instance")

    assert code == 1, out
    assert (
        "REFUSED [component-instance-type] endpoint peagle-s2z-endpoint: instance type ml.g6e.48xlarge -> "
        "ml.g6e.12xlarge (variant AllTraffic, the instances the components run on) while the copy counts of "
        "peagle-s2z-primary are registered with Application Auto Scaling"
    ) in out
    assert "the update fails" in out and "endpoint-scaling-update.html" in out
    assert "1. set `autoscaling.enabled: false`" in out
    assert (
        "`autoscaling.min_capacity` unset (a fixed count of `endpoint.inference_components.initial_copies`" in out
    )  # a floor of 0 needs it
    assert "keep `instance.type: ml.g6e.48xlarge`" in out
    assert "2. set `instance.type: ml.g6e.12xlarge` and deploy" in out
    assert "3. set `autoscaling.enabled: true` and deploy" in out and "`autoscaling.min_capacity: 0` again" in out
    assert not findings(out, "autoscaled-instance-type")  # the pool variant itself is not a scaling target


def test_changing_the_instance_type_once_copy_counts_are_deregistered_passes(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "s2z-no-autoscaling", "s2z-other-instance")

    assert code == 0, out
    assert not findings(out, "component-instance-type")


def test_the_deployed_registration_decides_not_the_new_one(capsys, synthesized, tmp_path):
    """Turning autoscaling off in the same deploy does not help: the target is deregistered in cleanup."""
    code, out, _ = compare(capsys, synthesized, "s2z", "s2z-no-autoscaling")
    assert code == 0, out  # no instance-type change: nothing to refuse

    new = json.loads(synthesized("s2z-no-autoscaling").template.read_text())
    other = json.loads(synthesized("s2z-other-instance").template.read_text())
    (config,) = [r for r in new["Resources"].values() if r["Type"] == "AWS::SageMaker::EndpointConfig"]
    (other_config,) = [r for r in other["Resources"].values() if r["Type"] == "AWS::SageMaker::EndpointConfig"]
    config["Properties"]["ProductionVariants"] = other_config["Properties"]["ProductionVariants"]
    assert not [r for r in new["Resources"].values() if r["Type"] == "AWS::ApplicationAutoScaling::ScalableTarget"]
    both = tmp_path / "off-and-other-instance.json"
    both.write_text(json.dumps(new))

    code, out, _ = preflight(capsys, "--new", str(both), "--deployed-template", str(synthesized("s2z").template))

    assert code == 1, out
    assert "REFUSED [component-instance-type]" in out


# --- component-rename -------------------------------------------------------------------


def test_renaming_a_component_is_refused_even_with_allow_replace(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "s2z", "s2z-renamed")

    assert code == 1, out
    assert "REFUSED [component-rename] inference component peagle-s2z-primary (logical id " in out
    assert "InferenceComponentName peagle-s2z-primary -> peagle-s2z-b-primary" in out
    assert "EndpointName peagle-s2z-endpoint -> peagle-s2z-b-endpoint" in out
    assert "API_UpdateInferenceComponent.html" in out
    assert "deploy it as a second stack beside this one" in out
    assert "move clients to `--inference-component peagle-s2z-b-primary`" in out

    code, out, _ = compare(capsys, synthesized, "s2z", "s2z-renamed", "--allow-replace")

    assert code == 1, out  # the endpoint replacement is allowed; the component's in-place rename is not
    assert "note [endpoint-replacement]" in out
    assert "REFUSED [component-rename]" in out


def test_a_component_that_keeps_its_name_is_not_a_rename(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "s2z", "s2z-new-model")

    assert code == 0, out
    assert not findings(out, "component-rename")


# --- component-rolling-at-zero ----------------------------------------------------------


def test_a_rolling_update_of_a_component_that_may_be_at_zero_copies_warns(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "s2z", "s2z-new-model")

    assert code == 0, out
    (line,) = findings(out, "component-rolling-at-zero")
    assert line.startswith("WARNING [component-rolling-at-zero] inference component peagle-s2z-primary is updated")
    assert "with a rolling update (MaximumBatchSize 25 CAPACITY_PERCENT)" in line
    assert "allows 0 copies (MinCapacity 0" in line
    assert "between 5% to 50% of the copy count" in out and "API_InferenceComponentRollingUpdatePolicy.html" in out
    assert "No SageMaker document we found says what a rolling update of a component with 0 copies does" in out
    assert "--inference-component-name peagle-s2z-primary --query RuntimeConfig.CurrentCopyCount" in out
    assert "wake the component first (`peagle invoke --endpoint peagle-s2z-endpoint" in out


def test_a_rolling_update_with_a_floor_of_one_copy_does_not_warn_about_zero(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "s2z-min-one", "s2z-new-model")

    assert code == 0, out
    assert not findings(out, "component-rolling-at-zero")


# --- component-copy-count-reset ---------------------------------------------------------


def test_updating_an_autoscaled_component_warns_that_its_copy_count_may_be_reset(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "s2z", "s2z-new-model")

    assert code == 0, out
    (line,) = findings(out, "component-copy-count-reset")
    assert line == (
        "WARNING [component-copy-count-reset] inference component peagle-s2z-primary is updated while Application "
        "Auto Scaling owns its copy count (0..16); the template's RuntimeConfig.CopyCount is 1"
    )
    assert "known: in CloudFormation's schema RuntimeConfig.CopyCount is write-only" in out
    assert "Assumed (the handler's source is not public)" in out
    assert "set `endpoint.inference_components.initial_copies`" in out


@pytest.mark.parametrize(
    ("deployed", "new"),
    [
        ("s2z", "s2z"),  # the component is not updated: CloudFormation calls no handler
        ("s2z", "s2z-min-one"),  # only the scalable target changes
        ("s2z-no-autoscaling", "s2z-new-model"),  # no copy count registered while the update runs
    ],
)
def test_no_copy_count_reset_warning_without_an_update_of_an_autoscaled_component(capsys, synthesized, deployed, new):
    code, out, _ = compare(capsys, synthesized, deployed, new)

    assert code == 0, out
    assert not findings(out, "component-copy-count-reset")


def test_a_changed_copy_count_in_the_template_is_named(capsys, synthesized, tmp_path):
    new = json.loads(synthesized("s2z").template.read_text())
    (component,) = [r for r in new["Resources"].values() if r["Type"] == "AWS::SageMaker::InferenceComponent"]
    component["Properties"]["RuntimeConfig"]["CopyCount"] = 2  # what `initial_copies: 2` writes
    changed = tmp_path / "new.json"
    changed.write_text(json.dumps(new))

    code, out, _ = preflight(capsys, "--new", str(changed), "--deployed-template", str(synthesized("s2z").template))

    assert code == 0, out
    (line,) = findings(out, "component-copy-count-reset")
    assert line.endswith("the template's RuntimeConfig.CopyCount changes 1 -> 2")
    assert "so it is sent on any reading" in out
