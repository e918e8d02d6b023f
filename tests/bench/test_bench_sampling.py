"""`peagle bench` samples as the deployment serves: the profile's temperature and top_p (chatbot, the
default deployment's, unless --profile), greedy only when asked (--temperature 0) and then labelled a
comparison; the sampling is stated in results.json, report.md and the summary, and runs or baselines
sampled differently are flagged rather than silently compared. Stubbed endpoint and stored results only."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from client.sagemaker_wire import StubbedEndpoint, payload_part, recorded_vllm_stream

from peagle.bench.results import BenchResults, RunResult, Sampling, load_results, results_to_json
from peagle.cli import main
from peagle.client.cli import MEASURED_PROFILE_DEFAULT

ENDPOINT = "peagle-endpoint"
# A results.json written before runs recorded their sampling (from the retired greedy baseline
# docs/baselines/local-cpu-partial-pair/K4-round1, in git history): its settings line says greedy.
BEFORE_PER_RUN_SAMPLING = Path(__file__).resolve().parent / "data" / "results-before-per-run-sampling.json"
GREEDY = "greedy (temperature 0), a comparison: deployed profiles sample"


@pytest.fixture
def endpoint(monkeypatch):
    stubbed = StubbedEndpoint()
    stubbed.patch_clients(monkeypatch)
    for _ in range(2):  # the warm-up and one measured request
        stubbed.add_stream([payload_part(recorded_vllm_stream())])
    with stubbed.stubber:
        yield stubbed
        stubbed.stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("arguments", "sent", "described"),
    [
        ([], (0.7, 0.9, 128), "temperature 0.7, top_p 0.9 (profile chatbot)"),  # bench's 128: short local runs
        (["--profile", "codegen"], (0.2, 0.95, 2048), "temperature 0.2, top_p 0.95 (profile codegen)"),
        (["--temperature", "0"], (0.0, 0.9, 128), GREEDY),
        (
            ["--profile", "batch", "--top-p", "0.5", "--max-tokens", "16"],
            (0.3, 0.5, 16),
            "temperature 0.3, top_p 0.5 (overriding profile batch)",
        ),
    ],
    ids=["default", "profile", "greedy", "overrides"],
)
def test_requests_are_sampled_as_the_profile_deploys_and_the_run_says_so(
    endpoint, tmp_path, capsys, arguments, sent, described
):
    sends = endpoint.record_sends()
    out = tmp_path / "out"
    argv = ["bench", "--endpoint", ENDPOINT, "--region", "us-east-1", "--concurrency", "1", "--requests", "1"]

    assert main([*argv, "--buckets", "short", *arguments, "--out", str(out)]) == 0

    bodies = [json.loads(send["Body"]) for send in sends]
    assert {(body["temperature"], body["top_p"], body["max_tokens"]) for body in bodies} == {sent}
    results = json.loads((out / "results.json").read_text())
    assert results["settings"]["sampling"] == described
    assert results["runs"][0]["sampling"]["temperature"] == sent[0]
    report = (out / "report.md").read_text()
    assert f"\nSampling: {described}.\n" in report and f"- sampling: {described}\n" in report
    assert f"  Sampling: {described}." in capsys.readouterr().out


def test_the_max_tokens_setting_says_where_it_came_from(endpoint, tmp_path):
    out = tmp_path / "out"
    argv = ["bench", "--endpoint", ENDPOINT, "--concurrency", "1", "--requests", "1", "--buckets", "short"]
    assert main([*argv, "--out", str(out)]) == 0
    assert json.loads((out / "results.json").read_text())["settings"]["max_tokens"].startswith(
        "128 (bench's default, so local runs stay short"
    )


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        (["--temperature", "-0.5"], "--temperature takes a number from 0 (greedy) to 2, got -0.5"),
        (["--top-p", "0"], "--top-p takes a number above 0 and at most 1, got 0"),
    ],
)
def test_bad_sampling_exits_2_before_sending(arguments, reason, tmp_path, capsys):
    assert main(["bench", "--url", "http://127.0.0.1:1", *arguments, "--out", str(tmp_path / "out")]) == 2
    assert reason in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_measured_profile_is_the_default_deployments():
    from peagle.settings import DeploymentConfig, load_deployment_config

    deployed = load_deployment_config(str(Path(__file__).resolve().parents[2] / "deployments" / "default.yaml"))
    assert MEASURED_PROFILE_DEFAULT == DeploymentConfig.model_fields["profile"].default.value == deployed.profile.value


# -- runs sampled differently, composed from stored results ---------------------------------------------


def _stored(tmp_path, name: str, run: RunResult) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(results_to_json(BenchResults("2026-01-01T00:00:00Z", {}, {}, [run])), encoding="utf-8")
    return str(path)


def _run(label: str, sampling: Sampling | None) -> RunResult:
    stored = load_results(BEFORE_PER_RUN_SAMPLING).runs[0]
    return replace(stored, label=label, sampling=sampling)


CHATBOT = Sampling.of_profile("chatbot")
AS_COMPARISON = Sampling.of_profile("chatbot", temperature=0.0)


def test_runs_sampled_alike_are_compared_without_a_note(tmp_path, capsys):
    first, second = _stored(tmp_path, "a", _run("a", CHATBOT)), _stored(tmp_path, "b", _run("b", CHATBOT))

    assert main(["bench", "--from-results", first, "--from-results", second, "--out", str(tmp_path / "out")]) == 0

    assert json.loads((tmp_path / "out" / "results.json").read_text())["sampling_notes"] == []
    assert "\nSampling: temperature 0.7, top_p 0.9 (profile chatbot).\n" in (tmp_path / "out" / "report.md").read_text()


def test_runs_sampled_differently_are_flagged_side_by_side(tmp_path, capsys):
    sampled = _stored(tmp_path, "sampled", _run("K=4 T=0.7", CHATBOT))
    greedy = _stored(tmp_path, "greedy", _run("K=4 T=0", AS_COMPARISON))

    assert main(["bench", "--from-results", sampled, "--from-results", greedy, "--out", str(tmp_path / "out")]) == 0

    note = (
        "The runs' sampling differs (temperature 0.7, top_p 0.9 (profile chatbot): `K=4 T=0.7`; "
        f"{GREEDY}: `K=4 T=0`). Acceptance, and so speed, changes with temperature: these runs are not "
        "compared like for like."
    )
    assert json.loads((tmp_path / "out" / "results.json").read_text())["sampling_notes"] == [note]
    assert f"**{note}**" in (tmp_path / "out" / "report.md").read_text()
    assert f"  {note}" in capsys.readouterr().out


def test_a_baseline_sampled_otherwise_is_flagged_and_old_greedy_baselines_are_read_as_greedy(tmp_path, capsys):
    # A baseline from before per-run sampling: its settings line says greedy, and that is what is read.
    baseline_path = BEFORE_PER_RUN_SAMPLING
    baseline = load_results(baseline_path).runs[0]
    assert baseline.sampling == Sampling(temperature=0.0, top_p=None)
    now = _stored(tmp_path, "now", _run(baseline.label, CHATBOT))

    argv = ["bench", "--from-results", now, "--compare-to", str(baseline_path), "--out", str(tmp_path / "out")]
    assert main(argv) == 0  # the same figures: flagged for the sampling, not as a regression

    note = (
        f"`{baseline.label}` was sampled at temperature 0.7, top_p 0.9 (profile chatbot), its baseline "
        f"`{baseline.label}` at {GREEDY}: a change against it may come from the sampling, not a regression."
    )
    assert f"**{note}**" in (tmp_path / "out" / "report.md").read_text()
    assert json.loads((tmp_path / "out" / "results.json").read_text())["sampling_notes"] == [note]


def test_a_run_that_did_not_record_its_sampling_is_not_taken_for_a_like_one(tmp_path, capsys):
    recorded, unknown = _stored(tmp_path, "a", _run("a", CHATBOT)), _stored(tmp_path, "b", _run("b", None))

    assert main(["bench", "--from-results", recorded, "--from-results", unknown, "--out", str(tmp_path / "out")]) == 0

    notes = json.loads((tmp_path / "out" / "results.json").read_text())["sampling_notes"]
    assert len(notes) == 1 and "not recorded: `b`" in notes[0]
