"""`peagle batch`: JSONL prompts through the endpoint's Model as a SageMaker Batch Transform
job, or through a local server with the same record protocol (--url).

Exit codes: 0 done; 1 the job failed or was stopped, or a record failed (--url); 2 bad
arguments, records, deployment or plan (nothing was started); 3 an AWS call failed
(credentials, permissions), as every command; 130 interrupted while following (the job
keeps running).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from peagle.batch.records import DEFAULT_MAX_PAYLOAD_MB, MAX_PAYLOAD_TIMES_CONCURRENCY_MB
from peagle.cli_errors import ExitCode
from peagle.cli_options import add_command, exclusive, group, option
from peagle_serve import contract

if TYPE_CHECKING:
    from peagle.batch.job_request import EnvironmentChoice, TransformJobSpec
    from peagle.planning.planner import Plan
    from peagle.settings import DeploymentConfig

DEFAULT_LOCAL_CONCURRENCY = 4


_OPTIONS = (
    option("--input", required=True, help="JSONL records: a local file, or s3://bucket/key (or a prefix) for a job"),
    option("--output", required=True, help="s3://bucket/prefix/ for a job; a local .jsonl file with --url/--endpoint"),
    exclusive(
        option("--url", help="run the records against this server instead, e.g. http://127.0.0.1:8080"),
        option(
            "--endpoint",
            help="run the records through this SageMaker real-time endpoint from here (InvokeEndpoint per record; "
            "--input/--output are local files)",
        ),
    ),
    group(
        "which Model and plan",
        option("--model-name", help="SageMaker Model to run (default: the ModelName output of --stack)"),
        option("--stack", help="endpoint stack whose ModelName output names the Model (default <name>-endpoint)"),
        option(
            "--deployment",
            help="deployment YAML the Model was deployed from (default deployments/default.yaml if present)",
        ),
        option("--model", help="model pair id to plan with (default: the deployment's)"),
    ),
    group(
        "the transform job",
        option("--instance-type", help="transform instance type (default: the deployment's instance.type)"),
        option("--instance-count", type=int, default=1, help="instances; records are spread over them (default 1)"),
        option(
            "--max-concurrent-transforms",
            type=int,
            help=f"requests in flight per instance (default: min(plan max_num_seqs, {MAX_PAYLOAD_TIMES_CONCURRENCY_MB} / "
            f"--max-payload-mb); with --url default {DEFAULT_LOCAL_CONCURRENCY})",
        ),
        option(
            "--max-payload-mb",
            type=int,
            default=DEFAULT_MAX_PAYLOAD_MB,
            help=f"largest record in MB (default {DEFAULT_MAX_PAYLOAD_MB}); x concurrency must be <= {MAX_PAYLOAD_TIMES_CONCURRENCY_MB}",
        ),
        option("--invocation-timeout-seconds", type=int, default=600, help="per record, 1-3600 (default 600)"),
        option("--invocation-max-retries", type=int, default=1, help="SageMaker's retries per record, 0-3 (default 1)"),
        option("--job-name", help="default <name>-<pair>-<UTC time>"),
        option(
            "--env",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="extra container variable (repeatable; 16 entries in all)",
        ),
        option("--upload-to", help="s3:// key or prefix/ to upload a local --input to first"),
        option("--output-kms-key-id", help="KMS key for the job's output objects"),
        option(
            "--wait", action=argparse.BooleanOptionalAction, default=True, help="follow the job to the end (default)"
        ),
        option(
            "--dry-run",
            action="store_true",
            help="check everything and print the CreateTransformJob request; call no AWS API",
        ),
        option("--region", help="AWS region (default: the AWS config's)"),
    ),
    option("--no-validate", dest="validate", action="store_false", help="send local records unchecked"),
    option(
        "--max-tokens",
        type=int,
        help="for local --input records without max_tokens (default: the batch profile's); records already "
        "in S3 must carry their own",
    ),
    option("--max-attempts", type=int, default=5, help="--url: client attempts per record (default 5)"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers,
        "batch",
        run_batch,
        _OPTIONS,
        help="run JSONL prompts through an endpoint (--endpoint), a local server (--url) or a Batch Transform job",
        description="Each line of --input is one JSON record ({'prompt': ...} or {'messages': [...]} plus sampling "
        "fields), POSTed as one /invocations request; each output line is its record plus 'SageMakerOutput' "
        "(the answer). With --endpoint: sends the records through that SageMaker real-time endpoint from here; "
        "with --url: to that server; both write --output locally, an 'error' record for each rejected line. "
        "Without either: a Batch Transform job on the endpoint stack's Model with the batch profile's settings, "
        "refused (before anything is uploaded) while no transform host runs the serving image's CUDA "
        "(peagle/catalog/runtime.yaml says which do). "
        "Exit 0 ok, 1 job/record failure, 2 bad input (nothing started), 3 an AWS call failed.",
    )


def run_batch(args: argparse.Namespace) -> int:
    from peagle.aws import AwsCallError
    from peagle.cli_errors import run_reporting_errors
    from peagle.settings.errors import PeagleError

    run = _run_local if (args.url or args.endpoint) else _run_job
    from peagle.batch.local_run import ServerUnreachableError

    return run_reporting_errors(
        run,
        args,
        [(AwsCallError, ExitCode.AWS), (ServerUnreachableError, ExitCode.FAILED), (PeagleError, ExitCode.BAD_INPUT)],
    )


def _run_local(args: argparse.Namespace) -> int:
    from peagle.batch.local_run import run_records
    from peagle.batch.records import read_records, with_default_max_tokens
    from peagle.client.retry import RetryPolicy
    from peagle.progress import progress_bar
    from peagle.settings.errors import PeagleError

    if args.output.startswith("s3://") or args.input.startswith("s3://"):
        raise PeagleError("with --url or --endpoint, --input and --output are local files (S3 is for transform jobs)")
    records = with_default_max_tokens(
        read_records(Path(args.input), validate=args.validate, max_payload_mb=args.max_payload_mb),
        _default_max_tokens(args),
    )
    concurrency = args.max_concurrent_transforms or DEFAULT_LOCAL_CONCURRENCY

    transport = None
    if args.endpoint:
        from peagle.client.sagemaker_transport import SageMakerTransport

        transport = SageMakerTransport(args.endpoint, region=args.region)
    target = f"endpoint {args.endpoint}" if args.endpoint else f"{args.url}/invocations"
    print(f"{len(records)} records -> {target}, {concurrency} in flight")
    with progress_bar(total=len(records), unit="rec", desc="records") as bar:
        summary = run_records(
            records,
            args.url,
            Path(args.output),
            concurrency=concurrency,
            retry_policy=RetryPolicy(max_attempts=args.max_attempts),
            on_outcome=_RecordProgress(bar),
            transport=transport,
        )
    print(
        f"{summary.records} records: {summary.succeeded} ok, {summary.failed} failed, in {summary.seconds:.1f} s "
        f"({summary.prompt_tokens} prompt + {summary.completion_tokens} output tokens, "
        f"{summary.output_tokens_per_second:.1f} output tokens/s); output {args.output}"
    )
    return ExitCode.OK if summary.failed == 0 else ExitCode.FAILED


class _RecordProgress:
    """Per answered record (in input order): a failed one gets its line on stderr, and the bar
    (on a terminal) shows done/total, records/s, ETA, failures and output tokens/s."""

    def __init__(self, bar, clock=time.monotonic) -> None:
        self._bar = bar
        self._clock = clock
        self._started = clock()
        self._failed = 0
        self._output_tokens = 0

    def __call__(self, outcome) -> None:
        from peagle.progress import write_line

        if not outcome.ok:
            self._failed += 1
            write_line(f"line {outcome.line_number}: {outcome.message}", file=sys.stderr)
        self._output_tokens += outcome.completion_tokens
        elapsed = max(self._clock() - self._started, 1e-9)
        self._bar.set_postfix_str(
            f"{self._failed} failed, {self._output_tokens / elapsed:.1f} output tok/s", refresh=False
        )
        self._bar.update(1)


def _parse_env(pairs: list[str]) -> dict[str, str]:
    from peagle.settings.errors import PeagleError

    environment = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise PeagleError(f"--env {pair!r}: expected KEY=VALUE")
        environment[key] = value
    return environment


def _run_job(args: argparse.Namespace) -> int:
    """A transform job in named steps; each prints what it decided, in this order."""
    from peagle.batch.job_request import build_transform_job_request

    plan = _plan_job(args)
    job_input = _resolve_input(args, plan)
    session = None if args.dry_run else _session(args.region)
    sagemaker = None if session is None else _client(session, "sagemaker")
    model = _resolve_model(args, plan, session, sagemaker)
    spec, choice = _build_spec(args, plan, job_input, model)
    _print_job(plan, spec, choice, model)
    request = build_transform_job_request(spec)
    if args.dry_run:
        print("dry run: CreateTransformJob request (nothing uploaded or started):")
        print(json.dumps(request, indent=2))
        return ExitCode.OK
    return _start_and_follow(args, session, sagemaker, job_input, request)


@dataclass(frozen=True)
class _JobPlan:
    config: DeploymentConfig  # the deployment as the endpoint runs it
    batch_config: DeploymentConfig  # the same with the batch profile, on the transform instance type
    batch_plan: Plan
    instance_type: str
    job_name: str


@dataclass(frozen=True)
class _JobInput:
    uri: str  # what the job reads
    local_path: Path | None  # the checked local file to upload there first, if any
    records: list[bytes]  # its records, with max_tokens defaults (empty for S3 input)


@dataclass(frozen=True)
class _ModelReference:
    name: str
    environment: dict[str, str]  # what the job's Environment is laid over
    description: str  # where that environment came from, for the printout


def _plan_job(args: argparse.Namespace) -> _JobPlan:
    """The deployment, the transform host check, and the batch profile's plan on the transform instance."""
    from peagle.batch.job_request import TransformJobError, default_job_name
    from peagle.cli_config import load_cli_config
    from peagle.planning.deployment_rules import transform_problems
    from peagle.planning.planner import plan_deployment

    config = load_cli_config(args.deployment, {"model": args.model})
    instance_type = args.instance_type or config.instance.type
    # Before anything is uploaded or started: a job that cannot start on its GPU host costs an hour of
    # provisioning to find out (peagle/planning/deployment_rules.py says why, and what works instead).
    problems = transform_problems(instance_type)
    if problems:
        raise TransformJobError(problems)
    batch_config = load_cli_config(
        args.deployment, {"model": args.model, "profile": "batch", "instanceType": instance_type}
    )
    return _JobPlan(
        config=config,
        batch_config=batch_config,
        batch_plan=plan_deployment(batch_config),
        instance_type=instance_type,
        job_name=args.job_name or default_job_name(config.name, config.model, datetime.now(UTC)),
    )


def _resolve_input(args: argparse.Namespace, plan: _JobPlan) -> _JobInput:
    """Local records checked (and where they will be uploaded), or an S3 input taken as it is."""
    from peagle.aws import S3Location
    from peagle.batch.records import read_records, with_default_max_tokens
    from peagle.settings.errors import PeagleError

    if args.input.startswith("s3://"):
        S3Location.parse(args.input, what="--input")
        print(f"records         {args.input} (in S3: not checked here; check a local copy with --url or pass the file)")
        S3Location.parse(args.output, what="--output")
        return _JobInput(args.input, None, [])

    local_input = Path(args.input)
    records = with_default_max_tokens(
        read_records(local_input, validate=args.validate, max_payload_mb=args.max_payload_mb),
        _default_max_tokens(args),
    )
    if not args.upload_to:
        raise PeagleError(
            f"--input {local_input} is a local file: pass --upload-to s3://bucket/prefix/ to upload it for the job"
        )
    upload = S3Location.parse(args.upload_to, what="--upload-to")
    if upload.key == "" or upload.key.endswith("/"):
        upload = upload.child(local_input.name)
    print(f"records         {len(records)} in {local_input}, checked; upload to {upload.uri}")
    largest_mb = max(len(record) for record in records) / (1024 * 1024)
    if args.max_payload_mb > 1 and largest_mb < 1 and not args.max_concurrent_transforms:
        print(
            f"hint            the largest record is {largest_mb * 1024:.1f} KB: --max-payload-mb 1 allows up to "
            f"{MAX_PAYLOAD_TIMES_CONCURRENCY_MB} requests in flight per instance (plan max_num_seqs {plan.batch_plan.max_num_seqs})"
        )
    S3Location.parse(args.output, what="--output")
    return _JobInput(upload.uri, local_input, records)


def _resolve_model(args: argparse.Namespace, plan: _JobPlan, session, sagemaker) -> _ModelReference:
    """The Model the job runs, and the environment its Environment is compared with: the deployed
    Model's (DescribeModel), or without AWS (``--dry-run``) the Model as planned from the deployment."""
    from peagle.planning.container_env import DEFAULT_VARIANT_NAME, container_environment
    from peagle.planning.planner import plan_deployment
    from peagle.settings.errors import PeagleError

    config = plan.config
    stack = args.stack or f"{config.name}-endpoint"
    if session is None:
        endpoint_plan = plan_deployment(config)
        return _ModelReference(
            name=args.model_name or f"<{stack} ModelName output>",
            environment=container_environment(
                endpoint_plan, variant_name=DEFAULT_VARIANT_NAME, endpoint_name=config.endpoint_name
            ),
            description=f"the Model as planned from the deployment ({endpoint_plan.profile_name.value} on "
            f"{endpoint_plan.instance_type})",
        )
    from peagle.batch.job_follow import model_environment, model_name_from_stack

    model_name = args.model_name or model_name_from_stack(_client(session, "cloudformation"), stack)
    environment = model_environment(sagemaker, model_name)
    served = environment.get(contract.ENV_MODEL_PAIR)
    if served and served != config.model:
        raise PeagleError(
            f"Model {model_name} serves pair {served!r} but the plan is for {config.model!r}; pass --model {served} "
            "(or the --deployment the Model was deployed from)"
        )
    return _ModelReference(model_name, environment, f"the deployed Model {model_name}")


def _build_spec(
    args: argparse.Namespace, plan: _JobPlan, job_input: _JobInput, model: _ModelReference
) -> tuple[TransformJobSpec, EnvironmentChoice]:
    """The job's settings, every problem reported at once; its Environment chosen against the Model's."""
    from peagle.batch.job_request import (
        TransformJobError,
        TransformJobSpec,
        choose_batch_environment,
        transform_instance_types,
    )
    from peagle.catalog import load_catalog
    from peagle.planning.container_env import DEFAULT_VARIANT_NAME, container_environment
    from peagle.planning.deployment_rules import transform_ami_version

    batch_environment = container_environment(
        plan.batch_plan, variant_name=DEFAULT_VARIANT_NAME, endpoint_name=plan.job_name
    )
    choice = choose_batch_environment(model.environment, batch_environment, extra=_parse_env(args.env))
    config = plan.config
    spec = TransformJobSpec(
        job_name=plan.job_name,
        model_name=model.name,
        input_s3_uri=job_input.uri,
        output_s3_uri=args.output,
        instance_type=plan.instance_type,
        instance_count=args.instance_count,
        max_concurrent_transforms=args.max_concurrent_transforms
        or max(1, min(plan.batch_plan.max_num_seqs, MAX_PAYLOAD_TIMES_CONCURRENCY_MB // max(1, args.max_payload_mb))),
        max_payload_mb=args.max_payload_mb,
        environment=choice.environment,
        invocation_timeout_seconds=args.invocation_timeout_seconds,
        invocation_max_retries=args.invocation_max_retries,
        output_kms_key_id=args.output_kms_key_id,
        tags={"project": "peagle-sagemaker", "peagle:deployment": config.name, "peagle:pair": config.model},
        ami_version=transform_ami_version(),
    )
    plannable = [name for name in transform_instance_types() if name in load_catalog().instances]
    problems = spec.problems(allowed_instance_types=plannable)
    if problems:
        raise TransformJobError(problems)
    return spec, choice


def _print_job(plan: _JobPlan, spec: TransformJobSpec, choice: EnvironmentChoice, model: _ModelReference) -> None:
    batch_plan = plan.batch_plan
    print(
        f"job             {spec.job_name}: Model {model.name}, {spec.instance_count} x {plan.instance_type}, "
        f"{spec.max_concurrent_transforms} requests in flight per instance"
    )
    print(
        f"batch plan      K={batch_plan.speculative_tokens} max_num_seqs={batch_plan.max_num_seqs} "
        f"max_model_len={batch_plan.max_model_len} tensor_parallel_size={batch_plan.tensor_parallel_size} "
        f"(profile batch on {plan.instance_type})"
    )
    print(f"environment     {len(choice.environment)}/16 entries, batch settings that differ from {model.description}:")
    for line in choice.describe():
        print(line)


def _start_and_follow(args: argparse.Namespace, session, sagemaker, job_input: _JobInput, request: dict) -> int:
    """Upload local records, start the job, and follow it unless --no-wait."""
    from peagle.aws import S3Location
    from peagle.batch.job_follow import follow_transform_job, start_transform_job

    job_name = request["TransformJobName"]
    if job_input.local_path is not None:
        _upload_records(session, job_input.local_path.name, job_input.records, S3Location.parse(job_input.uri))
    arn = start_transform_job(sagemaker, request)
    print(f"started         {arn}")
    if not args.wait:
        print(f"not following; check with: aws sagemaker describe-transform-job --transform-job-name {job_name}")
        return ExitCode.OK
    try:
        outcome = follow_transform_job(sagemaker, job_name)
    except KeyboardInterrupt:
        print(
            f"\nstopped following; the job keeps running. Stop it with: aws sagemaker stop-transform-job "
            f"--transform-job-name {job_name}",
            file=sys.stderr,
        )
        return ExitCode.INTERRUPTED
    print(f"{job_name} {outcome.message}", file=sys.stdout if outcome.succeeded else sys.stderr)
    return ExitCode.OK if outcome.succeeded else ExitCode.FAILED


def _session(region: str | None):
    from peagle.aws import aws_session

    return aws_session(region)


def _client(session, service: str):
    from peagle.aws import aws_client

    return aws_client(session, service)


def _default_max_tokens(args: argparse.Namespace) -> int:
    from peagle.catalog import ProfileName, load_catalog

    return args.max_tokens or load_catalog().profiles[ProfileName.BATCH].sampling.max_tokens


def _upload_records(session, name: str, records: list[bytes], destination) -> None:
    """Upload the checked records (with their max_tokens defaults), not the raw file."""
    import tempfile

    from peagle.aws import S3Location
    from peagle.stage.upload import StagedFile, upload_files

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(b"\n".join(records) + b"\n")
        # Always sent: an edited file of the same size must not be mistaken for the uploaded one.
        bucket_root = S3Location(destination.bucket, "")
        file = StagedFile(path, destination.key, path.stat().st_size)
        upload_files(_client(session, "s3"), bucket_root, [file], max_concurrency=4, skip_existing=False)
