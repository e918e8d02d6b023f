"""Resumable uploads: which files are sent again is the code's own decision (HeadObject
size vs local size), so S3 is botocore's Stubber here; the files are real."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import ANY, Stubber

from peagle.aws import AwsCallError, S3Location
from peagle.stage.upload import StagedFile, upload_files

BUCKET = "my-models-bucket"
PREFIX = S3Location(BUCKET, "models/tiny-pair/")


def _s3():
    return boto3.client("s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


def _files(tmp_path) -> list[StagedFile]:
    files = []
    for name, size in (
        ("target/config.json", 10),
        ("target/model.safetensors", 300),
        ("drafter/model.safetensors", 200),
    ):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"w" * size)
        files.append(StagedFile(path, name, size))
    return files


def _head(size: int) -> dict:
    return {"ContentLength": size, "ETag": '"e"'}


def test_files_already_there_with_the_same_size_are_skipped_the_rest_sent(tmp_path):
    files = _files(tmp_path)
    s3, lines = _s3(), []
    with Stubber(s3) as stubber:
        stubber.add_response("head_object", _head(10), {"Bucket": BUCKET, "Key": "models/tiny-pair/target/config.json"})
        # Same key, different size: an interrupted or older upload, so it is sent again.
        stubber.add_response(
            "head_object", _head(123), {"Bucket": BUCKET, "Key": "models/tiny-pair/target/model.safetensors"}
        )
        stubber.add_response(
            "put_object",
            {"ETag": '"1"'},
            {
                "Bucket": BUCKET,
                "Key": "models/tiny-pair/target/model.safetensors",
                "Body": ANY,
                "ChecksumAlgorithm": ANY,
            },
        )
        stubber.add_client_error(
            "head_object", service_error_code="404", service_message="Not Found", http_status_code=404
        )
        stubber.add_response(
            "put_object",
            {"ETag": '"2"'},
            {
                "Bucket": BUCKET,
                "Key": "models/tiny-pair/drafter/model.safetensors",
                "Body": ANY,
                "ChecksumAlgorithm": ANY,
                "ServerSideEncryption": "aws:kms",
                "SSEKMSKeyId": "alias/models",
            },
        )

        summary = upload_files(s3, PREFIX, files[:2], max_concurrency=1, emit=lines.append)
        summary_kms = upload_files(
            s3, PREFIX, files[2:], kms_key_id="alias/models", max_concurrency=1, emit=lines.append
        )
        stubber.assert_no_pending_responses()

    assert (summary.uploaded, summary.skipped, summary.bytes_uploaded, summary.bytes_skipped) == (1, 1, 300, 10)
    assert (summary_kms.uploaded, summary_kms.skipped) == (1, 0)
    assert lines[0].split()[:2] == ["skip", "target/config.json"]
    assert lines[1].split()[:2] == ["upload", "target/model.safetensors"]


def test_access_denied_on_the_check_names_the_permissions(tmp_path):
    s3 = _s3()
    with Stubber(s3) as stubber:
        stubber.add_client_error(
            "head_object", service_error_code="403", service_message="Forbidden", http_status_code=403
        )
        with pytest.raises(AwsCallError, match=r"needs s3:GetObject .* and s3:ListBucket on the bucket"):
            upload_files(s3, PREFIX, _files(tmp_path)[:1], max_concurrency=1, emit=lambda line: None)


def test_access_denied_on_upload_names_put_and_kms_permissions(tmp_path):
    s3 = _s3()
    with Stubber(s3) as stubber:
        stubber.add_client_error(
            "head_object", service_error_code="404", service_message="Not Found", http_status_code=404
        )
        stubber.add_client_error(
            "put_object", service_error_code="AccessDenied", service_message="Access Denied", http_status_code=403
        )
        with pytest.raises(
            AwsCallError, match=r"s3:PutObject on arn:aws:s3:::my-models-bucket/\* and kms:GenerateDataKey"
        ):
            upload_files(s3, PREFIX, _files(tmp_path)[:1], max_concurrency=1, emit=lambda line: None)
