"""`peagle stage`: copy a pair's target and drafter into the S3 prefix the endpoint's Model reads.

Exit codes: 0 staged (or planned, with --dry-run); 1 a Hub call failed; 2 bad arguments, deployment file or
checkpoints (nothing was uploaded); 3 an AWS call failed (credentials, permissions), as every command.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from peagle.cli_errors import ExitCode
from peagle.cli_options import add_command, option
from peagle.settings import DEFAULT_DEPLOYMENT_FILE

_OPTIONS = (
    option(
        "--deployment",
        help=f"deployment YAML giving the pair and the prefix (default {DEFAULT_DEPLOYMENT_FILE} if present)",
    ),
    option("--model", help="model pair id (catalog or the deployment's custom_pairs); overrides the deployment's"),
    option(
        "--s3-uri",
        help="s3://bucket/prefix/ to stage into (default: artifacts.s3_uri, else the project bucket's models/<pair>/)",
    ),
    option("--from-dir", type=Path, help="stage local checkpoints: DIR/target/ and DIR/drafter/ (no Hub access)"),
    option("--cache-dir", type=Path, help="where Hub downloads go (default ~/.cache/peagle/stage/<pair>/)"),
    option("--hf-token-secret-arn", help="Secrets Manager secret holding the Hugging Face token (default: HF_TOKEN)"),
    option("--hf-endpoint", help="a Hugging Face Hub mirror URL (default: HF_ENDPOINT or huggingface.co)"),
    option("--kms-key-id", help="upload with SSE-KMS under this key (default: the bucket's default encryption)"),
    option("--max-concurrency", type=int, default=8, help="parallel multipart threads per file (default 8)"),
    option("--region", help="AWS region (default: the AWS config's)"),
    option("--dry-run", action="store_true", help="check and print the plan (files, bytes, keys); upload nothing"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers,
        "stage",
        run_stage,
        _OPTIONS,
        help="copy a pair's target and drafter weights into the endpoint's S3 prefix",
        description="Copy the target and P-EAGLE drafter of a model pair from the Hugging Face Hub (or --from-dir) "
        "to s3://<bucket>/<prefix>/target/ and .../drafter/, the layout the SageMaker Model mounts at "
        "/opt/ml/model. Checks both checkpoints first, skips objects already uploaded with the same size, "
        "and ends with the ModelDataS3Uri the endpoint reads. Token: HF_TOKEN or --hf-token-secret-arn "
        "(never printed or stored). Exit 0 ok, 1 a Hub call failed, 2 bad input (nothing uploaded), 3 an AWS call failed.",
    )


def run_stage(args: argparse.Namespace) -> int:
    from peagle.aws import AwsCallError
    from peagle.cli_errors import run_reporting_errors
    from peagle.settings.errors import PeagleError
    from peagle.stage.hub import HubError

    return run_reporting_errors(
        _stage, args, [(AwsCallError, ExitCode.AWS), (HubError, ExitCode.FAILED), (PeagleError, ExitCode.BAD_INPUT)]
    )


class _LazySession:
    """One boto3 session, made only if a step needs AWS (a --dry-run with --s3-uri needs none)."""

    def __init__(self, region: str | None) -> None:
        self._region = region
        self._session = None

    def get(self) -> Any:
        if self._session is None:
            from peagle.aws import aws_session

            self._session = aws_session(self._region)
        return self._session


def _stage(args: argparse.Namespace) -> int:
    from peagle.stage.plan import StagePlan

    started = time.monotonic()
    from peagle.cli_config import load_cli_config

    config = load_cli_config(args.deployment, {"model": args.model})
    pair = config.pair()
    session = _LazySession(args.region)
    destination = _destination(args, config, session)
    kms_key_id = args.kms_key_id or config.artifacts.kms_key_arn

    token = None if args.from_dir else _token(args, session)
    target, drafter, warnings = _checked_sources(args, config.model, pair, token)
    plan = StagePlan.build(config.model, destination, target, drafter)
    print(f"source          {_describe_source(args, pair)}")
    for line in plan.describe(with_files=args.dry_run):
        print(line)
    for warning in warnings:
        print(f"warning         {warning}", file=sys.stderr)
    if args.dry_run:
        print(
            f"dry run: nothing uploaded; objects already there with the same size will be skipped. ModelDataS3Uri {plan.model_data_s3_uri}"
        )
        return ExitCode.OK

    if not args.from_dir:  # the checks passed on the Hub listing: now fetch, then check what arrived
        target, drafter, warnings = _downloaded_sources(args, config.model, pair, token)
        plan = StagePlan.build(config.model, destination, target, drafter)
        for warning in warnings:
            print(f"warning         {warning}", file=sys.stderr)

    from peagle.aws import aws_client
    from peagle.stage.upload import GIB, upload_files

    s3 = aws_client(session.get(), "s3", max_pool_connections=max(10, args.max_concurrency))
    print(f"uploading to {plan.destination.uri}" + (f" with SSE-KMS key {kms_key_id}" if kms_key_id else ""))
    summary = upload_files(
        s3, plan.destination, plan.files, kms_key_id=kms_key_id, max_concurrency=args.max_concurrency
    )
    print(
        f"staged {len(plan.files)} files ({plan.total_bytes / GIB:.2f} GiB): {summary.uploaded} uploaded "
        f"({summary.bytes_uploaded / GIB:.2f} GiB), {summary.skipped} already there, in {time.monotonic() - started:.1f} s"
    )
    print(f"ModelDataS3Uri  {plan.model_data_s3_uri}")
    if args.s3_uri and args.s3_uri.rstrip("/") + "/" != (config.artifacts.s3_uri or ""):
        print(
            f"note: the endpoint reads this prefix only with `artifacts: {{s3_uri: {plan.model_data_s3_uri}}}` in the deployment file"
        )
    return ExitCode.OK


def _destination(args: argparse.Namespace, config, session: _LazySession):
    from peagle.artifacts_layout import artifacts_bucket_name, pair_prefix
    from peagle.aws import S3Location, caller_account

    if args.s3_uri:
        return S3Location.parse(args.s3_uri, what="--s3-uri").as_prefix()
    if config.artifacts.s3_uri:
        return S3Location.parse(config.artifacts.s3_uri, what="artifacts.s3_uri").as_prefix()
    aws = session.get()
    account = caller_account(aws)  # raises AwsCallError when no region/credentials
    return S3Location(artifacts_bucket_name(config.name, account, aws.region_name), pair_prefix(config.model))


def _describe_source(args: argparse.Namespace, pair) -> str:
    if args.from_dir:
        return f"{args.from_dir}/target + {args.from_dir}/drafter"
    return f"Hugging Face Hub {pair.target.hf_id} + {pair.drafter.hf_id}"


def _check(target, target_config, drafter, drafter_config, drafter_format: str) -> list[str]:
    """Raise CheckpointError with every problem at once; return the warnings."""
    from peagle.stage.checkpoints import CheckpointError, drafter_problems, drafter_warnings, target_problems

    problems = target_problems(target, target_config) + drafter_problems(
        drafter, drafter_config, drafter_format=drafter_format
    )
    if problems:
        raise CheckpointError(problems)
    return drafter_warnings(drafter, drafter_config, drafter_format=drafter_format)


def _checked_sources(args: argparse.Namespace, pair_id: str, pair, token):
    """The two checkpoints' listings (local, or the Hub's without downloading weights), checked."""
    from peagle.stage.checkpoints import list_local_checkpoint, read_local_config

    if args.from_dir:
        target = list_local_checkpoint(args.from_dir / "target", "target")
        drafter = list_local_checkpoint(args.from_dir / "drafter", "drafter")
        target_config, drafter_config = read_local_config(target), read_local_config(drafter)
    else:
        from peagle.stage.hub import list_hub_checkpoint

        cache = _cache_dir(args, pair_id)
        target, target_config = list_hub_checkpoint(
            pair.target.hf_id, "target", token=token, endpoint=args.hf_endpoint, download_dir=cache / "target"
        )
        drafter, drafter_config = list_hub_checkpoint(
            pair.drafter.hf_id, "drafter", token=token, endpoint=args.hf_endpoint, download_dir=cache / "drafter"
        )
    warnings = _check(target, target_config, drafter, drafter_config, pair.drafter.format)
    return target, drafter, warnings


def _downloaded_sources(args: argparse.Namespace, pair_id: str, pair, token):
    from peagle.stage.checkpoints import list_local_checkpoint, read_local_config
    from peagle.stage.hub import download_hub_checkpoint

    cache = _cache_dir(args, pair_id)
    print(f"downloading to {cache} (resumes if interrupted)")
    target_dir = download_hub_checkpoint(
        pair.target.hf_id, token=token, endpoint=args.hf_endpoint, download_dir=cache / "target"
    )
    drafter_dir = download_hub_checkpoint(
        pair.drafter.hf_id, token=token, endpoint=args.hf_endpoint, download_dir=cache / "drafter"
    )
    target, drafter = list_local_checkpoint(target_dir, "target"), list_local_checkpoint(drafter_dir, "drafter")
    warnings = _check(target, read_local_config(target), drafter, read_local_config(drafter), pair.drafter.format)
    return target, drafter, warnings


def _token(args: argparse.Namespace, session: _LazySession):
    """Resolved once per run; only its source is printed."""
    from peagle.stage.hub import resolve_hub_token

    token = resolve_hub_token(
        args.hf_token_secret_arn, os.environ, session=session.get() if args.hf_token_secret_arn else None
    )
    print(
        f"hub token       {'from ' + token.source if token else 'none (public repositories, or a stored `hf auth login`)'}"
    )
    return token


def _cache_dir(args: argparse.Namespace, pair_id: str) -> Path:
    from peagle.stage.hub import default_cache_dir

    return args.cache_dir or default_cache_dir() / pair_id
