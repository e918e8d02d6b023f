"""The container contract (peagle_serve.contract): both sides agree, without an engine."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.stub import Stubber

from peagle.stage.hub import HubError, resolve_hub_token
from peagle_cdk.kpi_metrics import KPI_FIELDS
from peagle_serve.contract import (
    DRAFTER_DIR,
    KPI_DIMENSION_KEYS,
    KPI_EVENT,
    KPI_KEYS_WITHOUT_METRIC,
    KPI_LINE_KEYS,
    decode_vllm_env,
    encode_vllm_flags,
    sm_vllm_name,
    speculative_config,
    vllm_option,
)
from peagle_serve.errors import ConfigError as LauncherConfigError
from peagle_serve.hub_token import hub_token_environment

TOKEN = "hf_TestTokenThatMustNeverBePrinted0123456789"
SECRET_ARN = "arn:aws:secretsmanager:us-east-1:111122223333:secret:hf-token-AbCdEf"


def _secrets_client_answering(secret_string: str):
    client = boto3.client("secretsmanager", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(client)
    for _ in range(2):  # one read by `peagle stage`, one by the container
        stubber.add_response("get_secret_value", {"SecretString": secret_string}, {"SecretId": SECRET_ARN})
    stubber.activate()
    return client


@pytest.mark.parametrize(
    "secret_string",
    [TOKEN, f"{TOKEN}\n", json.dumps({"HF_TOKEN": TOKEN}), json.dumps({"token": TOKEN, "user": "me"})],
    ids=["text", "text-newline", "json-HF_TOKEN", "json-token"],
)
def test_the_container_gets_the_token_peagle_stage_accepts(secret_string):
    """A JSON secret `peagle stage` accepts must reach vLLM as the bare token, not as the JSON blob."""
    client = _secrets_client_answering(secret_string)
    staged = resolve_hub_token(SECRET_ARN, {}, secrets_client=client)
    served = hub_token_environment(SECRET_ARN, secrets_client=client)
    assert staged.value == TOKEN
    assert served == {"HF_TOKEN": TOKEN}


@pytest.mark.parametrize(
    ("secret_string", "problem"),
    [
        ("  \n", "has no SecretString; store the token as text or as JSON"),
        (json.dumps({"user": "me", "password": TOKEN}), "without a token key; use one of HF_TOKEN, hf_token, token"),
        ('{"HF_TOKEN": ', 'starts with "{" but is not a JSON object'),
    ],
)
def test_a_secret_without_a_usable_token_says_what_to_store_on_both_sides(secret_string, problem):
    client = _secrets_client_answering(secret_string)
    with pytest.raises(HubError) as staged:
        resolve_hub_token(SECRET_ARN, {}, secrets_client=client)
    with pytest.raises(LauncherConfigError) as served:
        hub_token_environment(SECRET_ARN, secrets_client=client)
    for error in (str(staged.value), str(served.value)):
        assert error.startswith(f"secret {SECRET_ARN} ") and problem in error and TOKEN not in error


# --- SM_VLLM_* <-> vLLM flags ---------------------------------------------------------


def test_sm_vllm_env_maps_like_vllms_sagemaker_entrypoint_with_boolean_flags():
    args = decode_vllm_env(
        {
            "SM_VLLM_MAX_MODEL_LEN": "4096",
            "SM_VLLM_ENFORCE_EAGER": "true",
            "SM_VLLM_ENABLE_PREFIX_CACHING": "false",
            "SM_VLLM_TRUST_REMOTE_CODE": "",
            "SM_VLLM_KV_CACHE_DTYPE": "fp8",
            "UNRELATED": "x",
        }
    )
    assert args == [
        "--no-enable-prefix-caching",
        "--enforce-eager",
        "--kv-cache-dtype",
        "fp8",
        "--max-model-len",
        "4096",
        "--trust-remote-code",
    ]


def test_vllm_flags_encoded_by_the_cdk_side_decode_to_the_same_flags_in_the_launcher():
    flags = {
        "model": "/opt/ml/model/target",
        "max-model-len": 8192,
        "gpu-memory-utilization": 0.9,
        "enforce-eager": True,
        "enable-prefix-caching": False,
        "speculative-config": json.dumps(speculative_config(DRAFTER_DIR, 5), separators=(",", ":")),
    }
    env = encode_vllm_flags(flags)
    assert env["SM_VLLM_MAX_MODEL_LEN"] == "8192" and env["SM_VLLM_ENFORCE_EAGER"] == "true"
    args = decode_vllm_env(env)

    decoded: dict[str, object] = {}
    index = 0
    while index < len(args):
        option = args[index]
        if option.startswith("--no-"):
            decoded[option[5:]] = False
        elif index + 1 < len(args) and not args[index + 1].startswith("--"):
            decoded[option[2:]] = args[index + 1]
            index += 1
        else:
            decoded[option[2:]] = True
        index += 1
    assert decoded == {flag: value if isinstance(value, bool) else str(value) for flag, value in flags.items()}
    for flag in flags:
        assert vllm_option(sm_vllm_name(flag)) == f"--{flag}" == vllm_option(sm_vllm_name(f"--{flag}"))


def test_the_cdk_sides_speculative_config_is_p_eagle_and_absent_at_k_zero():
    assert speculative_config(DRAFTER_DIR, 7) == {
        "method": "eagle3",
        "model": "/opt/ml/model/drafter",
        "num_speculative_tokens": 7,
        "parallel_drafting": True,
    }
    assert speculative_config(DRAFTER_DIR, 0) is None
    with pytest.raises(ValueError, match="0 turns speculation off"):
        speculative_config(DRAFTER_DIR, -1)


# --- The KPI line and its metric filters ----------------------------------------------

_COUNTERS = """
vllm:spec_decode_num_drafts_total{{engine="0"}} {drafts}
vllm:spec_decode_num_draft_tokens_total{{engine="0"}} {draft_tokens}
vllm:spec_decode_num_accepted_tokens_total{{engine="0"}} {accepted}
vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",position="0"}} {accepted}
vllm:generation_tokens_total{{engine="0"}} {tokens}
vllm:prompt_tokens_total{{engine="0"}} {tokens}
vllm:time_to_first_token_seconds_sum{{engine="0"}} {seconds}
vllm:time_to_first_token_seconds_count{{engine="0"}} {requests}
vllm:request_time_per_output_token_seconds_sum{{engine="0"}} {seconds}
vllm:request_time_per_output_token_seconds_count{{engine="0"}} {requests}
vllm:e2e_request_latency_seconds_sum{{engine="0"}} {seconds}
vllm:e2e_request_latency_seconds_count{{engine="0"}} {requests}
vllm:request_queue_time_seconds_sum{{engine="0"}} {seconds}
vllm:request_queue_time_seconds_count{{engine="0"}} {requests}
vllm:num_requests_running{{engine="0"}} 1.0
vllm:num_requests_waiting{{engine="0"}} 0.0
vllm:kv_cache_usage_perc{{engine="0"}} 0.5
""" + "".join(
    f'vllm:request_success_total{{{{engine="0",finished_reason="{reason}"}}}} {{requests}}\n'
    for reason in ("abort", "error", "length", "repetition", "stop")
)


def _synthetic_kpi_line() -> dict:
    """A KPI line from the launcher's own function, over an interval where every counter moved."""
    from peagle_serve.kpi import compute_kpi
    from peagle_serve.metrics import MetricsSnapshot

    def snapshot(scale: int, taken_at: float) -> MetricsSnapshot:
        values = {"drafts": 10, "draft_tokens": 40, "accepted": 12, "tokens": 100, "seconds": 2, "requests": 4}
        return MetricsSnapshot.parse(_COUNTERS.format(**{k: v * scale for k, v in values.items()}), taken_at)

    return compute_kpi(
        snapshot(1, 100.0),
        snapshot(2, 160.0),
        model_pair="p",
        speculative_tokens=4,
        endpoint_name="e",
        variant_name="v",
    )


def test_every_kpi_key_the_launcher_emits_has_a_metric_filter_and_every_filter_reads_one():
    """The launcher's KPI line and peagle_cdk/kpi_metrics.py's filters, checked without an engine."""
    line = _synthetic_kpi_line()
    assert tuple(line) == KPI_LINE_KEYS and line["event"] == KPI_EVENT

    filtered = {kpi.json_field for kpi in KPI_FIELDS}
    filtered_keys = {field.split(".")[0] for field in filtered}
    unfiltered = set(line) - filtered_keys
    assert unfiltered == set(KPI_KEYS_WITHOUT_METRIC), (
        "a KPI line key needs a metric filter (KPI_METRIC_NAMES + a unit in kpi_metrics.py) "
        "or an entry in KPI_KEYS_WITHOUT_METRIC saying why not"
    )
    for field in sorted(filtered):
        value = line
        for part in field.split("."):
            assert isinstance(value, dict) and part in value, f"metric filter reads $.{field}, which no KPI line has"
            value = value[part]
        assert isinstance(value, (int, float)) and not isinstance(value, bool), (field, value)
    for dimension, key in KPI_DIMENSION_KEYS.items():
        assert line[key] == {"EndpointName": "e", "VariantName": "v"}[dimension]
