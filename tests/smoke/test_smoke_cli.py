"""`peagle smoke` as a user runs it, without AWS: argument errors and missing credentials
end with one line and a documented exit code, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from local_engine import REPO_ROOT

from peagle.cli import main


def environment_without_aws() -> dict[str, str]:
    """No credentials anywhere botocore looks (variables, files, instance metadata)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    env.update(
        AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
        AWS_CONFIG_FILE="/nonexistent",
        AWS_EC2_METADATA_DISABLED="true",
    )
    return env


def run_peagle(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "peagle.cli", *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_no_credentials_is_one_line_and_exit_3():
    finished = run_peagle(
        "smoke", "--endpoint", "demo-endpoint", "--region", "us-east-1", env=environment_without_aws()
    )

    assert finished.returncode == 3, finished.stderr
    assert finished.stdout == ""
    assert finished.stderr.splitlines() == [
        "error: no AWS credentials found: run 'aws configure' (or `aws sso login`), or set AWS_PROFILE "
        "or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
    ]


def test_no_region_is_one_line_and_exit_3():
    finished = run_peagle("smoke", "--endpoint", "demo-endpoint", env=environment_without_aws())

    assert finished.returncode == 3, finished.stderr
    assert len(finished.stderr.splitlines()) == 1 and "--region" in finished.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --endpoint NAME"),
        (["--endpoint", "x", "--kpi-wait-seconds", "-1"], "--kpi-wait-seconds must be >= 0"),
        (["--deployment", "no/such/file.yaml"], "not found"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args, message, capsys):
    assert main(["smoke", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch, capsys):
    import peagle.smoke.runner as runner

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_smoke", interrupted)
    try:
        exit_code = main(["smoke", "--url", "http://127.0.0.1:1"])
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped `peagle smoke` (a traceback for the user)")
    assert exit_code == 130
    assert capsys.readouterr().err.splitlines() == ["interrupted: nothing was changed; the checks so far are above"]
