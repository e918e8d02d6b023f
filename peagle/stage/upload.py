"""Upload a staging plan to S3: multipart, resumable, optionally SSE-KMS.

A re-run after an interruption skips every object already present with the same
size (HeadObject), so only what is missing or different is sent again. Large
files go up in parallel multipart chunks (boto3's TransferConfig).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peagle.aws import AwsCallError, S3Location, aws_call
from peagle.progress import progress_bar, thread_safe_counter, write_line

GIB = 1024**3
MIB = 1024**2
MULTIPART_THRESHOLD_BYTES = 64 * MIB
MULTIPART_CHUNK_BYTES = 64 * MIB


@dataclass(frozen=True)
class StagedFile:
    local_path: Path | None  # None while the file is only known from a Hub listing
    relative_key: str  # under the pair prefix, e.g. "target/model-00001-of-00003.safetensors"
    size: int


@dataclass(frozen=True)
class UploadSummary:
    uploaded: int
    skipped: int
    bytes_uploaded: int
    bytes_skipped: int
    seconds: float


def existing_size(s3: Any, location: S3Location) -> int | None:
    """The object's size, or None when there is none."""
    from botocore.exceptions import ClientError

    with aws_call(
        f"checking {location.uri}",
        permission=f"s3:GetObject on arn:aws:s3:::{location.bucket}/* and s3:ListBucket on the bucket "
        "(without ListBucket S3 answers 403, not 404, for keys that do not exist yet)",
    ):
        try:
            return int(s3.head_object(Bucket=location.bucket, Key=location.key)["ContentLength"])
        except ClientError as error:
            if str(error.response.get("Error", {}).get("Code")) in ("404", "NoSuchKey", "NotFound"):
                return None
            raise


def needs_upload(s3: Any, location: S3Location, size: int) -> bool:
    """Upload unless an object of the same size is already there (a resumed or repeated run)."""
    return existing_size(s3, location) != size


def transfer_config(max_concurrency: int) -> Any:
    from boto3.s3.transfer import TransferConfig

    return TransferConfig(
        multipart_threshold=MULTIPART_THRESHOLD_BYTES,
        multipart_chunksize=MULTIPART_CHUNK_BYTES,
        max_concurrency=max_concurrency,
        use_threads=max_concurrency > 1,
    )


def upload_extra_args(kms_key_id: str | None) -> dict[str, str]:
    """SSE-KMS with ``kms_key_id``; otherwise the bucket's default encryption applies (the
    project bucket's is its own KMS key)."""
    if kms_key_id:
        return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": kms_key_id}
    return {}


def upload_files(
    s3: Any,
    prefix: S3Location,
    files: Sequence[StagedFile],
    *,
    kms_key_id: str | None = None,
    max_concurrency: int = 8,
    skip_existing: bool = True,
    emit: Callable[[str], None] = write_line,
    clock: Callable[[], float] = time.monotonic,
    progress: bool | None = None,
) -> UploadSummary:
    """Upload what is missing; ``progress`` (default: when stderr is a terminal) shows bytes
    sent, rate and ETA for the current file and for the whole run on stderr."""
    started = clock()
    # Every HeadObject first, so the overall bar knows how many bytes will really be sent.
    to_send: list[StagedFile] = []
    skipped = bytes_skipped = 0
    for file in files:
        if skip_existing and not needs_upload(s3, prefix.child(file.relative_key), file.size):
            skipped += 1
            bytes_skipped += file.size
            emit(f"  skip    {file.relative_key} ({_size(file.size)}, already there)")
        else:
            to_send.append(file)
    show = progress if to_send else False
    config = transfer_config(max_concurrency)
    extra_args = upload_extra_args(kms_key_id)
    bytes_to_send = sum(file.size for file in to_send)
    with progress_bar(total=bytes_to_send, unit="B", desc=f"{len(to_send)} file(s)", enabled=show) as overall:
        for file in to_send:
            file_started = clock()
            with progress_bar(
                total=file.size, unit="B", desc=file.relative_key, enabled=show, position=1, leave=False
            ) as current:
                _upload_one(
                    s3, prefix.child(file.relative_key), file, config, extra_args, kms_key_id, (overall, current)
                )
            emit(f"  upload  {file.relative_key} ({_size(file.size)}, {clock() - file_started:.1f} s)")
    return UploadSummary(len(to_send), skipped, bytes_to_send, bytes_skipped, clock() - started)


def _upload_one(
    s3: Any,
    destination: S3Location,
    file: StagedFile,
    config: Any,
    extra_args: dict[str, str],
    kms_key_id: str | None,
    bars: tuple[Any, ...],
) -> None:
    from boto3.exceptions import S3UploadFailedError

    # boto3 calls Callback from its transfer threads with the bytes just sent (negative when a
    # part is sent again), so the bars are advanced under one lock.
    advance = thread_safe_counter(*bars)
    try:
        with aws_call(
            f"uploading to {destination.uri}", permission=f"s3:PutObject on arn:aws:s3:::{destination.bucket}/*"
        ):
            s3.upload_file(
                str(file.local_path),
                destination.bucket,
                destination.key,
                ExtraArgs=extra_args or None,
                Config=config,
                Callback=advance,
            )
    except S3UploadFailedError as error:
        raise AwsCallError(_explain_upload_failure(str(error), destination, kms_key_id)) from None


def _explain_upload_failure(message: str, destination: S3Location, kms_key_id: str | None) -> str:
    if "AccessDenied" in message or "403" in message:
        key_note = (
            f"kms:GenerateDataKey and kms:Decrypt on {kms_key_id}"
            if kms_key_id
            else (
                "kms:GenerateDataKey and kms:Decrypt on the bucket's KMS key (the project bucket encrypts with its own key)"
            )
        )
        return (
            f"access denied uploading to {destination.uri}: the caller needs s3:PutObject on "
            f"arn:aws:s3:::{destination.bucket}/* and {key_note}; a bucket policy that requires SSE-KMS "
            f"also needs --kms-key-id. ({message})"
        )
    return f"uploading to {destination.uri} failed: {message}"


def _size(size: int) -> str:
    if size >= GIB:
        return f"{size / GIB:.2f} GiB"
    if size >= MIB:
        return f"{size / MIB:.1f} MiB"
    return f"{size} B"
