"""The launcher's real supervisor with ``fake_engine.py`` in vLLM's place.

``python supervise_fake_engine.py [--startup-timeout-seconds S]``, in the environment a
container would have (``PEAGLE_*``, ``SM_VLLM_*``). It does what ``launcher.run`` does,
through the same functions: settings from ``load_settings``, the launch plan from
``build_launch_plan`` (model directories checked, options assembled), the start-up
deadlines from ``StartupDeadlines``, then ``_Supervisor.run()``, unmodified, in this
process's main thread, so signals sent to this process reach its handlers. Two
substitutions, nothing else:

* the plan's command: ``python -m peagle_serve.vllm_cli serve <model> <options>`` becomes
  ``python fake_engine.py <model> <options>``, the same options vLLM would get;
* ``--startup-timeout-seconds`` replaces ``PEAGLE_STARTUP_TIMEOUT_SECONDS`` after
  validation, so the start-up budget can be seconds: ``load_settings`` rightly refuses a
  budget that leaves a real engine under a minute (``MIN_ENGINE_START_SECONDS``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

from peagle_serve import launcher
from peagle_serve.launch_plan import build_launch_plan
from peagle_serve.settings import StartupDeadlines, load_settings

FAKE_ENGINE = Path(__file__).with_name("fake_engine.py")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--startup-timeout-seconds", type=float)
    options = parser.parse_args(argv)
    started_at = time.monotonic()
    launcher.configure_logging()
    settings = load_settings(os.environ)
    if options.startup_timeout_seconds is not None:
        settings = dataclasses.replace(settings, startup_timeout_seconds=options.startup_timeout_seconds)
    plan = build_launch_plan(settings, os.environ, [])
    vllm_options = plan.argv[plan.argv.index(plan.model) :]  # the model, then every option
    plan = dataclasses.replace(plan, argv=[sys.executable, str(FAKE_ENGINE), *vllm_options])
    deadlines = StartupDeadlines.starting_at(started_at, settings)
    return launcher._Supervisor(settings, plan, os.environ, deadlines).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
