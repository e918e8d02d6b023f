"""K by batch size (speculation.schedule): validation, the plan, the container's speculative config, synth."""

import json

import pytest
from cdk_synth import REPO_ROOT, synthesize, write_deployment

from peagle.cli import main
from peagle.planning.deployment_rules import DeploymentRuleError, plan_checked_deployment
from peagle.planning.planner import plan_ab_baseline, plan_deployment
from peagle.settings import config_from_overrides, load_deployment_config
from peagle.settings.errors import ConfigError, PeagleError
from peagle_serve.contract import DRAFTER_DIR, speculative_config

DYNAMIC_K_FILE = REPO_ROOT / "deployments" / "dynamic-k.yaml"


def _config(*bands: tuple[int, int, int], **speculation: object):
    schedule = [{"min_batch": lo, "max_batch": hi, "speculative_tokens": k} for lo, hi, k in bands]
    return config_from_overrides({}, base={"speculation": {"schedule": schedule, **speculation}})


def _problems(*bands: tuple[int, int, int], **speculation: object) -> str:
    with pytest.raises(ConfigError) as error:
        _config(*bands, **speculation)
    return str(error.value)


# --- The deployment file: what a schedule may be -----------------------------------------------


def test_a_gap_is_refused_naming_the_batch_sizes_left_without_k():
    message = _problems((1, 8, 4), (12, 32, 0))
    assert (
        "speculation.schedule: no band covers batch sizes 9-11, between band 1 (1-8: K=4) and band 2 (12-32: K=0); "
        "vLLM would silently use K=4 there. Start band 2 at 9 or add a band for them"
    ) in message


def test_overlapping_bands_are_refused_with_where_to_start_the_second():
    message = _problems((1, 8, 4), (6, 32, 2))
    assert "bands 1 (1-8: K=4) and 2 (6-32: K=2) overlap at batch sizes 6-8; start band 2 at 9" in message


def test_a_schedule_must_start_at_batch_size_1():
    message = _problems((2, 32, 4))
    assert "the first band (2-32: K=4) starts at batch size 2; start it at 1" in message


def test_k_above_the_drafters_trained_k_is_refused_per_band():
    message = _problems((1, 8, 11), (9, 32, 4))  # gpt-oss-20b's drafter: trained K 10
    assert "band 1 (1-8: K=11): K=11 is above the 10 tokens the drafter was trained for" in message
    assert "Use K <= 10" in message and "band 2" not in message
    _config((1, 8, 10), (9, 32, 4))  # at the trained K: fine


def test_all_zero_bands_say_to_turn_speculation_off_instead():
    message = _problems((1, 8, 0), (9, 32, 0))
    assert "every band has K=0: nothing is drafted at any batch size" in message
    assert "speculative_tokens: 0" in message


def test_k_zero_at_batch_size_1_is_refused_because_the_self_check_runs_alone():
    message = _problems((1, 2, 0), (3, 32, 4))
    assert "band 1 (1-2: K=0) drafts nothing at batch size 1" in message
    assert "start-up self-check sends its warm-up request alone" in message and "give batch size 1 a K > 0" in message


def test_speculative_tokens_next_to_a_schedule_must_be_its_largest_k():
    assert _config((1, 4, 7), (5, 32, 2), speculative_tokens=7).speculation.speculative_tokens == 7
    message = _problems((1, 4, 7), (5, 32, 2), speculative_tokens=4)
    assert "speculation.speculative_tokens: 4 conflicts with speculation.schedule, whose largest K is 7" in message
    assert "give only the schedule, or K 7" in message
    # -c speculativeTokens=0 on a file with a schedule: say how to turn speculation off.
    with pytest.raises(ConfigError, match="or remove the schedule to turn speculation off"):
        load_deployment_config(DYNAMIC_K_FILE, {"speculativeTokens": "0"})


def test_every_schedule_problem_is_reported_at_once_with_field_errors_named(tmp_path):
    message = _problems((2, 8, 11), (6, 10, 3), (14, 32, 0), speculative_tokens=5)
    for expected in (
        "K=11 is above",
        "starts at batch size 2",
        "overlap at batch sizes 6-8",
        "no band covers batch sizes 11-13",
    ):
        assert expected in message
    assert "conflicts with speculation.schedule" in message
    path = write_deployment(
        tmp_path, "speculation:\n  schedule:\n    - {min_batch: 0, max_batch: 4, speculative_tokens: 2, k: 1}\n"
    )
    with pytest.raises(ConfigError) as error:
        load_deployment_config(path)
    assert "speculation.schedule.0.min_batch: Input should be greater than 0 (given: 0)" in str(error.value)
    assert "speculation.schedule.0.k: Extra inputs are not permitted" in str(error.value)


# --- The plan: sized for the largest K; the bands against max_num_seqs ---------------------------


def test_the_plan_carries_the_schedule_and_is_sized_for_its_largest_k():
    config = _config((1, 4, 2), (5, 16, 7), (17, 32, 0))
    plan = plan_deployment(config)
    static = plan_deployment(config_from_overrides({"speculativeTokens": 7}))
    assert plan.speculative_schedule == ((1, 4, 2), (5, 16, 7), (17, 32, 0))
    assert plan.speculative_tokens == 7 and plan.speculation_enabled
    assert (plan.memory, plan.max_model_len, plan.max_num_seqs) == (static.memory, static.max_model_len, 32)
    assert plan.memory.drafter_weights_gib > 0
    assert "K by batch size 1-4: K=2, 5-16: K=7, 17-32: K=0 (largest K=7 sizes memory" in "\n".join(
        plan.summary_lines()
    )


def test_the_ab_baseline_stays_static():
    config = config_from_overrides(
        {},
        base={
            "speculation": {"schedule": [{"min_batch": 1, "max_batch": 32, "speculative_tokens": 4}]},
            "ab_test": {"enabled": True, "baseline_speculative_tokens": 2},
        },
    )
    baseline = plan_ab_baseline(config)
    assert (baseline.speculative_tokens, baseline.speculative_schedule) == (2, ())


def test_bands_must_reach_the_plans_max_num_seqs():
    with pytest.raises(DeploymentRuleError) as error:
        plan_checked_deployment(_config((1, 8, 4), (9, 20, 1)))  # chatbot: max_num_seqs 32
    assert [v.rule for v in error.value.violations] == ["speculation-schedule"]
    assert (
        "peagle-endpoint/Primary: speculation.schedule against the plan's max_num_seqs 32: the bands end at batch "
        "size 20, but the server runs up to max_num_seqs=32 requests at once (vLLM would silently use K=1 for 21-32); "
        "end band 2 (9-20: K=1) at 32"
    ) in str(error.value)


def test_a_band_past_max_num_seqs_never_applies_and_is_refused():
    config = config_from_overrides(
        {},
        base={
            "profile_overrides": {"max_num_seqs": 12},
            "speculation": {
                "schedule": [
                    {"min_batch": 1, "max_batch": 8, "speculative_tokens": 4},
                    {"min_batch": 9, "max_batch": 20, "speculative_tokens": 1},
                    {"min_batch": 21, "max_batch": 64, "speculative_tokens": 0},
                ]
            },
        },
    )
    with pytest.raises(DeploymentRuleError, match=r"band 3 \(21-64: K=0\) starts above max_num_seqs=12"):
        plan_checked_deployment(config)


def test_the_example_deployment_breaks_no_rule_and_plan_prints_its_schedule(capsys):
    plan_checked_deployment(load_deployment_config(DYNAMIC_K_FILE))
    assert main(["plan", "--deployment", str(DYNAMIC_K_FILE), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["speculative_tokens"] == 7
    assert document["speculative_schedule"] == [[1, 4, 7], [5, 16, 3], [17, 32, 0]]
    assert main(["plan", "--deployment", str(DYNAMIC_K_FILE)]) == 0
    assert "K by batch size 1-4: K=7, 5-16: K=3, 17-32: K=0" in capsys.readouterr().out


# --- The container: the schedule in vLLM's speculative config ------------------------------------


def test_the_speculative_config_carries_the_schedule_next_to_its_largest_k():
    assert speculative_config(DRAFTER_DIR, 4, [(1, 2, 4), (3, 16, 0)]) == {
        "method": "eagle3",
        "model": "/opt/ml/model/drafter",
        "num_speculative_tokens": 4,
        "parallel_drafting": True,
        "num_speculative_tokens_per_batch_size": [[1, 2, 4], [3, 16, 0]],
    }
    with pytest.raises(ValueError, match=r"k is the schedule's largest K \(4\)"):
        speculative_config(DRAFTER_DIR, 3, [(1, 2, 4), (3, 16, 0)])
    with pytest.raises(ValueError, match="a schedule needs a band with K > 0"):
        speculative_config(DRAFTER_DIR, 0, [(1, 16, 0)])


def test_a_deployment_with_a_schedule_synthesizes_with_it_in_the_container_environment(synth):
    environment = synth(deployment=str(DYNAMIC_K_FILE)).container_environment()
    speculative = json.loads(environment["SM_VLLM_SPECULATIVE_CONFIG"])
    assert speculative["num_speculative_tokens"] == 7
    assert speculative["num_speculative_tokens_per_batch_size"] == [[1, 4, 7], [5, 16, 3], [17, 32, 0]]
    assert environment["SM_VLLM_MAX_NUM_SEQS"] == "32"
    assert environment["PEAGLE_SPECULATION_SELF_CHECK"] == "true"


def test_a_bad_schedule_fails_synth_with_what_is_wrong(tmp_path):
    path = write_deployment(
        tmp_path,
        "speculation:\n  schedule:\n"
        "    - {min_batch: 1, max_batch: 8, speculative_tokens: 4}\n"
        "    - {min_batch: 10, max_batch: 32, speculative_tokens: 0}\n",
    )
    with pytest.raises(PeagleError, match=r"no band covers batch size 9, between band 1 \(1-8: K=4\) and band 2"):
        synthesize(tmp_path / "cdk.out", deployment=path)
