"""`peagle prompts` without AWS credentials ends as every command that calls AWS does: one line, exit 3
(peagle/cli_errors.py, ExitCode.AWS), no traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from local_engine import REPO_ROOT

from peagle.cli_errors import ExitCode


def _environment_without_aws() -> dict[str, str]:
    """No credentials anywhere botocore looks (variables, files, instance metadata)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    env.update(
        AWS_SHARED_CREDENTIALS_FILE="/nonexistent", AWS_CONFIG_FILE="/nonexistent", AWS_EC2_METADATA_DISABLED="true"
    )
    return env


@pytest.mark.parametrize(
    "source",
    [["s3://capture-bucket/datacapture/"], ["--from-logs", "/aws/sagemaker/Endpoints/peagle-endpoint", "--days", "1"]],
    ids=["data-capture", "request-log"],
)
def test_no_credentials_exits_3_in_one_line(tmp_path, source):
    finished = subprocess.run(
        [sys.executable, "-m", "peagle.cli", "prompts", *source, "--out", str(tmp_path / "p.jsonl")]
        + ["--region", "us-east-1"],
        cwd=REPO_ROOT,
        env=_environment_without_aws(),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert finished.returncode == ExitCode.AWS == 3, finished.stderr
    lines = finished.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no usable AWS credentials"), finished.stderr
    assert not (tmp_path / "p.jsonl").exists()
