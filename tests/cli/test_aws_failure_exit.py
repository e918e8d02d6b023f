"""A command that cannot call AWS (no credentials) exits 3, ExitCode.AWS (peagle/cli_errors.py), whichever command
it is: a script tells "AWS refused" from bad input (2) and from a failed job or request (1) by the code alone. Each
case runs the real `peagle` in a subprocess with no credentials anywhere boto3 looks and no metadata service."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from peagle.cli_errors import ExitCode

COMMANDS = {
    "invoke": ["invoke", "--endpoint", "my-endpoint", "--prompt", "hi"],
    "smoke": ["smoke", "--endpoint", "my-endpoint"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_without_aws_credentials_exits_3(command: str, tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_DEFAULT_REGION="us-east-1",
    )
    done = subprocess.run(
        [sys.executable, "-m", "peagle", *COMMANDS[command]],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == ExitCode.AWS, done.stderr
    assert "error: " in done.stderr and "Traceback" not in done.stderr
