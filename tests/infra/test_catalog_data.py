"""The catalogs are data; these tests keep the data consistent with what the planner assumes."""

from pathlib import Path

import pytest

from peagle.catalog import ProfileName, load_catalog
from peagle.planning.planner import plan_deployment, smallest_fitting_instance
from peagle.settings import DeploymentConfig, config_from_overrides

CATALOG = load_catalog()
CATALOG_DOC = Path(__file__).resolve().parents[2] / "docs" / "catalog.md"  # generated: peagle/reference_docs.py
LONG_CONTEXT = "-long-context"


def test_catalog_names_the_product_contract():
    assert set(CATALOG.pairs) >= {"gpt-oss-20b", "gpt-oss-120b", "qwen3-coder-30b-a3b", "qwen3-8b"}
    assert set(CATALOG.pairs) >= {"gpt-oss-20b-long-context", "qwen3-coder-30b-a3b-long-context"}
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


@pytest.mark.parametrize("pair_id", sorted(CATALOG.pairs))
@pytest.mark.parametrize("profile", list(ProfileName))
def test_every_pair_plans_on_its_smallest_instance_with_its_recommended_k(pair_id, profile):
    instance_type = smallest_fitting_instance(DeploymentConfig(model=pair_id, profile=profile))
    plan = plan_deployment(
        config_from_overrides({"model": pair_id, "profile": profile.value, "instanceType": instance_type})
    )
    pair = CATALOG.pairs[pair_id]
    assert plan.speculative_tokens == pair.recommended_k[profile] <= pair.drafter.trained_k
    assert plan.max_model_len <= pair.target.max_position_embeddings
    assert plan.memory.drafter_weights_gib > 0 and plan.memory.kv_cache_gib > 0


@pytest.mark.parametrize("pair_id", sorted(p for p in CATALOG.pairs if p.endswith(LONG_CONTEXT)))
def test_a_long_context_pair_is_the_pair_it_is_named_after_with_another_drafter(pair_id):
    pair, base = CATALOG.pairs[pair_id], CATALOG.pairs[pair_id.removesuffix(LONG_CONTEXT)]
    assert pair.target == base.target  # one YAML anchor: the same target model, planned the same way
    assert pair.drafter.hf_id != base.drafter.hf_id
    assert pair.drafter.hf_id.lower().endswith(LONG_CONTEXT)
    assert any(base.drafter.hf_id in note for note in pair.notes)  # its card says when to use the other


def _documented_pair_rows() -> dict[str, list[str]]:
    lines = CATALOG_DOC.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| pair id |"))
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_documented_catalog_table_lists_every_pair_with_its_drafter_and_ks():
    rows = _documented_pair_rows()
    assert set(rows) == set(CATALOG.pairs)
    for pair_id, cells in rows.items():
        target, drafter, trained_k, ks = cells[:4]
        pair = CATALOG.pairs[pair_id]
        assert target.split()[0] == pair.target.hf_id, pair_id
        assert drafter == pair.drafter.hf_id, pair_id
        assert int(trained_k.split()[0]) == pair.drafter.trained_k, pair_id
        assert ks == " / ".join(str(pair.recommended_k[p]) for p in ProfileName), pair_id


def test_gpu_generations_carry_the_compute_capability_vllm_keys_on():
    by_gpu = {inst.gpu: inst.cc for inst in CATALOG.instances.values()}
    assert by_gpu["V100"] < 7.5 <= by_gpu["T4"] < 8.0 <= by_gpu["A100"]
    assert by_gpu["L40S"] >= 8.9 and by_gpu["H100"] >= 8.9  # FP8
    assert not CATALOG.instances["ml.g5.xlarge"].supports_fp8
