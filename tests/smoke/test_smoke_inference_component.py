"""`peagle smoke --inference-component` through the real CLI (`peagle.cli.main`), its AWS clients under
botocore's Stubber and a fake clock: the component reaches both invocations (without a TargetVariant: the
endpoint's one variant is the instance pool), its KPI metrics are read under its name, and a component scaled
to zero is waited for (explained once on stderr) instead of failing the smoke test."""

from __future__ import annotations

import pytest
from aws_stubs import ENDPOINT, STACK, FakeClock, StubbedAws, step_lines

from peagle.cli import main

COMPONENT = "peagle-primary"
POOL = "AllTraffic"  # the endpoint config's one variant in inference-component mode (peagle_cdk/component_endpoint.py)
HEALTHY_ALARMS = {"P-EAGLE demo ModelLatencyP90High": "OK"}
EXPLANATION = f"cold start: Inference component {COMPONENT} has no copy to serve the request: it is scaled to zero"


@pytest.fixture
def aws(monkeypatch):
    stubbed = StubbedAws()
    monkeypatch.setattr("peagle.smoke.cli.connect_aws", lambda region: stubbed.clients())
    yield stubbed
    stubbed.assert_all_answers_used()


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr("peagle.smoke.step.Timing", fake.timing)  # what `peagle smoke` waits with
    return fake


def smoke(*args: str) -> int:
    return main(["smoke", "--endpoint", ENDPOINT, "--stack", STACK, "--inference-component", COMPONENT, *args])


def healthy_metrics(aws: StubbedAws) -> None:
    aws.acceptance([0.6], variant=COMPONENT)  # the KPI lines' VariantName is the component's name
    aws.kpi_reports([1.0], variant=COMPONENT)
    aws.alarms(HEALTHY_ALARMS)


def test_the_component_reaches_both_invocations(aws, clock, capsys):
    aws.describe_endpoint("InService", variants=(POOL,))
    aws.describe_component(COMPONENT, download_s=600, startup_s=1053)  # the default cold-start wait
    aws.plain_completion(inference_component=COMPONENT)  # the Stubber checks the parameters
    aws.streamed_completion(inference_component=COMPONENT)
    healthy_metrics(aws)

    exit_code = smoke()

    out, err = capsys.readouterr()
    assert exit_code == 0, out + err
    assert step_lines(out)["endpoint-in-service"] == (
        "ok",
        f"InService; {POOL} on 1 instance(s); invoking inference component {COMPONENT}",
    )
    assert clock.sleeps == []


def test_a_deployment_in_component_mode_names_the_component(tmp_path):
    from peagle.cli import build_parser
    from peagle.smoke.cli import resolve_options

    deployment = tmp_path / "s2z.yaml"
    deployment.write_text("name: demo\nendpoint:\n  mode: inference_components\nrollout:\n  strategy: rolling\n")
    options = resolve_options(build_parser().parse_args(["smoke", "--deployment", str(deployment)]))
    assert (options.endpoint_name, options.inference_component) == ("demo-endpoint", "demo-primary")
    explicit = ["smoke", "--deployment", str(deployment), "--inference-component", "other"]
    assert resolve_options(build_parser().parse_args(explicit)).inference_component == "other"


def test_a_cold_start_is_waited_for_once_and_the_smoke_test_passes(aws, clock, capsys):
    aws.describe_endpoint("InService", variants=(POOL,))
    aws.describe_component(COMPONENT, download_s=600, startup_s=1053)
    aws.plain_no_capacity(3)
    aws.plain_completion(inference_component=COMPONENT)
    aws.streamed_completion(inference_component=COMPONENT)  # the copy is up: no second wait
    healthy_metrics(aws)

    exit_code = smoke()

    out, err = capsys.readouterr()
    steps = step_lines(out)
    assert exit_code == 0, out + err
    assert err.count(EXPLANATION) == 1
    assert "for up to 2373 s (peagle-primary's model download 600 s + container start-up 1053 s timeouts" in err
    assert err.count("cold start over: a copy answered after") == 1
    assert clock.sleeps == [5.0, 10.0, 20.0]  # 4 sends of the plain invocation: 3 without a copy, then the answer
    waited = sum(clock.sleeps)
    assert steps["plain-invocation"][0] == "ok"
    assert f"200, 8 token(s) in 0.0 s after a {waited:.0f} s cold start" in steps["plain-invocation"][1]
    assert "cold start" not in steps["streamed-invocation"][1]


def test_a_cold_start_longer_than_the_wait_fails_plain_invocation_with_what_to_do(aws, clock, capsys):
    aws.describe_endpoint("InService", variants=(POOL,))
    aws.plain_no_capacity(7)  # looks at 0, 5, 15, 35, 65, 95 and 120 s (the deadline)
    # no streamed answer queued: the streamed step must not wait a second time
    healthy_metrics(aws)

    exit_code = smoke("--cold-start-wait", "120")

    out, err = capsys.readouterr()
    steps = step_lines(out)
    assert exit_code == 1 and "Traceback" not in err
    assert steps["plain-invocation"][0] == "FAIL"
    detail = steps["plain-invocation"][1]
    assert "No copy was ready after 120 s (cold-start wait 120 s)" in detail
    assert "update-inference-component-runtime-config --inference-component-name peagle-primary" in detail
    assert steps["streamed-invocation"] == ("skip", "plain-invocation found no copy of the inference component")
    assert "FAILED at: plain-invocation" in err
    assert err.count(EXPLANATION) == 1
    assert clock.sleeps == [5.0, 10.0, 20.0, 30.0, 30.0, 25.0]  # capped at 30 s, cut at the deadline; no 2nd wait


def test_a_component_with_url_is_refused_with_one_line(capsys):
    assert main(["smoke", "--url", "http://127.0.0.1:1", "--inference-component", COMPONENT]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--inference-component names an inference component of an endpoint" in err and "--url" in err


def test_a_negative_cold_start_wait_is_refused(capsys):
    assert main(["smoke", "--endpoint", ENDPOINT, "--cold-start-wait", "-1"]) == 2
    assert "--cold-start-wait takes seconds, a finite number >= 0, got -1" in capsys.readouterr().err
