"""The launcher as a supervisor: what it does when the engine dies, hangs, or is stopped.

The subject is ``launcher._Supervisor``, run unmodified in its own process by
``supervise_fake_engine.py``; ``fake_engine.py`` stands in for vLLM and misbehaves on
request (see their docstrings for the one seam). Each test takes seconds; every wait is
bounded; all traffic goes to 127.0.0.1 on a free port. The real engine's start, drain and
self-check are covered by the other serving tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from local_engine import REPO_ROOT, LocalServer, free_port, process_gone, spawn
from serving_requests import metrics, post_json

from peagle_serve.contract import KPI_EVENT, VllmMetric
from peagle_serve.errors import EXIT_ENGINE_DIED, EXIT_SELF_CHECK_FAILED, EXIT_STARTUP_TIMEOUT

HERE = Path(__file__).resolve().parent
SUPERVISE = HERE / "supervise_fake_engine.py"
WAIT_SECONDS = 15.0  # the longest any single wait here may take; each is a few seconds when green
DRAIN_SECONDS = 10  # PEAGLE_SHUTDOWN_DRAIN_SECONDS for every launch here


def wait_for(condition: Callable[[], object], what: str, server: LocalServer, timeout: float = WAIT_SECONDS):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}; launcher output:\n{server.output_tail()}")


def read_pid(pid_dir: Path, name: str, server: LocalServer) -> int:
    path = pid_dir / name
    wait_for(lambda: path.is_file() and path.read_text().strip(), f"{path}", server)
    return int(path.read_text())


class Launch:
    """One launcher process over a fake engine, and where the engine wrote its pids."""

    def __init__(self, server: LocalServer, pid_dir: Path):
        self.server = server
        self.process = server.process
        self.pid_dir = pid_dir

    def engine_pid(self) -> int:
        return read_pid(self.pid_dir, "engine.pid", self.server)

    def child_pid(self) -> int:
        return read_pid(self.pid_dir, "child.pid", self.server)

    def exit_code(self, timeout: float = WAIT_SECONDS) -> int:
        return self.process.wait(timeout=timeout)

    def log(self) -> str:
        return self.server.launcher_log()


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Callable[..., Launch]]:
    """``launch(startup_timeout_seconds=None, **env)``: the supervisor over a fake engine.

    A speculative model pair (K=3) on disk, so the launch plan and the self-check take
    the speculation path; the self-check is on, the KPI line off, unless ``env`` says
    otherwise. Everything started is killed at the end, also when a test failed.
    """
    model_root = tmp_path / "model"
    (model_root / "target").mkdir(parents=True)
    (model_root / "target" / "config.json").write_text("{}")
    (model_root / "drafter").mkdir()
    (model_root / "drafter" / "config.json").write_text(json.dumps({"ptd_token_id": 0}))
    launches: list[Launch] = []

    def start(startup_timeout_seconds: float | None = None, **env: str) -> Launch:
        port = free_port()
        pid_dir = tmp_path / f"pids-{len(launches)}"
        pid_dir.mkdir()
        command = [sys.executable, str(SUPERVISE)]
        if startup_timeout_seconds is not None:
            command += ["--startup-timeout-seconds", str(startup_timeout_seconds)]
        environment = {
            "PEAGLE_MODEL_ROOT": str(model_root),
            "PEAGLE_MODEL_PAIR": "fake-pair",
            "PEAGLE_HOST": "127.0.0.1",
            "PEAGLE_PORT": str(port),
            "PEAGLE_SHUTDOWN_DRAIN_SECONDS": str(DRAIN_SECONDS),
            "PEAGLE_STARTUP_TIMEOUT_SECONDS": "120",
            "PEAGLE_SELF_CHECK_TIMEOUT_SECONDS": "5",
            "PEAGLE_KPI_INTERVAL_SECONDS": "0",
            "SM_VLLM_SERVED_MODEL_NAME": "fake-model",
            "SM_VLLM_SPECULATIVE_CONFIG": json.dumps(
                {"method": "eagle3", "model": "drafter", "num_speculative_tokens": 3, "parallel_drafting": True}
            ),
            "FAKE_ENGINE_PID_DIR": str(pid_dir),
            **env,
        }
        result = Launch(spawn(command, port=port, env=environment), pid_dir)
        launches.append(result)
        return result

    yield start
    for each in launches:
        pids = [each.process.pid]  # the launcher leads its own session (spawn)
        pids += [int(p.read_text()) for p in each.pid_dir.glob("*.pid") if p.read_text().strip()]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)  # the engine leads its session; its child is in it
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            each.process.wait(timeout=5)


# --- 1. the engine dies after ready -------------------------------------------------------


@pytest.mark.parametrize(
    ("engine_exit", "engine_status", "launcher_exit"),
    [("0", "0", EXIT_ENGINE_DIED), ("7", "7", 7), ("SIGKILL", "-9", 128 + signal.SIGKILL)],
    ids=["exit-0", "exit-7", "sigkill"],
)
def test_supervision_engine_death_after_ready_exits_non_zero_and_says_why(
    launch, engine_exit, engine_status, launcher_exit
):
    run = launch(FAKE_ENGINE_EXIT_AFTER_READY_SECONDS="0.5", FAKE_ENGINE_EXIT_STATUS=engine_exit)
    assert run.exit_code() == launcher_exit
    log = run.log()
    assert "speculation self-check passed" in log and "ready: fake-pair serving" in log
    assert f"vLLM exited unexpectedly with status {engine_status}; exiting non-zero so the instance is replaced" in log


# --- 2. the engine never becomes healthy --------------------------------------------------


def test_supervision_engine_never_healthy_exits_4_within_the_startup_budget(launch):
    # Budget 36 s = 2 s for the engine + 4 s self-check reserve + the 30 s margin
    # (settings.StartupDeadlines): exit 4 once the engine's 2 s are up, and before the
    # 6 s at which the launcher's own part of the budget ends.
    started = time.monotonic()
    run = launch(startup_timeout_seconds=36, PEAGLE_SELF_CHECK_TIMEOUT_SECONDS="4", FAKE_ENGINE_NEVER_HEALTHY="1")
    assert run.exit_code() == EXIT_STARTUP_TIMEOUT, run.server.output_tail()
    elapsed = time.monotonic() - started
    assert 2.0 <= elapsed < 6.0, elapsed
    assert "vLLM not healthy after 2 s, the engine's share of the 36 s start-up budget" in run.log()
    assert process_gone(run.engine_pid())


# --- 3. SIGTERM drains the request in flight ----------------------------------------------


def test_supervision_sigterm_lets_the_in_flight_request_finish_then_exits_0(launch):
    run = launch()
    run.server.wait_until_ready(timeout=WAIT_SECONDS)
    result: dict = {}

    def slow_request():
        result["status"], result["body"] = post_json(
            run.server.url + "/v1/completions",
            {"model": "fake-model", "prompt": "drain", "max_tokens": 8, "fake_seconds": 2.0},
            timeout=WAIT_SECONDS,
        )
        result["answered_at"] = time.monotonic()

    request = threading.Thread(target=slow_request)
    request.start()
    wait_for(
        lambda: metrics(run.server.url).total(VllmMetric.REQUESTS_RUNNING) >= 1, "the request in flight", run.server
    )
    sigterm_at = time.monotonic()
    run.process.send_signal(signal.SIGTERM)  # what SageMaker sends on scale-in
    request.join(timeout=WAIT_SECONDS)
    assert result.get("status") == 200, result
    assert result["body"]["usage"]["completion_tokens"] == 8
    assert result["answered_at"] > sigterm_at + 0.5  # it was still running when the signal came
    assert run.exit_code() == 0
    log = run.log()
    assert f"SIGTERM received: vLLM drains in-flight requests for up to {DRAIN_SECONDS} s" in log
    assert "vLLM stopped (status 0) after shutdown request" in log


# --- 4. a second interrupt kills at once ----------------------------------------------------


def test_supervision_second_sigint_kills_an_engine_that_ignores_sigterm(launch):
    run = launch(FAKE_ENGINE_IGNORE_SIGTERM="1")
    run.server.wait_until_ready(timeout=WAIT_SECONDS)
    engine = run.engine_pid()
    run.process.send_signal(signal.SIGINT)
    wait_for(lambda: "SIGINT received" in run.log(), "the first SIGINT to be handled", run.server)
    time.sleep(1.0)
    assert run.process.poll() is None and not process_gone(engine)  # asked to drain, not killed
    second_at = time.monotonic()
    run.process.send_signal(signal.SIGINT)
    assert run.exit_code(timeout=5) == 128 + signal.SIGKILL
    assert time.monotonic() - second_at < 3.0  # promptly, not after the 10 s drain
    assert "second interrupt: killing vLLM now" in run.log()
    wait_for(lambda: process_gone(engine), "the engine to be gone", run.server, timeout=5)


# --- 5. the KPI line outlives a failing /metrics --------------------------------------------


@pytest.mark.parametrize("fault", ["500", "garbage", "truncated"])
def test_supervision_kpi_reporter_survives_a_failing_metrics_read(launch, tmp_path, fault):
    fault_file = tmp_path / "metrics-fault"
    run = launch(PEAGLE_KPI_INTERVAL_SECONDS="0.3", FAKE_ENGINE_METRICS_FAULT_FILE=str(fault_file))
    server = run.server
    server.wait_until_ready(timeout=WAIT_SECONDS)
    wait_for(lambda: len(server.kpi_records()) >= 1, "a first KPI line", server)

    fault_file.write_text(fault)
    wait_for(lambda: run.log().count("KPI: could not read /metrics") >= 2, "two failed /metrics reads", server)
    lines_during_fault = len(server.kpi_records())
    fault_file.unlink()
    wait_for(lambda: len(server.kpi_records()) >= lines_during_fault + 2, "KPI lines after /metrics recovered", server)

    record = server.kpi_records()[-1]
    assert (record["event"], record["model_pair"], record["speculative_tokens"]) == (KPI_EVENT, "fake-pair", 3)
    assert run.process.poll() is None
    assert server.stop(timeout=WAIT_SECONDS) == 0


# --- 6. nothing of the engine outlives the launcher -----------------------------------------


@pytest.mark.parametrize("how", ["engine-dies", "sigterm"])
def test_supervision_leaves_no_engine_process_behind(launch, how):
    # The fake engine starts a child in its session that ignores SIGTERM and would outlive
    # it, as a stuck vLLM engine-core or worker process can.
    env = {"FAKE_ENGINE_EXIT_AFTER_READY_SECONDS": "0.5"} if how == "engine-dies" else {}
    run = launch(**env)
    child = run.child_pid()
    engine = run.engine_pid()
    if how == "sigterm":
        run.server.wait_until_ready(timeout=WAIT_SECONDS)
        run.process.send_signal(signal.SIGTERM)
    run.exit_code()
    wait_for(lambda: process_gone(child) and process_gone(engine), "the engine's processes to be gone", run.server, 5)


# --- a /metrics fault during the self-check is a self-check failure --------------------------


@pytest.mark.parametrize("fault", ["500", "garbage", "truncated"])
def test_supervision_a_failing_metrics_read_during_the_self_check_fails_it_with_exit_3(launch, tmp_path, fault):
    fault_file = tmp_path / "metrics-fault"
    fault_file.write_text(fault)
    run = launch(FAKE_ENGINE_METRICS_FAULT_FILE=str(fault_file))
    assert run.exit_code() == EXIT_SELF_CHECK_FAILED, run.server.output_tail()
    assert "PEAGLE SELF-CHECK FAILED, stopping:" in run.log()


# --- the image: the launcher runs under an init that reaps ----------------------------------


def test_supervision_image_runs_the_launcher_under_tini():
    # SageMaker runs the ENTRYPOINT as PID 1; tini reaps orphaned engine processes there and
    # passes SIGTERM to the launcher alone (no -g), which forwards it to vLLM and drains.
    dockerfile = (REPO_ROOT / "inference_image" / "Dockerfile").read_text().replace("\\\n", " ")
    instructions = re.findall(r"^(ENTRYPOINT|CMD) (.+)$", dockerfile, re.MULTILINE)
    assert [(name, json.loads(value)) for name, value in instructions] == [
        ("ENTRYPOINT", ["tini", "--", "python3", "-m", "peagle_serve"]),
        ("CMD", ["serve"]),
    ]
    assert re.search(
        r"^RUN apt-get update .*apt-get install -y --no-install-recommends tini .*tini --version$", dockerfile, re.M
    )
