"""Where a benchmark ran: recorded in results.json so numbers are never read without it."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def describe_machine() -> dict[str, str]:
    return {
        "client_machine": f"{_cpu_model()}, {os.cpu_count()} logical CPUs, {_memory_gib()} RAM",
        "client_os": platform.platform(terse=True),
        "python": platform.python_version(),
        # Other work on the machine skews a CPU-served benchmark: record how busy it was.
        "load_average_1m_at_start": f"{os.getloadavg()[0]:.2f}",
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    except OSError:
        pass
    return "unknown"
