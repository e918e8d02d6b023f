"""A level's host conditions as bench records them (peagle/bench/host_conditions.py), quiet or busy, for tests
that judge stored levels (tune's choice, bench's --compare-to) without measuring a machine."""

from __future__ import annotations

from peagle.bench.host_conditions import HostConditions


def recorded_host(*, busy: bool) -> HostConditions:
    """Quiet: other work 0.02 of 2 cores, beside a server using 1.5. Busy: other work 1.6 cores, noisy by the
    default limit (25% of the cores), with the reason bench writes."""
    other = 1.6 if busy else 0.02
    return HostConditions(
        cpu_count=2,
        seconds=10.0,
        load_1m_max=3.9 if busy else 1.8,
        load_1m_start=1.0,
        other_work_cores=other,
        server_cores=1.5,
        own_cores=0.1,
        steal_share=0.0,
        iowait_share=0.0,
        server_processes=3,
        busy=[f"other work used {other:.2f} of 2 cores, above the limit 25% (0.50)"] if busy else [],
    )
