"""`peagle capacity` against the real local server (the shared tiny pair, K=4, vLLM CPU): the rate it
finds holds up when measured again, and half as much load again breaks the SLO.

The SLO is relaxed for a 2-core CPU and chosen so the knee is a queue, not noise: only TTFT is bounded
(1 s), at 256 output tokens per request, so below the knee every first token comes in well under a second
and above it requests wait for a batch slot and the late ones miss. Levels are short to fit the suite
(about two minutes).

Re-measuring at the rate found is checked on the committed baseline instead (the last test): the
knee is where attainment crosses the target, so a fresh level there lands within noise of it by
design, and on a shared 2-core machine one level moves by 5-10% (measured here: the search's level at
9.5 req/s met 91.4%, two fresh levels 89.5%, against a 90% target). 1.5x the rate is far enough past
the knee to fall short, so that half is asserted live, on a level long enough for the queue to build:
past the knee TTFT stays low until every one of the server's sequence slots is taken, and only then do
requests wait. A level of 24 requests (9 s at 2.75 req/s) ended before that and met 95.7% in CI, where
the knee was 1.8 req/s (256-token answers at the tiny pair's ~500 tokens/s), so the level lasts 30 s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peagle.capacity.levels import measure_level
from peagle.catalog import Slo
from peagle.cli import main

SLO_ARGS = ["--slo", "ttft:1000", "--attainment", "0.9", "--max-tokens", "256"]
SLO = Slo(ttft_seconds=1.0, attainment=0.9)


def _remeasure(url: str, rate: float, *, levels: int, seconds: float, ramp: float) -> float:
    """Pooled attainment of ``levels`` fresh levels at ``rate``, each ``seconds`` of judged arrivals after a
    ``ramp`` as long as the search's."""
    from peagle.bench.prompts import synthetic_prompts
    from peagle.bench.runner import BenchSettings, build_requests
    from peagle.client import GenerationRequest, PeagleClient

    template = GenerationRequest(prompt="", max_tokens=256, temperature=0.7, top_p=0.9, extra={"ignore_eos": True})
    bench = BenchSettings(
        concurrency=[1], requests_per_level=1, prompts=synthetic_prompts(["short"]), request_template=template
    )
    good = sent = 0
    with PeagleClient.for_url(url) as client:
        for repeat in range(levels):
            requests = build_requests(bench, max(24, round(rate * seconds)) + round(rate * ramp))
            measured = measure_level(
                client,
                requests,
                SLO,
                rate=rate,
                repeat=repeat,
                seed=100,
                burstiness=1.0,
                metrics_url=url,
                ramp_seconds=ramp,
            )
            good, sent = good + measured.good_requests, sent + measured.requests
    return good / sent


def test_the_search_on_the_real_server_brackets_a_knee_that_half_again_breaks(local_server, tmp_path, capsys):
    """The search answers the highest rate that passed below the lowest that did not (failed, or its repeats could not
    tell), so the knee lies between them, and half again above that ceiling the server breaks. Remeasuring half again
    above the answer itself is no check since issue 46: when the level above is 'cannot tell' and the time budget
    ends, the answer is the rate a growth step below it (a CI run answered 4 req/s with 'could not tell at 8', and 6
    then met the SLO)."""
    out = tmp_path / "capacity"
    argv = ["capacity", "--url", local_server.url, "--out", str(out), *SLO_ARGS]
    argv += ["--start-rate", "2", "--time-budget", "100", "--min-level-seconds", "6", "--requests-per-level", "24"]
    # The search is the subject, not the machine: a CI machine's neighbours (steal) must not stop it with
    # "machine busy"; tests/bench/test_bench_open_loop.py drives that stop with a real second engine.
    argv += ["--busy-limit", "1"]
    assert main(argv) == 0, capsys.readouterr().err
    document = json.loads((out / "capacity.json").read_text())
    rate = document["capacity"]["rate_per_instance"]
    assert document["points"] and document["capacity"]["attainment"] >= 0.9
    assert document["points"][0]["vllm_running_mean"] is not None  # the gauges were read from /metrics
    assert (out / "capacity-snippet.yaml").is_file() and (out / "knee.png").is_file()

    ceiling = document["first_fail_rate"]
    assert ceiling is not None and rate < ceiling
    assert _remeasure(local_server.url, ceiling * 1.5, levels=1, seconds=30, ramp=document["settings"]["ramp s"]) < 0.9


def test_a_replay_compares_the_real_server_minute_by_minute_with_the_simulators_unit(local_server, tmp_path, capsys):
    """`peagle capacity --replay` with the curve of a search (the tiny pair's, written by the search above's
    kind of run): the trace's requests are sent in their minutes, what the server did is measured from its
    answers, and the simulator's prediction for the same requests comes from the curve."""
    from peagle.simulate.service_curve import curve_from_levels, load_curve

    search = tmp_path / "search"
    argv = ["capacity", "--url", local_server.url, "--out", str(search), *SLO_ARGS, "--busy-limit", "1"]
    main([*argv, "--sweep", "1", "--min-level-seconds", "6"])  # one level at 1 req/s: the curve's point
    document = json.loads((search / "capacity.json").read_text())
    curve = load_curve(search / "service-curve.json")
    assert curve == curve_from_levels(
        document["points"], slo=SLO, output_tokens=256, source=curve.source, host=curve.host
    )
    trace = tmp_path / "trace.csv"
    trace.write_text("minute,requests\n0,20\n")
    replay = tmp_path / "replay"
    argv = ["capacity", "--url", local_server.url, "--out", str(replay), *SLO_ARGS, "--busy-limit", "1"]
    assert main([*argv, "--replay", str(trace), "--service-curve", str(search / "service-curve.json")]) == 0
    (compared,) = json.loads((replay / "replay.json").read_text())["traces"]
    (minute,) = compared["minutes"]
    assert minute["real"]["requests"] == 20 and minute["real"]["ttft_p90"] is not None
    assert minute["predicted"]["within_slo"] == pytest.approx(curve.slo_share(SLO, 20 / 60))
    assert minute["predicted"]["ttft_p90"] == pytest.approx(curve.at(20 / 60).ttft_p90)
    assert compared["attainment_error_points"] == pytest.approx(
        (compared["predicted_attainment"] - compared["real_attainment"]) * 100
    )
    assert "| trace |" in (replay / "replay.md").read_text()


BASELINE = Path(__file__).resolve().parents[2] / "docs" / "baselines" / "capacity-partial"


def test_the_baseline_knee_holds_in_vllms_own_tool_and_half_again_fails():
    """docs/baselines/capacity-partial: speculation off's knee from the quiet search, and vllm bench serve
    (cross-check/) at 1.5x it on the same prompts falls far short; with K=2 and K=4 no rate met the SLO,
    and vllm bench serve agrees at 0.5 req/s on those prompts while 64-token prompts pass at K=4."""
    found = json.loads((BASELINE / "K0" / "capacity.json").read_text())
    assert found["slo"] == "95% of requests: TTFT <= 1 s, TPOT <= 100 ms" and found["stop_reason"] == "converged"
    rate = found["capacity"]["rate_per_instance"]

    def good(name: str) -> float:
        checked = json.loads((BASELINE / "cross-check" / f"{name}-conditions.json").read_text())
        assert checked["other_work_cores_without_client"] < 0.5  # measured quietly
        return checked["goodput_share"]

    assert good(f"K0-vllm-bench-serve-{rate * 1.5:g}-capacity-prompts") < 0.5
    for k in (2, 4):
        searched = json.loads((BASELINE / f"K{k}" / "capacity.json").read_text())
        assert searched["capacity"] is None and min(p["offered_rate"] for p in searched["points"]) <= 0.125
        assert good(f"K{k}-vllm-bench-serve-0.5-capacity-prompts") < 0.95
    assert good("K4-vllm-bench-serve-0.5-random64") >= 0.95


def test_a_schedule_is_served_and_measured_as_a_k_is(tmp_path, capsys):
    """`peagle capacity --pair tiny --speculative-schedule 1-2:4,3-16:0` starts `peagle local` with that schedule
    (its own server, not the session's) and measures it: one short sweep level is enough to see it served, and the
    report records the schedule where it records K."""
    out = tmp_path / "schedule"
    argv = ["capacity", "--pair", "tiny", "--speculative-schedule", "1-2:4,3-16:0", "--out", str(out), *SLO_ARGS]
    argv += ["--sweep", "1", "--min-level-seconds", "6", "--requests-per-level", "8", "--busy-limit", "1"]
    assert main(argv) in (0, 1), capsys.readouterr().err  # 1: the level missed the SLO; the run itself is the subject
    document = json.loads((out / "capacity.json").read_text())
    assert document["speculative_tokens"] == "schedule 1-2:4,3-16:0"
    assert document["speculative_schedule"] == "1-2:4,3-16:0"
    assert document["points"] and document["points"][0]["requests"] >= 8
    assert (out / "server.log").is_file()
