"""`peagle bench` refuses what it cannot run before sending anything (exit 2, with the reason)."""

from __future__ import annotations

import re

import pytest

from peagle.cli import main


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        (["--url", "http://127.0.0.1:1", "--label", "a", "--label", "b"], "one per --url/--endpoint"),
        (["--url", "http://127.0.0.1:1", "--concurrency", "1,x"], "comma-separated integers"),
        (["--url", "http://127.0.0.1:1", "--buckets", "huge"], "valid: short, medium, long, xlong"),
        (["--url", "http://127.0.0.1:1", "--instance-type", "ml.nope"], "catalog has: .*ml.g6e.xlarge"),
        ([], "nothing to report"),
    ],
)
def test_bad_arguments_exit_2_with_the_reason(arguments, reason, tmp_path, capsys):
    assert main(["bench", *arguments, "--out", str(tmp_path / "out")]) == 2
    assert re.search(reason, capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


def test_a_server_that_is_down_fails_the_warm_up_with_exit_1(tmp_path, capsys):
    exit_code = main(["bench", "--url", "http://127.0.0.1:1", "--max-attempts", "1", "--out", str(tmp_path / "out")])
    assert exit_code == 1
    assert "warm-up request failed: ConnectionFailedError" in capsys.readouterr().err
