"""The planner: what fits, what does not, and what it says when it does not."""

import pytest

from peagle.catalog import load_catalog
from peagle.planning.planner import GIB, MAX_TIMEOUT_SECONDS, MIN_TIMEOUT_SECONDS, plan_deployment
from peagle.settings import config_from_overrides
from peagle.settings.errors import ConfigError, PlanError


def plan(**overrides):
    return plan_deployment(config_from_overrides(overrides))


def test_default_pair_on_one_l40s_uses_the_card_k_and_fp8_kv_cache():
    p = plan(model="gpt-oss-20b", instanceType="ml.g6e.xlarge")
    assert p.tensor_parallel_size == 1
    assert p.speculative_tokens == 7  # chatbot K for gpt-oss-20b (P-EAGLE peaks at K=7)
    assert p.kv_cache_dtype == "fp8"
    assert (p.max_model_len, p.max_num_seqs) == (8192, 32)
    assert p.cost_per_hour_usd == pytest.approx(2.336)


def test_kv_cache_is_what_the_weights_and_reserve_leave_counted_per_layer_and_head():
    # Worked by hand from the catalog rows: one L40S (45 GiB usable at 0.9), gpt-oss-20b
    # (13.8e9 weight bytes; 24 KV layers, 8 KV heads of 64) + its drafter (3.6e9 bytes, 4 layers),
    # fp8 KV cache (1 byte), 2.5 GiB runtime reserve.
    m = plan(model="gpt-oss-20b", instanceType="ml.g6e.xlarge").memory
    kv_gib = 45.0 * 0.9 - 13.8e9 / GIB - 3.6e9 / GIB - 2.5
    assert m.kv_cache_gib == pytest.approx(kv_gib)
    assert m.kv_bytes_per_token == 2 * (24 + 4) * 8 * 64 * 1  # K and V, target + drafter layers
    assert m.kv_cache_tokens == int(kv_gib * GIB // 28672) == 816_203


def test_tensor_parallel_splits_weights_and_kv_heads_over_the_gpus():
    # ml.g6e.12xlarge: 4 L40S; each holds a quarter of the weights and 2 of the 8 KV heads.
    m = plan(model="gpt-oss-20b", instanceType="ml.g6e.12xlarge").memory
    assert m.target_weights_gib == pytest.approx(13.8e9 / GIB / 4)
    assert m.kv_bytes_per_token == 2 * (24 + 4) * 2 * 64 * 1


def test_gpt_oss_120b_on_one_a10g_fails_naming_the_cheapest_instance_that_fits():
    with pytest.raises(PlanError) as error:
        plan(model="gpt-oss-120b", instanceType="ml.g5.xlarge")
    message = str(error.value)
    assert message.startswith("gpt-oss-120b needs ~64 GiB of weights")
    assert "ml.g5.xlarge has 1 x 22.5 GiB A10G" in message
    assert "Smallest that fits: ml.g6.12xlarge (4 x 22.5 GiB L4" in message
    assert "set instance.type: ml.g6.12xlarge" in message
    # and the suggestion really plans
    assert plan(model="gpt-oss-120b", instanceType="ml.g6.12xlarge").tensor_parallel_size == 4


@pytest.mark.parametrize("instance", ["ml.p3.2xlarge", "ml.p3.8xlarge", "ml.p3.16xlarge"])
def test_v100_is_rejected_with_the_reason_and_an_alternative(instance):
    with pytest.raises(
        PlanError,
        match=r"V100 GPUs \(compute capability 7.0\); current vLLM needs compute "
        r"capability >= 7.5.*Smallest that fits: ml\.g6\.xlarge",
    ):
        plan(model="gpt-oss-20b", instanceType=instance)


def test_t4_cannot_run_mxfp4_or_bf16():
    with pytest.raises(PlanError, match=r"gpt-oss-20b \(mxfp4 weights\) needs compute capability >= 8.0.*T4"):
        plan(model="gpt-oss-20b", instanceType="ml.g4dn.12xlarge")


def test_k_above_the_trained_count_is_rejected_without_an_instance_suggestion():
    with pytest.raises(PlanError) as error:
        plan(model="gpt-oss-20b", instanceType="ml.g6e.xlarge", speculativeTokens=11)
    message = str(error.value)
    assert (
        "speculation.speculative_tokens: 11 exceeds what the gpt-oss-20b drafter (amazon/GPT-OSS-20B-P-EAGLE) was "
        "trained for (K <= 10)" in message
    )
    assert "recommended for chatbot: speculation.speculative_tokens: 7" in message
    assert "or speculation.speculative_tokens: 0 to turn speculation off" in message
    assert "Smallest that fits" not in message


def test_k_at_the_trained_count_is_allowed_with_a_note():
    p = plan(model="gpt-oss-20b", instanceType="ml.g6e.xlarge", speculativeTokens=10)
    assert p.speculative_tokens == 10
    assert any("above the recommended 7" in note for note in p.notes)


def test_k_zero_turns_speculation_off_and_frees_the_drafter_memory():
    on = plan(model="gpt-oss-20b", instanceType="ml.g6e.xlarge")
    off = plan(model="gpt-oss-20b", instanceType="ml.g6e.xlarge", speculativeTokens=0)
    assert not off.speculation_enabled
    assert off.memory.drafter_weights_gib == 0
    assert off.memory.kv_cache_gib > on.memory.kv_cache_gib


def test_profile_changes_k_context_and_concurrency():
    batch = plan(model="gpt-oss-20b", instanceType="ml.g6e.xlarge", profile="batch")
    assert batch.speculative_tokens == 3  # gains shrink at high batch: smaller K
    assert batch.max_model_len == 32768
    assert 64 < batch.max_num_seqs <= 128  # 8k-token requests: the KV cache, not the profile, caps it
    assert batch.profile.sampling.temperature == 0.3


def test_tight_memory_lowers_context_and_concurrency_and_says_so():
    p = plan(model="qwen3-8b", instanceType="ml.g6.xlarge")  # 22.5 GiB L4, 16.4 GB of bf16 weights
    assert p.kv_cache_dtype == "fp8"  # L4 has FP8
    assert 4096 <= p.max_model_len < 8192
    assert any("max_model_len lowered from 8192" in note for note in p.notes)
    assert p.max_num_seqs < 32
    assert any("max_num_seqs lowered from 32" in note for note in p.notes)


def test_a_plan_that_cannot_hold_one_request_fails_naming_what_fits():
    # A10G: no FP8, so the KV cache is twice as large per token as on L4
    with pytest.raises(
        PlanError,
        match=r"qwen3-8b on ml.g5.xlarge leaves KV cache for [\d,]+ tokens, less than one "
        r"request at the profile's min_model_len 4,096\. Smallest that fits: ml.g6.xlarge",
    ):
        plan(model="qwen3-8b", instanceType="ml.g5.xlarge")
    with pytest.raises(PlanError, match=r"min_model_len 16,384\. Smallest that fits: ml.g6e.xlarge"):
        plan(model="qwen3-8b", instanceType="ml.g6.xlarge", profile="batch")


def test_tensor_parallel_spans_every_gpu_of_the_instance():
    assert plan(model="gpt-oss-120b", instanceType="ml.p5.48xlarge").tensor_parallel_size == 8
    assert plan(model="qwen3-coder-30b-a3b", instanceType="ml.g6e.12xlarge").tensor_parallel_size == 4


def test_timeouts_scale_with_the_weights_within_sagemaker_limits():
    small = plan(model="gpt-oss-20b", instanceType="ml.g6e.xlarge")
    large = plan(model="gpt-oss-120b", instanceType="ml.p5.48xlarge")
    for p in (small, large):
        for seconds in (p.container_startup_timeout_seconds, p.model_download_timeout_seconds):
            assert MIN_TIMEOUT_SECONDS <= seconds <= MAX_TIMEOUT_SECONDS
    assert large.model_download_timeout_seconds > small.model_download_timeout_seconds


def test_cost_scales_with_instance_count():
    assert plan(model="gpt-oss-20b", instanceType="ml.g6e.xlarge", instanceCount=2).cost_per_hour_usd == pytest.approx(
        2 * 2.336
    )


def test_the_price_is_the_catalogs_unless_the_deployment_file_overrides_it():
    catalog, prices = plan(model="gpt-oss-20b", instanceType="ml.g6e.xlarge"), load_catalog()
    source = f"catalog, {prices.price_region}, prices of {prices.price_date}"
    assert (catalog.price_per_hour_usd, catalog.price_source) == (2.336, source)
    (cost,) = [line for line in catalog.summary_lines() if line.startswith("cost")]
    assert f"on demand ({source})" in cost
    given = plan_deployment(config_from_overrides({"instanceCount": 2}, base={"instance": {"price_per_hour_usd": 1.5}}))
    assert (given.price_per_hour_usd, given.price_source) == (1.5, "instance.price_per_hour_usd")
    assert given.cost_per_hour_usd == pytest.approx(3.0)
    (cost,) = [line for line in given.summary_lines() if line.startswith("cost")]
    assert "$3.00/hour on demand (instance.price_per_hour_usd)" in cost


def test_a_price_that_is_not_positive_is_refused_with_the_field_named():
    for bad in (0, -1.5):
        with pytest.raises(ConfigError, match=r"instance.price_per_hour_usd: Input should be greater than 0"):
            config_from_overrides({}, base={"instance": {"price_per_hour_usd": bad}})


def test_profile_override_conflict_is_explained():
    config = config_from_overrides({}, base={"profile_overrides": {"min_model_len": 9000}})
    with pytest.raises(PlanError, match="min_model_len 9000 exceeds max_model_len 8192"):
        plan_deployment(config)


def test_errors_no_instance_type_would_fix_suggest_none():
    with pytest.raises(PlanError) as error:
        plan(model="gpt-oss-20b", instanceType="ml.g6e.xlarge", speculativeTokens=20)
    assert "exceeds what the gpt-oss-20b drafter" in str(error.value)
    assert "Smallest that fits" not in str(error.value) and "No instance type" not in str(error.value)


def test_plan_on_the_command_line_names_its_flags(capsys):
    """Before: `peagle plan --instance` was told to "set instance.type in the deployment file or pass
    -c instanceType=...": the file's key and the CDK app's context key, neither its own flag."""
    from peagle.cli import main

    assert main(["plan", "--model", "gpt-oss-120b", "--instance", "ml.g5.xlarge"]) == 2
    err = capsys.readouterr().err
    assert "Smallest that fits: ml.g6.12xlarge" in err and "set --instance ml.g6.12xlarge" in err
    assert "instance.type" not in err and "-c instanceType" not in err, err
    assert main(["plan", "--model", "gpt-oss-20b", "--instance", "ml.g6e.xlarge", "--speculative-tokens", "11"]) == 2
    err = capsys.readouterr().err
    assert "--speculative-tokens 11 exceeds" in err and "--speculative-tokens 0 to turn speculation off" in err
