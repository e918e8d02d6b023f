"""The catalogs are data; these tests keep the data consistent with what the planner assumes."""

import pytest

from peagle.catalog import ProfileName, load_catalog
from peagle.config import DeploymentConfig
from peagle.planner import smallest_fitting_instance

CATALOG = load_catalog()


def test_catalog_names_the_product_contract():
    assert set(CATALOG.pairs) >= {"gpt-oss-20b", "gpt-oss-120b", "qwen3-coder-30b-a3b", "qwen3-8b"}
    assert set(CATALOG.profiles) == set(ProfileName)


def test_instance_catalog_covers_facts_section_5_and_records_price_provenance():
    expected = {
        "ml.g4dn.xlarge",
        "ml.g4dn.12xlarge",
        "ml.p3.2xlarge",
        "ml.p3.8xlarge",
        "ml.p3.16xlarge",
        "ml.g5.xlarge",
        "ml.g5.2xlarge",
        "ml.g5.12xlarge",
        "ml.g5.48xlarge",
        "ml.g6.xlarge",
        "ml.g6.12xlarge",
        "ml.g6.48xlarge",
        "ml.g6e.xlarge",
        "ml.g6e.12xlarge",
        "ml.g6e.48xlarge",
        "ml.p4d.24xlarge",
        "ml.p4de.24xlarge",
        "ml.p5.48xlarge",
        "ml.p5e.48xlarge",
        "ml.p5en.48xlarge",
    }
    assert expected <= set(CATALOG.instances)
    assert CATALOG.price_region and CATALOG.price_date and CATALOG.price_source


@pytest.mark.parametrize("pair_id", sorted(CATALOG.pairs))
def test_recommended_k_never_exceeds_what_the_drafter_was_trained_for(pair_id):
    pair = CATALOG.pairs[pair_id]
    assert set(pair.recommended_k) == set(ProfileName)
    assert all(1 <= k <= pair.drafter.trained_k for k in pair.recommended_k.values())


@pytest.mark.parametrize("pair_id", sorted(CATALOG.pairs))
@pytest.mark.parametrize("profile", list(ProfileName))
def test_every_pair_and_profile_fits_some_instance(pair_id, profile):
    config = DeploymentConfig(model=pair_id, profile=profile)
    assert smallest_fitting_instance(config) is not None


def test_gpu_generations_carry_the_compute_capability_vllm_keys_on():
    by_gpu = {inst.gpu: inst.cc for inst in CATALOG.instances.values()}
    assert by_gpu["V100"] < 7.5 <= by_gpu["T4"] < 8.0 <= by_gpu["A100"]
    assert by_gpu["L40S"] >= 8.9 and by_gpu["H100"] >= 8.9  # FP8
    assert not CATALOG.instances["ml.g5.xlarge"].supports_fp8
