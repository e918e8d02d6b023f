"""The roofline estimate of a unit's service curve (peagle/simulate/service_estimate.py): checked against P-EAGLE's
published figures (vLLM PR #32887), and the curve it gives a plan."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from peagle.catalog import load_catalog
from peagle.catalog.roofline import TargetFigures, load_roofline_figures
from peagle.planning.planner import _kv_bytes_per_token_per_gpu, plan_deployment
from peagle.settings import load_deployment_config
from peagle.simulate import service_estimate as estimate


def _published_model() -> estimate.DecodeModel:
    pair = load_catalog().pairs[estimate.PUBLISHED_PAIR]
    kv = _kv_bytes_per_token_per_gpu(pair, 1, estimate.PUBLISHED_KV_BYTES)
    model = estimate.decode_model(
        estimate.PUBLISHED_PAIR, pair, estimate.PUBLISHED_GPU, tensor_parallel=1, kv_bytes_per_token_per_gpu=kv
    )
    assert model is not None
    return model


def _plan(**overrides):
    return plan_deployment(load_deployment_config("deployments/default.yaml", overrides))


@pytest.mark.parametrize(("batch", "k", "tps", "speedup"), estimate.PUBLISHED_PR_32887)
def test_speculations_speedup_stays_within_the_stated_band_of_pr_32887(batch, k, tps, speedup):
    """TPOT at K=0 over TPOT at K for gpt-oss-120b on one B200, against the PR's 1.52x (batch 1, K=7) and 1.34x
    (batch 8, K=3): the error is the one recorded in SPEEDUP_ERROR and within SPEEDUP_ERROR_BAND."""
    model = _published_model()
    context = estimate.PUBLISHED_CONTEXT_TOKENS
    estimated = model.tpot_seconds(batch, 0, context) / model.tpot_seconds(batch, k, context)
    error = estimated / speedup - 1
    assert error == pytest.approx(estimate.SPEEDUP_ERROR[(batch, k)], abs=0.005)
    assert abs(error) <= estimate.SPEEDUP_ERROR_BAND


@pytest.mark.parametrize(("batch", "k", "tps", "speedup"), estimate.PUBLISHED_PR_32887)
def test_the_calibration_is_the_recorded_ratio_and_the_bounds_bracket_the_published_tpot(batch, k, tps, speedup):
    """Published TPOT over the roofline's, with speculation and at the PR's baseline (K=0), as recorded; the low and
    high bounds' TPOT bracket every published TPOT and the central one lies between them."""
    model = _published_model()
    context = estimate.PUBLISHED_CONTEXT_TOKENS
    for run_k, published_tpot in ((k, batch / tps), (0, batch / (tps / speedup))):
        roofline = model.tpot_seconds(batch, run_k, context)
        recorded = estimate.PUBLISHED_OVER_ROOFLINE[(batch, run_k)]
        assert published_tpot / roofline == pytest.approx(recorded, rel=estimate.TPOT_RATIO_TOLERANCE)
        low, central, high = (roofline * estimate._calibration(bound) for bound in ("low", "central", "high"))
        assert high <= published_tpot * (1 + estimate.TPOT_RATIO_TOLERANCE)
        assert low >= published_tpot * (1 - estimate.TPOT_RATIO_TOLERANCE)
        assert high < central < low


def test_the_acceptance_length_is_the_cards_at_its_k_and_grows_with_k():
    model = _published_model()
    card = load_roofline_figures().acceptance["gpt-oss-120b"]
    assert model.acceptance_length(card.k) == pytest.approx(card.acceptance_length, rel=1e-6)
    lengths = [model.acceptance_length(k) for k in range(0, 9)]
    assert lengths[0] == 1.0
    assert all(later > earlier for earlier, later in zip(lengths, lengths[1:], strict=False))


def test_a_plans_curve_levels_double_up_to_max_num_seqs_each_judged_against_the_profiles_slo():
    plan = _plan(model="gpt-oss-120b", instanceType="ml.g6e.12xlarge", profile="codegen")
    curve = estimate.estimated_curve(plan)
    assert curve is not None
    assert [point.in_flight for point in curve.points] == [1, 2, 4, 8, 16, 32, 64]
    assert [point.rate for point in curve.points] == sorted(point.rate for point in curve.points)
    assert curve.output_tokens == plan.profile.sampling.max_tokens
    slo = plan.profile.slo
    assert (curve.ttft_seconds, curve.tpot_seconds, curve.e2e_seconds) == (
        slo.ttft_seconds,
        slo.tpot_seconds,
        slo.e2e_seconds,
    )
    for point in curve.points:
        assert point.e2e_mean == pytest.approx(point.ttft_mean + point.tpot_mean * (curve.output_tokens - 1))
        assert point.rate * point.e2e_mean == pytest.approx(point.in_flight)  # Little's law, as measured curves
        assert point.tpot_p50 == point.tpot_p90 == point.tpot_mean
        meets = point.ttft_mean <= 2.0 and point.tpot_mean <= 0.05 and point.e2e_mean <= 30.0
        assert point.attainment == (1.0 if meets else 0.0)
        assert curve.slo_share(slo, point.rate) == point.attainment
    for words in (estimate.ESTIMATE_NAME, "4 x L40S", "864 GB/s", "K 5", "acceptance length 2.68", "PR #32887"):
        assert words in curve.source


def test_the_low_bound_is_slower_and_the_high_bound_faster_and_the_low_one_can_decide_a_miss():
    """Codegen's 30 s end-to-end bound: at 64 in flight the low bound misses it (the slowest calibration and four
    GPUs decoding no faster than one), the central one meets it: a verdict the estimate decides, run both ways."""
    plan = _plan(model="gpt-oss-120b", instanceType="ml.g6e.12xlarge", profile="codegen")
    low, central, high = (estimate.estimated_curve(plan, bound=bound) for bound in ("low", "central", "high"))
    assert low is not None and central is not None and high is not None
    for slow, fast in ((low, central), (central, high)):
        assert all(s.tpot_mean > f.tpot_mean for s, f in zip(slow.points, fast.points, strict=True))
        assert slow.max_rps < fast.max_rps
    # One request in flight is bound by the reads: the low bound reads them all on one GPU, four times the time.
    calibrations = estimate._calibration("low") / estimate._calibration("central")
    assert plan.tensor_parallel_size == 4
    assert low.points[0].tpot_mean / central.points[0].tpot_mean == pytest.approx(4 * calibrations, rel=1e-6)
    assert low.points[-1].attainment == 0.0
    assert central.points[-1].attainment == 1.0
    assert "low" in low.source and "x7.15" in low.source


def test_without_a_needed_figure_there_is_no_estimate():
    """gpt-oss-20b has no acceptance figure (its card's was not readable): with K > 0 no curve, with K = 0 one; a GPU
    without figures (A100, ml.p4d) gives none at any K."""
    assert estimate.estimated_curve(_plan()) is None
    assert estimate.estimated_curve(_plan(speculativeTokens=0)) is not None
    assert estimate.estimated_curve(_plan(model="gpt-oss-120b", instanceType="ml.p4d.24xlarge")) is None


def test_an_unknown_bound_says_which_exist():
    with pytest.raises(ValueError, match="bound 'middle': one of low, central, high"):
        estimate.estimated_curve(_plan(speculativeTokens=0), bound="middle")


def test_every_gpu_with_figures_is_an_instance_types_gpu():
    """A typo in gpus.yaml would silently leave that GPU without an estimate."""
    named = {instance.gpu for instance in load_catalog().instances.values()}
    assert set(load_roofline_figures().gpus) <= named


def test_a_moe_target_needs_all_its_expert_figures():
    with pytest.raises(ValidationError, match="go together"):
        TargetFigures.model_validate({"total_parameters": 2e9, "active_parameters": 1e9, "experts_per_layer": 8})
