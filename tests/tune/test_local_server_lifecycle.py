"""`peagle local` as tune's and capacity's child (peagle/local/served.py): a server that ends during its
start is reported at once with its exit status and its log, not waited on for the ready timeout.

The child is the real `peagle local`, refusing an option before it starts anything (no vLLM needed).
The ready, SIGTERM and stop paths with a real engine are tests/tune/test_tune_signals.py and
test_tune_choice.py's served run."""

from __future__ import annotations

import time

import pytest

from peagle.local.served import READY_TIMEOUT_SECONDS, LocalServerFailed, serve_local


def test_a_server_that_exits_while_starting_fails_at_once_naming_its_status_and_log(tmp_path, capsys):
    log_path = tmp_path / "server.log"
    started = time.monotonic()

    with (
        pytest.raises(LocalServerFailed) as failure,
        serve_local(["--speculative-tokens", "many"], log_path=log_path, label="K=many", parent="tune"),
    ):
        raise AssertionError("a server that refused its options was reported ready")

    assert time.monotonic() - started < READY_TIMEOUT_SECONDS / 4
    assert str(failure.value) == f"K=many: the server exited with status 2; see {log_path}"
    assert "invalid _non_negative_int value: 'many'" in log_path.read_text()
    announced = capsys.readouterr().err
    assert announced.startswith("tune: serving K=many: peagle local --port ") and f"(log {log_path})" in announced
