"""`peagle batch`: JSONL prompts through the endpoint's Model as a SageMaker Batch Transform
job, or through a local server with the same record protocol (--url).

Exit codes: 0 done; 1 the job failed or was stopped, a record failed (--url), or
an AWS call failed; 2 bad arguments, records, deployment or plan (nothing was
started); 130 interrupted while following (the job keeps running).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from peagle.batch.records import DEFAULT_MAX_PAYLOAD_MB, MAX_PAYLOAD_TIMES_CONCURRENCY_MB

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_LOCAL_CONCURRENCY = 4


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "batch",
        help="run JSONL prompts through an endpoint (--endpoint), a local server (--url) or a Batch Transform job",
        description="Each line of --input is one JSON record ({'prompt': ...} or {'messages': [...]} plus sampling "
        "fields), POSTed as one /invocations request; each output line is its record plus 'SageMakerOutput' "
        "(the answer). With --endpoint: sends the records through that SageMaker real-time endpoint from here; "
        "with --url: to that server; both write --output locally, an 'error' record for each rejected line. "
        "Without either: a Batch Transform job on the endpoint stack's Model with the batch profile's settings, "
        "refused (before anything is uploaded) while no transform host runs the serving image's CUDA "
        "(peagle/catalog/runtime.yaml says which do). "
        "Exit 0 ok, 1 job/record/AWS failure, 2 bad input (nothing started).",
    )
    parser.add_argument(
        "--input", required=True, help="JSONL records: a local file, or s3://bucket/key (or a prefix) for a job"
    )
    parser.add_argument(
        "--output", required=True, help="s3://bucket/prefix/ for a job; a local .jsonl file with --url/--endpoint"
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--url", help="run the records against this server instead, e.g. http://127.0.0.1:8080")
    target.add_argument(
        "--endpoint",
        help="run the records through this SageMaker real-time endpoint from here (InvokeEndpoint per record; "
        "--input/--output are local files)",
    )
    where = parser.add_argument_group("which Model and plan")
    where.add_argument("--model-name", help="SageMaker Model to run (default: the ModelName output of --stack)")
    where.add_argument(
        "--stack", help="endpoint stack whose ModelName output names the Model (default <name>-endpoint)"
    )
    where.add_argument(
        "--deployment", help="deployment YAML the Model was deployed from (default deployments/default.yaml if present)"
    )
    where.add_argument("--model", help="model pair id to plan with (default: the deployment's)")
    job = parser.add_argument_group("the transform job")
    job.add_argument("--instance-type", help="transform instance type (default: the deployment's instance.type)")
    job.add_argument(
        "--instance-count", type=int, default=1, help="instances; records are spread over them (default 1)"
    )
    job.add_argument(
        "--max-concurrent-transforms",
        type=int,
        help=f"requests in flight per instance (default: min(plan max_num_seqs, {MAX_PAYLOAD_TIMES_CONCURRENCY_MB} / "
        f"--max-payload-mb); with --url default {DEFAULT_LOCAL_CONCURRENCY})",
    )
    job.add_argument(
        "--max-payload-mb",
        type=int,
        default=DEFAULT_MAX_PAYLOAD_MB,
        help=f"largest record in MB (default {DEFAULT_MAX_PAYLOAD_MB}); x concurrency must be <= {MAX_PAYLOAD_TIMES_CONCURRENCY_MB}",
    )
    job.add_argument("--invocation-timeout-seconds", type=int, default=600, help="per record, 1-3600 (default 600)")
    job.add_argument(
        "--invocation-max-retries", type=int, default=1, help="SageMaker's retries per record, 0-3 (default 1)"
    )
    job.add_argument("--job-name", help="default <name>-<pair>-<UTC time>")
    job.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra container variable (repeatable; 16 entries in all)",
    )
    job.add_argument("--upload-to", help="s3:// key or prefix/ to upload a local --input to first")
    job.add_argument("--output-kms-key-id", help="KMS key for the job's output objects")
    job.add_argument(
        "--wait", action=argparse.BooleanOptionalAction, default=True, help="follow the job to the end (default)"
    )
    job.add_argument(
        "--dry-run",
        action="store_true",
        help="check everything and print the CreateTransformJob request; call no AWS API",
    )
    job.add_argument("--region", help="AWS region (default: the AWS config's)")
    parser.add_argument("--no-validate", dest="validate", action="store_false", help="send local records unchecked")
    parser.add_argument(
        "--max-tokens",
        type=int,
        help="for local --input records without max_tokens (default: the batch profile's); records already "
        "in S3 must carry their own",
    )
    parser.add_argument("--max-attempts", type=int, default=5, help="--url: client attempts per record (default 5)")
    parser.set_defaults(handler=run_batch)


def run_batch(args: argparse.Namespace) -> int:
    from peagle.aws import AwsCallError
    from peagle.errors import PeagleError

    try:
        return _run_local(args) if (args.url or args.endpoint) else _run_job(args)
    except AwsCallError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
    except PeagleError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _run_local(args: argparse.Namespace) -> int:
    from peagle.batch.local_run import ServerUnreachableError, run_records
    from peagle.batch.records import read_records, with_default_max_tokens
    from peagle.client.retry import RetryPolicy
    from peagle.errors import PeagleError

    if args.output.startswith("s3://") or args.input.startswith("s3://"):
        raise PeagleError("with --url or --endpoint, --input and --output are local files (S3 is for transform jobs)")
    records = with_default_max_tokens(
        read_records(Path(args.input), validate=args.validate, max_payload_mb=args.max_payload_mb),
        _default_max_tokens(args),
    )
    concurrency = args.max_concurrent_transforms or DEFAULT_LOCAL_CONCURRENCY

    def report(outcome) -> None:
        if not outcome.ok:
            print(f"line {outcome.line_number}: {outcome.message}", file=sys.stderr)

    transport = None
    if args.endpoint:
        from peagle.client.sagemaker_transport import SageMakerTransport

        transport = SageMakerTransport(args.endpoint, region=args.region)
    target = f"endpoint {args.endpoint}" if args.endpoint else f"{args.url}/invocations"
    print(f"{len(records)} records -> {target}, {concurrency} in flight")
    try:
        summary = run_records(
            records,
            args.url,
            Path(args.output),
            concurrency=concurrency,
            retry_policy=RetryPolicy(max_attempts=args.max_attempts),
            on_outcome=report,
            transport=transport,
        )
    except ServerUnreachableError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
    print(
        f"{summary.records} records: {summary.succeeded} ok, {summary.failed} failed, in {summary.seconds:.1f} s "
        f"({summary.prompt_tokens} prompt + {summary.completion_tokens} output tokens, "
        f"{summary.output_tokens_per_second:.1f} output tokens/s); output {args.output}"
    )
    return EXIT_OK if summary.failed == 0 else EXIT_FAILED


def _parse_env(pairs: list[str]) -> dict[str, str]:
    from peagle.errors import PeagleError

    environment = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise PeagleError(f"--env {pair!r}: expected KEY=VALUE")
        environment[key] = value
    return environment


def _run_job(args: argparse.Namespace) -> int:
    from peagle.aws import S3Location
    from peagle.batch.job_request import (
        TransformJobError,
        TransformJobSpec,
        build_transform_job_request,
        choose_batch_environment,
        default_job_name,
        transform_instance_types,
    )
    from peagle.batch.records import read_records, with_default_max_tokens
    from peagle.cli_config import load_cli_config
    from peagle.container_env import DEFAULT_VARIANT_NAME, container_environment
    from peagle.errors import PeagleError
    from peagle.planner import plan_deployment

    config = load_cli_config(args.deployment, {"model": args.model})
    instance_type = args.instance_type or config.instance.type
    # Before anything is uploaded or started: a job that cannot start on its GPU host costs an hour of
    # provisioning to find out (peagle/deployment_rules.py says why, and what works instead).
    from peagle.deployment_rules import transform_ami_version, transform_problems

    problems = transform_problems(instance_type)
    if problems:
        raise TransformJobError(problems)
    batch_config = load_cli_config(
        args.deployment, {"model": args.model, "profile": "batch", "instanceType": instance_type}
    )
    batch_plan = plan_deployment(batch_config)
    job_name = args.job_name or default_job_name(config.name, config.model, datetime.now(UTC))

    local_input = None if args.input.startswith("s3://") else Path(args.input)
    if local_input is not None:
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
        input_uri = upload.uri
        print(f"records         {len(records)} in {local_input}, checked; upload to {input_uri}")
        largest_mb = max(len(record) for record in records) / (1024 * 1024)
        if args.max_payload_mb > 1 and largest_mb < 1 and not args.max_concurrent_transforms:
            print(
                f"hint            the largest record is {largest_mb * 1024:.1f} KB: --max-payload-mb 1 allows up to "
                f"{MAX_PAYLOAD_TIMES_CONCURRENCY_MB} requests in flight per instance (plan max_num_seqs {batch_plan.max_num_seqs})"
            )
    else:
        S3Location.parse(args.input, what="--input")
        input_uri = args.input
        print(f"records         {input_uri} (in S3: not checked here; check a local copy with --url or pass the file)")
    S3Location.parse(args.output, what="--output")

    session = None if args.dry_run else _session(args.region)
    sagemaker = None if session is None else _client(session, "sagemaker")
    stack = args.stack or f"{config.name}-endpoint"
    if args.model_name:
        model_name = args.model_name
    elif session is None:
        model_name = f"<{stack} ModelName output>"
    else:
        from peagle.batch.job_follow import model_name_from_stack

        model_name = model_name_from_stack(_client(session, "cloudformation"), stack)

    batch_environment = container_environment(batch_plan, batch_config, variant_name=DEFAULT_VARIANT_NAME)
    batch_environment["PEAGLE_ENDPOINT_NAME"] = job_name
    if sagemaker is None:
        endpoint_plan = plan_deployment(config)
        reference = container_environment(endpoint_plan, config, variant_name=DEFAULT_VARIANT_NAME)
        reference_note = f"the Model as planned from the deployment ({endpoint_plan.profile_name.value} on {endpoint_plan.instance_type})"
    else:
        from peagle.batch.job_follow import model_environment

        reference = model_environment(sagemaker, model_name)
        reference_note = f"the deployed Model {model_name}"
        served = reference.get("PEAGLE_MODEL_PAIR")
        if served and served != config.model:
            raise PeagleError(
                f"Model {model_name} serves pair {served!r} but the plan is for {config.model!r}; pass --model {served} "
                "(or the --deployment the Model was deployed from)"
            )
    choice = choose_batch_environment(reference, batch_environment, extra=_parse_env(args.env))

    spec = TransformJobSpec(
        job_name=job_name,
        model_name=model_name,
        input_s3_uri=input_uri,
        output_s3_uri=args.output,
        instance_type=instance_type,
        instance_count=args.instance_count,
        max_concurrent_transforms=args.max_concurrent_transforms
        or max(1, min(batch_plan.max_num_seqs, MAX_PAYLOAD_TIMES_CONCURRENCY_MB // max(1, args.max_payload_mb))),
        max_payload_mb=args.max_payload_mb,
        environment=choice.environment,
        invocation_timeout_seconds=args.invocation_timeout_seconds,
        invocation_max_retries=args.invocation_max_retries,
        output_kms_key_id=args.output_kms_key_id,
        tags={"project": "peagle-sagemaker", "peagle:deployment": config.name, "peagle:pair": config.model},
        ami_version=transform_ami_version(),
    )
    from peagle.catalog import load_catalog

    plannable = [name for name in transform_instance_types() if name in load_catalog().instances]
    problems = spec.problems(allowed_instance_types=plannable)
    if problems:
        raise TransformJobError(problems)

    print(
        f"job             {job_name}: Model {model_name}, {spec.instance_count} x {instance_type}, "
        f"{spec.max_concurrent_transforms} requests in flight per instance"
    )
    print(
        f"batch plan      K={batch_plan.speculative_tokens} max_num_seqs={batch_plan.max_num_seqs} "
        f"max_model_len={batch_plan.max_model_len} tensor_parallel_size={batch_plan.tensor_parallel_size} "
        f"(profile batch on {instance_type})"
    )
    print(f"environment     {len(choice.environment)}/16 entries, batch settings that differ from {reference_note}:")
    for line in choice.describe():
        print(line)
    request = build_transform_job_request(spec)
    if args.dry_run:
        print("dry run: CreateTransformJob request (nothing uploaded or started):")
        print(json.dumps(request, indent=2))
        return EXIT_OK

    if local_input is not None:
        _upload_records(session, local_input.name, records, S3Location.parse(input_uri))
    from peagle.batch.job_follow import follow_transform_job, start_transform_job

    arn = start_transform_job(sagemaker, request)
    print(f"started         {arn}")
    if not args.wait:
        print(f"not following; check with: aws sagemaker describe-transform-job --transform-job-name {job_name}")
        return EXIT_OK
    try:
        outcome = follow_transform_job(sagemaker, job_name)
    except KeyboardInterrupt:
        print(
            f"\nstopped following; the job keeps running. Stop it with: aws sagemaker stop-transform-job "
            f"--transform-job-name {job_name}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    print(f"{job_name} {outcome.message}", file=sys.stdout if outcome.succeeded else sys.stderr)
    return EXIT_OK if outcome.succeeded else EXIT_FAILED


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
