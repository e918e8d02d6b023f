"""`peagle tune` killed with SIGTERM (as `timeout`, a CI runner or `kill` do) stops the server it
started for the candidate before it exits, instead of leaving a vLLM engine running on its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine

REPO_ROOT = Path(__file__).resolve().parents[2]


def _processes() -> list[tuple[int, int, str]]:
    """(pid, parent pid, command line) of every live process (zombies left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        # /proc/<pid>/stat: "pid (comm) state ppid ...", comm may hold spaces and parentheses.
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        if state != "Z":
            found.append((int(entry.name), int(ppid), command))
    return found


def _descendants(root: int) -> dict[int, str]:
    """pid -> command line of every live process below ``root``."""
    children: dict[int, list[tuple[int, str]]] = {}
    for pid, ppid, command in _processes():
        children.setdefault(ppid, []).append((pid, command))
    found, todo = {}, [root]
    while todo:
        for pid, command in children.get(todo.pop(), []):
            found[pid] = command
            todo.append(pid)
    return found


def _engine_started_under(tune: subprocess.Popen, timeout: float = 120.0) -> dict[int, str]:
    """tune's descendants once vLLM runs under the candidate's server (the launcher starts it in a
    session of its own, so a process group would not find it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        below = _descendants(tune.pid)
        if any("vllm_cli serve" in command for command in below.values()):
            time.sleep(3.0)  # and vLLM's own engine process
            return _descendants(tune.pid)
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
        alive = {pid for pid, *_ in _processes()}
        assert {pid: command for pid, command in started.items() if pid in alive} == {}
    finally:
        tune.kill()
        for pid in started.keys() & {pid for pid, *_ in _processes()}:
            os.kill(pid, signal.SIGKILL)
