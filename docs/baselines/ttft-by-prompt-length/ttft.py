"""Run from the repository root: python docs/baselines/ttft-by-prompt-length/ttft.py OUT ROUNDS K [K ...].

Mean TTFT by prompt length with speculation off and on, on the `partial` pair (`peagle local --pair partial
-k K --max-model-len 2048`, which sets the plan's token budget, peagle/engine_budget.py), measured by vLLM's own
load tester: `vllm bench serve`, random prompts of 64, 256, 512 and 1024 tokens, 32 output tokens with ignore_eos,
concurrency 1, at the chatbot profile's sampling (T 0.7, top_p 0.9), 8 prompts a point after one warm-up. Each
point is set beside what the server measured over it (vLLM's /metrics histograms) and records its host
conditions; the CPU model and flags are in cpu.json. Rounds interleave the lengths on one server per K."""

import json
import os
import platform
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root
from peagle.bench.host_conditions import BusyLimit, HostWatch
from peagle.bench.server_probe import scrape_metrics
from peagle.bench.vllm_counters import server_latency_between
from peagle.local.served import serve_local

out, rounds, ks = Path(sys.argv[1]), int(sys.argv[2]), [int(k) for k in sys.argv[3:]]
LENGTHS, REQUESTS, TOKENS = (64, 256, 512, 1024), 8, 32
out.mkdir(parents=True, exist_ok=True)
repo = Path(__file__).resolve().parents[3]
env = {**os.environ, "PYTHONPATH": str(repo / "inference_image")}
flags = next(
    (
        line.split(":", 1)[1].split()
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if line.startswith("flags")
    ),
    [],
)
model = next(
    (
        line.split(":", 1)[1].strip()
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if line.startswith("model name")
    ),
    platform.processor(),
)
(out / "cpu.json").write_text(
    json.dumps(
        {
            "model": model,
            "cores": os.cpu_count(),
            "avx512f": "avx512f" in flags,
            "avx2": "avx2" in flags,
            "amx_tile": "amx_tile" in flags,
        },
        indent=2,
    )
    + "\n"
)


def vllm_bench_serve(url: str, length: int, name: str) -> dict:
    command = [sys.executable, "-m", "peagle_serve.vllm_cli", "bench", "serve", "--backend", "openai"]
    command += ["--base-url", url, "--endpoint", "/v1/completions", "--model", "partial-pair"]
    command += ["--tokenizer", str(repo / "local-models/partial-pair/target"), "--num-prompts", str(REQUESTS)]
    command += ["--dataset-name", "random", "--random-input-len", str(length), "--random-output-len", str(TOKENS)]
    command += ["--max-concurrency", "1", "--request-rate", "inf", "--seed", "0", "--ignore-eos"]
    command += ["--temperature", "0.7", "--top-p", "0.9", "--num-warmups", "1"]
    command += ["--percentile-metrics", "ttft,tpot,itl,e2el"]
    command += ["--save-result", "--result-dir", str(out), "--result-filename", name + ".json", "--disable-tqdm"]
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads((out / (name + ".json")).read_text())
    return {
        "ttft_mean_s": result["mean_ttft_ms"] / 1000,
        "ttft_median_s": result["median_ttft_ms"] / 1000,
        "tpot_median_s": result["median_tpot_ms"] / 1000,
        "output_tokens_per_s": result["output_throughput"],
        "input_tokens": result["total_input_tokens"] / result["completed"],
    }


for k in ks:
    options = ["--pair", "partial", "--speculative-tokens", str(k), "--max-model-len", "2048"]
    with serve_local(options, log_path=out / f"server-K{k}.log", label=f"K={k}", parent="ttft") as url:
        for round_ in range(1, rounds + 1):
            for length in LENGTHS:
                name = f"partial-K{k}-in{length}-round{round_}"
                before = scrape_metrics(url)
                with HostWatch(url) as watch:
                    figures = vllm_bench_serve(url, length, name)
                server = server_latency_between(before, scrape_metrics(url))
                record = {
                    "K": k,
                    "prompt_tokens": length,
                    "round": round_,
                    **figures,
                    "server_ttft_mean_s": server.ttft_mean_s,
                    "host": asdict(watch.conditions(BusyLimit())),
                }
                (out / (name + "-conditions.json")).write_text(json.dumps(record, indent=2) + "\n")
                print(json.dumps({key: value for key, value in record.items() if key != "host"}), flush=True)
