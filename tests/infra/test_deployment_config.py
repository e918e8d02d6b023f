"""The deployment config: defaults, overrides from CDK context, and errors a user can act on."""

import pytest
from cdk_synth import REPO_ROOT, write_deployment

from peagle.settings import DeploymentConfig, config_from_overrides, load_deployment_config
from peagle.settings.errors import ConfigError

DEFAULT_FILE = REPO_ROOT / "deployments" / "default.yaml"


def test_default_deployment_file_loads():
    config = load_deployment_config(DEFAULT_FILE)
    assert config.model == "gpt-oss-20b"
    assert config.instance.type == "ml.g6e.xlarge"
    assert config.network.isolation is True
    assert config.speculation.speculative_tokens is None


def test_context_overrides_win_over_the_file_and_strings_are_coerced():
    config = load_deployment_config(
        DEFAULT_FILE,
        {
            "model": "qwen3-8b",
            "instanceType": "ml.g5.xlarge",
            "instanceCount": "2",
            "speculativeTokens": "0",
            "profile": "codegen",
        },
    )
    assert (config.model, config.instance.type, config.instance.count) == ("qwen3-8b", "ml.g5.xlarge", 2)
    assert config.speculation.speculative_tokens == 0
    assert config.profile.value == "codegen"


def test_overrides_given_as_none_are_ignored():
    assert load_deployment_config(DEFAULT_FILE, {"model": None}).model == "gpt-oss-20b"


def test_unknown_model_and_instance_are_reported_together_with_the_allowed_values():
    with pytest.raises(ConfigError) as error:
        config_from_overrides({"model": "llama-9000", "instanceType": "ml.m5.large"})
    message = str(error.value)
    assert "(2 problem(s))" in message  # one model-level check reports both lines, and both are counted
    assert "model 'llama-9000' is not a known pair; use one of ['gpt-oss-120b', 'gpt-oss-20b'" in message
    assert "instance.type 'ml.m5.large' is not in the instance catalog; use one of" in message
    assert "ml.g6e.xlarge" in message


def test_unknown_keys_are_rejected_not_ignored(tmp_path):
    path = write_deployment(tmp_path, "model: gpt-oss-20b\ninstance:\n  type: ml.g6e.xlarge\n  size: big\n")
    with pytest.raises(ConfigError, match=r"instance\.size: Extra inputs are not permitted"):
        load_deployment_config(path)


def test_field_errors_say_what_was_given(tmp_path):
    path = write_deployment(tmp_path, "instance:\n  count: 0\nprofile: realtime\n")
    with pytest.raises(ConfigError) as error:
        load_deployment_config(path)
    message = str(error.value)
    assert "2 problem(s)" in message
    assert "instance.count: Input should be greater than 0 (given: 0)" in message
    assert "profile: Input should be 'chatbot', 'codegen' or 'batch' (given: 'realtime')" in message


def test_the_count_is_of_the_problems_listed(tmp_path):
    """A cross-section check reports its problems as one error's lines: the header counts what it lists."""
    path = write_deployment(
        tmp_path,
        "instance:\n  type: ml.g6e.xlarge\n  fallback_types: [ml.g6.xlarge, ml.g6.xlarge]\n"
        "endpoint:\n  mode: inference_components\n",
    )
    with pytest.raises(ConfigError) as error:
        load_deployment_config(path)
    message = str(error.value)
    listed = [line for line in message.splitlines() if line.startswith("  - ")]
    assert len(listed) >= 2 and f"({len(listed)} problem(s))" in message


def test_s3_uri_must_be_a_prefix(tmp_path):
    path = write_deployment(tmp_path, "artifacts:\n  s3_uri: s3://my-bucket/models/gpt\n")
    with pytest.raises(ConfigError, match=r"is not an S3 prefix; use s3://<bucket>/<prefix>/ \(ending in '/'\)"):
        load_deployment_config(path)


def test_missing_file_and_bad_yaml_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"not found; pass an existing file with -c deployment=<path>"):
        load_deployment_config(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_deployment_config(write_deployment(tmp_path, "model: [unclosed\n"))
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_deployment_config(write_deployment(tmp_path, "- a list\n"))


def test_unknown_override_key_is_rejected():
    with pytest.raises(ConfigError, match=r"unknown override 'instance_type'; allowed: \['instanceCount'"):
        config_from_overrides({"instance_type": "ml.g5.xlarge"})


def test_custom_pair_is_validated_like_catalog_pairs(tmp_path):
    path = write_deployment(
        tmp_path,
        """
model: my-fp8-coder
custom_pairs:
  my-fp8-coder:
    target: {hf_id: Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8, weight_bytes: 31.0e9, quantization: fp8,
             kv_layers: 48, kv_heads: 4, head_dim: 128, attention_heads: 32, max_position_embeddings: 262144}
    drafter: {hf_id: amazon/Qwen3-Coder-30B-A3B-Instruct-P-EAGLE, format: eagle3, weight_bytes: 1.6e9,
              layers: 4, trained_k: 18}
    recommended_k: {chatbot: 6, codegen: 10, batch: 4}
""",
    )
    config = load_deployment_config(path)
    assert config.pair().target.quantization == "fp8"

    clash = write_deployment(tmp_path, "custom_pairs:\n  gpt-oss-20b: {}\n")
    with pytest.raises(ConfigError, match="custom_pairs.gpt-oss-20b.target: Field required"):
        load_deployment_config(clash)


def test_name_must_fit_stack_and_bucket_naming():
    with pytest.raises(ConfigError, match="name: String should match pattern"):
        config_from_overrides({}, base={"name": "Has_Capitals"})
    assert DeploymentConfig(name="team-a").name == "team-a"


@pytest.mark.parametrize("seconds", [10, 30, 60])
def test_metric_publish_frequencies_the_alarms_read_are_taken(tmp_path, seconds):
    path = write_deployment(tmp_path, f"observability:\n  metric_publish_frequency_seconds: {seconds}\n")
    assert load_deployment_config(path).observability.metric_publish_frequency_seconds == seconds


@pytest.mark.parametrize("seconds", [120, 180, 240, 300])
def test_a_metric_publish_frequency_longer_than_the_alarms_minute_is_refused(tmp_path, seconds):
    """Before: 120-300 s were taken (SageMaker accepts them), and the one-minute alarms and scaling policies then
    had a datapoint in every second minute or fewer: latency "3 of 5 minutes" could not fire."""
    path = write_deployment(tmp_path, f"observability:\n  metric_publish_frequency_seconds: {seconds}\n")
    with pytest.raises(ConfigError) as error:
        load_deployment_config(path)
    message = str(error.value)
    assert f"observability.metric_publish_frequency_seconds: {seconds} s is longer than" in message
    assert f"a datapoint in one minute of every {seconds // 60}" in message
    assert message.rstrip().endswith(
        "set observability.metric_publish_frequency_seconds: 10, observability.metric_publish_frequency_seconds: 30 "
        "or observability.metric_publish_frequency_seconds: 60 (the default)"
    )
    assert "(given:" not in message  # the sentence names the value already


def test_a_metric_publish_frequency_sagemaker_does_not_take_names_the_allowed_ones(tmp_path):
    path = write_deployment(tmp_path, "observability:\n  metric_publish_frequency_seconds: 45\n")
    with pytest.raises(
        ConfigError, match=r"metric_publish_frequency_seconds: Input should be 10, 30 or 60 \(given: 45\)"
    ):
        load_deployment_config(path)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("autoscaling:\n  min_instances: 1\n  max_instances: 3\n", {"min_capacity": 1, "max_capacity": 3}),
        ("autoscaling:\n  target_concurrency_per_instance: 6\n", {"target_concurrency": 6}),
        ("autoscaling:\n  target: invocations\n  max_rps_per_instance: 1.5\n", {"max_requests_per_second": 1.5}),
    ],
)
def test_the_old_scaling_keys_still_load_with_a_deprecation_naming_the_new_one(tmp_path, old, new):
    """One name per concept in both modes and both doors; a file written for 0.1.0 keeps working."""
    with pytest.warns(FutureWarning, match=r"deprecated: it is now autoscaling\."):
        config = load_deployment_config(write_deployment(tmp_path, old))
    assert {key: getattr(config.autoscaling, key) for key in new} == new


def test_the_old_copy_bounds_move_to_autoscaling_with_a_deprecation(tmp_path):
    text = (
        "model: qwen3-8b\ninstance: {type: ml.g6e.48xlarge}\nendpoint:\n  mode: inference_components\n"
        "  inference_components:\n    min_copies: 1\n    max_copies: 4\n    target_concurrency_per_copy: 3\n"
    )
    with pytest.warns(FutureWarning, match=r"endpoint.inference_components.min_copies is deprecated"):
        config = load_deployment_config(write_deployment(tmp_path, text))
    assert (config.min_capacity, config.max_capacity, config.autoscaling.target_concurrency) == (1, 4, 3)
    both = text + "autoscaling:\n  max_capacity: 4\n"
    with pytest.raises(ConfigError, match=r"max_copies is the old place of autoscaling.max_capacity; give only"):
        load_deployment_config(write_deployment(tmp_path, both))


def test_the_latency_sla_has_one_key_and_the_plan_holds_it_once(tmp_path):
    """profile_overrides.latency_sla_p90_seconds and alarms.latency_sla_p90_seconds were two keys for one SLA, and
    the plan carried it twice (its own field and its profile's)."""
    from peagle.planning.planner import plan_deployment

    with pytest.warns(FutureWarning, match=r"it is now alarms.latency_sla_p90_seconds"):
        config = load_deployment_config(
            write_deployment(tmp_path, "profile_overrides:\n  latency_sla_p90_seconds: 7\n")
        )
    assert config.alarms.latency_sla_p90_seconds == 7
    plan = plan_deployment(config)
    assert plan.latency_sla_p90_seconds == plan.profile.latency_sla_p90_seconds == 7
    both = "profile_overrides:\n  latency_sla_p90_seconds: 7\nalarms:\n  latency_sla_p90_seconds: 8\n"
    with pytest.raises(ConfigError, match=r"give only alarms.latency_sla_p90_seconds"):
        load_deployment_config(write_deployment(tmp_path, both))
