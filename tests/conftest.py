"""Shared fixtures: the synthesized CDK app, and a real vLLM (CPU build) server.

``cdk_synthesized`` is the one synth cache of the session: tests/infra, tests/preflight and
tests/simulate each ask it for their apps, so an app that two folders need is synthesized once.

Engine start-ups cost ~30 s each on 2 cores, so the whole suite starts few: one
session-wide P-EAGLE server (``local_server``, K=4) that every folder shares, plus
the few that a test must own (speculation off, a failing self-check). Servers are
started exactly as a user does, ``peagle local`` (which runs the container's
launcher), on a free port: never 8080, where a user's `make local` may be running.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from local_engine import TEST_KPI_INTERVAL_SECONDS, LocalServer, free_port, peagle_local_command, spawn


@pytest.fixture(scope="session")
def cdk_synthesized(tmp_path_factory):
    """``cdk_synthesized(**context)`` -> cdk_synth.SynthResult, each distinct app synthesized once.

    Imported here, not at the top: the serving tests need no CDK app (importing it takes ~1.5 s).
    """
    infra = str(Path(__file__).resolve().parent / "infra")
    if infra not in sys.path:
        sys.path.insert(0, infra)
    from cdk_synth import SynthCache

    return SynthCache(lambda: tmp_path_factory.mktemp("synth"))


@pytest.fixture(scope="session")
def tiny_pair():
    """The tiny target + P-EAGLE drafter (built once, where `peagle local` keeps it)."""
    from peagle.local.cli import default_models_dir
    from peagle.local.tiny_pair import ensure_tiny_pair

    return ensure_tiny_pair(default_models_dir())


@pytest.fixture(scope="session")
def local_server_factory(tiny_pair) -> Iterator[Callable[..., LocalServer]]:
    """``start(speculative_tokens=4, wait=True, extra_args=(), env=None)`` -> LocalServer.

    Starts `peagle local` on a free port with a short KPI interval; every server
    started is stopped at the end of the session (or earlier by the test).
    """
    started: list[LocalServer] = []

    def start(
        *,
        speculative_tokens: int = 4,
        wait: bool = True,
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> LocalServer:
        port = free_port()
        server = spawn(
            peagle_local_command(
                "--port",
                str(port),
                "--speculative-tokens",
                str(speculative_tokens),
                "--models-dir",
                str(tiny_pair.root),
                "--kpi-interval-seconds",
                str(TEST_KPI_INTERVAL_SECONDS),
                *extra_args,
            ),
            port=port,
            env=env,
        )
        started.append(server)
        if wait:
            server.wait_until_ready()
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def local_server(local_server_factory) -> LocalServer:
    """The shared P-EAGLE (K=4) server: ``.url``, ``.kpi_records()``, ``.stdout_lines``."""
    return local_server_factory(speculative_tokens=4)
