"""Conventions every `peagle` command shares: --version, closed sets refused by argparse with
the valid values (exit 2, before any work), one target at a time, and Ctrl-C ending in one
line and exit 130 instead of a traceback."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from peagle.catalog import ProfileName
from peagle.cli import main


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
