"""`peagle bench` refuses what it cannot run before sending anything (exit 2, with the reason)."""

from __future__ import annotations

import json
import re

import pytest

from peagle.cli import main


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        (["--url", "http://127.0.0.1:1", "--label", "a", "--label", "b"], "one per --url/--endpoint"),
        (["--url", "http://127.0.0.1:1", "--concurrency", "1,x"], "comma-separated integers"),
        (["--url", "http://127.0.0.1:1", "--buckets", "huge"], "valid: short, medium, long, xlong"),
        (["--url", "http://127.0.0.1:1", "--instance-type", "ml.nope"], "catalog has: .*ml.g6e.xlarge"),
        ([], "nothing to report"),
        (
            ["--url", "http://127.0.0.1:1", "--inference-component", "c"],
            r"--inference-component picks an inference component of an --endpoint \(InvokeEndpoint "
            r"InferenceComponentName\); a --url server has none",
        ),
        (
            ["--endpoint", "e", "--endpoint", "f"] + ["--inference-component", "c"] * 3,
            "3 --inference-component for 2 --endpoint targets: give one for all of them, or one per --endpoint",
        ),
        (
            ["--endpoint", "e", "--inference-component", "c", "--cold-start-wait", "-1"],
            "--cold-start-wait takes seconds, a finite number >= 0, got -1",
        ),
    ],
)
def test_bad_arguments_exit_2_with_the_reason(arguments, reason, tmp_path, capsys):
    assert main(["bench", *arguments, "--out", str(tmp_path / "out")]) == 2
    assert re.search(reason, capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


def test_a_server_that_is_down_fails_the_warm_up_with_exit_1(tmp_path, capsys):
    exit_code = main(["bench", "--url", "http://127.0.0.1:1", "--max-attempts", "1", "--out", str(tmp_path / "out")])
    assert exit_code == 1
    assert "warm-up request failed: ConnectionFailedError" in capsys.readouterr().err


# -- inference components: labels, the wire, and a cold start kept out of the figures ------------------

ENDPOINT, COMPONENT = "peagle-test", "peagle-primary"


@pytest.fixture
def endpoint(monkeypatch):
    """A real sagemaker-runtime client under botocore's Stubber, handed to every client bench builds; the
    clients' clock is a fake one (their waits take no time)."""
    from client.sagemaker_wire import FakeClock, StubbedEndpoint

    stubbed = StubbedEndpoint()
    stubbed.clock = FakeClock()
    stubbed.patch_clients(monkeypatch)
    monkeypatch.setattr("peagle.client.client.time", stubbed.clock.as_time_module())
    with stubbed.stubber, stubbed.control_stubber:
        yield stubbed
        stubbed.control_stubber.assert_no_pending_responses()


def _stream():
    from client.sagemaker_wire import payload_part, vllm_sse_stream

    return [payload_part(vllm_sse_stream(["Hi", " there"]))]


def _bench(tmp_path, *extra: str) -> int:
    argv = ["bench", "--endpoint", ENDPOINT, "--region", "us-east-1", "--inference-component", COMPONENT]
    argv += ["--concurrency", "1", "--requests", "2", "--buckets", "short", "--out", str(tmp_path / "out"), *extra]
    return main(argv)


def test_a_cold_start_is_waited_for_in_the_warm_up_and_kept_out_of_every_figure(endpoint, tmp_path, capsys):
    endpoint.add_component_budgets(COMPONENT, download_s=600, startup_s=1053)  # the warm-up's wait: 2373 s
    endpoint.add_no_capacity(3)
    for _ in range(3):  # the warm-up's answer, then the two measured ones
        endpoint.add_stream(_stream())
    sends = endpoint.record_sends()

    exit_code = _bench(tmp_path)

    err = capsys.readouterr().err
    assert exit_code == 0, err
    assert err.count("cold start: Inference component peagle-primary has no copy") == 1
    assert "Retrying with backoff for up to 2373 s (peagle-primary's model download 600 s" in err
    waited = sum(endpoint.clock.sleeps)
    assert len(endpoint.clock.sleeps) == 3 and waited >= 17.5  # 3 jittered waits of at least 2.5, 5, 10 s
    assert f"bench: {ENDPOINT}/{COMPONENT}: cold start: the warm-up waited {waited:.0f} s" in err
    assert len(sends) == 6 and {send["InferenceComponentName"] for send in sends} == {COMPONENT}

    run = json.loads((tmp_path / "out" / "results.json").read_text())["runs"][0]
    assert run["label"] == f"{ENDPOINT}/{COMPONENT}"
    assert run["target"] == f"sagemaker:{ENDPOINT} component {COMPONENT}"
    assert any(note.startswith(f"cold start: the warm-up waited {waited:.0f} s") for note in run["notes"])
    level = run["levels"][0]
    assert level["failed"] == 0 and level["requests"] == 2
    assert level["e2e_s"]["p99"] < 1.0 and level["ttft_s"]["p99"] < 1.0  # not the cold start's seconds
    endpoint.stubber.assert_no_pending_responses()


def test_a_measured_request_that_finds_no_copy_is_an_error_not_a_wait(endpoint, tmp_path, capsys):
    endpoint.add_component_budgets(COMPONENT, download_s=600, startup_s=1053)
    endpoint.add_stream(_stream())  # the warm-up finds a copy
    endpoint.add_no_capacity(1)  # ... which is gone when measuring starts
    endpoint.add_stream(_stream())

    exit_code = _bench(tmp_path)

    assert exit_code == 1  # an error rate above --max-error-rate 0
    assert endpoint.clock.sleeps == []
    run = json.loads((tmp_path / "out" / "results.json").read_text())["runs"][0]
    assert run["levels"][0]["errors_by_type"] == {"NoCapacityError": 1}
    assert any("bench waits for a cold start only during its warm-up" in note for note in run["notes"])
    assert "cold start:" not in capsys.readouterr().err
    endpoint.stubber.assert_no_pending_responses()


def test_a_cold_start_longer_than_the_wait_fails_the_warm_up_with_what_to_do(endpoint, tmp_path, capsys):
    endpoint.add_no_capacity(12)

    exit_code = _bench(tmp_path, "--cold-start-wait", "30")

    err = capsys.readouterr().err
    assert exit_code == 1 and "Traceback" not in err
    assert "warm-up request failed: NoCapacityError:" in err and "No copy was ready after 30 s" in err
    assert sum(endpoint.clock.sleeps) == pytest.approx(30.0)
    assert not (tmp_path / "out").exists()


def test_components_pair_with_endpoints_like_target_variants(endpoint, tmp_path, capsys):
    for component in ("ic-a", "ic-b"):  # each target reads its own component's budgets
        endpoint.add_component_budgets(component, download_s=600, startup_s=1053)
    endpoint.add_stream(_stream())  # warm-up and one request per target
    endpoint.add_stream(_stream())
    endpoint.add_stream(_stream())
    endpoint.add_stream(_stream())
    sends = endpoint.record_sends()

    argv = ["bench", "--endpoint", ENDPOINT, "--endpoint", ENDPOINT, "--region", "us-east-1"]
    argv += ["--target-variant", "Primary", "--inference-component", "ic-a", "--inference-component", "ic-b"]
    argv += ["--concurrency", "1", "--requests", "1", "--buckets", "short", "--out", str(tmp_path / "out")]
    assert main(argv) == 0, capsys.readouterr().err

    labels = [run["label"] for run in json.loads((tmp_path / "out" / "results.json").read_text())["runs"]]
    assert labels == [f"{ENDPOINT}/Primary/ic-a", f"{ENDPOINT}/Primary/ic-b"]
    assert [(send["TargetVariant"], send["InferenceComponentName"]) for send in sends] == [
        ("Primary", "ic-a"),
        ("Primary", "ic-a"),
        ("Primary", "ic-b"),
        ("Primary", "ic-b"),
    ]


def test_tune_passes_the_component_to_bench_and_refuses_it_without_an_endpoint(monkeypatch, tmp_path, capsys):
    seen = []

    def bench_run(args):
        seen.append((args.endpoint, args.inference_component))
        return 1  # stop tune there

    monkeypatch.setattr("peagle.bench.cli._run", bench_run)
    tune = ["tune", "--out", str(tmp_path / "tune")]
    assert main([*tune, "--endpoint", ENDPOINT, "--inference-component", COMPONENT]) == 1
    assert seen == [([ENDPOINT], [COMPONENT])]

    capsys.readouterr()
    assert main([*tune, "--url", "http://127.0.0.1:1", "--inference-component", COMPONENT]) == 2
    assert "--inference-component names an inference component of an --endpoint" in capsys.readouterr().err
    assert len(seen) == 1
