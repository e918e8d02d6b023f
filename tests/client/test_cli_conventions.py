"""Conventions every `peagle` command shares: --version, closed sets refused by argparse with
the valid values (exit 2, before any work), one target at a time, and Ctrl-C ending in one
line and exit 130 instead of a traceback."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
from importlib.metadata import version

import pytest

from peagle.catalog import ProfileName
from peagle.cli import main
from peagle.cli_errors import ExitCode


def _parse_error(capsys, argv: list[str]) -> str:
    """argparse's exit code 2 and its message (stderr)."""
    with pytest.raises(SystemExit) as raised:
        main(argv)
    assert raised.value.code == 2
    return capsys.readouterr().err


def test_version_is_the_installed_distribution_version(capsys):
    with pytest.raises(SystemExit) as raised:
        main(["--version"])

    assert raised.value.code == 0
    assert capsys.readouterr().out == f"peagle {version('peagle-sagemaker')}\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["invoke", "--url", "http://127.0.0.1:1", "--prompt", "hi"],
        ["bench", "--url", "http://127.0.0.1:1", "--out", "never-written"],
        ["plan", "--model", "gpt-oss-20b", "--instance", "ml.g6e.xlarge"],
    ],
    ids=["invoke", "bench", "plan"],
)
def test_an_unknown_profile_is_refused_with_the_catalog_profiles(capsys, argv):
    err = _parse_error(capsys, [*argv, "--profile", "chat"])

    assert "argument --profile: invalid choice: 'chat'" in err
    for profile in ProfileName:  # the choices are the catalog's, not a copy
        assert profile.value in err.split("invalid choice")[1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["invoke", "--url", "http://127.0.0.1:1", "--endpoint", "e", "--prompt", "hi"], "not allowed with"),
        (["invoke", "--prompt", "hi"], "one of the arguments --url --endpoint is required"),
        (["smoke", "--url", "http://127.0.0.1:1", "--endpoint", "e"], "not allowed with"),
    ],
)
def test_url_and_endpoint_exclude_each_other(capsys, argv, message):
    err = _parse_error(capsys, argv)

    assert message in err and "--endpoint" in err


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("command", "patched", "argv"),
    [
        ("invoke", "peagle.client.cli.build_client", ["--url", "http://127.0.0.1:1", "--prompt", "hi"]),
        ("stage", "peagle.stage.cli._stage", ["--dry-run"]),
        (
            "plan",
            "peagle.commands_plan.plan_checked_deployment",
            ["--model", "gpt-oss-20b", "--instance", "ml.g6e.xlarge"],
        ),
    ],
)
def test_ctrl_c_ends_with_one_line_and_exit_130(monkeypatch, capsys, command, patched, argv):
    monkeypatch.setattr(patched, _interrupt)

    try:
        exit_code = main([command, *argv])
    except KeyboardInterrupt:
        pytest.fail(f"Ctrl-C escaped `peagle {command}` (a traceback for the user)")

    assert exit_code == 130
    assert capsys.readouterr().err.splitlines() == [f"interrupted: peagle {command} stopped (Ctrl-C)"]


def test_a_command_leaves_python_s_sigpipe_handling_alone(capsys):
    """`peagle` once set SIGPIPE to its default disposition for `| head`; in a process that also writes to sockets
    (bench, capacity, invoke, and this test session) a peer closing a connection then killed the process with no
    word (exit 141). Python ignores SIGPIPE so that "write errors on pipes and sockets can be reported as ordinary
    Python exceptions" (Python docs, signal, General rules)."""
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN
    assert main(["catalog"]) == 0
    capsys.readouterr()
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN


def test_output_piped_into_a_reader_that_stops_early_ends_quietly():
    """`peagle catalog | head -1`: the reader goes away, the command ends with 141 (128 + SIGPIPE) and no traceback."""
    pipeline = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {shlex.quote(sys.executable)} -m peagle catalog | head -c 1 >/dev/null"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert pipeline.returncode == ExitCode.OUTPUT_CLOSED, pipeline.stderr
    assert pipeline.stderr == ""


def test_a_broken_pipe_that_is_not_standard_output_is_the_command_s_error(monkeypatch):
    """A socket write that fails (a server closing the connection) is not hidden as a closed output."""

    def broken_socket(args):
        raise BrokenPipeError(32, "Broken pipe (a socket)")

    monkeypatch.setattr("peagle.commands_plan.run_catalog", broken_socket)
    with pytest.raises(BrokenPipeError, match="a socket"):
        main(["catalog"])
