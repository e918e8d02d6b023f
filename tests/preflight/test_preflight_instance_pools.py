"""Rule instance-capacity: ProductionVariants are create-only on AWS::SageMaker::EndpointConfig (CloudFormation
resource schema), so adding, removing or reordering an instance pool type, or changing the provision timeout or the
capacity reservation, replaces the endpoint config and updates the endpoint onto it. Preflight says so (a warning
where the variant is autoscaled), and the autoscaled-instance-type rule reads a pool's type of priority 1."""

from __future__ import annotations

import json

from test_preflight_component_transitions import findings
from test_preflight_transitions import preflight

POOL = [
    {"InstanceType": "ml.g6e.xlarge", "Priority": 1},
    {"InstanceType": "ml.g6.xlarge", "Priority": 2},
]


def _written(synthesized, name: str, tmp_path, suffix: str, edit=None) -> str:
    """``name``'s template with ``edit`` applied to its one production variant, written to a file."""
    body = json.loads(synthesized(name).template.read_text())
    for resource in body["Resources"].values():
        if resource["Type"] == "AWS::SageMaker::EndpointConfig" and edit is not None:
            (variant,) = resource["Properties"]["ProductionVariants"]
            edit(variant)
    path = tmp_path / f"{name}-{suffix}.json"
    path.write_text(json.dumps(body))
    return str(path)


def _pool(variant: dict, pools=POOL) -> None:
    variant.pop("InstanceType")
    variant["InstancePools"] = [dict(p) for p in pools]
    variant["VariantInstanceProvisionTimeoutInSeconds"] = 600


def _check(capsys, deployed: str, new: str) -> tuple[int, str]:
    code, out, _ = preflight(capsys, "--new", new, "--deployed-template", deployed)
    return code, out


def test_adding_a_pool_is_noted_with_the_update_it_starts(capsys, synthesized, tmp_path):
    deployed = _written(synthesized, "no-autoscaling", tmp_path, "one-type")
    new = _written(synthesized, "no-autoscaling", tmp_path, "pool", _pool)
    code, out = _check(capsys, deployed, new)

    assert code == 0, out
    (line,) = findings(out, "instance-capacity")
    assert line.startswith("note [instance-capacity] endpoint peagle-endpoint: variant Primary one instance type")
    assert "-> pool ml.g6e.xlarge > ml.g6.xlarge, provision timeout 600 s" in line
    assert "create-only on AWS::SageMaker::EndpointConfig" in out and "blue/green" in out


def test_reordering_the_pool_is_a_change_and_an_unchanged_pool_is_not(capsys, synthesized, tmp_path):
    deployed = _written(synthesized, "no-autoscaling", tmp_path, "pool", _pool)
    swapped = [{**POOL[0], "Priority": 2}, {**POOL[1], "Priority": 1}]
    reordered = _written(synthesized, "no-autoscaling", tmp_path, "reordered", lambda v: _pool(v, swapped))

    code, out = _check(capsys, deployed, reordered)
    assert code == 0, out
    (line,) = findings(out, "instance-capacity")
    assert "pool ml.g6e.xlarge > ml.g6.xlarge, provision timeout 600 s -> pool ml.g6.xlarge > ml.g6e.xlarge" in line

    code, out = _check(capsys, deployed, deployed)
    assert code == 0, out
    assert not findings(out, "instance-capacity")


def test_a_reservation_change_is_noted(capsys, synthesized, tmp_path):
    def reserved(variant: dict) -> None:
        variant["CapacityReservationConfig"] = {
            "CapacityReservationPreference": "capacity-reservations-only",
            "MlReservationArn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p",
        }

    deployed = _written(synthesized, "no-autoscaling", tmp_path, "one-type")
    code, out = _check(capsys, deployed, _written(synthesized, "no-autoscaling", tmp_path, "reserved", reserved))
    assert code == 0, out
    (line,) = findings(out, "instance-capacity")
    assert "-> reservation arn:aws:sagemaker:us-east-1:123456789012:training-plan/p" in line


def test_on_an_autoscaled_variant_a_pool_that_keeps_its_first_type_is_a_warning_not_a_refusal(
    capsys, synthesized, tmp_path
):
    deployed = _written(synthesized, "default", tmp_path, "one-type")
    code, out = _check(capsys, deployed, _written(synthesized, "default", tmp_path, "pool", _pool))

    assert code == 0, out
    (line,) = findings(out, "instance-capacity")
    assert line.startswith("WARNING [instance-capacity]")
    assert "whether a changed pool counts as one is not documented (not checked)" in out
    assert not findings(out, "autoscaled-instance-type")  # the type of priority 1 stays ml.g6e.xlarge


def test_on_an_autoscaled_variant_a_pool_with_another_first_type_is_refused(capsys, synthesized, tmp_path):
    first_other = [{"InstanceType": "ml.g6.xlarge", "Priority": 1}, {"InstanceType": "ml.g6e.xlarge", "Priority": 2}]
    deployed = _written(synthesized, "default", tmp_path, "one-type")
    new = _written(synthesized, "default", tmp_path, "other-first", lambda v: _pool(v, first_other))
    code, out = _check(capsys, deployed, new)

    assert code == 1, out
    assert (
        "REFUSED [autoscaled-instance-type] endpoint peagle-endpoint: variant Primary instance type "
        "ml.g6e.xlarge -> ml.g6.xlarge"
    ) in out
