"""The planner's K-by-load model (peagle/planning/k_by_load.py, roofline_step.py): held against vLLM PR #32887's
published speed-ups, the drafter paid at a schedule's largest K, and the margin rule on constructed GPUs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from peagle.catalog import load_catalog
from peagle.catalog.roofline import GpuFigures
from peagle.planning import k_by_load
from peagle.planning.planner import _kv_bytes_per_token_per_gpu
from peagle.planning.roofline_step import DecodeModel, decode_model
from peagle.simulate import service_estimate as published
from peagle_serve.contract import schedule_coverage_problems, schedule_problems

TRAINED_K = load_catalog().pairs[published.PUBLISHED_PAIR].drafter.trained_k


def _b200(tensor_parallel: int = 1) -> DecodeModel:
    """gpt-oss-120b on B200 with the published runs' fp8 KV cache (service_estimate.py's assumptions)."""
    pair = load_catalog().pairs[published.PUBLISHED_PAIR]
    kv = _kv_bytes_per_token_per_gpu(pair, tensor_parallel, published.PUBLISHED_KV_BYTES)
    model = decode_model(
        published.PUBLISHED_PAIR,
        pair,
        published.PUBLISHED_GPU,
        tensor_parallel=tensor_parallel,
        kv_bytes_per_token_per_gpu=kv,
    )
    assert model is not None
    return model


def _on(bandwidth_gb_per_s: float, bf16_tflops: float) -> DecodeModel:
    """The same pair on a constructed GPU."""
    return replace(
        _b200(), gpu=GpuFigures(memory_bandwidth_gb_per_s=bandwidth_gb_per_s, dense_tflops={"bf16": bf16_tflops})
    )


def test_the_model_is_used_on_the_gpu_it_was_checked_on():
    assert k_by_load.CHECKED_GPUS == (published.PUBLISHED_GPU,)


@pytest.mark.parametrize(("batch", "k", "tps", "speedup"), published.PUBLISHED_PR_32887)
def test_the_models_speedup_at_pr_32887s_points_stays_within_the_error_band(batch, k, tps, speedup):
    """Tokens/s at K over tokens/s at K=0 (the planner's measure), against the PR's 1.52x (batch 1, K=7) and 1.34x
    (batch 8, K=3) for gpt-oss-120b on one B200."""
    model, context = _b200(), published.PUBLISHED_CONTEXT_TOKENS
    modelled = k_by_load.tokens_per_second(model, batch, k, context) / k_by_load.tokens_per_second(
        model, batch, 0, context
    )
    assert abs(modelled / speedup - 1) <= published.SPEEDUP_ERROR_BAND


def test_at_batch_1_gpt_oss_120b_on_b200_prefers_the_largest_k():
    """One request reads the weights whatever K it verifies: every K from 2 up yields more, the trained K most."""
    model, context = _b200(), published.PUBLISHED_CONTEXT_TOKENS
    rates = [k_by_load.tokens_per_second(model, 1, k, context) for k in range(TRAINED_K + 1)]
    assert max(range(TRAINED_K + 1), key=rates.__getitem__) == TRAINED_K
    assert rates[2:] == sorted(rates[2:])


def test_inside_a_schedule_every_band_pays_the_drafter_at_the_largest_k():
    """vLLM runs the parallel-drafting pass at the configured (largest) K in every band, K=0 included: at a batch
    bound by its matmuls, a K=2 band under a largest K of 7 schedules 1 + 2 + 6 tokens a sequence, not 1 + 2 + 1;
    and a K=0 band still reads the drafter."""
    model, context = _on(8000, 250), 768.0
    batch = 64
    assert model.step_seconds(batch, 2, context, drafter_k=7) / model.step_seconds(batch, 2, context) == (
        pytest.approx(9 / 4)
    )
    one = _b200()
    assert one.step_seconds(1, 0, context, drafter_k=7) > one.step_seconds(1, 0, context)


def test_a_schedule_that_beats_the_best_static_k_by_the_margin_and_loses_nowhere_is_chosen():
    """B200 at 128 sequences of short context: past ~100 sequences the step is bound by its matmuls, and a band
    verifying one draft fewer under the static K's drafter gains ~6%, above the 5% margin; with a 10% margin the
    same model keeps the static K."""
    model, context = _b200(), 768.0
    chosen = k_by_load.choose(model, trained_k=TRAINED_K, max_num_seqs=128, context_tokens=context)
    assert chosen.schedule and len(chosen.schedule) > 1
    assert chosen.gain >= k_by_load.MARGIN
    largest = chosen.speculative_tokens
    for low, high, k in chosen.schedule:
        for batch in range(low, high + 1):
            band = k_by_load.tokens_per_second(model, batch, k, context, drafter_k=largest)
            static = k_by_load.tokens_per_second(model, batch, chosen.static_k, context)
            assert band >= static * (1 - 1e-9), batch
    assert "above the 5% margin for the PIECEWISE CUDA graphs" in chosen.describe(128)
    stricter = k_by_load.choose(model, trained_k=TRAINED_K, max_num_seqs=128, context_tokens=context, margin=0.10)
    assert stricter.schedule == () and stricter.speculative_tokens == chosen.static_k
    assert f"gains +{chosen.gain:.0%} (batch size {chosen.gain_at}), under the 10% margin" in stricter.describe(128)
    assert f"K={chosen.static_k} at every batch size 1-128" in stricter.describe(128)


def test_where_no_schedule_gains_the_margin_the_static_k_is_kept_and_said():
    """A constructed GPU of 3,000 GB/s and 2,000 BF16 TFLOPS at 64 sequences: the best static K is within 6% of the
    best K everywhere and every schedule loses to it somewhere."""
    chosen = k_by_load.choose(_on(3000, 2000), trained_k=TRAINED_K, max_num_seqs=64, context_tokens=768.0)
    assert chosen.schedule == () and chosen.gain == 0.0
    assert chosen.describe(64).startswith(f"K={chosen.static_k} at every batch size 1-64")
    assert "every schedule loses to it at some batch size" in chosen.describe(64)


@pytest.mark.parametrize(
    ("bandwidth", "tflops", "max_num_seqs", "context"),
    [(8000, 2250, 64, 768.0), (8000, 2250, 128, 768.0), (8000, 1000, 256, 2560.0), (8000, 250, 64, 768.0)],
)
def test_every_schedule_the_model_emits_passes_the_launchers_rules(bandwidth, tflops, max_num_seqs, context):
    chosen = k_by_load.choose(
        _on(bandwidth, tflops), trained_k=TRAINED_K, max_num_seqs=max_num_seqs, context_tokens=context
    )
    assert chosen.schedule, "these engines are chosen to give schedules"
    assert schedule_problems(list(chosen.schedule), trained_k=TRAINED_K) == []
    assert schedule_coverage_problems(chosen.schedule, max_num_seqs) == []
    assert chosen.schedule[0][:1] == (1,) and chosen.schedule[0][2] > 0


def test_a_schedule_is_fitted_to_the_plans_final_max_num_seqs():
    schedule = ((1, 40, 3), (41, 100, 2), (101, 128, 1))
    assert k_by_load.fitted(schedule, 120) == ((1, 40, 3), (41, 100, 2), (101, 120, 1))
    assert k_by_load.fitted(schedule, 90) == ((1, 40, 3), (41, 90, 2))
    assert k_by_load.fitted(schedule, 130) == ((1, 40, 3), (41, 100, 2), (101, 130, 1))


def test_batch_size_1_drafts_even_where_the_model_would_rather_not():
    """A constructed GPU with 5 BF16 TFLOPS: every step is bound by its matmuls, so no drafts would be best at any
    batch size; the start-up self-check's warm-up runs alone, so batch size 1 keeps K=1 and the rest drafts none."""
    chosen = k_by_load.choose(_on(8000, 5), trained_k=TRAINED_K, max_num_seqs=16, context_tokens=768.0)
    assert chosen.schedule == ((1, 1, 1), (2, 16, 0))
    assert chosen.static_k == 1
