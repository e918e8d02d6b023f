"""SLOs as data: each profile's, a deployment's `slo:` override, what `peagle plan` prints, and the
per-request goodput rules shared with `vllm bench serve`."""

from __future__ import annotations

import pytest
from cdk_synth import write_deployment

from peagle.catalog import ProfileName, load_catalog
from peagle.cli import main
from peagle.planning.planner import plan_deployment
from peagle.settings import ConfigError, load_deployment_config
from peagle.slo import RequestTiming, SloError, as_goodput_argument, attainment, parse_goodput


def test_each_profile_states_its_slo_and_the_chatbot_answers_within_a_second():
    profiles = load_catalog().profiles
    assert {name for name, profile in profiles.items() if profile.slo} == set(ProfileName)
    chatbot = profiles[ProfileName.CHATBOT].slo
    assert (chatbot.ttft_seconds, chatbot.tpot_seconds, chatbot.attainment) == (1.0, 0.1, 0.95)
    assert profiles[ProfileName.BATCH].slo.e2e_seconds < 60  # InvokeEndpoint's limit


def test_a_deployment_overrides_the_slo_bound_by_bound_and_plan_prints_it(tmp_path, capsys):
    path = write_deployment(tmp_path, "profile: chatbot\nslo: {ttft_seconds: 0.5, e2e_seconds: 20}\n")
    slo = plan_deployment(load_deployment_config(path, {})).profile.slo
    assert (slo.ttft_seconds, slo.tpot_seconds, slo.e2e_seconds, slo.attainment) == (0.5, 0.1, 20, 0.95)
    assert main(["plan", "--deployment", path]) == 0
    assert "SLO             95% of requests: TTFT <= 500 ms, TPOT <= 100 ms, E2EL <= 20 s" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["slo: {attainment: 1.5}", "slo: {ttft_seconds: 0}", "slo: {ttft: 1}"])
def test_a_bad_slo_fails_with_the_field(tmp_path, bad):
    with pytest.raises(ConfigError, match="slo"):
        load_deployment_config(write_deployment(tmp_path, bad + "\n"), {})


def test_goodput_counts_as_vllm_bench_serve_does():
    slo = parse_goodput("ttft:1000 tpot:100", attainment=0.9)
    assert as_goodput_argument(slo) == "ttft:1000 tpot:100"
    requests = [
        RequestTiming(ok=True, ttft_seconds=0.5, e2e_seconds=0.5 + 9 * 0.05, output_tokens=10),  # good
        RequestTiming(ok=True, ttft_seconds=1.5, e2e_seconds=2.0, output_tokens=10),  # TTFT too slow
        RequestTiming(ok=True, ttft_seconds=0.2, e2e_seconds=2.2, output_tokens=11),  # TPOT 0.2 s
        RequestTiming(ok=True, ttft_seconds=0.9, e2e_seconds=0.9, output_tokens=1),  # no TPOT: meets it
        RequestTiming(ok=False, ttft_seconds=None, e2e_seconds=None, output_tokens=0),  # failed: meets none
    ]
    result = attainment(slo, requests)
    assert (result.good_requests, result.all_bounds) == (2, 0.4)
    assert result.per_bound == {"ttft": 0.6, "tpot": 0.6}
    assert result.goodput(2.0) == 1.0 and not result.meets(slo)


@pytest.mark.parametrize("text", ["ttft", "latency:5", "ttft:-1", ""])
def test_a_bad_goodput_argument_says_the_syntax(text):
    with pytest.raises(SloError, match="ttft"):
        parse_goodput(text, attainment=0.9)


def test_command_line_bounds_replace_the_profiles_parts_and_say_so():
    from peagle.slo import slo_over

    base = load_catalog().profiles[ProfileName.CHATBOT].slo
    assert slo_over(base, "profile chatbot", None, None) == (base, "profile chatbot")
    slo, source = slo_over(base, "profile chatbot", "ttft:500", None)
    assert (slo.ttft_seconds, slo.tpot_seconds, slo.attainment, source) == (
        0.5,
        None,
        0.95,
        "--slo, profile chatbot's attainment",
    )
    slo, source = slo_over(base, "profile chatbot", None, 0.5)
    assert (slo.ttft_seconds, slo.attainment, source) == (1.0, 0.5, "profile chatbot's bounds, --attainment")
    with pytest.raises(SloError, match="above 0 and at most 1"):
        slo_over(base, "profile chatbot", None, 1.5)
