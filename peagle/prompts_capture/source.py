"""Where capture files come from: an S3 prefix (boto3, ListObjectsV2 paginated + GetObject) or a
local copy of one (e.g. `aws s3 sync`), read in key order.

SageMaker writes one object per endpoint, variant and hour: "The format of the Amazon S3 path is:
s3:///{endpoint-name}/{variant-name}/yyyy/mm/dd/hh/filename.jsonl" under the DestinationS3Uri
("Capture data from real-time endpoint", View Captured Data,
https://docs.aws.amazon.com/sagemaker/latest/dg/model-monitor-data-capture-endpoint.html). So any
prefix of that layout works: the destination, one endpoint, one variant, one day or hour; key order is
time order within a variant.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peagle.settings.errors import PeagleError

CAPTURE_SUFFIX = ".jsonl"  # the layout's filename.jsonl


class CaptureSourceError(PeagleError):
    """The capture location does not exist or holds no capture files."""


@dataclass(frozen=True)
class CaptureFile:
    where: str  # s3://bucket/key or a local path, for messages
    relative: str  # the key below the given prefix: {endpoint}/{variant}/yyyy/mm/dd/hh/name.jsonl


def capture_lines(location: str, *, region: str | None = None) -> Iterator[tuple[CaptureFile, str]]:
    """(file, line) for every non-empty line of every .jsonl file under ``location``."""
    if location.startswith("s3://"):
        yield from _s3_lines(location, region)
        return
    root = Path(location)
    if not root.is_dir():
        raise CaptureSourceError(
            f"capture location {location!r} is neither an s3:// prefix nor a local directory; give the "
            "endpoint's DestinationS3Uri (or a prefix of it), or a directory copied from it with `aws s3 sync`"
        )
    files = sorted(path for path in root.rglob(f"*{CAPTURE_SUFFIX}") if path.is_file())
    if not files:
        raise CaptureSourceError(_no_files(location))
    for path in files:
        capture = CaptureFile(where=str(path), relative=path.relative_to(root).as_posix())
        with path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.strip():
                    yield capture, line


def _no_files(location: str) -> str:
    return (
        f"no {CAPTURE_SUFFIX} capture files under {location}: SageMaker writes them as "
        "{endpoint}/{variant}/yyyy/mm/dd/hh/*.jsonl under the endpoint config's DataCaptureConfig.DestinationS3Uri, "
        "a few minutes after the requests; check the prefix, and that capture is on for the endpoint"
    )


def s3_client(region: str | None) -> Any:
    """The S3 client capture files are read with (tests put a stubbed one in its place)."""
    from peagle.aws import aws_client, aws_session

    return aws_client(aws_session(region), "s3")


def _s3_lines(location: str, region: str | None) -> Iterator[tuple[CaptureFile, str]]:
    from peagle.aws import S3Location, aws_call

    prefix = S3Location.parse(location, what="capture location").as_prefix()
    client = s3_client(region)
    keys: list[str] = []
    permission = f"s3:ListBucket on arn:aws:s3:::{prefix.bucket}"
    with aws_call(f"listing {prefix.uri} (S3 ListObjectsV2)", permission=permission):
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=prefix.bucket, Prefix=prefix.key):
            keys += [item["Key"] for item in page.get("Contents", []) if item["Key"].endswith(CAPTURE_SUFFIX)]
    if not keys:
        raise CaptureSourceError(_no_files(prefix.uri))
    for key in sorted(keys):
        where = f"s3://{prefix.bucket}/{key}"
        with aws_call(
            f"reading {where} (S3 GetObject)",
            permission=f"s3:GetObject on {where} (and kms:Decrypt on the capture's KmsKeyId, if set)",
        ):
            text = client.get_object(Bucket=prefix.bucket, Key=key)["Body"].read().decode("utf-8", errors="replace")
        capture = CaptureFile(where=where, relative=key[len(prefix.key) :])
        for line in text.splitlines():
            if line.strip():
                yield capture, line
