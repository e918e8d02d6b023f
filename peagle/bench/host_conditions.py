"""How busy the machine was while a level was measured, and whether that makes the level noisy.

A CPU-served benchmark measures the machine as much as the server: on 2 cores a second engine or a
test suite running beside it changes the answer, not just the noise (measured here: with a second
engine serving load, the server under test got 0.04 of 2 cores and met the SLO on no request).
So every level records what the host did (``HostConditions``) and is judged against a limit
(``BusyLimit``): a noisy level is shown as such by bench, not chosen from by tune, and repeated, then
refused, by capacity.

What counts is the CPU time of *other* work, not the load average: the load average counts the
server under test too (one vLLM CPU engine serving at concurrency 4 keeps both cores of a 2-core
machine runnable, load ~2, on an otherwise idle machine), so "load above the core count" would call a
quiet measurement noisy. From ``/proc/stat`` (proc(5): the "cpu" line's user, nice, system, idle,
iowait, irq, softirq and steal times "in units of USER_HZ") the machine's busy time over the level,
minus that of the server's processes and of this process (``/proc/<pid>/stat`` utime and stime, also
in clock ticks), is what everything else used; steal ("time spent in other operating systems when
running in a virtualized environment") is CPU the hypervisor gave to another machine and counts as
other work. The load average and iowait are recorded beside it. The server's processes are found
from its port (``/proc/net/tcp``: the socket in state 0A, LISTEN, and its inode among the processes'
``/proc/<pid>/fd``) with their descendants (vLLM's engine core); a remote endpoint has none.

Where ``/proc`` is missing (macOS), only the load average is recorded and judged (above the core
count). An open-loop sender's lag is recorded with the conditions, not judged (see below).

Every level also records the CPU (``cpu_model``, ``cpu_flags``): vLLM's CPU build picks its kernels by the
instruction sets /proc/cpuinfo lists, so a figure from a CPU with AVX2 only is not comparable with one from
an AVX-512 CPU (measured here: about 3x apart on the same pair). vllm/cmake/cpu_extension.cmake decides
with ``find_isa(${CPUINFO} "avx2" AVX2_FOUND)``, ``find_isa(${CPUINFO} "avx512f" AVX512_FOUND)`` and, under
AVX-512, ``"avx512_bf16"``, ``"avx512_vnni"`` and ``"amx_bf16"``; on Arm the "Features" line says whether
SVE and BF16 are there.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

PROC = Path("/proc")
SAMPLE_SECONDS = 1.0
# The share of the machine's cores other work may use during a level before the level is noisy.
DEFAULT_OTHER_WORK_LIMIT = 0.25
# The sender's lag behind its open-loop schedule is recorded, not judged here: on 2 cores the server under
# test alone starves the sender's threads (p99 lag 0.2-1 s at 2 req/s on the tiny pair, nothing else
# running), so it is the measurement's own contention; a level whose sender fell far behind offered less
# than its rate, which capacity's search already counts as a miss (its achieved-rate rule).
# The /proc/cpuinfo flags that choose vLLM's CPU kernels (cpu_extension.cmake, quoted above), in that order.
VECTOR_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile", "asimd", "sve", "sve2", "bf16")
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
_LISTEN = "0A"  # include/net/tcp_states.h: TCP_LISTEN = 10
# A vLLM server or engine (vLLM titles its engine process "VLLM::EngineCore"), the container's launcher,
# or vllm bench serve: not a test file or a shell line that merely mentions vllm.
_ENGINE_COMMAND = re.compile(
    r"vllm(?:_cli)?\s+(?:serve|bench)\b|vllm\.entrypoints|VLLM::|EngineCore|peagle_serve|peagle local"
)


@dataclass(frozen=True)
class BusyLimit:
    """When a level counts as measured on a busy machine."""

    other_work_share: float = DEFAULT_OTHER_WORK_LIMIT  # of the cores, mean over the level

    def problems(self) -> list[str]:
        if not 0 < self.other_work_share <= 1:
            return [f"--busy-limit {self.other_work_share:g}: a share of the cores, above 0 and at most 1"]
        return []

    def describe(self) -> str:
        return (
            f"other work above {self.other_work_share:.0%} of the cores (without /proc: a load average above the "
            "core count)"
        )


DEFAULT_BUSY_LIMIT = BusyLimit()


@dataclass(frozen=True)
class HostConditions:
    """What the machine did over one level. CPU figures are in cores (CPU seconds per second)."""

    cpu_count: int
    seconds: float
    load_1m_max: float  # the 1-minute load average, highest sample
    load_1m_start: float
    other_work_cores: float | None  # everything but the server under test and this process (steal included)
    server_cores: float | None  # the server under test's processes (None: remote, or not found)
    own_cores: float | None  # this process: the load generator
    steal_share: float | None  # of all CPU time
    iowait_share: float | None
    server_processes: int  # found for the target (0: remote or not found)
    other_engines: list[str] = field(default_factory=list)  # "pid 123: vllm serve ..." not under test
    send_lag_p99_s: float | None = None  # open-loop levels
    busy: list[str] = field(default_factory=list)  # why the level is noisy; empty when quiet
    cpu_model: str | None = None  # /proc/cpuinfo "model name" (None: unknown, or a file from before)
    cpu_flags: list[str] = field(default_factory=list)  # which of VECTOR_FLAGS the CPU has

    @property
    def noisy(self) -> bool:
        return bool(self.busy)

    def summary(self) -> str:
        """One line, e.g. "other work 0.04 of 2 cores, load 1.9 max, steal 0.0%, no other engine"."""
        parts = []
        if self.other_work_cores is not None:
            parts.append(f"other work {self.other_work_cores:.2f} of {self.cpu_count} cores")
        parts.append(f"load {self.load_1m_max:.2f} max")
        if self.steal_share is not None:
            parts.append(f"steal {self.steal_share:.1%}")
        engines = len(self.other_engines)
        parts.append(f"{engines} other vLLM process{'es' if engines != 1 else ''}" if engines else "no other engine")
        if self.cpu_model:
            parts.append(self.cpu_description())
        return ", ".join(parts)

    def cpu_description(self) -> str:
        """E.g. "AMD EPYC (avx2; no avx512f)": the model and the vector flags vLLM's kernels follow."""
        if not self.cpu_model:
            return "CPU not recorded"
        x86 = any(flag.startswith(("avx", "amx")) for flag in self.cpu_flags)
        missing = "; no avx512f" if x86 and "avx512f" not in self.cpu_flags else ""
        return f"{self.cpu_model} ({', '.join(self.cpu_flags) or 'none of ' + '/'.join(VECTOR_FLAGS[:2])}{missing})"


def judge(conditions: HostConditions, limit: BusyLimit) -> list[str]:
    """Why a level measured under ``conditions`` is noisy (empty: it is not)."""
    reasons = []
    share = limit.other_work_share
    if conditions.other_work_cores is not None:
        if conditions.other_work_cores > share * conditions.cpu_count:
            engines = f" ({len(conditions.other_engines)} other vLLM processes)" if conditions.other_engines else ""
            reasons.append(
                f"other work used {conditions.other_work_cores:.2f} of {conditions.cpu_count} cores{engines}, "
                f"above the limit {share:.0%} ({share * conditions.cpu_count:.2f})"
            )
    elif conditions.load_1m_max > conditions.cpu_count:
        reasons.append(f"load average {conditions.load_1m_max:.2f} above the {conditions.cpu_count} cores")
    return reasons


class HostWatch:
    """Samples the host while a level runs: ``with HostWatch(url) as watch: ...; watch.conditions()``.

    ``url`` is the target's (its server's processes are found when it is on this machine); None or a
    remote host: every other process is other work.
    """

    def __init__(self, url: str | None = None) -> None:
        self._port = _local_port(url)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="host-watch", daemon=True)
        self._loads: list[float] = []
        self._started = 0.0
        self._ended = 0.0
        self._cpu_start: _CpuTimes | None = None
        self._cpu_end: _CpuTimes | None = None
        self._server_start: dict[int, int] = {}
        self._server_end: dict[int, int] = {}
        self._own_start = 0
        self._own_end = 0

    def __enter__(self) -> HostWatch:
        self._server_start = _process_ticks(server_processes(self._port))
        self._own_start = _own_ticks()
        self._cpu_start = _cpu_times()
        self._loads.append(_load_1m())
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._ended = time.monotonic()
        self._cpu_end = _cpu_times()
        self._own_end = _own_ticks()
        self._server_end = _process_ticks(server_processes(self._port))
        self._loads.append(_load_1m())

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self._loads.append(_load_1m())

    def conditions(self, limit: BusyLimit, *, send_lag_p99_s: float | None = None) -> HostConditions:
        seconds = max(self._ended - self._started, 1e-9)
        cpu_count = os.cpu_count() or 1
        tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        other = server = own = steal = iowait = None
        server_pids = set(self._server_start) | set(self._server_end)
        if self._cpu_start is not None and self._cpu_end is not None:
            delta = self._cpu_end.minus(self._cpu_start)
            # A process that started during the level counts from 0; one that ended is lost (and its time
            # then counts as other work: the safe side).
            server_ticks = sum(self._server_end.get(pid, 0) - self._server_start.get(pid, 0) for pid in server_pids)
            own_ticks = self._own_end - self._own_start
            server = max(0, server_ticks) / tick / seconds if server_pids else None
            own = max(0, own_ticks) / tick / seconds
            other = max(0.0, (delta.busy - max(0, server_ticks) - max(0, own_ticks)) / tick / seconds)
            steal = delta.steal / delta.total if delta.total else 0.0
            iowait = delta.iowait / delta.total if delta.total else 0.0
        conditions = HostConditions(
            cpu_count=cpu_count,
            seconds=round(seconds, 3),
            load_1m_max=max(self._loads),
            load_1m_start=self._loads[0],
            other_work_cores=_round(other),
            server_cores=_round(server),
            own_cores=_round(own),
            steal_share=_round(steal, 4),
            iowait_share=_round(iowait, 4),
            server_processes=len(self._server_end),
            other_engines=other_engines(exclude=server_pids | {os.getpid()}),
            send_lag_p99_s=send_lag_p99_s,
            cpu_model=cpu_model(),
            cpu_flags=list(cpu_vector_flags()),
        )
        return _with_busy(conditions, limit)


def _with_busy(conditions: HostConditions, limit: BusyLimit) -> HostConditions:
    from dataclasses import replace

    return replace(conditions, busy=judge(conditions, limit))


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


@dataclass(frozen=True)
class _CpuTimes:
    busy: int
    total: int
    steal: int
    iowait: int

    def minus(self, other: _CpuTimes) -> _CpuTimes:
        return _CpuTimes(
            self.busy - other.busy, self.total - other.total, self.steal - other.steal, self.iowait - other.iowait
        )


def _cpu_times() -> _CpuTimes | None:
    """The aggregate "cpu" line of /proc/stat: user nice system idle iowait irq softirq steal (guest and
    guest_nice are already inside user and nice, proc(5))."""
    try:
        line = (PROC / "stat").read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    values = [int(value) for value in line.split()[1:9]]
    values += [0] * (8 - len(values))
    user, nice, system, idle, iowait, irq, softirq, steal = values
    busy = user + nice + system + irq + softirq + steal
    return _CpuTimes(busy=busy, total=busy + idle + iowait, steal=steal, iowait=iowait)


def _cpuinfo_field(*names: str) -> str | None:
    """The first /proc/cpuinfo line named one of ``names`` (its value), None without the file."""
    try:
        lines = (PROC / "cpuinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() in names:
            return value.strip()
    return None


def cpu_model() -> str | None:
    """The CPU's name: x86's "model name"; Arm's cpuinfo names no model, so its implementer and part."""
    name = _cpuinfo_field("model name")
    if name:
        return name
    implementer, part = _cpuinfo_field("CPU implementer"), _cpuinfo_field("CPU part")
    if implementer:
        return f"Arm implementer {implementer} part {part}"
    import platform

    return platform.processor() or platform.machine() or None


def cpu_vector_flags() -> tuple[str, ...]:
    """Which of VECTOR_FLAGS /proc/cpuinfo lists ("flags" on x86, "Features" on Arm)."""
    listed = set((_cpuinfo_field("flags", "Features") or "").split())
    return tuple(flag for flag in VECTOR_FLAGS if flag in listed)


def _load_1m() -> float:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return 0.0


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command name (which may hold spaces and parentheses): field 3 (state)
    first, so field n of proc(5) is at index n - 3."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def _ticks(pid: int) -> int | None:
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 13:
        return None
    return int(fields[11]) + int(fields[12])  # (14) utime, (15) stime


def _own_ticks() -> int:
    times = os.times()
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return round((times.user + times.system) * tick)


def _process_ticks(pids: Iterable[int]) -> dict[int, int]:
    found = {}
    for pid in pids:
        ticks = _ticks(pid)
        if ticks is not None:
            found[pid] = ticks
    return found


def _pids() -> list[int]:
    try:
        return [int(entry.name) for entry in PROC.iterdir() if entry.name.isdigit()]
    except OSError:
        return []


def _parents() -> dict[int, int]:
    parents = {}
    for pid in _pids():
        fields = _stat_fields(pid)
        if fields is not None and len(fields) > 1:
            parents[pid] = int(fields[1])  # (4) ppid
    return parents


def _cmdline(pid: int) -> str:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _local_port(url: str | None) -> int | None:
    if not url:
        return None
    parts = urlsplit(url)
    if parts.hostname not in _LOCAL_HOSTS:
        return None
    return parts.port or (443 if parts.scheme == "https" else 80)


def _listening_inodes(port: int) -> set[str]:
    inodes = set()
    for name in ("tcp", "tcp6"):
        try:
            lines = (PROC / "net" / name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            columns = line.split()
            if len(columns) > 9 and columns[3] == _LISTEN and int(columns[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(columns[9])
    return inodes


def server_processes(port: int | None) -> list[int]:
    """The processes serving ``port`` on this machine: the one listening, its descendants, and its
    ancestors that are part of the server (their command line names peagle or vllm: the launcher)."""
    if port is None:
        return []
    inodes = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    if not inodes:
        return []
    listeners = set()
    for pid in _pids():
        try:
            links = {os.readlink(fd) for fd in (PROC / str(pid) / "fd").iterdir()}
        except OSError:
            continue
        if links & inodes:
            listeners.add(pid)
    parents = _parents()
    found = set(listeners)
    for pid in listeners:
        parent = parents.get(pid, 0)
        while parent > 1 and parent != os.getpid() and _names_server(_cmdline(parent)):
            found.add(parent)
            parent = parents.get(parent, 0)
    return sorted(found | _descendants(found, parents))


def _descendants(roots: set[int], parents: dict[int, int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found, todo = set(), list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and child not in roots:
                found.add(child)
                todo.append(child)
    return found


def _names_server(command: str) -> bool:
    lowered = command.lower()
    return "vllm" in lowered or "peagle" in lowered


def other_engines(exclude: Sequence[int] | set[int]) -> list[str]:
    """vLLM processes on this machine outside ``exclude``: "pid 123: <command line, 80 characters>"."""
    excluded = set(exclude)
    found = []
    for pid in sorted(_pids()):
        if pid in excluded:
            continue
        command = _cmdline(pid)
        if _ENGINE_COMMAND.search(command):
            found.append(f"pid {pid}: {command[:80]}")
    return found


def add_busy_limit_argument(parser) -> None:
    """``--busy-limit SHARE`` for the commands that measure (bench, tune, capacity)."""
    parser.add_argument(
        "--busy-limit",
        type=float,
        default=DEFAULT_OTHER_WORK_LIMIT,
        metavar="SHARE",
        help="a level is noisy (measured on a busy machine) when work other than the server under test and "
        f"this command used more than this share of the cores over it (default {DEFAULT_OTHER_WORK_LIMIT:g}); "
        "results record the load average, steal, iowait and other vLLM processes of every level",
    )


def busy_limit_from(args) -> BusyLimit:
    """The --busy-limit of ``args``; ValueError (what was given, what is allowed) when out of range."""
    limit = BusyLimit(other_work_share=args.busy_limit)
    problems = limit.problems()
    if problems:
        raise ValueError("; ".join(problems))
    return limit
