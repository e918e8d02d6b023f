"""`peagle smoke --endpoint` step logic, against real boto3 clients under botocore's Stubber:
what each AWS answer makes of a step, the exit code, and that waiting never really sleeps."""

from __future__ import annotations

import pytest
from aws_stubs import ENDPOINT, STACK, FakeClock, StubbedAws, step_lines

from peagle.cli import build_parser
from peagle.smoke.cli import execute

HEALTHY_ALARMS = {"P-EAGLE demo ModelLatencyP90High": "OK", "P-EAGLE demo KpiReportsMissing": "OK"}


@pytest.fixture
def aws():
    stubbed = StubbedAws()
    yield stubbed
    stubbed.assert_all_answers_used()


@pytest.fixture
def clock():
    return FakeClock()


def smoke(aws: StubbedAws, clock: FakeClock, *args: str) -> int:
    arguments = build_parser().parse_args(["smoke", "--endpoint", ENDPOINT, "--stack", STACK, *args])
    return execute(arguments, aws=aws.clients(), timing=clock.timing())


def queue_invocations(aws: StubbedAws) -> None:
    aws.plain_completion()
    aws.streamed_completion()


def test_a_healthy_endpoint_passes_every_step(aws, clock, capsys):
    aws.describe_endpoint("InService")
    queue_invocations(aws)
    aws.acceptance([0.0, 0.62])
    aws.kpi_reports([1.0, 1.0, 1.0])
    aws.alarms(
        {**HEALTHY_ALARMS, "P-EAGLE demo SpecAcceptanceRateLow": "INSUFFICIENT_DATA"},
        composite={"P-EAGLE demo Health": "OK"},
    )

    exit_code = smoke(aws, clock)

    out, err = capsys.readouterr()
    steps = step_lines(out)
    assert exit_code == 0, out + err
    assert list(steps) == [
        "endpoint-in-service",
        "plain-invocation",
        "streamed-invocation",
        "speculation-on",
        "kpi-metrics",
        "alarms-ok",
    ]
    assert {status for status, _ in steps.values()} == {"ok"}
    assert "InService; variant Primary on 1 instance(s)" in steps["endpoint-in-service"][1]
    assert '"Drafts, then one check."' in steps["plain-invocation"][1]
    assert "3 token(s) in" in steps["streamed-invocation"][1]
    assert "SpecAcceptanceRate up to 0.62" in steps["speculation-on"][1]
    assert "3 KPI report(s)" in steps["kpi-metrics"][1]
    assert "4 alarm(s) of demo-endpoint in demo-endpoint, none in ALARM" in steps["alarms-ok"][1]
    assert "1 INSUFFICIENT_DATA" in steps["alarms-ok"][1] and "SpecAcceptanceRateLow" in steps["alarms-ok"][1]
    assert "smoke test passed: 6 step(s) ok, 0 skipped" in out
    assert clock.sleeps == []  # everything was there at the first look


def test_a_creating_endpoint_fails_and_suggests_waiting(aws, clock, capsys):
    aws.describe_endpoint("Creating")
    aws.alarms(HEALTHY_ALARMS)  # still checked: alarms say what is wrong

    exit_code = smoke(aws, clock)

    out, err = capsys.readouterr()
    steps = step_lines(out)
    assert exit_code == 1
    assert steps["endpoint-in-service"][0] == "FAIL"
    assert "Creating, not yet InService" in steps["endpoint-in-service"][1]
    assert "--wait-seconds" in steps["endpoint-in-service"][1]
    for name in ("plain-invocation", "streamed-invocation", "speculation-on", "kpi-metrics"):
        assert steps[name][0] == "skip"
    assert steps["alarms-ok"][0] == "ok"
    assert "FAILED at: endpoint-in-service" in err


def test_wait_seconds_polls_describe_endpoint_until_in_service(aws, clock, capsys):
    aws.describe_endpoint("Creating")
    aws.describe_endpoint("Updating")
    aws.describe_endpoint("InService")
    queue_invocations(aws)
    aws.acceptance([0.5])
    aws.kpi_reports([1.0])
    aws.alarms(HEALTHY_ALARMS)

    exit_code = smoke(aws, clock, "--wait-seconds", "600")

    assert exit_code == 0, capsys.readouterr()
    assert clock.sleeps == [30.0, 30.0]


def test_still_creating_when_the_wait_runs_out(aws, clock, capsys):
    for _ in range(3):  # at t = 0, 30, 45 (the deadline)
        aws.describe_endpoint("Creating")
    aws.alarms(HEALTHY_ALARMS)

    exit_code = smoke(aws, clock, "--wait-seconds", "45")

    steps = step_lines(capsys.readouterr().out)
    assert exit_code == 1
    assert "still Creating after waiting 45 s" in steps["endpoint-in-service"][1]
    assert clock.sleeps == [30.0, 15.0]


def test_a_failed_endpoint_prints_its_failure_reason(aws, clock, capsys):
    aws.describe_endpoint(
        "Failed",
        failure_reason="The primary container for production variant Primary did not pass the ping health check.",
    )
    aws.alarms(HEALTHY_ALARMS)

    exit_code = smoke(aws, clock, "--wait-seconds", "600")

    steps = step_lines(capsys.readouterr().out)
    assert exit_code == 1
    assert steps["endpoint-in-service"] == (
        "FAIL",
        "Failed: The primary container for production variant Primary did not pass the ping health check.",
    )
    assert clock.sleeps == []  # Failed is final: nothing to wait for


def test_an_unknown_endpoint_says_how_to_find_it(aws, clock, capsys):
    aws.describe_endpoint_error("ValidationException", f'Could not find endpoint "{ENDPOINT}".')
    aws.alarms(HEALTHY_ALARMS)

    assert smoke(aws, clock) == 1
    detail = step_lines(capsys.readouterr().out)["endpoint-in-service"][1]
    assert "not found in us-east-1" in detail and "list-endpoints" in detail


def test_a_missing_variant_fails_and_lists_the_variants(aws, clock, capsys):
    aws.describe_endpoint("InService", variants=("AllTraffic",))
    aws.alarms(HEALTHY_ALARMS)

    assert smoke(aws, clock) == 1
    assert (
        "no variant 'Primary' (variants: AllTraffic); pass --variant"
        in step_lines(capsys.readouterr().out)["endpoint-in-service"][1]
    )


def test_zero_acceptance_fails_speculation_on(aws, clock, capsys):
    aws.describe_endpoint("InService")
    queue_invocations(aws)
    for _ in range(3):  # polls at t = 0, 20, 40 (the deadline)
        aws.acceptance([0.0, 0.0])
    aws.kpi_reports([1.0, 1.0])
    aws.alarms(HEALTHY_ALARMS)

    exit_code = smoke(aws, clock, "--kpi-wait-seconds", "40")

    out, err = capsys.readouterr()
    steps = step_lines(out)
    assert exit_code == 1
    assert steps["speculation-on"][0] == "FAIL"
    assert "2 SpecAcceptanceRate datapoint(s), all 0" in steps["speculation-on"][1]
    assert steps["kpi-metrics"][0] == "ok"
    assert "FAILED at: speculation-on" in err
    assert clock.sleeps == [20.0, 20.0]


def test_acceptance_that_arrives_while_polling_passes(aws, clock, capsys):
    aws.describe_endpoint("InService")
    queue_invocations(aws)
    aws.acceptance([])  # the KPI line with this run's drafts is not in yet
    aws.acceptance([0.7])
    aws.kpi_reports([1.0])
    aws.alarms(HEALTHY_ALARMS)

    assert smoke(aws, clock) == 0, capsys.readouterr()
    assert clock.sleeps == [20.0]


def test_no_kpi_datapoints_fail_both_metric_steps_within_one_wait(aws, clock, capsys):
    aws.describe_endpoint("InService")
    queue_invocations(aws)
    for _ in range(4):  # t = 0, 20, 40, 60 (the deadline)
        aws.acceptance([])
    aws.kpi_reports([])  # the shared deadline has passed: one look, no second wait
    aws.alarms(HEALTHY_ALARMS)

    exit_code = smoke(aws, clock, "--kpi-wait-seconds", "60")

    out, err = capsys.readouterr()
    steps = step_lines(out)
    assert exit_code == 1
    assert steps["speculation-on"][0] == "FAIL" and "no SpecAcceptanceRate datapoint" in steps["speculation-on"][1]
    assert steps["kpi-metrics"][0] == "FAIL" and "no KpiReports datapoint" in steps["kpi-metrics"][1]
    assert "/aws/sagemaker/Endpoints/demo-endpoint" in steps["kpi-metrics"][1]
    assert "FAILED at: speculation-on, kpi-metrics" in err
    assert sum(clock.sleeps) == 60.0


def test_an_alarm_in_alarm_fails_alarms_ok(aws, clock, capsys):
    aws.describe_endpoint("InService")
    queue_invocations(aws)
    aws.acceptance([0.6])
    aws.kpi_reports([1.0])
    aws.alarms({**HEALTHY_ALARMS, "P-EAGLE demo Errors5xxHigh": "ALARM"})

    exit_code = smoke(aws, clock)

    out, err = capsys.readouterr()
    status, detail = step_lines(out)["alarms-ok"]
    assert exit_code == 1
    assert status == "FAIL"
    assert "1 of 3 alarm(s) in ALARM: P-EAGLE demo Errors5xxHigh: P-EAGLE demo Errors5xxHigh is ALARM" in detail
    assert "FAILED at: alarms-ok" in err


def test_a_composite_alarm_in_alarm_fails_alarms_ok(aws, clock, capsys):
    aws.describe_endpoint("Failed")
    aws.alarms(HEALTHY_ALARMS, composite={"P-EAGLE demo Health": "ALARM"})

    assert smoke(aws, clock) == 1
    assert "P-EAGLE demo Health" in step_lines(capsys.readouterr().out)["alarms-ok"][1]


def test_a_missing_stack_says_to_pass_stack(aws, clock, capsys):
    aws.describe_endpoint("Failed")
    aws.stack_missing("other-endpoint")

    assert smoke(aws, clock, "--stack", "other-endpoint") == 1
    status, detail = step_lines(capsys.readouterr().out)["alarms-ok"]
    assert status == "FAIL" and "Stack with id other-endpoint does not exist" in detail and "pass --stack" in detail


def test_access_denied_fails_that_step_and_names_the_permission(aws, clock, capsys):
    aws.describe_endpoint("InService")
    queue_invocations(aws)
    aws.metric_data_error("AccessDenied", "User is not authorized to perform: cloudwatch:GetMetricData")
    aws.metric_data_error("AccessDenied", "User is not authorized to perform: cloudwatch:GetMetricData")
    aws.alarms(HEALTHY_ALARMS)

    assert smoke(aws, clock) == 1
    steps = step_lines(capsys.readouterr().out)
    assert steps["speculation-on"][0] == "FAIL"
    assert (
        "access denied" in steps["speculation-on"][1] and "needs cloudwatch:GetMetricData" in steps["speculation-on"][1]
    )
    assert steps["alarms-ok"][0] == "ok"


def test_rejected_credentials_end_the_run_with_one_line_and_exit_3(aws, clock, capsys):
    aws.describe_endpoint_error("ExpiredTokenException", "The security token included in the request is expired", 400)

    exit_code = smoke(aws, clock)

    out, err = capsys.readouterr()
    assert exit_code == 3
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("error: AWS rejected the credentials")


def test_a_deployment_with_k0_skips_speculation_and_names_endpoint_and_stack(aws, clock, capsys, tmp_path):
    deployment = tmp_path / "k0.yaml"
    deployment.write_text(
        "name: demo\nspeculation:\n  speculative_tokens: 0\nobservability:\n  kpi_interval_seconds: 30\n"
    )
    aws.describe_endpoint("InService")
    queue_invocations(aws)
    aws.kpi_reports([])
    aws.kpi_reports([1.0])
    aws.alarms(HEALTHY_ALARMS, stack=STACK)

    arguments = build_parser().parse_args(["smoke", "--deployment", str(deployment)])  # no --endpoint: demo-endpoint
    exit_code = execute(arguments, aws=aws.clients(), timing=clock.timing())

    steps = step_lines(capsys.readouterr().out)
    assert exit_code == 0
    assert steps["speculation-on"] == ("skip", f"speculation expected off ({deployment}: K=0 for variant Primary)")
    assert clock.sleeps == [20.0]


def test_the_default_kpi_wait_is_three_kpi_intervals(tmp_path):
    from peagle.smoke.cli import resolve_options

    deployment = tmp_path / "d.yaml"
    deployment.write_text("name: demo\nobservability:\n  kpi_interval_seconds: 30\n")
    assert resolve_options(build_parser().parse_args(["smoke", "--endpoint", "x"])).kpi_wait_seconds == 180
    options = resolve_options(build_parser().parse_args(["smoke", "--deployment", str(deployment)]))
    assert (options.kpi_wait_seconds, options.endpoint_name, options.stack_name, options.expect_speculation) == (
        90,
        "demo-endpoint",
        "demo-endpoint",
        True,
    )


def test_failed_invocations_fail_their_steps_with_the_model_error(aws, clock, capsys):
    aws.describe_endpoint("InService")
    aws.endpoint.stubber.add_client_error(
        "invoke_endpoint",
        service_error_code="ModelError",
        service_message="Received client error (400) from primary: max_tokens too large",
        http_status_code=424,
        modeled_fields={"OriginalStatusCode": 400},
    )
    aws.endpoint.add_error("ValidationError", 400, "Endpoint demo-endpoint of account 123456789012 not found.")
    aws.acceptance([0.6])
    aws.kpi_reports([1.0])
    aws.alarms(HEALTHY_ALARMS)

    assert smoke(aws, clock) == 1
    out, err = capsys.readouterr()
    steps = step_lines(out)
    assert (
        steps["plain-invocation"][0] == "FAIL"
        and "The model rejected the request (status 400)" in steps["plain-invocation"][1]
    )
    assert steps["streamed-invocation"][0] == "FAIL" and "InvalidRequestError" in steps["streamed-invocation"][1]
    assert "FAILED at: plain-invocation, streamed-invocation" in err
