"""`peagle local` run as a child of another command (`peagle tune`, `peagle capacity`): started on a
free port, waited for until `/ping` answers, and stopped however its parent ends.

The parent measures the server and must never leave it behind: the server runs in a session of its
own, so that a terminal's Ctrl-C reaches the parent (KeyboardInterrupt) and not the server directly,
and the parent stops it on the way out. SIGTERM and SIGHUP would end the parent without that
clean-up and leave the server running (seen: `timeout` killed tune, the engine lived on), so while
a server runs they raise SystemExit and take the same way out.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

READY_TIMEOUT_SECONDS = 300.0
# The launcher drains in-flight requests on SIGTERM, then exits; past this it is killed.
STOP_TIMEOUT_SECONDS = 60.0


class LocalServerFailed(RuntimeError):
    """The server exited or did not become ready; the message names its log."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def serve_local(options: list[str], *, log_path: Path, label: str, parent: str) -> Iterator[str]:
    """Run `peagle local OPTIONS` on a free port, its output in ``log_path``; yields its URL once ready.
    ``label`` names the server in messages, ``parent`` the command that started it."""
    port = free_port()
    command = [sys.executable, "-m", "peagle", "local", "--port", str(port), *options]
    url = f"http://127.0.0.1:{port}"
    print(f"{parent}: serving {label}: {' '.join(command[2:])} (log {log_path})", file=sys.stderr)
    with log_path.open("w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            with _termination_raises(parent):
                _wait_ready(server, url, label, log_path)
                yield url
        finally:
            _stop(server)


@contextmanager
def _termination_raises(parent: str) -> Iterator[None]:
    """SIGTERM / SIGHUP raise SystemExit(128 + signal) while inside (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def leave(signum: int, frame: object) -> None:
        print(f"{parent}: {signal.Signals(signum).name} received: stopping the server, then exiting", file=sys.stderr)
        raise SystemExit(128 + signum)

    previous = {number: signal.signal(number, leave) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _wait_ready(server: subprocess.Popen, url: str, label: str, log_path: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise LocalServerFailed(f"{label}: the server exited with status {server.returncode}; see {log_path}")
        try:
            with urllib.request.urlopen(url + "/ping", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1.0)
    raise LocalServerFailed(f"{label}: not ready after {READY_TIMEOUT_SECONDS:.0f} s; see {log_path}")


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
