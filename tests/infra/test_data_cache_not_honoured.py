"""data_cache: false where SageMaker caches anyway: "SageMaker enables caching automatically on instance types with
more than 232 GiB of local NVMe storage, whether or not DataCacheConfig was set" (CloudFormation resource schema of
AWS::SageMaker::InferenceComponent, CurrentDataCacheConfig). The plan says so, through the deployment file's real
path (config, planner and SageMaker's rules) and through `peagle plan`; the catalog's sizes decide which types."""

from __future__ import annotations

import json

import pytest
import yaml
from cdk_synth import REPO_ROOT, write_deployment

from peagle.catalog import load_catalog
from peagle.cli import main
from peagle.planning.deployment_rules import plan_checked_deployment
from peagle.planning.forced_data_cache import caching_forced
from peagle.settings import load_deployment_config

NOT_HONOURED = "data_cache false is not honoured on ml.g6e.48xlarge: it has 7600 GB of local NVMe storage"


def _scale_to_zero(tmp_path, **components) -> str:
    settings = yaml.safe_load((REPO_ROOT / "deployments" / "scale-to-zero.yaml").read_text())
    settings["endpoint"]["inference_components"].update(components)
    return write_deployment(tmp_path, yaml.safe_dump(settings))


def test_the_plan_notes_it_through_the_deployment_files_path(tmp_path):
    plan = plan_checked_deployment(load_deployment_config(_scale_to_zero(tmp_path, data_cache=False))).plan
    (note,) = [note for note in plan.notes if "data_cache" in note]
    assert note.startswith(NOT_HONOURED)
    assert "more than 232 GiB" in note and "CurrentDataCacheConfig" in note
    on = plan_checked_deployment(load_deployment_config(_scale_to_zero(tmp_path, data_cache=True))).plan
    assert not [note for note in on.notes if "data_cache" in note]


def test_peagle_plan_prints_it_and_puts_it_in_the_json(tmp_path, capsys):
    path = _scale_to_zero(tmp_path, data_cache=False)
    assert main(["plan", "--deployment", path]) == 0
    assert f"note            {NOT_HONOURED}" in capsys.readouterr().out
    assert main(["plan", "--deployment", path, "--json"]) == 0
    assert any(note.startswith(NOT_HONOURED) for note in json.loads(capsys.readouterr().out)["notes"])


def test_every_catalog_instance_type_is_decided_from_a_stated_size():
    """Every type with NVMe instance storage has its size in the catalog (EC2's TotalSizeInGB), so none is left
    "not checked"; only ml.g4dn.xlarge (125 GB) and the ml.p3 types (no NVMe) honour data_cache false."""
    instances = load_catalog().instances
    assert all(facts.local_nvme_gb is not None for facts in instances.values() if facts.local_nvme)
    honoured = sorted(name for name, facts in instances.items() if caching_forced(facts) is False)
    assert honoured == ["ml.g4dn.xlarge", "ml.p3.16xlarge", "ml.p3.2xlarge", "ml.p3.8xlarge"]
    assert all(caching_forced(facts) is True for name, facts in instances.items() if name not in honoured)


@pytest.mark.parametrize(("size_gb", "forced"), [(232, False), (249, None), (250, True), (125, False)])
def test_the_232_gib_line_under_either_reading_of_ec2s_gb(size_gb, forced):
    """EC2 gives "GB" without saying 10^9 or 2^30 bytes: 250 GB is over 232 GiB either way (232.8 GiB at least),
    232 GB is not over either way, 249 GB is over only if a GB is a GiB: not checked."""
    facts = load_catalog().instances["ml.g6e.xlarge"].model_copy(update={"local_nvme_gb": size_gb})
    assert caching_forced(facts) is forced


@pytest.mark.parametrize(
    ("placement", "says"),
    [
        ("BINPACK", "a scale-in empties instances and IDLE_RELEASE releases them"),
        ("SPREAD", "an instance that still holds one copy is kept and billed whole"),
    ],
)
def test_peagle_plan_says_what_the_placement_does_to_the_bill(tmp_path, capsys, placement, says):
    """The other setting that decides what a component endpoint bills (SchedulingConfig.PlacementStrategy with
    IDLE_RELEASE, peagle/settings/inference_components.py InferenceComponentSettings.placement): the plan names it and its consequence."""
    assert main(["plan", "--deployment", _scale_to_zero(tmp_path, placement=placement)]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("placement ")]
    assert placement in line and says in line
