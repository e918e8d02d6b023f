"""What `peagle capacity` writes, from a search on a stand-in (no server): the snippet in the shape the
deployment file takes (and the plan reads as measured), capacity.json / capacity.md, an interrupted
search's report, and the bad input it refuses before anything starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from capacity_stand_in import REQUESTS, level

from peagle.capacity.report import Context, answer, snippet, write_report
from peagle.capacity.search import INTERRUPTED, MACHINE_BUSY, SearchSettings, find_capacity
from peagle.cli import main
from peagle.planning.planner import plan_deployment
from peagle.settings import load_deployment_config

DEPLOYMENTS = Path(__file__).resolve().parents[2] / "deployments"


def searched(measure=level, **changes):
    settings = SearchSettings(target_attainment=0.95, requests_per_level=REQUESTS, time_budget_seconds=1e9, **changes)
    return find_capacity(measure, settings, sleep=lambda seconds: None)


def context(**changes) -> Context:
    values = dict(
        date="2026-12-01",
        target="endpoint peagle-endpoint",
        speculative_tokens="4",
        slo_text="95% of requests: TTFT <= 1 s, TPOT <= 100 ms",
        slo_source="profile chatbot",
        sampling="temperature 0.7, top_p 0.9 (profile chatbot), max_tokens 64",
        settings={"requests per level": REQUESTS},
        headroom=0.8,
    )
    return Context(**{**values, **changes})


def test_the_snippet_has_the_deployment_file_shape():
    found = answer(searched(), instances=1)
    assert 2.5 / 1.1 <= found.rate_per_instance <= 2.5
    rate = f"{found.rate_per_instance:.3f}"
    assert snippet(found, context(peak_rps=10)) == (
        "# peagle capacity 2026-12-01: endpoint peagle-endpoint, K=4, SLO 95% of requests: TTFT <= 1 s, TPOT <= 100 ms\n"
        "autoscaling:\n"
        "  target_concurrency: 5.12\n"  # 6.4 in flight x headroom 0.8
        f"  max_requests_per_second: {rate}\n"
        "  headroom: 0.8\n"
        "  min_capacity: 1\n"
        f"  max_capacity: {-(-10 // (found.rate_per_instance * 0.8)):.0f}\n"
        "  measured_capacity:\n"
        f"    requests_per_second: {rate}\n"
        "    concurrency: 6.40\n"
        "    headroom: 0.8\n"
        '    slo: "95% of requests: TTFT <= 1 s, TPOT <= 100 ms"\n'
        '    source: "peagle capacity, 2026-12-01, endpoint peagle-endpoint, K=4"\n'
    )


def test_the_snippet_divides_by_the_instances_measured():
    one, two = answer(searched(), instances=1), answer(searched(), instances=2)
    assert two.rate_per_instance == pytest.approx(one.rate_per_instance / 2)
    assert two.concurrency_per_instance == pytest.approx(3.2)


def _deep_merge(base: dict, extra: dict) -> dict:
    merged = dict(base)
    for key, value in extra.items():
        merged[key] = _deep_merge(base[key], value) if isinstance(value, dict) and key in base else value
    return merged


def _applied(tmp_path, example: str, text: str):
    document = yaml.safe_load((DEPLOYMENTS / example).read_text())
    path = tmp_path / "deployment.yaml"
    path.write_text(yaml.safe_dump(_deep_merge(document, yaml.safe_load(text))))
    return plan_deployment(load_deployment_config(path))


def test_the_snippet_applied_to_a_deployment_file_is_the_measured_target(tmp_path):
    found = answer(searched(), instances=1)
    plan = _applied(tmp_path, "default.yaml", snippet(found, context(peak_rps=10)))
    assert plan.scaling.source.startswith("measured")
    assert plan.scaling.concurrency == 5.12
    assert (
        plan.scaling.fleet_for(10)
        == yaml.safe_load(snippet(found, context(peak_rps=10)))["autoscaling"]["max_capacity"]
    )


def test_a_components_snippet_sets_the_per_copy_target(tmp_path):
    found = answer(searched(), instances=1)
    text = snippet(found, context(inference_component="peagle-s2z-primary", peak_rps=10))
    loaded = yaml.safe_load(text)
    assert "endpoint" not in loaded  # the same keys in both modes: the unit is a copy here
    assert loaded["autoscaling"]["target_concurrency"] == 5.12 and loaded["autoscaling"]["max_capacity"] >= 1
    assert "measured_capacity" in loaded["autoscaling"]
    plan = _applied(tmp_path, "scale-to-zero.yaml", text)
    assert plan.scaling.unit == "copy" and plan.scaling.source.startswith("measured")


def test_the_report_folder_holds_every_level_and_the_answer(tmp_path):
    search = searched()
    paths = write_report(
        search, context(price_per_hour_usd=2.0, price_source="--price-per-hour", peak_rps=10), tmp_path
    )
    assert {path.name for path in paths} == {"capacity.json", "capacity.md", "knee.png", "capacity-snippet.yaml"}
    document = json.loads((tmp_path / "capacity.json").read_text())
    assert len(document["points"]) == len(search.steps)
    point = document["points"][0]
    for key in (
        "offered_rate",
        "achieved_rate",
        "attainment",
        "attainment_per_bound",
        "goodput",
        "ttft_p90",
        "tpot_p50",
        "e2el_p90",
        "in_flight_mean",
        "in_flight_peak",
        "vllm_running_mean",
        "vllm_waiting_peak",
    ):
        assert key in point
    markdown = (tmp_path / "capacity.md").read_text()
    assert f"**{search.last_pass:.3f} requests/s per instance**" in markdown
    assert "per 1M output tokens" in markdown and "per month" in markdown


def test_an_interrupted_search_still_writes_what_it_measured(tmp_path):
    calls = []

    def measure(rate, repeat):
        calls.append(rate)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return level(rate, repeat)

    search = searched(measure)
    assert search.stop_reason == INTERRUPTED
    write_report(search, context(), tmp_path)
    assert len(json.loads((tmp_path / "capacity.json").read_text())["points"]) == 3
    assert "interrupted (Ctrl-C)" in (tmp_path / "capacity.md").read_text()


def test_a_search_stopped_on_a_busy_machine_publishes_no_capacity(tmp_path):
    """Quiet levels up to 2 req/s, then the machine got busy: the bracket is unfinished, so no answer and
    no snippet, and the noisy levels are kept with why."""
    from dataclasses import replace

    def measure(rate, repeat):
        measured = level(rate, repeat)
        return replace(measured, busy=("other work used 1.80 of 2 cores",)) if rate > 2 else measured

    search = searched(measure, busy_retries=1)
    assert search.stop_reason == MACHINE_BUSY and search.last_pass == 2.0
    assert answer(search, 1) is None
    paths = write_report(search, context(), tmp_path)
    assert not (tmp_path / "capacity-snippet.yaml").exists() and tmp_path / "capacity-snippet.yaml" not in paths
    document = json.loads((tmp_path / "capacity.json").read_text())
    assert document["capacity"] is None and document["stop_reason"] == "machine busy"
    assert [point["offered_rate"] for point in document["noisy_points"]] == [4.0, 4.0]
    report = (tmp_path / "capacity.md").read_text()
    assert "the machine was busy" in report and "2 level(s) measured on a busy machine" in report


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "no target: give --url URL, --endpoint NAME or --pair PAIR"),
        (["--url", "http://127.0.0.1:9", "--start-rate", "0"], "start rate 0: above 0"),
        (["--url", "http://127.0.0.1:9", "--max-rate", "-1"], "max rate -1"),
        (["--url", "http://127.0.0.1:9", "--headroom", "1.2"], "--headroom 1.2: above 0 and at most 1"),
        (["--url", "http://127.0.0.1:9", "--headroom", "0"], "--headroom 0: above 0"),
        (["--url", "http://127.0.0.1:9", "--busy-limit", "0"], "--busy-limit 0: a share of the cores, above 0"),
        (["--url", "http://127.0.0.1:9", "--peak-rps", "0"], "--peak-rps 0: above 0"),
        (["--url", "http://127.0.0.1:9", "--goodput", "ttft:abc"], "the bound must be a number of milliseconds"),
        (
            ["--url", "http://127.0.0.1:9", "--attainment", "1.5"],
            "--attainment 1.5: the attainment must be above 0 and at most 1",
        ),
        (["--url", "http://127.0.0.1:9", "--inference-component", "c"], "--inference-component goes with --endpoint"),
        (["--url", "http://127.0.0.1:9", "--speculative-tokens", "2"], "sets the K of a local --pair"),
        (["--endpoint", "e", "--instance-type", "ml.nope"], "unknown instance type 'ml.nope'"),
    ],
)
def test_bad_input_exits_2_before_anything_starts(tmp_path, capsys, argv, message):
    assert main(["capacity", "--out", str(tmp_path / "out"), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_an_unknown_pair_is_refused_with_the_pairs(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["capacity", "--pair", "huge", "--out", str(tmp_path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --pair: invalid choice: 'huge'" in err and "'partial', 'tiny'" in err
