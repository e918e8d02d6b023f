"""`peagle capacity --sagemaker-benchmark`: a SageMaker AI benchmark job from a capacity run's settings.

SageMaker AI's benchmark jobs run NVIDIA AIPerf against a deployed endpoint in the user's account: "The SageMaker
AI benchmarking service measures the performance of large language models (LLMs) hosted on SageMaker AI endpoints.
It runs benchmarks using NVIDIA AIPerf" (Amazon SageMaker AI Developer Guide, "Benchmark generative AI inference
endpoints", https://docs.aws.amazon.com/sagemaker/latest/dg/generative-ai-inference-recommendations-benchmark.html).
A job takes two requests: CreateAIWorkloadConfig (the workload) and CreateAIBenchmarkJob (the endpoint, the
output S3 prefix, the job's role). This module writes both from the same settings a capacity run reads (the SLO,
max_tokens, the endpoint and component), validates them against botocore's service model before writing, names
every setting the job cannot take, and with --submit sends them. Reading a finished job is
peagle/capacity/sagemaker_benchmark_results.py.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from peagle.cli_options import group, option

WORKLOAD_FILE = "sagemaker-workload-config.json"
JOB_FILE = "sagemaker-benchmark-job.json"
NOTES_FILE = "sagemaker-benchmark.md"

# The inline workload names its tool: "it must declare a benchmark object whose type member matches the pattern
# ^(aiperf)$" (AWS CDK API reference, CfnAIWorkloadConfig.WorkloadSpecProperty, `inline`).
BENCHMARK_TYPE = "aiperf"
# The SLA thresholds of a find-max-concurrency search: "ttft_sla_ms | Maximum time to first token, in
# milliseconds", "tpot_sla_ms | Maximum time per output token (inter-token latency), in milliseconds", "e2e_sla_ms |
# Maximum end-to-end request latency, in milliseconds"; "The winning concurrency must satisfy *all* of the
# thresholds that you set" (Developer Guide, "Find the maximum concurrency an endpoint can serve under an SLA",
# https://docs.aws.amazon.com/sagemaker/latest/dg/generative-ai-inference-recommendations-concurrency-search.html).
SLA_PARAMETERS = {"ttft_seconds": "ttft_sla_ms", "tpot_seconds": "tpot_sla_ms", "e2e_seconds": "e2e_sla_ms"}
# AIPerf's own goodput: "--goodput ... 'KEY:VALUE' pairs, where KEY is a metric tag and VALUE is a number in the
# metric's display unit" (aiperf/common/config/input_config.py, `goodput`); the tags of TTFT, the inter-token
# latency "(Request Latency - Time to First Token) / (Output Sequence Length - 1)" (vllm bench serve's TPOT) and
# the request latency (aiperf/metrics/types/*_metric.py, github.com/ai-dynamo/aiperf), all displayed in ms.
AIPERF_GOODPUT_TAGS = {
    "ttft_seconds": "time_to_first_token",
    "tpot_seconds": "inter_token_latency",
    "e2e_seconds": "request_latency",
}
# What the caller needs for --submit, as the error message names it: the two Create calls and passing the job's
# role, which must be "An IAM execution role that grants SageMaker AI access to your endpoint and output bucket"
# (the benchmark page's prerequisites). The action names follow the operations; the rows of the Service
# Authorization Reference ("Actions, resources, and condition keys for Amazon SageMaker", https://docs.aws.amazon.com/
# service-authorization/latest/reference/list_sagemaker.html) for these operations were not checked here.
SUBMIT_PERMISSION = "sagemaker:CreateAIWorkloadConfig, sagemaker:CreateAIBenchmarkJob and iam:PassRole on --role-arn"

OPTIONS = group(
    "SageMaker AI benchmark job (docs/capacity.md, 'Checked by SageMaker')",
    option(
        "--sagemaker-benchmark",
        action="store_true",
        help="with --endpoint: serve nothing; write the CreateAIWorkloadConfig and CreateAIBenchmarkJob requests "
        "for a SageMaker AI benchmark job (NVIDIA AIPerf, run by SageMaker) from this run's SLO and max_tokens, "
        "validated against botocore's service model, and name the settings the job cannot take",
    ),
    option("--role-arn", metavar="ARN", help="with --sagemaker-benchmark: the IAM role the job runs as"),
    option("--s3-output", metavar="S3URI", help="with --sagemaker-benchmark: the S3 prefix the job writes results to"),
    option(
        "--input-tokens",
        metavar="MEAN[:STDDEV]",
        help="with --sagemaker-benchmark: the prompt length in the endpoint's tokens (the job's inline workload is "
        "a token distribution; peagle's prompts are text, and their tokens depend on the tokenizer); default with "
        "--prompts-file: the input-token mean and stdev `peagle prompts --tokenizer` wrote beside it",
    ),
    option(
        "--job-concurrency",
        type=int,
        metavar="N",
        help="with --sagemaker-benchmark: hold N requests in flight (one level, e.g. the concurrency a local "
        "capacity run carried at its knee); without it the job searches concurrency under the SLO's thresholds",
    ),
    option(
        "--tokenizer",
        metavar="HF_ID",
        help="with --sagemaker-benchmark: the Hugging Face id of the served model's tokenizer, for the job's token counts",
    ),
    option("--job-name", metavar="NAME", help="with --sagemaker-benchmark: the job's and workload's name"),
    option("--submit", action="store_true", help="with --sagemaker-benchmark: create the workload and start the job"),
    option(
        "--sagemaker-results",
        metavar="JOB",
        help="serve nothing: read the benchmark job JOB (DescribeAIBenchmarkJob, then its AIPerf results from its "
        "S3 output, or from --results-folder) into sagemaker-benchmark.md/.json in --out",
    ),
    option("--results-folder", type=Path, metavar="DIR", help="with --sagemaker-results: the job's output, downloaded"),
    option(
        "--beside",
        type=Path,
        metavar="DIR",
        help="with --sagemaker-results: a local `peagle capacity --out` folder (or its capacity.json) to set beside",
    ),
)


class BenchmarkRequestError(ValueError):
    """A benchmark request that cannot be written or sent as given (exit 2)."""


@dataclass(frozen=True)
class BenchmarkRequests:
    workload: dict[str, Any]
    job: dict[str, Any]
    aiperf_goodput: str
    not_mapped: list[str] = field(default_factory=list)

    @property
    def job_name(self) -> str:
        return self.job["AIBenchmarkJobName"]


def requests_from_args(args: argparse.Namespace, slo, max_tokens: int) -> BenchmarkRequests:
    """Both requests from the capacity options (the SLO and max_tokens as a capacity run resolves them), or
    BenchmarkRequestError naming every problem at once."""
    problems = _argument_problems(args)
    if problems:
        raise BenchmarkRequestError("; ".join(problems))
    input_tokens = parse_input_tokens(args.input_tokens) if args.input_tokens else _prompt_file_tokens(args)
    assert input_tokens is not None  # _argument_problems names its absence
    requests = build_requests(
        name=args.job_name or default_job_name(args.endpoint),
        endpoint=args.endpoint,
        inference_component=args.inference_component,
        role_arn=args.role_arn,
        s3_output=args.s3_output,
        slo=slo,
        input_tokens=input_tokens,
        output_tokens=max_tokens,
        not_mapped=not_mapped(args, slo),
        extra_parameters={
            key: value
            for key, value in (("concurrency", args.job_concurrency), ("tokenizer", args.tokenizer))
            if value is not None
        },
    )
    check_against_model(requests)
    return requests


def stray_options(args: argparse.Namespace) -> list[str]:
    """This group's options given without the mode they belong to: named, not ignored."""
    modes = {
        "--sagemaker-benchmark": (
            args.sagemaker_benchmark,
            ("role_arn", "s3_output", "input_tokens", "job_name", "submit"),
        ),
        "--sagemaker-results": (args.sagemaker_results, ("results_folder", "beside")),
    }
    return [
        f"--{name.replace('_', '-')} goes with {mode}"
        for mode, (given, names) in modes.items()
        if not given
        for name in names
        if getattr(args, name)
    ]


def _argument_problems(args: argparse.Namespace) -> list[str]:
    problems = []
    if not args.endpoint:
        problems.append("--sagemaker-benchmark benchmarks a deployed endpoint: give --endpoint NAME")
    for flag, value in (("--role-arn", args.role_arn), ("--s3-output", args.s3_output)):
        if not value:
            problems.append(f"--sagemaker-benchmark needs {flag} (CreateAIBenchmarkJob requires it)")
    if not args.input_tokens and _prompt_file_tokens(args) is None:
        problems.append(
            "--sagemaker-benchmark needs --input-tokens MEAN[:STDDEV], your prompts' length in the endpoint's "
            "tokens, or a --prompts-file that `peagle prompts --tokenizer MODEL_DIR` wrote (its "
            "<stem>.summary.json holds the input tokens' mean and stdev)"
            + (f"; {args.prompts_file} has no such summary with input tokens" if args.prompts_file else "")
        )
    if args.job_concurrency is not None and args.job_concurrency < 1:
        problems.append(f"--job-concurrency {args.job_concurrency}: at least 1 request in flight")
    for flag, value in (("--pair", args.pair), ("--url", args.url), ("--compare", args.compare)):
        if value:
            problems.append(f"{flag} does not go with --sagemaker-benchmark, which benchmarks an --endpoint")
    return problems


def _prompt_file_tokens(args: argparse.Namespace) -> tuple[int, int] | None:
    """The prompts file's input-token mean and stdev from the summary `peagle prompts` writes beside it (counted with
    the tokenizer it was given); None without a prompts file, a summary, token counts or a stdev (older summaries)."""
    if not args.prompts_file:
        return None
    from peagle.prompts_capture.cli import summary_path

    path = summary_path(Path(args.prompts_file))
    try:
        spread = json.loads(path.read_text()).get("input_tokens") or {}
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(spread, dict) or not {"mean", "stdev"} <= spread.keys():
        return None
    return max(1, round(spread["mean"])), round(spread["stdev"])


def parse_input_tokens(text: str) -> tuple[int, int]:
    mean_text, _, stddev_text = text.partition(":")
    try:
        mean, stddev = int(mean_text), int(stddev_text or 0)
    except ValueError:
        raise BenchmarkRequestError(
            f"--input-tokens {text}: a whole number of tokens, optionally ':' and a standard deviation, e.g. 550:150"
        ) from None
    if mean < 1 or stddev < 0:
        raise BenchmarkRequestError(f"--input-tokens {text}: a mean of at least 1 token and a stddev of 0 or more")
    return mean, stddev


def default_job_name(endpoint: str | None) -> str:
    """peagle-<endpoint>-<UTC time>, cut to the 63 characters and the characters AIEntityName allows."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    base = re.sub(r"[^a-zA-Z0-9-]+", "-", f"peagle-{endpoint or 'endpoint'}").strip("-")
    return re.sub(r"-+", "-", f"{base[: 63 - len(stamp) - 1]}-{stamp}")


def build_requests(
    *,
    name: str,
    endpoint: str,
    inference_component: str | None,
    role_arn: str,
    s3_output: str,
    slo,
    input_tokens: tuple[int, int],
    output_tokens: int,
    not_mapped: list[str],
    extra_parameters: dict[str, Any] | None = None,
) -> BenchmarkRequests:
    """CreateAIWorkloadConfig's and CreateAIBenchmarkJob's parameters, as boto3 takes them."""
    # The inline parameters AWS documents for a token distribution ("Set up a workload configuration for
    # generative AI inference recommendations", https://docs.aws.amazon.com/sagemaker/latest/dg/
    # generative-ai-inference-recommendations-workload-config.html): prompt_input_tokens_mean/_stddev,
    # output_tokens_mean/_stddev. Output is max_tokens exactly: capacity runs to max_tokens (ignore_eos).
    parameters: dict[str, Any] = {
        "prompt_input_tokens_mean": input_tokens[0],
        "prompt_input_tokens_stddev": input_tokens[1],
        "output_tokens_mean": output_tokens,
        "output_tokens_stddev": 0,
        # TTFT and TPOT thresholds are "Requires streaming: Yes" (the concurrency-search page); the parameter's
        # name, and those of "concurrency" (one level) and "tokenizer" (a Hugging Face id) in
        # ``extra_parameters``, are not in AWS's pages: they are the AWS Labs sample's (awslabs/ml-container-
        # creator, templates/do/benchmark, its PARAMS_JSON), so AWS may name them otherwise.
        "streaming": True,
        **(extra_parameters or {}),
    }
    for bound, key in SLA_PARAMETERS.items():
        seconds = getattr(slo, bound)
        if seconds is not None:
            parameters[key] = round(seconds * 1000, 3)
    spec = {"benchmark": {"type": BENCHMARK_TYPE}, "parameters": parameters}
    workload = {"AIWorkloadConfigName": name, "AIWorkloadConfigs": {"WorkloadSpec": {"Inline": json.dumps(spec)}}}
    target: dict[str, Any] = {"Identifier": endpoint}
    if inference_component:
        target["InferenceComponents"] = [{"Identifier": inference_component}]
    job = {
        "AIBenchmarkJobName": name,
        "BenchmarkTarget": {"Endpoint": target},
        "OutputConfig": {"S3OutputLocation": s3_output},
        "AIWorkloadConfigIdentifier": name,
        "RoleArn": role_arn,
    }
    return BenchmarkRequests(workload=workload, job=job, aiperf_goodput=aiperf_goodput(slo), not_mapped=not_mapped)


def aiperf_goodput(slo) -> str:
    """The SLO bounds as AIPerf's --goodput argument (milliseconds, its display unit for the three)."""
    return " ".join(
        f"{tag}:{getattr(slo, bound) * 1000:g}"
        for bound, tag in AIPERF_GOODPUT_TAGS.items()
        if getattr(slo, bound) is not None
    )


def _prompts_line(args: argparse.Namespace) -> str:
    """What the job takes of the prompts: their token distribution only (the inline workload has no text)."""
    if not args.prompts_file:
        return (
            "prompts: the job's inline workload is a token distribution (--input-tokens), not peagle's prompts "
            f"(synthetic, buckets {args.buckets or 'short'})"
        )
    source = "--input-tokens" if args.input_tokens else f"the mean and stdev of its summary, {args.prompts_file}"
    return (
        f"prompts: the job sends synthetic prompts of {args.prompts_file}'s length distribution ({source}), not its "
        "texts: the inline workload is a token distribution, and the S3 dataset format is not documented"
    )


def not_mapped(args: argparse.Namespace, slo) -> list[str]:
    """The capacity settings the job does not take, each with what the job does instead."""
    lines = [
        f"the attainment target ({slo.attainment:.0%} of requests meeting every bound): the job judges each bound on "
        "one statistic of the level (search_stat, avg by default), not on the share of requests; reading the "
        "results judges each level by AIPerf's good requests where the job exports them for this SLO, else by each "
        "bound at the target's percentile",
        "request rates (--start-rate, --growth, --sweep, --max-rate, --burstiness, --repeats): the job varies "
        "concurrency (simultaneous requests, --job-concurrency for one level), not an arrival rate; the results "
        "report gives the requests/s each level completed",
        _prompts_line(args),
        "sampling (temperature, top_p, ignore_eos) and --seed: no inline parameter for them is documented",
    ]
    if args.target_variant:
        lines.append(
            f"--target-variant {args.target_variant}: BenchmarkTarget has no variant, the job sends to the endpoint"
        )
    if args.instances != 1:
        lines.append(f"--instances {args.instances}: the results report divides by --instances when reading")
    return lines


def check_against_model(requests: BenchmarkRequests) -> None:
    """Both requests against botocore's SageMaker service model: its ParamValidator (required members, types,
    minimum lengths) and then each string's pattern and maximum length, which ParamValidator leaves to the
    service. BenchmarkRequestError lists what fails."""
    problems = model_problems("CreateAIWorkloadConfig", requests.workload) + model_problems(
        "CreateAIBenchmarkJob", requests.job
    )
    if problems:
        raise BenchmarkRequestError("the request does not fit SageMaker's API: " + "; ".join(problems))


def model_problems(operation: str, params: dict[str, Any]) -> list[str]:
    from botocore.exceptions import ParamValidationError
    from botocore.validate import validate_parameters

    shape = sagemaker_model().operation_model(operation).input_shape
    try:
        validate_parameters(params, shape)
    except ParamValidationError as error:
        return [f"{operation}: {error}"]
    return [f"{operation}: {problem}" for problem in _string_problems(params, shape, operation)]


def sagemaker_model():
    import botocore.session

    return botocore.session.get_session().get_service_model("sagemaker")


def _string_problems(value: Any, shape, path: str) -> list[str]:
    """Each string's ``pattern`` and ``max`` from the model (botocore's validator checks ``min`` only)."""
    if shape.type_name == "structure" and isinstance(value, dict):
        return [
            problem
            for name, member in value.items()
            if name in shape.members
            for problem in _string_problems(member, shape.members[name], f"{path}.{name}")
        ]
    if shape.type_name == "list" and isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _string_problems(item, shape.member, f"{path}[{i}]")]
    if shape.type_name != "string" or not isinstance(value, str):
        return []
    problems = []
    pattern, longest = shape.metadata.get("pattern"), shape.metadata.get("max")
    if longest is not None and len(value) > longest:
        problems.append(f"{path} is {len(value)} characters, at most {longest}")
    if pattern is not None and not _full_match(pattern, value):
        problems.append(f"{path} {value!r} does not match the API's pattern {pattern}")
    return problems


def _full_match(pattern: str, value: str) -> bool:
    # The model's patterns are Java-style; \p{L}-classes (tag keys) are not in Python's re: not checked there.
    try:
        return re.fullmatch(pattern, value) is not None
    except re.error:
        return True


def write_requests(requests: BenchmarkRequests, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / WORKLOAD_FILE, out / JOB_FILE, out / NOTES_FILE]
    paths[0].write_text(json.dumps(requests.workload, indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(json.dumps(requests.job, indent=2) + "\n", encoding="utf-8")
    paths[2].write_text(_notes(requests), encoding="utf-8")
    return paths


def _notes(requests: BenchmarkRequests) -> str:
    spec = json.loads(requests.workload["AIWorkloadConfigs"]["WorkloadSpec"]["Inline"])
    return "\n".join(
        [
            f"# SageMaker AI benchmark job {requests.job_name}",
            "",
            f"Endpoint `{requests.job['BenchmarkTarget']['Endpoint']['Identifier']}`, results to "
            f"`{requests.job['OutputConfig']['S3OutputLocation']}`, run as `{requests.job['RoleArn']}`.",
            "",
            "Workload (AIPerf, run by SageMaker): `" + json.dumps(spec["parameters"]) + "`",
            "",
            f'The same SLO in AIPerf\'s own goodput terms: `--goodput "{requests.aiperf_goodput}"`.',
            "",
            "Both requests were checked against botocore's SageMaker service model before they were written.",
            "",
            "## Not in the job",
            "",
            *[f"- {line}" for line in requests.not_mapped],
            "",
            "## Send it",
            "",
            "`peagle capacity ... --sagemaker-benchmark --submit`, or with the AWS CLI:",
            "",
            f"    aws sagemaker create-ai-workload-config --cli-input-json file://{WORKLOAD_FILE}",
            f"    aws sagemaker create-ai-benchmark-job --cli-input-json file://{JOB_FILE}",
            "",
            f"Then `peagle capacity --sagemaker-results {requests.job_name} --region R --out DIR [--beside LOCAL]`.",
            "",
        ]
    )


def submit(requests: BenchmarkRequests, *, region: str | None) -> str:
    """CreateAIWorkloadConfig, then CreateAIBenchmarkJob: the job's ARN. AwsCallError names what to fix."""
    from peagle.aws import aws_client, aws_session

    client = aws_client(aws_session(region), "sagemaker")
    return submit_with(client, requests)


def submit_with(client, requests: BenchmarkRequests) -> str:
    from peagle.aws import aws_call

    with aws_call("creating the AI workload config (CreateAIWorkloadConfig)", permission=SUBMIT_PERMISSION):
        client.create_ai_workload_config(**requests.workload)
    with aws_call("starting the AI benchmark job (CreateAIBenchmarkJob)", permission=SUBMIT_PERMISSION):
        return client.create_ai_benchmark_job(**requests.job)["AIBenchmarkJobArn"]
