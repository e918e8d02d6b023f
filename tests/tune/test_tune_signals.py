"""`peagle tune` killed with SIGTERM (as `timeout`, a CI runner or `kill` do) stops the server it
started for the candidate before it exits, instead of leaving a vLLM engine running on its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from local_engine import REPO_ROOT, descendants, process_gone

pytestmark = pytest.mark.engine


def _engine_started_under(tune: subprocess.Popen, timeout: float = 120.0) -> dict[int, str]:
    """tune's descendants once vLLM runs under the candidate's server (the launcher starts it in a
    session of its own, so a process group would not find it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        below = descendants(tune.pid)
        if any("vllm_cli serve" in command for command in below.values()):
            time.sleep(3.0)  # and vLLM's own engine process
            return descendants(tune.pid)
        assert tune.poll() is None, tune.communicate()[1]
        time.sleep(0.2)
    raise AssertionError("no vLLM engine started under tune")


def test_sigterm_stops_the_candidate_server_before_tune_exits(tiny_pair, tmp_path):
    argv = ["tune", "--pair", "tiny", "--k", "0", "--concurrency", "1", "--requests", "1", "--buckets", "short"]
    tune = subprocess.Popen(
        [sys.executable, "-m", "peagle", *argv, "--out", str(tmp_path / "out")],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = _engine_started_under(tune)
    try:
        assert any("peagle local" in command for command in started.values()), started
        tune.send_signal(signal.SIGTERM)
        _, err = tune.communicate(timeout=120)

        assert tune.returncode == 128 + signal.SIGTERM, err
        assert "tune: SIGTERM received: stopping the server, then exiting" in err
        assert {pid: command for pid, command in started.items() if not process_gone(pid)} == {}
    finally:
        tune.kill()
        for pid in started:
            if not process_gone(pid):
                os.kill(pid, signal.SIGKILL)
