"""Batch Transform hosts as they would be once AWS offers one whose driver runs the CUDA 13
serving image. Today none does (peagle/catalog/runtime.yaml), so `peagle batch` refuses
transform jobs; the job path itself (upload, environment, request, following) is tested
with this one data change, exactly what a catalog update would make."""

from __future__ import annotations

import pytest

import peagle.planning.deployment_rules
from peagle.catalog import HostDriver, load_catalog

CUDA13_TRANSFORM_AMI = "al2023-ami-sagemaker-batch-gpu-580-example"


@pytest.fixture
def cuda13_transform_host(monkeypatch) -> str:
    catalog = load_catalog()
    runtime = catalog.runtime.model_copy(
        update={
            "transform_amis": {
                **catalog.runtime.transform_amis,
                CUDA13_TRANSFORM_AMI: HostDriver(driver=580, cuda="13.0"),
            }
        }
    )
    patched = catalog.model_copy(update={"runtime": runtime})
    monkeypatch.setattr(peagle.planning.deployment_rules, "load_catalog", lambda: patched)
    return CUDA13_TRANSFORM_AMI


def job_argv(tmp_path, *extra: str) -> list[str]:
    """`peagle batch` for one local record uploaded to s3://my-batch-io/in/, output to .../out/."""
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"prompt": "Summarise this.", "max_tokens": 32}\n', encoding="utf-8")
    return [
        "batch",
        "--input",
        str(prompts),
        "--upload-to",
        "s3://my-batch-io/in/",
        "--output",
        "s3://my-batch-io/out/",
        *extra,
    ]
