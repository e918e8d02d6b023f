"""What the host did during a level (peagle/bench/host_conditions.py), read from /proc with real
processes: a process spinning beside the measurement is other work and makes the level noisy; the same
process serving the port under test is the server, not other work. And the verdict, and its round trip
through results.json."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from peagle.bench.host_conditions import VECTOR_FLAGS, BusyLimit, HostConditions, HostWatch, judge
from peagle.bench.results import BenchResults, LevelResult, RunResult, load_results, results_to_json

SPIN_SECONDS = 2.5
# Spins one core; with a port given, listens on it first (and prints it), as a server would.
SPINNER = """
import socket, sys, time
if len(sys.argv) > 1:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    print(server.getsockname()[1], flush=True)
else:
    print(0, flush=True)
end = time.monotonic() + 30
while time.monotonic() < end:
    pass
"""


@pytest.fixture
def spinner():
    started = []

    def start(*, listening: bool) -> tuple[subprocess.Popen, int]:
        command = [sys.executable, "-c", SPINNER, *(["listen"] if listening else [])]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        started.append(process)
        return process, int(process.stdout.readline())

    yield start
    for process in started:
        process.kill()
        process.wait()


def _watched(url: str | None) -> HostConditions:
    with HostWatch(url) as watch:
        time.sleep(SPIN_SECONDS)
    return watch.conditions(BusyLimit())


def test_a_process_spinning_beside_the_level_is_other_work_and_makes_it_noisy(spinner):
    spinner(listening=False)
    conditions = _watched("http://127.0.0.1:9")  # a port nothing serves: no server processes
    assert conditions.other_work_cores >= 0.6  # one core spun (a 2-core machine gives it most of one)
    assert conditions.server_processes == 0 and conditions.server_cores is None
    assert conditions.noisy and "other work used" in conditions.busy[0]
    assert conditions.load_1m_max >= 0 and conditions.cpu_count >= 1 and 0 <= conditions.steal_share <= 1


def test_the_process_serving_the_port_under_test_is_the_server_not_other_work(spinner):
    process, port = spinner(listening=True)
    conditions = _watched(f"http://127.0.0.1:{port}")
    assert conditions.server_processes == 1
    assert conditions.server_cores >= 0.6
    # Its core is not counted again as other work (what else ran is the machine's; it is not 2 cores).
    assert conditions.other_work_cores + conditions.server_cores <= conditions.cpu_count + 0.2
    remote = _watched(f"http://example.invalid:{port}")  # the same port on another host is not this process
    assert remote.server_processes == 0 and remote.other_work_cores >= 0.6


def _conditions(**changes) -> HostConditions:
    values = dict(
        cpu_count=2,
        seconds=10.0,
        load_1m_max=2.3,
        load_1m_start=1.1,
        other_work_cores=0.05,
        server_cores=1.7,
        own_cores=0.2,
        steal_share=0.0,
        iowait_share=0.0,
        server_processes=3,
    )
    return HostConditions(**{**values, **changes})


def test_the_verdict_counts_other_work_not_the_load_the_server_makes():
    # Load 2.3 on 2 cores from the server under test alone: quiet (the quiet re-measurement).
    assert judge(_conditions(), BusyLimit()) == []
    busy = judge(_conditions(other_work_cores=1.4, other_engines=["pid 9: vllm serve"]), BusyLimit())
    assert busy == ["other work used 1.40 of 2 cores (1 other vLLM processes), above the limit 25% (0.50)"]
    assert judge(_conditions(other_work_cores=1.4), BusyLimit(other_work_share=0.8)) == []
    # A sender behind its schedule is the measurement's own contention on 2 cores: recorded, not judged.
    assert judge(_conditions(send_lag_p99_s=0.25), BusyLimit()) == []
    # Without /proc (macOS) only the load average can say it.
    assert judge(_conditions(other_work_cores=None, load_1m_max=3.5), BusyLimit()) == [
        "load average 3.50 above the 2 cores"
    ]


def test_results_json_keeps_each_levels_machine(tmp_path):
    host = _conditions(
        other_work_cores=1.4, busy=["other work used 1.40 of 2 cores"], cpu_model="AMD EPYC", cpu_flags=["avx2"]
    )
    level = LevelResult(
        concurrency=1,
        requests=4,
        failed=0,
        errors_by_type={},
        duration_s=2.0,
        prompt_tokens=40,
        output_tokens=64,
        output_tokens_per_s=32.0,
        requests_per_s=2.0,
        ttft_s=None,
        tpot_s=None,
        itl_s=None,
        e2e_s=None,
        speculation=None,
        cost_per_million_output_tokens_usd=None,
        host=host,
    )
    run = RunResult("K=4", "http://x", None, None, None, "on", 4, None, None, [], [level])
    path = tmp_path / "results.json"
    path.write_text(results_to_json(BenchResults("2026-12-02", {}, {}, [run])))
    (stored,) = load_results(path).runs[0].levels
    assert stored.host == host and stored.noisy


def test_every_level_records_the_cpu_and_the_vector_flags_vllms_kernels_follow():
    conditions = _watched(None)
    cpuinfo = Path("/proc/cpuinfo").read_text()
    listed = set(
        next(line for line in cpuinfo.splitlines() if line.startswith(("flags", "Features"))).split(":")[1].split()
    )
    assert conditions.cpu_model and (conditions.cpu_model in cpuinfo or conditions.cpu_model.startswith("Arm"))
    assert conditions.cpu_flags == [flag for flag in VECTOR_FLAGS if flag in listed]
    assert conditions.cpu_description() in conditions.summary()


def test_a_reader_tells_an_avx2_figure_from_an_avx512_one():
    avx2 = _conditions(cpu_model="AMD EPYC", cpu_flags=["avx2"])
    avx512 = _conditions(cpu_model="Intel Xeon", cpu_flags=["avx2", "avx512f", "avx512_bf16", "amx_bf16"])
    assert avx2.cpu_description() == "AMD EPYC (avx2; no avx512f)"
    assert avx512.cpu_description() == "Intel Xeon (avx2, avx512f, avx512_bf16, amx_bf16)"
    assert _conditions(cpu_model="Arm implementer 0x41 part 0xd40", cpu_flags=["asimd", "sve"]).cpu_description() == (
        "Arm implementer 0x41 part 0xd40 (asimd, sve)"
    )
    assert _conditions().cpu_description() == "CPU not recorded"  # a results.json from before the field
