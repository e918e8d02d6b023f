"""`peagle traffic`: CloudWatch's per-minute Invocations become the trace CSV `peagle simulate` reads.

botocore's Stubber stands in for CloudWatch and SageMaker (real clients, real request validation,
responses in GetMetricData's and DescribeEndpoint's documented shapes); the clock is fixed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from boto3.session import Session
from botocore.stub import Stubber

from peagle.cli import main
from peagle.simulate.traffic import from_csv
from peagle.traffic import cli as traffic_cli
from peagle.traffic import cloudwatch_history

REGION = "us-east-1"
NOW = datetime(2026, 12, 4, 10, 0, 30, tzinfo=UTC)
ENDPOINT, VARIANT = "peagle-endpoint", "AllTraffic"
VARIANT_ARGS = ("--endpoint", ENDPOINT, "--variant", VARIANT)
VARIANT_DIMENSIONS = [{"Name": "EndpointName", "Value": ENDPOINT}, {"Name": "VariantName", "Value": VARIANT}]


class StubbedAws:
    """Real CloudWatch and SageMaker clients under Stubber, handed to `peagle traffic` in place of its own."""

    def __init__(self) -> None:
        self.session = Session(region_name=REGION, aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret")
        self.clients = {service: self.session.client(service) for service in ("cloudwatch", "sagemaker")}
        self.stubbers = {service: Stubber(client) for service, client in self.clients.items()}

    def install(self, monkeypatch) -> None:
        monkeypatch.setattr(cloudwatch_history, "_session", lambda region: self.session)
        monkeypatch.setattr(cloudwatch_history, "_client", lambda session, service: self.clients[service])
        monkeypatch.setattr(traffic_cli, "_utc_now", lambda: NOW)
        for stubber in self.stubbers.values():
            stubber.activate()

    def metric_page(
        self,
        *,
        start: datetime,
        end: datetime,
        counts: dict[datetime, float],
        dimensions: list[dict] = VARIANT_DIMENSIONS,
        period: int = 60,
        token: str | None = None,
        next_token: str | None = None,
        status: str = "Complete",
    ) -> None:
        """One GetMetricData page: the request the command must send, and the documented response shape."""
        expected = {
            "MetricDataQueries": [
                {
                    "Id": "invocations",
                    "MetricStat": {
                        "Metric": {"Namespace": "AWS/SageMaker", "MetricName": "Invocations", "Dimensions": dimensions},
                        "Period": period,
                        "Stat": "Sum",
                    },
                    "ReturnData": True,
                }
            ],
            "StartTime": start,
            "EndTime": end,
            "ScanBy": "TimestampAscending",
        }
        if token is not None:
            expected["NextToken"] = token
        response: dict = {
            "MetricDataResults": [
                {
                    "Id": "invocations",
                    "Label": "Invocations",
                    "Timestamps": list(counts),
                    "Values": list(counts.values()),
                    "StatusCode": status,
                }
            ],
            "Messages": [],
        }
        if next_token is not None:
            response["NextToken"] = next_token
        self.stubbers["cloudwatch"].add_response("get_metric_data", response, expected)

    def endpoint(self, variants: list[str]) -> None:
        self.stubbers["sagemaker"].add_response(
            "describe_endpoint",
            {
                "EndpointName": ENDPOINT,
                "EndpointArn": f"arn:aws:sagemaker:{REGION}:111122223333:endpoint/{ENDPOINT}",
                "EndpointStatus": "InService",
                "CreationTime": NOW - timedelta(days=30),
                "LastModifiedTime": NOW - timedelta(days=30),
                "ProductionVariants": [{"VariantName": name} for name in variants],
            },
            {"EndpointName": ENDPOINT},
        )

    def assert_all_called(self) -> None:
        for stubber in self.stubbers.values():
            stubber.assert_no_pending_responses()


@pytest.fixture
def aws(monkeypatch) -> StubbedAws:
    account = StubbedAws()
    account.install(monkeypatch)
    return account


def traffic(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["traffic", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_a_window_becomes_a_trace_simulate_reads_back(capsys, aws, tmp_path):
    out = tmp_path / "morning.csv"
    start, end = at("2026-12-04T08:00"), at("2026-12-04T09:00")
    aws.metric_page(
        start=start,
        end=end,
        counts={start: 5.0, start + timedelta(minutes=1): 7.0, start + timedelta(minutes=59): 2.0},
    )

    # the start is rounded down to its minute: minute 0 is 08:00:00
    code, stdout, err = traffic(
        capsys, *VARIANT_ARGS, "--start", "2026-12-04T08:00:20Z", "--end", "2026-12-04T09:00Z", "--out", str(out)
    )

    assert code == 0, err
    trace = from_csv(out)
    assert len(trace) == 60
    assert trace.requests_per_minute[:3] == (5.0, 7.0, 0.0) and trace.requests_per_minute[59] == 2.0
    lines = out.read_text().splitlines()
    assert lines[0] == "# start: 2026-12-04T08:00:00Z"
    assert f"# source: AWS/SageMaker Invocations (Sum) for endpoint {ENDPOINT}, variant {VARIANT}" in lines[1]
    assert f"region {REGION}" in lines[1]
    assert "# period: 60 s" in lines
    assert f"wrote {out}: 60 minutes from 2026-12-04T08:00:00Z" in stdout and "14 requests" in stdout
    aws.assert_all_called()


def test_minutes_without_a_datapoint_are_minutes_without_requests(capsys, aws, tmp_path):
    out = tmp_path / "gaps.csv"
    start, end = at("2026-12-04T09:00"), at("2026-12-04T09:30")
    aws.metric_page(start=start, end=end, counts={start: 3.0, start + timedelta(minutes=10): 4.0})

    code, _, err = traffic(
        capsys, *VARIANT_ARGS, "--start", "2026-12-04T09:00Z", "--end", "2026-12-04T09:30Z", "--out", str(out)
    )

    assert code == 0, err
    trace = from_csv(out)
    # 30 minutes although the last 19 had no datapoint: the last minute is written as 0
    assert len(trace) == 30
    assert trace.requests_per_minute == (3.0,) + (0.0,) * 9 + (4.0,) + (0.0,) * 19
    rows = [line for line in out.read_text().splitlines() if not line.startswith("#")]
    assert rows == ["minute,requests", "0,3", "10,4", "29,0"]
    assert any(
        line.startswith("# gaps: a minute without a row had no Invocations datapoint")
        for line in out.read_text().splitlines()
    )


def test_every_page_of_get_metric_data_is_read(capsys, aws, tmp_path):
    out = tmp_path / "paged.csv"
    start, end = at("2026-12-04T09:00"), at("2026-12-04T09:10")
    aws.metric_page(start=start, end=end, counts={start: 1.0, start + timedelta(minutes=1): 2.0}, next_token="page-2")
    aws.metric_page(
        start=start, end=end, counts={start + timedelta(minutes=9): 9.0}, token="page-2", next_token="page-3"
    )
    aws.metric_page(start=start, end=end, counts={start + timedelta(minutes=5): 5.0}, token="page-3")

    code, _, err = traffic(
        capsys, *VARIANT_ARGS, "--start", "2026-12-04T09:00Z", "--end", "2026-12-04T09:10Z", "--out", str(out)
    )

    assert code == 0, err
    assert from_csv(out).requests_per_minute == (1.0, 2.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 9.0)
    aws.assert_all_called()


def test_days_reads_the_last_n_days_of_the_endpoints_one_variant_to_stdout(capsys, aws):
    aws.endpoint([VARIANT])
    # now is 10:00:30: the window is 10:00 yesterday (rounded down) to 10:01 today (the current minute, rounded up)
    start, end = at("2026-12-03T10:00"), at("2026-12-04T10:01")
    aws.metric_page(start=start, end=end, counts={start + timedelta(minutes=720): 30.0})

    code, stdout, err = traffic(capsys, "--endpoint", ENDPOINT, "--days", "1", "--out", "-")

    assert code == 0, err
    assert stdout.startswith("# start: 2026-12-03T10:00:00Z\n")
    assert stdout.endswith("minute,requests\n720,30\n1440,0\n")
    assert "wrote the trace: 1441 minutes" in err
    aws.assert_all_called()


def test_an_endpoint_with_several_variants_needs_one_named(capsys, aws):
    aws.endpoint(["Primary", "Baseline"])

    code, _, err = traffic(capsys, "--endpoint", ENDPOINT, "--days", "1")

    assert code == 2
    assert err.startswith(f"error: endpoint {ENDPOINT} has 2 variants (Primary, Baseline); pass --variant")
    aws.assert_all_called()


def test_an_inference_component_is_read_by_its_own_dimension(capsys, aws, tmp_path):
    out = tmp_path / "component.csv"
    start, end = at("2026-12-04T09:00"), at("2026-12-04T09:05")
    aws.metric_page(
        start=start,
        end=end,
        counts={start + timedelta(minutes=2): 6.0},
        dimensions=[{"Name": "InferenceComponentName", "Value": "peagle-ic"}],
    )

    code, _, err = traffic(
        capsys,
        "--inference-component",
        "peagle-ic",
        "--start",
        "2026-12-04T09:00Z",
        "--end",
        "2026-12-04T09:05Z",
        "--out",
        str(out),
    )

    assert code == 0, err
    assert from_csv(out).requests_per_minute == (0.0, 0.0, 6.0, 0.0, 0.0)
    assert "for inference component peagle-ic (InferenceComponentName=peagle-ic)" in out.read_text()
    aws.assert_all_called()


def test_a_start_older_than_15_days_is_refused_before_any_aws_call(capsys, aws):
    # No stubbed response: any AWS call would fail the test with "Unexpected call".
    code, _, err = traffic(capsys, *VARIANT_ARGS, "--start", "2026-11-10T00:00Z", "--end", "2026-11-11T00:00Z")

    assert code == 2
    assert "CloudWatch keeps 1-minute datapoints for 15 days and only 5-minute sums for a start that old" in err
    assert "start at 2026-11-19T10:01:00Z or later" in err and "or pass --coarse" in err


def test_coarse_spreads_each_older_period_evenly_over_its_minutes(capsys, aws, tmp_path):
    out = tmp_path / "november.csv"
    # 24 days ago: 5-minute sums; the window is aligned to whole 5-minute periods (08:07 -> 08:05, 08:17 -> 08:20)
    start, end = at("2026-11-10T08:05"), at("2026-11-10T08:20")
    aws.metric_page(start=start, end=end, counts={start: 50.0, start + timedelta(minutes=10): 7.0}, period=300)

    code, _, err = traffic(
        capsys,
        *VARIANT_ARGS,
        "--start",
        "2026-11-10T08:07Z",
        "--end",
        "2026-11-10T08:17Z",
        "--coarse",
        "--out",
        str(out),
    )

    assert code == 0, err
    assert from_csv(out).requests_per_minute == (10.0,) * 5 + (0.0,) * 5 + (1.4,) * 5
    text = out.read_text()
    assert text.startswith("# start: 2026-11-10T08:05:00Z\n")
    assert "# period: 300 s" in text and "each sum is spread evenly over its 5 minutes" in text
    assert "note: the start is older than 15 days, so CloudWatch has only 300-second sums" in err
    aws.assert_all_called()


def test_a_start_older_than_455_days_is_refused_even_coarse(capsys, aws):
    code, _, err = traffic(capsys, *VARIANT_ARGS, "--start", "2025-06-01", "--end", "2025-06-02", "--coarse")

    assert code == 2
    assert "CloudWatch keeps no datapoint older than 455 days" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--start", "2026-12-04T09:00Z", "--end", "2026-12-04T08:00Z"],
            "error: the window ends (2026-12-04T08:00:00Z) before it starts (2026-12-04T09:00:00Z)",
        ),
        (["--days", "20"], "error: the window is 20.0 days long; one trace covers at most 15 days"),
        (["--start", "yesterday"], "error: --start 'yesterday' is not an ISO 8601 date or time"),
        (
            ["--start", "2026-12-04T09:00Z", "--end", "2026-12-05T09:00Z"],
            "error: --end 2026-12-05T09:00:00Z is in the future",
        ),
    ],
)
def test_a_window_cloudwatch_cannot_serve_is_bad_input(capsys, aws, argv, message):
    code, _, err = traffic(capsys, *VARIANT_ARGS, *argv)

    assert code == 2
    assert err.startswith(message), err


def test_no_datapoint_at_all_is_bad_input_naming_where_it_looked(capsys, aws, tmp_path):
    out = tmp_path / "none.csv"
    start, end = at("2026-12-04T09:00"), at("2026-12-04T10:00")
    typo = [{"Name": "EndpointName", "Value": ENDPOINT}, {"Name": "VariantName", "Value": "Typo"}]
    aws.metric_page(start=start, end=end, counts={}, dimensions=typo)

    code, _, err = traffic(
        capsys,
        "--endpoint",
        ENDPOINT,
        "--variant",
        "Typo",
        "--start",
        "2026-12-04T09:00Z",
        "--end",
        "2026-12-04T10:00Z",
        "--out",
        str(out),
    )

    assert code == 2
    assert err.startswith(
        f"error: CloudWatch has no AWS/SageMaker Invocations datapoint for endpoint {ENDPOINT}, variant Typo in "
        f"{REGION} between 2026-12-04T09:00:00Z and 2026-12-04T10:00:00Z: check the name(s) and --region"
    )
    assert not out.exists()


def test_an_endpoint_sagemaker_does_not_know_is_bad_input(capsys, aws):
    aws.stubbers["sagemaker"].add_client_error(
        "describe_endpoint",
        service_error_code="ValidationException",
        http_status_code=400,
        service_message=f'Could not find endpoint "arn:aws:sagemaker:{REGION}:111122223333:endpoint/nope".',
        expected_params={"EndpointName": "nope"},
    )

    code, _, err = traffic(capsys, "--endpoint", "nope", "--days", "1")

    assert code == 2
    assert err.startswith(f"error: endpoint nope not found in {REGION}")
    assert f"`aws sagemaker list-endpoints --region {REGION}`" in err and "pass --variant NAME" in err
    aws.assert_all_called()


def test_access_denied_is_an_aws_problem(capsys, aws):
    aws.stubbers["cloudwatch"].add_client_error(
        "get_metric_data",
        service_error_code="AccessDenied",
        http_status_code=403,
        service_message="User: arn:aws:iam::111122223333:user/x is not authorized to perform: cloudwatch:GetMetricData",
    )

    code, _, err = traffic(capsys, *VARIANT_ARGS, "--days", "1")

    assert code == 3
    assert err.startswith("error: access denied while reading AWS/SageMaker Invocations")
    assert "cloudwatch:GetMetricData" in err


def test_a_page_cloudwatch_could_not_complete_is_not_written(capsys, aws, tmp_path):
    out = tmp_path / "partial.csv"
    start, end = at("2026-12-04T09:00"), at("2026-12-04T09:10")
    aws.metric_page(start=start, end=end, counts={start: 1.0}, status="InternalError")

    code, _, err = traffic(
        capsys, *VARIANT_ARGS, "--start", "2026-12-04T09:00Z", "--end", "2026-12-04T09:10Z", "--out", str(out)
    )

    assert code == 3
    assert "CloudWatch ended with status InternalError" in err
    assert not out.exists()


def test_a_variant_and_a_component_together_are_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["traffic", "--endpoint", ENDPOINT, "--variant", VARIANT, "--inference-component", "ic", "--days", "1"])

    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_variant_without_its_endpoint_is_refused(capsys, aws):
    code, _, err = traffic(capsys, "--variant", VARIANT, "--days", "1")

    assert code == 2
    assert err.startswith("error: no source: pass --endpoint NAME")


def test_the_default_output_is_traffic_csv_in_the_working_directory(capsys, aws, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    start, end = at("2026-12-04T09:00"), at("2026-12-04T09:02")
    aws.metric_page(start=start, end=end, counts={start: 1.0})

    code, _, err = traffic(capsys, *VARIANT_ARGS, "--start", "2026-12-04T09:00Z", "--end", "2026-12-04T09:02Z")

    assert code == 0, err
    assert from_csv(Path("traffic.csv")).requests_per_minute == (1.0, 0.0)


def test_a_trace_from_cloudwatch_replays_a_deployments_schedule_at_its_wall_clock_time(
    capsys, aws, tmp_path, cdk_synthesized
):
    """The loop's two ends joined: CloudWatch's minutes -> `peagle traffic` -> `peagle simulate` of a deployment
    whose schedule raises the floor at 07:00 UTC; the trace starts at 06:00, so the floor rises at its minute 60."""
    import yaml

    from peagle.cloud_assembly import load_template_file
    from peagle.planning.planner import plan_deployment
    from peagle.settings import load_deployment_config
    from peagle.simulate.scenarios import run

    repo = Path(__file__).resolve().parents[2]
    settings = yaml.safe_load((repo / "deployments" / "default.yaml").read_text())
    floor = {"name": "MorningFloor", "schedule": "cron(0 7 * * ? *)", "min_capacity": 2, "max_capacity": 3}
    settings["autoscaling"] = {"max_capacity": 3, "schedules": [floor]}
    deployment = tmp_path / "scheduled.yaml"
    deployment.write_text(yaml.safe_dump(settings))

    out = tmp_path / "morning.csv"
    start, end = at("2026-12-03T06:00"), at("2026-12-03T08:00")
    aws.metric_page(start=start, end=end, counts={start + timedelta(minutes=m): 20.0 for m in range(0, 120, 3)})
    code, _, err = traffic(
        capsys, *VARIANT_ARGS, "--start", "2026-12-03T06:00Z", "--end", "2026-12-03T08:00Z", "--out", str(out)
    )
    assert code == 0, err

    template = load_template_file(cdk_synthesized(deployment=str(deployment)).outdir / "PeagleEndpoint.template.json")
    plan = plan_deployment(load_deployment_config(str(deployment), {}))
    minutes = run(template, plan, traces=[from_csv(out)], readings=[{}])[0].timeline.minutes
    assert [m.desired for m in minutes[58:61]] == [1, 1, 2]
    assert minutes[60].actions[0] == "scheduled MorningFloor: bounds 2-3: 1 -> 2"
