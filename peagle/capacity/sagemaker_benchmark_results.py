"""A finished SageMaker AI benchmark job read into capacity's terms, beside a local `peagle capacity` run.

The job's status comes from DescribeAIBenchmarkJob (AIBenchmarkJobStatus: InProgress, Completed, Failed, Stopping,
Stopped; FailureReason; OutputConfig.S3OutputLocation: "The Amazon S3 URI where benchmark results are stored",
botocore's SageMaker service model). Which files the job writes under that prefix is not documented in what AWS
publishes; the job "runs benchmarks using NVIDIA AIPerf", and AIPerf writes one run's aggregate statistics to
profile_export_aiperf.json ("Aggregated statistics and user configuration as a single JSON object", aiperf
docs/tutorials/working-with-profile-exports.md; OutputDefaults.PROFILE_EXPORT_AIPERF_JSON_FILE in
aiperf/common/config/config_defaults.py). So every profile_export_aiperf.json under the prefix (or under a folder the
user downloaded) is read as one level: each metric is {unit, avg, p50, p90, ...} (JsonMetricResult in
aiperf/common/models/export_models.py) and input_config holds the run's settings (loadgen.concurrency,
input.goodput).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tarfile
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from peagle.capacity.sagemaker_benchmark import AIPERF_GOODPUT_TAGS, BenchmarkRequestError
from peagle.slo import SLO_BOUND_FIELDS

AIPERF_EXPORT = "profile_export_aiperf.json"
REPORT_MD = "sagemaker-benchmark-results.md"
REPORT_JSON = "sagemaker-benchmark-results.json"
DOWNLOADED = "sagemaker-results"
READ_PERMISSION = "sagemaker:DescribeAIBenchmarkJob, and s3:ListBucket and s3:GetObject on the job's output prefix"
# AIPerf exports each metric in its display unit (aiperf/exporters/json_exporter.py,
# convert_all_metrics_to_display_units): latencies in ms ("ms", MetricTimeUnit.MILLISECONDS).
_SECONDS_PER_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "sec": 1.0, "s": 1.0}
# The percentiles AIPerf exports per metric (JsonMetricResult: p1 ... p99) and the metrics of the SLO's bounds.
PERCENTILES = ("p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99")
LATENCY_METRICS = {"ttft": "time_to_first_token", "tpot": "inter_token_latency", "e2el": "request_latency"}


class ResultsError(ValueError):
    """Results that cannot be read as AIPerf's export (exit 2)."""


@dataclass(frozen=True)
class JobLevel:
    """One AIPerf run of the job, in peagle capacity's units (seconds, requests/s)."""

    source: str
    concurrency: int | None
    requests: float | None
    good_requests: float | None
    request_throughput: float | None
    goodput: float | None
    output_tokens_per_s: float | None
    # "ttft", "tpot", "e2el" -> {"p50": seconds, ...}: every percentile AIPerf exported for the metric.
    percentiles: dict[str, dict[str, float]]
    goodput_constraints: dict[str, float] | None

    def percentile(self, bound: str, name: str) -> float | None:
        return self.percentiles.get(bound, {}).get(name)

    @property
    def ttft_p90(self) -> float | None:
        return self.percentile("ttft", "p90")

    @property
    def tpot_p90(self) -> float | None:
        return self.percentile("tpot", "p90")

    @property
    def attainment(self) -> float | None:
        """Good requests over requests: AIPerf's goodput counts a request good when it meets every constraint."""
        if self.good_requests is None or not self.requests:
            return None
        return self.good_requests / self.requests


def write_job_requests(args: argparse.Namespace, slo, max_tokens: int) -> int:
    """--sagemaker-benchmark: write both requests (and with --submit, send them)."""
    from peagle.capacity.sagemaker_benchmark import requests_from_args, submit, write_requests
    from peagle.cli_errors import ExitCode

    requests = requests_from_args(args, slo, max_tokens)
    paths = write_requests(requests, args.out)
    for line in requests.not_mapped:
        print(f"capacity: not in the job: {line}", file=sys.stderr)
    print("written: " + ", ".join(str(path) for path in paths))
    if args.submit:
        arn = submit(requests, region=args.region)
        print(f"capacity: benchmark job started: {arn}; read it with --sagemaker-results {requests.job_name}")
    return ExitCode.OK


def read_job_results(args: argparse.Namespace, slo, slo_source: str) -> int:
    """--sagemaker-results: the job's status, and when it completed its levels in sagemaker-benchmark-results.*."""
    from peagle.cli_errors import ExitCode

    if args.results_folder is not None:
        folder, status = args.results_folder, f"read from {args.results_folder} (the job's status not checked)"
    else:
        folder, status = _fetch(args)
    if folder is None:
        print(f"capacity: {status}", file=sys.stderr)
        return ExitCode.FAILED
    levels = load_levels(folder)
    beside = _load_beside(args.beside)
    paths = write_results(levels, slo, slo_source, status, args, beside)
    print("written: " + ", ".join(str(path) for path in paths))
    return ExitCode.OK


def _fetch(args: argparse.Namespace) -> tuple[Path | None, str]:
    """(the folder the job's exports were downloaded to, the status in words); None while not Completed."""
    from peagle.aws import aws_client, aws_session

    session = aws_session(args.region)
    described = describe_job(aws_client(session, "sagemaker"), args.sagemaker_results)
    status = job_status_text(described)
    if described["AIBenchmarkJobStatus"] != "Completed":
        return None, status
    folder = args.out / DOWNLOADED
    download_exports(aws_client(session, "s3"), described["OutputConfig"]["S3OutputLocation"], folder)
    return folder, status


def describe_job(client, name: str) -> dict[str, Any]:
    from peagle.aws import aws_call

    with aws_call(f"describing the benchmark job {name} (DescribeAIBenchmarkJob)", permission=READ_PERMISSION):
        return client.describe_ai_benchmark_job(AIBenchmarkJobName=name)


def job_status_text(described: dict[str, Any]) -> str:
    name, status = described["AIBenchmarkJobName"], described["AIBenchmarkJobStatus"]
    if status == "Completed":
        return f"job {name} Completed"
    if status == "Failed":
        return f"job {name} Failed: {described.get('FailureReason') or 'no FailureReason given'}; nothing to read"
    if status in ("InProgress", "Stopping"):
        return f"job {name} is still {status}: read it again when DescribeAIBenchmarkJob says Completed"
    return f"job {name} is {status}: it was stopped before it finished; nothing to read"


def download_exports(s3, output_uri: str, folder: Path) -> list[Path]:
    """Every profile_export_aiperf.json under the job's output prefix, to ``folder`` at its relative path, the ones
    inside a .tar.gz included (extracted under the archive's name). AWS Labs' own benchmark script finds the job's
    results "into a subdirectory (e.g., bmk-prod-<job>-<hash>/)" of S3OutputLocation and "packages results as
    output.tar.gz" (awslabs/ml-container-creator, templates/do/benchmark): a sample's observation, not AWS's
    documentation, hence both are looked for anywhere under the prefix."""
    from peagle.aws import S3Location, aws_call

    prefix = S3Location.parse(output_uri, what="the job's S3OutputLocation").as_prefix()
    written = []
    with aws_call(f"reading the job's results under {prefix.uri}", permission=READ_PERMISSION):
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=prefix.bucket, Prefix=prefix.key):
            for item in page.get("Contents", []):
                relative = item["Key"][len(prefix.key) :]
                if PurePosixPath(relative).name != AIPERF_EXPORT and not relative.endswith(".tar.gz"):
                    continue
                body = s3.get_object(Bucket=prefix.bucket, Key=item["Key"])["Body"].read()
                if relative.endswith(".tar.gz"):
                    written += extract_exports(body, folder / relative.removesuffix(".tar.gz"))
                    continue
                target = folder.joinpath(*PurePosixPath(relative).parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(body)
                written.append(target)
    return written


def extract_exports(archive: bytes, folder: Path) -> list[Path]:
    """Only the AIPerf exports of a .tar.gz, each at its path inside the archive (none absolute or with '..')."""
    written = []
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for member in tar.getmembers():
            parts = PurePosixPath(member.name).parts
            if not member.isfile() or not parts or parts[-1] != AIPERF_EXPORT or member.name.startswith("/"):
                continue
            if ".." in parts:
                continue
            extracted = tar.extractfile(member)
            if extracted is None:
                continue
            target = folder.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(extracted.read())
            written.append(target)
    return written


def load_levels(folder: Path) -> list[JobLevel]:
    """Every AIPerf export under ``folder``, by concurrency; ResultsError when there is none."""
    paths = sorted(Path(folder).rglob(AIPERF_EXPORT))
    if not paths:
        raise ResultsError(
            f"no {AIPERF_EXPORT} under {folder}: give the folder the job's S3 output was downloaded to "
            "(aws s3 cp --recursive S3OutputLocation DIR), or read the job with --sagemaker-results JOB --region R"
        )
    levels = [parse_export(path, relative_to=Path(folder)) for path in paths]
    return sorted(levels, key=lambda level: (level.concurrency is None, level.concurrency or 0, level.source))


def parse_export(path: Path, *, relative_to: Path) -> JobLevel:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ResultsError(f"{path}: not AIPerf's {AIPERF_EXPORT} ({error})") from None
    if not isinstance(document, dict):
        raise ResultsError(f"{path}: not AIPerf's {AIPERF_EXPORT} (a JSON object was expected)")
    config = document.get("input_config") or {}

    def stat(metric: str, name: str, *, seconds: bool = False) -> float | None:
        """One statistic of one metric, latencies in seconds."""
        entry = document.get(metric)
        if not isinstance(entry, dict) or entry.get(name) is None:
            return None
        if not seconds:
            return float(entry[name])
        unit = entry.get("unit")
        if unit not in _SECONDS_PER_UNIT:
            raise ResultsError(f"{path}: {metric} is in {unit!r}; expected one of {', '.join(_SECONDS_PER_UNIT)}")
        return float(entry[name]) * _SECONDS_PER_UNIT[unit]

    return JobLevel(
        source=str(path.relative_to(relative_to)),
        concurrency=(config.get("loadgen") or {}).get("concurrency"),
        requests=stat("request_count", "avg"),
        good_requests=stat("good_request_count", "avg"),
        request_throughput=stat("request_throughput", "avg"),
        goodput=stat("goodput", "avg"),
        output_tokens_per_s=stat("output_token_throughput", "avg"),
        percentiles={
            bound: {name: value for name in PERCENTILES if (value := stat(metric, name, seconds=True)) is not None}
            for bound, metric in LATENCY_METRICS.items()
        },
        goodput_constraints=(config.get("input") or {}).get("goodput"),
    )


def constraints_match(level: JobLevel, slo) -> bool:
    """Whether the level's AIPerf goodput constraints are this SLO's bounds (ms), so its good requests are ours."""
    wanted = {tag: getattr(slo, bound) * 1000 for bound, tag in AIPERF_GOODPUT_TAGS.items() if getattr(slo, bound)}
    given = level.goodput_constraints or {}
    return set(given) == set(wanted) and all(abs(float(given[tag]) - wanted[tag]) < 1e-6 for tag in wanted)


def judgement(level: JobLevel, slo) -> tuple[bool | None, str]:
    """(whether the level met the SLO, how it was judged). By AIPerf's good requests where the job ran with this
    SLO's goodput constraints; otherwise by each bound at the percentile of the attainment target (p95 for 95%, the
    next exported one above it otherwise), which every request meeting the SLO implies but which does not count the
    requests missing different bounds as one: the report says which."""
    if constraints_match(level, slo) and level.attainment is not None:
        return level.attainment >= slo.attainment, "good requests"
    wanted = next((name for name in PERCENTILES if int(name[1:]) >= slo.attainment * 100 - 1e-9), None)
    if wanted is None:
        return None, "not judged: no exported percentile reaches the attainment target"
    met = []
    for bound, field_name in SLO_BOUND_FIELDS.items():
        limit = getattr(slo, field_name)
        if limit is None:
            continue
        value = level.percentile(bound, wanted)
        if value is None:
            return None, f"not judged: no {wanted} {bound} in the export"
        met.append(value <= limit)
    return all(met), f"{wanted} of each bound"


def best_level(levels: list[JobLevel], slo) -> JobLevel | None:
    """The level with the highest throughput that met the SLO (``judgement``)."""
    meeting = [level for level in levels if judgement(level, slo)[0]]
    return max(meeting, key=lambda level: level.request_throughput or 0.0, default=None)


def _load_beside(path: Path | None) -> dict | None:
    if path is None:
        return None
    from peagle.capacity.compare import CompareError, load_run

    try:
        return load_run(path)
    except CompareError as error:
        raise BenchmarkRequestError(str(error).replace("--compare", "--beside")) from None


def write_results(levels, slo, slo_source: str, status: str, args: argparse.Namespace, beside: dict | None):
    from peagle.capacity.sagemaker_benchmark_report import markdown, side_by_side

    args.out.mkdir(parents=True, exist_ok=True)
    found = best_level(levels, slo)
    rows = side_by_side(found, beside, args.instances)
    verdicts = [judgement(level, slo) for level in levels]
    payload = {
        "status": status,
        "slo_source": slo_source,
        "instances": args.instances,
        "capacity": None if found is None else _level_json(found, slo),
        "levels": [_level_json(level, slo) for level in levels],
        "side_by_side": rows,
        "cost": "not reported: DescribeAIBenchmarkJob has no cost field and AIPerf's export none",
    }
    paths = [args.out / REPORT_JSON, args.out / REPORT_MD]
    paths[0].write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(
        markdown(levels, verdicts, found, slo, slo_source, status, args.instances, rows), encoding="utf-8"
    )
    return paths


def _level_json(level: JobLevel, slo) -> dict:
    met, how = judgement(level, slo)
    return asdict(level) | {"attainment": level.attainment, "met_slo": met, "judged_by": how}
