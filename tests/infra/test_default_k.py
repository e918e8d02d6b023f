"""The planner's default K and its source (peagle/planning/speculation_choice.py): `peagle plan` says where K came
from for every catalog pair, the K-by-load model decides where it has every figure, the catalog's K stays where a
figure is missing (named), and a schedule the model makes passes the settings' own checks and synthesizes."""

from __future__ import annotations

import json
import re

import pytest
from cdk_synth import write_deployment

from peagle.catalog import ProfileName, load_catalog
from peagle.cli import main
from peagle.planning.deployment_rules import plan_checked_deployment
from peagle.planning.planner import plan_ab_baseline, plan_deployment
from peagle.settings import config_from_overrides, parse_deployment_config

B200 = "ml.p6-b200.48xlarge"
# gpt-oss-120b on B200 serving many short requests: past ~100 sequences the step is bound by its matmuls, where the
# model finds a schedule that gains ~6% and loses nowhere (tests/infra/test_k_by_load.py).
SHORT_AND_BUSY = {"max_num_seqs": 128, "typical_context_tokens": 512, "max_tokens": 512}


def _k_source(capsys, *argv: str) -> str:
    assert main(["plan", *argv]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("K source")]
    assert len(lines) == 1
    return lines[0].removeprefix("K source").strip()


@pytest.mark.parametrize("pair_id", sorted(load_catalog().pairs))
def test_plan_prints_where_k_came_from_for_every_catalog_pair(capsys, pair_id):
    source = _k_source(capsys, "--model", pair_id, "--instance", B200)
    if pair_id == "gpt-oss-120b":  # the one pair with an acceptance figure (model_figures.yaml)
        assert re.match(r"model: K=5 at every batch size 1-32 .*roofline of 8 x B200", source), source
    else:
        recommended = load_catalog().pairs[pair_id].recommended_k[ProfileName.CHATBOT]
        assert source.startswith(f"catalog: K={recommended}, the pair's recommended K for chatbot"), source
        assert f"no acceptance length for {pair_id}" in source, source


def test_a_missing_figure_is_named_in_the_source(capsys):
    assert "peagle/catalog/gpus.yaml has no bandwidth and FLOPs for L4" in _k_source(
        capsys, "--model", "gpt-oss-120b", "--instance", "ml.g6.12xlarge"
    )
    assert "checked against published figures on B200 only (vLLM PR #32887), not on L40S" in _k_source(
        capsys, "--model", "gpt-oss-120b", "--instance", "ml.g6e.12xlarge"
    )
    qwen = _k_source(capsys, "--model", "qwen3-8b", "--instance", B200)
    assert qwen.startswith("catalog: K=5, the pair's recommended K for chatbot (peagle/catalog/pairs.yaml); no K by")
    assert "model_figures.yaml has no parameters for target Qwen/Qwen3-8B" in qwen


def test_a_k_the_deployment_sets_is_its_source_in_words_and_json(capsys):
    assert _k_source(capsys, "--model", "gpt-oss-120b", "--instance", B200, "--speculative-tokens", "4") == (
        "setting: K=4 (speculation.speculative_tokens)"
    )
    assert main(["plan", "--model", "gpt-oss-20b", "--instance", "ml.g6e.xlarge", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["k_source"]["kind"] == "catalog" and document["speculative_tokens"] == 7


def test_the_model_replaces_the_catalogs_k_only_where_nothing_is_set():
    """gpt-oss-120b on B200 at the batch profile: the catalog recommends 3, the model 6 (its roofline keeps the
    step bound by its reads to larger K with 8 GPUs' FLOPs); memory and the K reserve follow the chosen K."""
    plan = plan_deployment(config_from_overrides({"model": "gpt-oss-120b", "instanceType": B200, "profile": "batch"}))
    assert load_catalog().pairs["gpt-oss-120b"].recommended_k[ProfileName.BATCH] == 3
    assert plan.k_choice is not None and plan.k_choice.kind == "model"
    assert plan.speculative_tokens == 6 and plan.speculative_schedule == ()
    assert not any("above the recommended" in note for note in plan.notes)
    given = plan_deployment(
        config_from_overrides(
            {"model": "gpt-oss-120b", "instanceType": B200, "profile": "batch", "speculativeTokens": 3}
        )
    )
    assert given.speculative_tokens == 3 and given.k_choice is not None and given.k_choice.kind == "setting"


def _short_and_busy(**more):
    return parse_deployment_config(
        {"model": "gpt-oss-120b", "instance": {"type": B200}, "profile_overrides": SHORT_AND_BUSY, **more}
    )


def test_a_modelled_schedule_passes_the_settings_own_checks_and_the_plans_coverage_rule():
    plan = plan_deployment(_short_and_busy())
    assert plan.k_choice is not None and plan.k_choice.kind == "model"
    assert len(plan.speculative_schedule) > 1
    assert plan.speculative_tokens == max(band[2] for band in plan.speculative_schedule)
    bands = [{"min_batch": lo, "max_batch": hi, "speculative_tokens": k} for lo, hi, k in plan.speculative_schedule]
    # The settings' own validation (contract.schedule_problems through peagle/settings/rules.py).
    written = _short_and_busy(speculation={"schedule": bands})
    assert plan_deployment(written).speculative_schedule == plan.speculative_schedule
    assert plan_checked_deployment(_short_and_busy()).plan.speculative_schedule == plan.speculative_schedule


def test_the_ab_baseline_stays_at_a_static_k_beside_a_modelled_schedule():
    config = _short_and_busy(ab_test={"enabled": True, "baseline_speculative_tokens": 2})
    assert len(plan_deployment(config).speculative_schedule) > 1
    baseline = plan_ab_baseline(config)
    assert baseline is not None and baseline.speculative_schedule == () and baseline.speculative_tokens == 2


def test_a_modelled_schedule_synthesizes_into_the_container_environment(cdk_synthesized, tmp_path):
    overrides = "\n".join(f"  {key}: {value}" for key, value in SHORT_AND_BUSY.items())
    path = write_deployment(
        tmp_path, f"model: gpt-oss-120b\ninstance: {{type: {B200}}}\nprofile_overrides:\n{overrides}\n"
    )
    plan = plan_deployment(_short_and_busy())
    speculative = json.loads(cdk_synthesized(deployment=path).container_environment()["SM_VLLM_SPECULATIVE_CONFIG"])
    assert speculative["num_speculative_tokens"] == plan.speculative_tokens
    assert speculative["num_speculative_tokens_per_batch_size"] == [list(band) for band in plan.speculative_schedule]
