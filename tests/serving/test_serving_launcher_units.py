"""The launcher's pure logic: settings, plan, KPI arithmetic.

No engine here; these run in milliseconds. The same behaviour is exercised
end-to-end against real vLLM in the engine tests. The SM_VLLM_* mapping is the
container contract's, tested in tests/infra/test_container_contract.py.
"""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from peagle_serve import vllm_args
from peagle_serve.contract import PER_REQUEST_SPEC_DECODE_METRICS_OPTION
from peagle_serve.errors import ConfigError
from peagle_serve.kpi import compute_kpi
from peagle_serve.launch_plan import READINESS_MIDDLEWARE, build_launch_plan
from peagle_serve.metrics import MetricsSnapshot
from peagle_serve.readiness import _with_json_content_type
from peagle_serve.settings import load_settings


def test_pop_option_handles_equals_and_underscore_spellings():
    values, rest = vllm_args.pop_option(["--max_model_len", "8", "--speculative-config={}", "--x"], "--max-model-len")
    assert values == ["8"] and rest == ["--speculative-config={}", "--x"]
    assert vllm_args.option_value(["--speculative_config", "{}"], "--speculative-config") == "{}"


def test_secrets_are_redacted_from_logged_command():
    assert vllm_args.redact(["--api-key", "s3cret", "--hf-token=abc", "--port", "1"]) == [
        "--api-key",
        "***",
        "--hf-token=***",
        "--port",
        "1",
    ]


def test_settings_defaults_match_the_container_contract():
    settings = load_settings({})
    assert (settings.port, settings.host, settings.shutdown_drain_seconds) == (8080, "0.0.0.0", 25)
    assert settings.kpi_interval_seconds == 60 and settings.speculation_self_check is True


def test_settings_report_every_problem_at_once():
    with pytest.raises(ConfigError) as error:
        load_settings(
            {
                "PEAGLE_SHUTDOWN_DRAIN_SECONDS": "30",
                "PEAGLE_PORT": "eighty",
                "PEAGLE_SPECULATION_SELF_CHECK": "maybe",
                "PEAGLE_KPI_INTERVAL": "5",  # typo of PEAGLE_KPI_INTERVAL_SECONDS
            }
        )
    text = str(error.value)
    assert "PEAGLE_SHUTDOWN_DRAIN_SECONDS='30' must be 0-29" in text
    assert "PEAGLE_PORT='eighty' is not a valid int" in text
    assert "PEAGLE_SPECULATION_SELF_CHECK='maybe'" in text
    assert "PEAGLE_KPI_INTERVAL is not a launcher setting" in text


def _pair_env(tiny_pair, k: int = 4, **extra: str) -> dict[str, str]:
    env = {
        "SM_VLLM_MODEL": str(tiny_pair.target_dir),
        "SM_VLLM_SERVED_MODEL_NAME": "tiny-pair",
        "SM_VLLM_SPECULATIVE_CONFIG": json.dumps(
            {
                "method": "eagle3",
                "model": str(tiny_pair.drafter_dir),
                "num_speculative_tokens": k,
                "parallel_drafting": True,
            }
        ),
        "PEAGLE_DRAFTER_TRAINED_K": "8",
    }
    env.update(extra)
    return env


def test_startup_budget_split_keeps_engine_and_self_check_inside_sagemakers_timeout():
    """PEAGLE_STARTUP_TIMEOUT_SECONDS is the variant's whole health-check timeout: the engine
    gets what the self-check and the margin leave, the self-check what is left after it."""
    from peagle_serve.settings import STARTUP_MARGIN_SECONDS, StartupDeadlines

    for budget in (390, 600, 1800, 3600):  # SageMaker allows 60-3600; below 390 see the next test
        for self_check_timeout in (1, 60, 300):
            for self_check_on in ("true", "false"):
                settings = load_settings(
                    {
                        "PEAGLE_STARTUP_TIMEOUT_SECONDS": str(budget),
                        "PEAGLE_SELF_CHECK_TIMEOUT_SECONDS": str(self_check_timeout),
                        "PEAGLE_SPECULATION_SELF_CHECK": self_check_on,
                    }
                )
                launched = 1000.0
                deadlines = StartupDeadlines.starting_at(launched, settings)
                reserve = self_check_timeout if self_check_on == "true" else 0
                assert deadlines.engine_healthy_by - launched + reserve + STARTUP_MARGIN_SECONDS == budget
                assert deadlines.engine_healthy_by - launched >= 60
                # However late the health poll notices the engine, the self-check ends in time.
                for healthy_at in (launched, deadlines.engine_healthy_by, deadlines.engine_healthy_by + 3):
                    end = deadlines.self_check_deadline(healthy_at, settings)
                    assert end - healthy_at <= self_check_timeout
                    assert end <= launched + budget - STARTUP_MARGIN_SECONDS


def test_a_startup_budget_with_no_room_for_the_engine_is_a_config_error():
    with pytest.raises(ConfigError) as error:
        load_settings({"PEAGLE_STARTUP_TIMEOUT_SECONDS": "300"})  # all of it would go to the self-check
    text = str(error.value)
    assert "PEAGLE_STARTUP_TIMEOUT_SECONDS=300 leaves the engine 0 s to start" in text
    assert "ContainerStartupHealthCheckTimeoutInSeconds" in text and "to at least 390" in text
    assert "or lower PEAGLE_SELF_CHECK_TIMEOUT_SECONDS" in text
    # Without the self-check nothing is reserved for it.
    assert (
        load_settings(
            {"PEAGLE_STARTUP_TIMEOUT_SECONDS": "300", "PEAGLE_SPECULATION_SELF_CHECK": "false"}
        ).engine_start_seconds
        == 270
    )


class _Clock:
    """Stands in for the `time` module of the launcher and the self-check: sleeping is instant."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class _QuietEngine:
    """Stands in for the vLLM process: runs until SIGTERM, which stops it at once."""

    pid = -1
    returncode = None

    def poll(self):
        return self.returncode

    def send_signal(self, signum):
        self.returncode = -signum

    def wait(self, timeout=None):
        return self.returncode


@pytest.mark.parametrize("healthy_after", [None, 100, 269, 400, 590])
def test_the_launcher_gives_up_before_sagemaker_does(tiny_pair, monkeypatch, healthy_after):
    """A 600 s health-check timeout, an engine healthy after `healthy_after` s (or never) and a
    warm-up request that hangs: the launcher's own exit (4: engine too slow, 3: self-check)
    comes before SageMaker's deadline, whichever way the time is spent."""
    from peagle_serve import launcher, self_check
    from peagle_serve.errors import EXIT_SELF_CHECK_FAILED, EXIT_STARTUP_TIMEOUT

    budget = 600
    clock = _Clock()
    launched = clock.now
    monkeypatch.setattr(launcher, "time", clock)
    monkeypatch.setattr(self_check, "time", clock)

    def quiet_start(self, ready_file):  # the supervisor's _start: the engine it started, kept for the signal handler
        self.process = _QuietEngine()
        return self.process

    monkeypatch.setattr(launcher._Supervisor, "_start", quiet_start)
    monkeypatch.setattr(launcher._Supervisor, "_kill_leftovers", lambda self: None)

    def health(url, timeout):
        if healthy_after is not None and clock.now - launched >= healthy_after:
            return 200, ""
        raise ConnectionRefusedError(url)

    def hung_warm_up(url, payload, timeout):
        clock.sleep(timeout)
        raise TimeoutError("timed out")

    monkeypatch.setattr(launcher, "get_text", health)
    monkeypatch.setattr(self_check, "get_text", lambda url, timeout: (200, '{"data": [{"id": "tiny-pair"}]}'))
    monkeypatch.setattr(self_check, "fetch_metrics", lambda base, timeout=5.0: MetricsSnapshot.parse(METRICS_BEFORE))
    monkeypatch.setattr(self_check, "post_json", hung_warm_up)

    status = launcher.run([], _pair_env(tiny_pair, PEAGLE_STARTUP_TIMEOUT_SECONDS=str(budget)))

    gave_up_after = clock.now - launched
    assert gave_up_after < budget, f"SageMaker would have killed the container first ({gave_up_after:.0f} s)"
    engine_share = budget - 30 - 300  # less the 30 s margin and the 300 s self-check (the default)
    if healthy_after is not None and healthy_after <= engine_share:
        assert status == EXIT_SELF_CHECK_FAILED and gave_up_after <= budget - 30
    else:
        assert status == EXIT_STARTUP_TIMEOUT and gave_up_after <= engine_share + 1  # + one health poll


def test_drafter_context_warning_only_where_vllm_stops_drafting(tiny_pair, tmp_path):
    """vLLM 0.32's V1 model runner, which runs all parallel drafting, gates drafting on the
    drafter's own context; the V2 runner of plain EAGLE-3 drafts up to the target's."""
    from peagle_serve.model_layout import Speculation, drafter_context_warning

    drafter = tmp_path / "short-context-drafter"
    shutil.copytree(tiny_pair.drafter_dir, drafter)
    config = json.loads((drafter / "config.json").read_text())
    (drafter / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 64}))

    def speculation(parallel: bool) -> Speculation:
        return Speculation(
            config={
                "method": "eagle3",
                "model": str(drafter),
                "num_speculative_tokens": 4,
                "parallel_drafting": parallel,
            },
            num_speculative_tokens=4,
            parallel_drafting=parallel,
        )

    assert drafter_context_warning(speculation(parallel=False), 1024) is None
    assert drafter_context_warning(speculation(parallel=True), 64) is None
    warning = drafter_context_warning(speculation(parallel=True), 1024)
    assert warning.startswith("the drafter's context is 64 tokens but the server accepts 1024")
    assert "drafts nothing for a whole batch while any sequence in it is longer than 60 tokens" in warning


def test_plan_builds_the_vllm_command_the_container_runs(tiny_pair):
    env = _pair_env(tiny_pair, SM_VLLM_ENFORCE_EAGER="true")
    plan = build_launch_plan(load_settings(env), env, ["--max-num-seqs", "4"])
    argv = plan.argv
    # `vllm serve <model>`: vLLM's supported command, not the deprecated module
    # (vllm.entrypoints.openai.api_server), and the model positional, not the deprecated --model.
    assert argv[:5] == [sys.executable, "-m", "peagle_serve.vllm_cli", "serve", str(tiny_pair.target_dir)]
    assert not any("vllm.entrypoints.openai" in arg for arg in argv) and "--model" not in argv
    assert "--enforce-eager" in argv and argv[argv.index("--max-num-seqs") + 1] == "4"
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec["parallel_drafting"] is True and spec["num_speculative_tokens"] == 4
    assert argv[-8:] == [
        "--host",
        "0.0.0.0",
        "--port",
        "8080",
        "--shutdown-timeout",
        "25",
        "--middleware",
        READINESS_MIDDLEWARE,
    ]
    assert plan.speculative_tokens == 4 and plan.model_pair == "tiny-pair"


def test_plan_finds_target_and_relative_drafter_under_the_model_root(tiny_pair):
    # The SageMaker layout: one prefix with target/ and drafter/, no SM_VLLM_MODEL.
    env = {
        "PEAGLE_MODEL_ROOT": str(tiny_pair.root),
        "SM_VLLM_SPECULATIVE_CONFIG": json.dumps(
            {"method": "eagle3", "model": "drafter", "num_speculative_tokens": 2, "parallel_drafting": True}
        ),
    }
    plan = build_launch_plan(load_settings(env), env, [])
    assert plan.model == str(tiny_pair.target_dir)
    assert plan.speculation.config["model"] == str(tiny_pair.drafter_dir)


def test_plan_without_speculative_config_runs_without_speculation(tiny_pair):
    env = {"SM_VLLM_MODEL": str(tiny_pair.target_dir)}
    plan = build_launch_plan(load_settings(env), env, [])
    assert plan.speculation is None and "--speculative-config" not in plan.argv
    # vLLM refuses per-request spec-decode metrics without speculation ("requires speculative decoding").
    assert PER_REQUEST_SPEC_DECODE_METRICS_OPTION not in plan.argv


def test_speculation_turns_on_acceptance_in_every_response_unless_the_operator_chose(tiny_pair):
    env = _pair_env(tiny_pair)
    argv = build_launch_plan(load_settings(env), env, []).argv
    assert argv.count(PER_REQUEST_SPEC_DECODE_METRICS_OPTION) == 1
    assert argv[argv.index(PER_REQUEST_SPEC_DECODE_METRICS_OPTION) + 1] == "summary"

    chosen = _pair_env(tiny_pair, SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS="detailed")
    argv = build_launch_plan(load_settings(chosen), chosen, []).argv
    assert argv.count(PER_REQUEST_SPEC_DECODE_METRICS_OPTION) == 1
    assert argv[argv.index(PER_REQUEST_SPEC_DECODE_METRICS_OPTION) + 1] == "detailed"


def test_launcher_owned_and_metric_blinding_options_are_rejected(tiny_pair):
    env = _pair_env(tiny_pair, SM_VLLM_PORT="9000", SM_VLLM_DISABLE_LOG_STATS="true")
    with pytest.raises(ConfigError) as error:
        build_launch_plan(load_settings(env), env, ["--shutdown-timeout", "60"])
    text = str(error.value)
    assert "use PEAGLE_PORT" in text and "use PEAGLE_SHUTDOWN_DRAIN_SECONDS" in text
    assert "--disable-log-stats" in text


def test_invocations_bodies_are_treated_as_json_whatever_the_content_type():
    assert _with_json_content_type([(b"content-type", b"application/x-www-form-urlencoded")]) == [
        (b"content-type", b"application/json")
    ]
    assert _with_json_content_type([]) == [(b"content-type", b"application/json")]
    json_headers = [(b"content-type", b"application/json; charset=utf-8")]
    assert _with_json_content_type(json_headers) == json_headers


def _metrics_text(**values: float) -> str:
    """vLLM's /metrics text for one engine and model, from counter/gauge values by name."""
    labels = 'engine="0",model_name="m"'
    lines = []
    for name, value in values.items():
        metric, _, extra = name.partition("__")  # "x__position_0" -> x{...,position="0"}
        key, _, label_value = extra.rpartition("_")
        extra_labels = f',{key}="{label_value}"' if extra else ""
        lines.append(f"vllm:{metric}{{{labels}{extra_labels}}} {float(value)}")
    return "\n".join(lines) + "\n"


def _spec_metrics(
    drafts, draft_tokens, accepted, pos0, pos1, generated, prompt, length, stop, ttft, requests, running, waiting, kv
):
    return _metrics_text(
        spec_decode_num_drafts_total=drafts,
        spec_decode_num_draft_tokens_total=draft_tokens,
        spec_decode_num_accepted_tokens_total=accepted,
        spec_decode_num_accepted_tokens_per_pos_total__position_0=pos0,
        spec_decode_num_accepted_tokens_per_pos_total__position_1=pos1,
        generation_tokens_total=generated,
        prompt_tokens_total=prompt,
        request_success_total__finished_reason_length=length,
        request_success_total__finished_reason_stop=stop,
        time_to_first_token_seconds_sum=ttft,
        time_to_first_token_seconds_count=requests,
        num_requests_running=running,
        num_requests_waiting=waiting,
        kv_cache_usage_perc=kv,
    )


METRICS_BEFORE = _spec_metrics(10, 40, 10, 10, 0, 100, 50, 2, 0, 1.0, 2, 0, 0, 0.0)
METRICS_AFTER = _spec_metrics(30, 120, 40, 28, 12, 200, 70, 5, 1, 3.0, 6, 2, 1, 0.25)


def test_kpi_record_is_computed_from_counter_deltas_over_the_interval():
    before = MetricsSnapshot.parse(METRICS_BEFORE, taken_at=100.0)
    after = MetricsSnapshot.parse(METRICS_AFTER, taken_at=110.0)
    kpi = compute_kpi(before, after, model_pair="m", speculative_tokens=4, endpoint_name="e", variant_name="v")
    assert kpi["event"] == "peagle_kpi" and kpi["interval_seconds"] == 10.0
    assert (kpi["endpoint_name"], kpi["variant_name"]) == ("e", "v")
    assert kpi["requests_per_second"] == 0.4  # 4 finished in 10 s
    assert kpi["generation_tokens_per_second"] == 10.0
    assert kpi["prompt_tokens_per_second"] == 2.0
    assert kpi["ttft_mean_seconds"] == 0.5  # (3-1)/(6-2)
    assert kpi["spec_acceptance_rate"] == 0.375  # 30 accepted / 80 draft tokens
    assert kpi["spec_mean_acceptance_length"] == 2.5  # 1 + 30/20
    assert kpi["spec_acceptance_per_position"] == [0.9, 0.6]
    assert kpi["spec_drafts_per_second"] == 2.0
    assert kpi["requests_finished"] == {"length": 3, "stop": 1}
    assert kpi["requests_finished_total_in_interval"] == 4
    assert (kpi["requests_running"], kpi["requests_waiting"], kpi["kv_cache_usage_ratio"]) == (2.0, 1.0, 0.25)
    assert kpi["tpot_mean_seconds"] is None  # no such samples: undefined, not 0


def test_kpi_record_has_nulls_when_nothing_happened():
    snapshot = MetricsSnapshot.parse(METRICS_BEFORE, taken_at=0.0)
    later = MetricsSnapshot.parse(METRICS_BEFORE, taken_at=60.0)
    kpi = compute_kpi(snapshot, later, model_pair="m", speculative_tokens=4)
    assert kpi["spec_acceptance_rate"] is None and kpi["spec_mean_acceptance_length"] is None
    assert kpi["spec_acceptance_per_position"] is None and kpi["ttft_mean_seconds"] is None
    assert kpi["requests_per_second"] == 0.0


def test_readme_settings_table_is_the_registry():
    from pathlib import Path

    from peagle_serve.settings import settings_table_markdown

    readme = (Path(__file__).resolve().parents[2] / "inference_image" / "README.md").read_text()
    assert settings_table_markdown() in readme, "regenerate: python -m peagle_serve --print-settings"


def test_hub_token_secret_errors_are_config_errors_and_never_leak_the_value(monkeypatch):
    """No AWS here: a bad ARN fails fast with what to fix; an empty ARN adds nothing."""
    from peagle_serve.errors import ConfigError
    from peagle_serve.hub_token import hub_token_environment

    assert hub_token_environment("") == {}
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", "http://127.0.0.1:9")  # nothing listens: fails at once
    with pytest.raises(ConfigError, match=r"needs secretsmanager:GetSecretValue on it"):
        hub_token_environment("arn:aws:secretsmanager:us-east-1:123456789012:secret:hf-token-AbCdEf")
