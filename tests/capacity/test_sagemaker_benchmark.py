"""`peagle capacity --sagemaker-benchmark` and `--sagemaker-results`: the two requests checked against botocore's
SageMaker service model (a broken one refused), submission and reading through real boto3 clients under botocore's
Stubber (which checks every call's parameters against the same model), and AIPerf's exports read into the report
beside a local capacity run (tests/capacity/aiperf_exports/README.md says where their format comes from)."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from pathlib import Path

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from botocore.validate import validate_parameters

import peagle.aws
from peagle.aws import AwsCallError
from peagle.capacity import sagemaker_benchmark as benchmark
from peagle.capacity.sagemaker_benchmark_results import load_levels
from peagle.cli import main
from peagle.cli_errors import ExitCode

EXPORTS = Path(__file__).parent / "aiperf_exports"
LOCAL_RUN = Path(__file__).parents[2] / "docs" / "baselines" / "capacity-partial" / "K0"
ROLE = "arn:aws:iam::111122223333:role/PeagleBenchmark"
JOB_ARN = "arn:aws:sagemaker:us-east-1:111122223333:ai-benchmark-job/peagle-check"
WORKLOAD_ARN = "arn:aws:sagemaker:us-east-1:111122223333:ai-workload-config/peagle-check"
WRITE = [
    "capacity",
    "--endpoint",
    "peagle-endpoint",
    "--inference-component",
    "peagle-primary",
    "--sagemaker-benchmark",
    "--role-arn",
    ROLE,
    "--s3-output",
    "s3://peagle-bench/results/",
    "--input-tokens",
    "550:150",
    "--job-name",
    "peagle-check",
]


def written(out: Path) -> tuple[dict, dict]:
    return (
        json.loads((out / benchmark.WORKLOAD_FILE).read_text()),
        json.loads((out / benchmark.JOB_FILE).read_text()),
    )


def test_the_written_requests_fit_the_service_model(tmp_path):
    assert main([*WRITE, "--out", str(tmp_path)]) == ExitCode.OK
    workload, job = written(tmp_path)
    model = benchmark.sagemaker_model()
    validate_parameters(workload, model.operation_model("CreateAIWorkloadConfig").input_shape)
    validate_parameters(job, model.operation_model("CreateAIBenchmarkJob").input_shape)
    assert job["BenchmarkTarget"]["Endpoint"] == {
        "Identifier": "peagle-endpoint",
        "InferenceComponents": [{"Identifier": "peagle-primary"}],
    }
    spec = json.loads(workload["AIWorkloadConfigs"]["WorkloadSpec"]["Inline"])
    # The chatbot profile's SLO (TTFT 1 s, TPOT 100 ms) and capacity's default 64 output tokens.
    assert spec == {
        "benchmark": {"type": "aiperf"},
        "parameters": {
            "prompt_input_tokens_mean": 550,
            "prompt_input_tokens_stddev": 150,
            "output_tokens_mean": 64,
            "output_tokens_stddev": 0,
            "streaming": True,
            "ttft_sla_ms": 1000.0,
            "tpot_sla_ms": 100.0,
        },
    }
    notes = (tmp_path / benchmark.NOTES_FILE).read_text()
    assert '--goodput "time_to_first_token:1000 inter_token_latency:100"' in notes
    assert "the attainment target (95%" in notes and "request rates" in notes


def test_a_fixed_concurrency_and_tokenizer_go_into_the_workload(tmp_path):
    argv = [*WRITE, "--job-concurrency", "8", "--tokenizer", "meta-llama/Llama-3.1-8B-Instruct"]
    assert main([*argv, "--out", str(tmp_path)]) == ExitCode.OK
    spec = json.loads(written(tmp_path)[0]["AIWorkloadConfigs"]["WorkloadSpec"]["Inline"])
    assert spec["parameters"]["concurrency"] == 8
    assert spec["parameters"]["tokenizer"] == "meta-llama/Llama-3.1-8B-Instruct"


def test_a_broken_request_fails_the_service_model(tmp_path, capsys):
    from botocore.exceptions import ParamValidationError

    shape = benchmark.sagemaker_model().operation_model("CreateAIBenchmarkJob").input_shape
    good = json.loads(json.dumps(written_job(tmp_path)))
    del good["RoleArn"]
    with pytest.raises(ParamValidationError, match="RoleArn"):
        validate_parameters(good, shape)
    # A name ParamValidator lets through (it checks no pattern) is refused by the model's own pattern.
    assert main([*WRITE[:-1], "peagle_check", "--out", str(tmp_path / "bad")]) == ExitCode.BAD_INPUT
    error = capsys.readouterr().err
    assert "AIBenchmarkJobName 'peagle_check' does not match the API's pattern" in error
    assert not (tmp_path / "bad" / benchmark.JOB_FILE).exists()


def written_job(tmp_path: Path) -> dict:
    main([*WRITE, "--out", str(tmp_path / "ok")])
    return written(tmp_path / "ok")[1]


def test_missing_settings_are_named_at_once(tmp_path, capsys):
    code = main(["capacity", "--endpoint", "e", "--sagemaker-benchmark", "--out", str(tmp_path)])
    assert code == ExitCode.BAD_INPUT
    error = capsys.readouterr().err
    for flag in ("--role-arn", "--s3-output", "--input-tokens"):
        assert flag in error


def stubbed(service: str) -> tuple:
    client = boto3.client(service, region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    stubber = Stubber(client)
    stubber.activate()
    return client, stubber


def test_submit_sends_both_requests(tmp_path):
    main([*WRITE, "--out", str(tmp_path)])
    workload, job = written(tmp_path)
    requests = benchmark.BenchmarkRequests(workload=workload, job=job, aiperf_goodput="")
    client, stubber = stubbed("sagemaker")
    stubber.add_response("create_ai_workload_config", {"AIWorkloadConfigArn": WORKLOAD_ARN}, workload)
    stubber.add_response("create_ai_benchmark_job", {"AIBenchmarkJobArn": JOB_ARN}, job)
    assert benchmark.submit_with(client, requests) == JOB_ARN
    stubber.assert_no_pending_responses()


def test_submit_without_permission_says_which(tmp_path):
    main([*WRITE, "--out", str(tmp_path)])
    workload, job = written(tmp_path)
    client, stubber = stubbed("sagemaker")
    stubber.add_client_error("create_ai_workload_config", "AccessDeniedException", "not allowed", 400)
    with pytest.raises(AwsCallError, match="sagemaker:CreateAIWorkloadConfig"):
        benchmark.submit_with(client, benchmark.BenchmarkRequests(workload=workload, job=job, aiperf_goodput=""))


def described(status: str, **extra) -> dict:
    return {
        "AIBenchmarkJobName": "peagle-check",
        "AIBenchmarkJobArn": JOB_ARN,
        "AIBenchmarkJobStatus": status,
        "BenchmarkTarget": {"Endpoint": {"Identifier": "peagle-endpoint"}},
        "OutputConfig": {"S3OutputLocation": "s3://peagle-bench/results/peagle-check/"},
        "AIWorkloadConfigIdentifier": "peagle-check",
        "RoleArn": ROLE,
        "CreationTime": "2026-12-06T12:00:00Z",
        **extra,
    }


@pytest.fixture
def aws(monkeypatch):
    """Stubbed SageMaker and S3 clients in place of the ones peagle.aws would make."""
    clients = {name: stubbed(name) for name in ("sagemaker", "s3")}
    monkeypatch.setattr(peagle.aws, "aws_client", lambda session, service, **_: clients[service][0])
    return {name: stubber for name, (_client, stubber) in clients.items()}


def tar_gz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def queue_exports(s3: Stubber) -> None:
    """c4 and c16 as plain files, c8 inside an output.tar.gz (as AWS Labs' script finds the job's results), beside
    files the reader must leave alone."""
    prefix = "results/peagle-check/"
    plain = {
        key: (EXPORTS / key).read_bytes() for key in ("c4/profile_export_aiperf.json", "c16/profile_export_aiperf.json")
    }
    archive = tar_gz(
        {
            "output/c8/profile_export_aiperf.json": (EXPORTS / "c8" / "profile_export_aiperf.json").read_bytes(),
            "output/c8/profile_export.jsonl": b"{}",
            "../escape/profile_export_aiperf.json": b"{}",
        }
    )
    bodies = {**plain, "bmk-job/output.tar.gz": archive}
    listing = [{"Key": prefix + key, "Size": 1} for key in [*bodies, "c4/profile_export.jsonl"]]
    s3.add_response("list_objects_v2", {"Contents": listing}, {"Bucket": "peagle-bench", "Prefix": prefix})
    for key, body in bodies.items():
        s3.add_response(
            "get_object",
            {"Body": StreamingBody(io.BytesIO(body), len(body))},
            {"Bucket": "peagle-bench", "Key": prefix + key},
        )


def test_a_completed_job_is_read_beside_the_local_run(tmp_path, aws):
    aws["sagemaker"].add_response(
        "describe_ai_benchmark_job", described("Completed"), {"AIBenchmarkJobName": "peagle-check"}
    )
    queue_exports(aws["s3"])
    argv = ["capacity", "--sagemaker-results", "peagle-check", "--region", "us-east-1", "--beside", str(LOCAL_RUN)]
    assert main([*argv, "--out", str(tmp_path)]) == ExitCode.OK
    report = json.loads((tmp_path / "sagemaker-benchmark-results.json").read_text())
    assert [level["concurrency"] for level in report["levels"]] == [4, 8, 16]
    assert [level["met_slo"] for level in report["levels"]] == [True, False, False]
    assert [level["judged_by"] for level in report["levels"]] == ["good requests", "good requests", "p95 of each bound"]
    assert report["capacity"]["concurrency"] == 4 and report["capacity"]["attainment"] == pytest.approx(23 / 24)
    rows = {row["figure"]: row for row in report["side_by_side"]}
    assert rows["requests/s meeting the SLO"] == {"figure": "requests/s meeting the SLO", "job": 0.8, "local": 1.0}
    assert rows["p90 TTFT"]["job"] == pytest.approx(0.78)
    assert (
        tmp_path / "sagemaker-results" / "bmk-job" / "output" / "output" / "c8" / "profile_export_aiperf.json"
    ).exists()
    assert not list(tmp_path.rglob("escape"))
    markdown = (tmp_path / "sagemaker-benchmark-results.md").read_text()
    assert "Status: job peagle-check Completed" in markdown and "| attainment | 95.8% | 97.7% |" in markdown
    for stubber in aws.values():
        stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("status", "extra", "says"),
    [
        ("InProgress", {}, "is still InProgress"),
        ("Failed", {"FailureReason": "endpoint not InService"}, "Failed: endpoint not InService"),
    ],
)
def test_an_unfinished_job_says_so(tmp_path, aws, capsys, status, extra, says):
    aws["sagemaker"].add_response(
        "describe_ai_benchmark_job", described(status, **extra), {"AIBenchmarkJobName": "peagle-check"}
    )
    argv = ["capacity", "--sagemaker-results", "peagle-check", "--region", "us-east-1", "--out", str(tmp_path)]
    assert main(argv) == ExitCode.FAILED
    assert says in capsys.readouterr().err
    assert not (tmp_path / "sagemaker-benchmark-results.json").exists()


def test_a_downloaded_folder_is_read_without_aws(tmp_path):
    shutil.copytree(EXPORTS, tmp_path / "downloaded")
    argv = ["capacity", "--sagemaker-results", "peagle-check", "--results-folder", str(tmp_path / "downloaded")]
    assert main([*argv, "--instances", "2", "--out", str(tmp_path / "out")]) == ExitCode.OK
    report = json.loads((tmp_path / "out" / "sagemaker-benchmark-results.json").read_text())
    assert report["status"].endswith("(the job's status not checked)")
    assert report["side_by_side"][0]["job"] == pytest.approx(0.4)  # 0.8 requests/s over 2 instances


def test_latencies_are_read_in_seconds_from_their_unit():
    level = load_levels(EXPORTS)[0]
    assert level.concurrency == 4
    assert level.percentile("ttft", "p95") == pytest.approx(0.96)
    assert level.percentile("tpot", "p90") == pytest.approx(0.052)


def test_aws_refusing_the_read_exits_3(tmp_path, aws, capsys):
    aws["sagemaker"].add_client_error("describe_ai_benchmark_job", "AccessDeniedException", "not allowed", 400)
    argv = ["capacity", "--sagemaker-results", "peagle-check", "--region", "us-east-1", "--out", str(tmp_path)]
    assert main(argv) == ExitCode.AWS
    assert "sagemaker:DescribeAIBenchmarkJob" in capsys.readouterr().err


def test_a_job_option_without_its_mode_is_refused(tmp_path, capsys):
    argv = ["capacity", "--url", "http://127.0.0.1:9", "--submit", "--beside", str(LOCAL_RUN), "--out", str(tmp_path)]
    assert main(argv) == ExitCode.BAD_INPUT
    error = capsys.readouterr().err
    assert "--submit goes with --sagemaker-benchmark" in error and "--beside goes with --sagemaker-results" in error


def test_a_prompts_file_gives_the_job_its_token_distribution(tmp_path, capsys):
    """The same prompts as a capacity run: the job cannot take their texts, so it takes their length in tokens from
    the summary `peagle prompts --tokenizer` wrote beside them (the summary's writer, not a copy of its format)."""
    from peagle.prompts_capture.cli import summary_path
    from peagle.prompts_capture.convert import _spread

    prompts = tmp_path / "captured.jsonl"
    prompts.write_text('{"prompt": "hello"}\n')
    counts = [300, 500, 700, 500]
    summary_path(prompts).write_text(json.dumps({"input_tokens": _spread(counts)}))
    argv = [arg for arg in WRITE if arg not in ("--input-tokens", "550:150")]
    assert main([*argv, "--prompts-file", str(prompts), "--out", str(tmp_path / "out")]) == ExitCode.OK
    spec = json.loads(written(tmp_path / "out")[0]["AIWorkloadConfigs"]["WorkloadSpec"]["Inline"])
    assert (spec["parameters"]["prompt_input_tokens_mean"], spec["parameters"]["prompt_input_tokens_stddev"]) == (
        500,
        141,
    )
    assert f"length distribution (the mean and stdev of its summary, {prompts})" in capsys.readouterr().err

    summary_path(prompts).write_text(json.dumps({"input_tokens": None}))  # captured without a tokenizer
    assert main([*argv, "--prompts-file", str(prompts), "--out", str(tmp_path / "none")]) == ExitCode.BAD_INPUT
    assert f"{prompts} has no such summary with input tokens" in capsys.readouterr().err
