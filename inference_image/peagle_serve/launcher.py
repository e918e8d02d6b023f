"""Start vLLM's OpenAI server, hold back /ping until it truly serves, supervise it.

Sequence: settings and plan (exit 2 on any config problem) -> start vLLM in its own
session -> wait for /health (exit 4) -> warm-up + speculation self-check (exit 3) ->
open the /ping gate -> KPI line every interval -> wait. Both waits share one budget,
``PEAGLE_STARTUP_TIMEOUT_SECONDS`` (SageMaker's health-check timeout; see
``settings.StartupDeadlines``), so the launcher's own error is logged before SageMaker
gives up on /ping. SIGTERM/SIGINT go to vLLM, which drains in-flight requests for
``PEAGLE_SHUTDOWN_DRAIN_SECONDS``; if vLLM dies on its own the launcher exits non-zero
(SageMaker then replaces the instance).
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from . import readiness, vllm_args, vllm_corrections
from .errors import (
    EXIT_CONFIG_ERROR,
    EXIT_ENGINE_DIED,
    EXIT_SELF_CHECK_FAILED,
    EXIT_STARTUP_TIMEOUT,
    ConfigError,
    SelfCheckError,
)
from .hub_token import hub_token_environment
from .kpi import KpiReporter
from .launch_plan import LaunchPlan, build_launch_plan
from .local_http import get_text
from .self_check import run_self_check
from .settings import STARTUP_MARGIN_SECONDS, LauncherSettings, StartupDeadlines, load_settings

log = logging.getLogger("peagle_serve")

_HEALTH_POLL_SECONDS = 1.0


def configure_logging() -> None:
    if not log.handlers:
        handler = logging.StreamHandler()  # stderr; stdout carries the KPI lines
        handler.setFormatter(logging.Formatter("%(asctime)s peagle-launcher %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


def run(passthrough: list[str], environ: Mapping[str, str]) -> int:
    """Run the server until it stops; returns the process exit code."""
    started_at = time.monotonic()  # SageMaker's start-up clock is already running
    configure_logging()
    try:
        settings = load_settings(environ)
        plan = build_launch_plan(settings, environ, passthrough)
        corrections, correction_note = vllm_corrections.corrections_to_request(
            vllm_corrections.installed_vllm(), enabled=settings.vllm_cpu_corrections
        )
        problem = vllm_corrections.plugin_problem(corrections)
        if problem:
            raise ConfigError(problem)
        secrets = hub_token_environment(settings.hf_token_secret_arn)
    except ConfigError as error:
        log.error("configuration error, nothing started:")
        for problem in error.problems:
            log.error("  - %s", problem)
        return EXIT_CONFIG_ERROR
    for correction in corrections:
        log.warning("%s", vllm_corrections.describe(correction))
    if correction_note:
        log.warning("%s", correction_note)
    deadlines = StartupDeadlines.starting_at(started_at, settings)
    engine_environment = vllm_corrections.request_corrections({**environ, **secrets}, corrections)
    return _Supervisor(settings, plan, engine_environment, deadlines).run()


class _Supervisor:
    def __init__(
        self,
        settings: LauncherSettings,
        plan: LaunchPlan,
        environ: Mapping[str, str],
        deadlines: StartupDeadlines,
    ):
        self.settings = settings
        self.plan = plan
        self.environ = environ  # vLLM's environment (may hold HF_TOKEN: never log it)
        self.deadlines = deadlines
        self.process: subprocess.Popen[bytes] | None = None  # set by _start; the signal handler reads it
        self.shutdown_requested = False
        self._interrupts = 0

    # --- lifecycle -------------------------------------------------------------
    def run(self) -> int:
        state_dir = Path(tempfile.mkdtemp(prefix="peagle-serve-"))
        ready_file = state_dir / "ready"
        previous_handlers = self._install_signal_handlers()
        reporter = None
        try:
            engine = self._start(ready_file)
            status = self._wait_until_healthy(engine)
            if status is not None:
                return status
            if self.settings.speculation_self_check:
                # Besides SelfCheckError: the engine unreachable (OSError), a response cut
                # short (HTTPException) or /metrics that is not Prometheus text (ValueError).
                try:
                    run_self_check(
                        self.plan,
                        self.settings,
                        deadline=self.deadlines.self_check_deadline(time.monotonic(), self.settings),
                    )
                except (SelfCheckError, OSError, http.client.HTTPException, ValueError) as error:
                    if self.shutdown_requested:
                        return self._finish_shutdown(engine)
                    log.error("PEAGLE SELF-CHECK FAILED, stopping: %s", error)
                    self._stop_engine()
                    return EXIT_SELF_CHECK_FAILED
            ready_file.touch()
            log.info(
                "ready: %s serving on %s (speculative tokens: %d)",
                self.plan.model_pair,
                self.plan.local_url,
                self.plan.speculative_tokens,
            )
            if self.settings.kpi_interval_seconds > 0:
                reporter = KpiReporter(
                    self.plan.local_url,
                    self.settings.kpi_interval_seconds,
                    model_pair=self.plan.model_pair,
                    speculative_tokens=self.plan.speculative_tokens,
                    endpoint_name=self.settings.endpoint_name,
                    variant_name=self.settings.variant_name,
                )
                reporter.start()
            returncode = engine.wait()
            if reporter:
                reporter.stop()
            if self.shutdown_requested:
                return self._finish_shutdown(engine)
            return self._engine_died(returncode)
        finally:
            if reporter:
                reporter.stop()
            self._kill_leftovers()
            self._restore_signal_handlers(previous_handlers)
            shutil.rmtree(state_dir, ignore_errors=True)

    def _start(self, ready_file: Path) -> subprocess.Popen[bytes]:
        env = dict(self.environ)
        env[readiness.READY_FILE_ENV] = str(ready_file)
        # vLLM imports the /ping gate by module path; make sure it can find us.
        package_parent = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
        env.setdefault("PYTHONUNBUFFERED", "1")
        log.info(
            "start-up budget %.0f s (PEAGLE_STARTUP_TIMEOUT_SECONDS): the engine has %.0f s to "
            "become healthy, the self-check %.0f s, %.0f s kept as margin",
            self.settings.startup_timeout_seconds,
            self.deadlines.engine_healthy_by - time.monotonic(),
            self.settings.self_check_reserve_seconds,
            STARTUP_MARGIN_SECONDS,
        )
        log.info("starting vLLM: %s", " ".join(vllm_args.redact(self.plan.argv[1:])))
        if self.settings.request_log_sampling_percent > 0:
            log.info(
                "request log on: %d%% of the completion and chat requests answered 2xx go to stdout as "
                "peagle_request lines (prompt or messages and sampling parameters only; "
                "PEAGLE_REQUEST_LOG_SAMPLING_PERCENT)",
                self.settings.request_log_sampling_percent,
            )
        # Own session: a terminal's Ctrl-C reaches only the launcher, which forwards
        # one SIGTERM, so vLLM drains instead of being hit twice.
        self.process = subprocess.Popen(self.plan.argv, env=env, start_new_session=True)
        if self.shutdown_requested:
            # SIGTERM came before there was an engine to forward it to: forward it now, or the
            # engine would serve on until SageMaker's SIGKILL.
            self.process.send_signal(signal.SIGTERM)
        return self.process

    def _wait_until_healthy(self, engine: subprocess.Popen[bytes]) -> int | None:
        """None once /health is 200; otherwise the exit code to return."""
        deadline = self.deadlines.engine_healthy_by
        while True:
            returncode = engine.poll()
            if returncode is not None:
                if self.shutdown_requested:
                    return self._finish_shutdown(engine)
                log.error("vLLM exited during start-up with status %s; its log above says why", returncode)
                return _nonzero(returncode)
            if self.shutdown_requested:
                return self._finish_shutdown(engine)
            try:
                status, _ = get_text(self.plan.local_url + "/health", timeout=2.0)
                if status == 200:
                    return None
            except OSError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                log.error(
                    "vLLM not healthy after %.0f s, the engine's share of the %.0f s start-up "
                    "budget (PEAGLE_STARTUP_TIMEOUT_SECONDS less PEAGLE_SELF_CHECK_TIMEOUT_SECONDS "
                    "and a %.0f s margin); stopping. Raise the variant's "
                    "ContainerStartupHealthCheckTimeoutInSeconds, or find in vLLM's log above "
                    "what is slow",
                    self.settings.engine_start_seconds,
                    self.settings.startup_timeout_seconds,
                    STARTUP_MARGIN_SECONDS,
                )
                self._stop_engine()
                return EXIT_STARTUP_TIMEOUT
            time.sleep(_HEALTH_POLL_SECONDS)

    def _finish_shutdown(self, engine: subprocess.Popen[bytes]) -> int:
        returncode = engine.wait()
        log.info("vLLM stopped (status %s) after shutdown request", returncode)
        return 0 if returncode in (0, -signal.SIGTERM, -signal.SIGINT) else _nonzero(returncode)

    def _engine_died(self, returncode: int) -> int:
        log.error("vLLM exited unexpectedly with status %s; exiting non-zero so the instance is replaced", returncode)
        return _nonzero(returncode) if returncode != 0 else EXIT_ENGINE_DIED

    def _stop_engine(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=self.settings.shutdown_drain_seconds + 5)

    def _kill_leftovers(self) -> None:
        # vLLM's engine-core and worker processes share its session; take down any
        # that outlived the API server (e.g. after a crash).
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        if self.process.poll() is None:
            self.process.wait()

    # --- signals ---------------------------------------------------------------
    def _install_signal_handlers(self) -> dict:
        previous = {}
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, self._on_signal)
        return previous

    @staticmethod
    def _restore_signal_handlers(previous: dict) -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def _on_signal(self, signum: int, _frame) -> None:
        self._interrupts += 1
        self.shutdown_requested = True
        if self.process is None or self.process.poll() is not None:
            return
        if self._interrupts == 1:
            log.info(
                "%s received: vLLM drains in-flight requests for up to %d s",
                signal.Signals(signum).name,
                self.settings.shutdown_drain_seconds,
            )
            self.process.send_signal(signal.SIGTERM)
        else:
            log.warning("second interrupt: killing vLLM now")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)


def _nonzero(returncode: int) -> int:
    # A signal death (-N) becomes the shell convention 128+N; never report 0.
    if returncode < 0:
        return 128 - returncode
    return returncode or EXIT_ENGINE_DIED
