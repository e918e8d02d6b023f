"""Run from the repository root: python docs/baselines/cross-check/crosscheck.py K ROUNDS OUT.

peagle bench and vllm bench serve (vLLM's own load tester) against one `peagle local --pair demo -k K`
server, interleaved (vllm, peagle, vllm, peagle, ...) at concurrency 1 and 4, closed loop, on the same
prompts (peagle bench's `short` prompts, seed 0, as a JSONL that vllm bench serve reads with
`--dataset-name custom --skip-chat-template` and peagle bench with `--prompts-file`), at the chatbot
profile's sampling (T 0.7, top_p 0.9), 128 output tokens with ignore_eos. Each run is set beside what the
server itself measured over it (vLLM's /metrics histograms, scraped before and after), so the two tools
are compared on what each adds to the server's own latency, not on how fast the machine was at that
moment (on these shared 2-core machines one tool's tokens/s moves 15-30% between runs a minute apart).
The host conditions of each run are recorded (the load tester's own CPU taken out of other work)."""

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root
from peagle.bench.host_conditions import BusyLimit, HostWatch
from peagle.bench.prompts import synthetic_prompts
from peagle.bench.server_probe import scrape_metrics
from peagle.bench.vllm_counters import server_latency_between
from peagle.local.served import serve_local

K, rounds, out = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
REQUESTS, TOKENS = 8, 128
out.mkdir(parents=True, exist_ok=True)
repo = Path(__file__).resolve().parents[3]
prompts = out / "bench-short-prompts.jsonl"
prompts.write_text("".join(json.dumps({"prompt": case.prompt}) + "\n" for case in synthetic_prompts(["short"], seed=0)))
env = {**os.environ, "PYTHONPATH": str(repo / "inference_image")}


def vllm_bench_serve(url: str, concurrency: int, name: str) -> dict:
    command = [sys.executable, "-m", "peagle_serve.vllm_cli", "bench", "serve", "--backend", "openai"]
    command += ["--base-url", url, "--endpoint", "/v1/completions", "--model", "demo-pair"]
    command += ["--tokenizer", str(repo / "local-models/demo-pair/target"), "--num-prompts", str(REQUESTS)]
    command += ["--dataset-name", "custom", "--dataset-path", str(prompts), "--skip-chat-template"]
    command += ["--custom-output-len", str(TOKENS), "--max-concurrency", str(concurrency), "--request-rate", "inf"]
    command += ["--seed", "0", "--ignore-eos", "--temperature", "0.7", "--top-p", "0.9", "--num-warmups", "1"]
    command += ["--percentile-metrics", "ttft,tpot,itl,e2el"]
    command += ["--save-result", "--result-dir", str(out), "--result-filename", name + ".json", "--disable-tqdm"]
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads((out / (name + ".json")).read_text())
    return {
        "output_tokens_per_s": result["output_throughput"],
        "ttft_mean_s": result["mean_ttft_ms"] / 1000,
        "tpot_median_s": result["median_tpot_ms"] / 1000,
        "e2e_mean_s": result["mean_e2el_ms"] / 1000,
    }


def peagle_bench(url: str, concurrency: int, name: str) -> dict:
    command = [sys.executable, "-m", "peagle", "bench", "--url", url, "--label", f"K={K}"]
    command += ["--concurrency", str(concurrency), "--requests", str(REQUESTS), "--prompts-file", str(prompts)]
    command += ["--buckets", "none", "--max-tokens", str(TOKENS), "--warmup", "1", "--out", str(out / name)]
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    level = json.loads((out / name / "results.json").read_text())["runs"][0]["levels"][0]
    return {
        "output_tokens_per_s": level["output_tokens_per_s"],
        "ttft_mean_s": level["ttft_s"]["mean"],
        "tpot_median_s": level["tpot_s"]["p50"],
        "e2e_mean_s": level["e2e_s"]["mean"],
    }


with serve_local(
    ["--pair", "demo", "--speculative-tokens", str(K)], log_path=out / "server.log", label=f"K={K}", parent="crosscheck"
) as url:
    for round_ in range(1, rounds + 1):
        for concurrency in (1, 4):
            for tool, run in (("vllm-bench-serve", vllm_bench_serve), ("peagle-bench", peagle_bench)):
                name = f"demo-K{K}-c{concurrency}-{tool}-round{round_}"
                before_times, before = os.times(), scrape_metrics(url)
                with HostWatch(url) as watch:
                    figures = run(url, concurrency, name)
                server = server_latency_between(before, scrape_metrics(url))
                after_times = os.times()
                client = (after_times.children_user + after_times.children_system) - (
                    before_times.children_user + before_times.children_system
                )
                host = watch.conditions(BusyLimit())
                record = {
                    "K": K,
                    "concurrency": concurrency,
                    "tool": tool,
                    "round": round_,
                    **figures,
                    "server_ttft_mean_s": server.ttft_mean_s,
                    "server_e2e_mean_s": server.e2e_mean_s,
                    "added_ttft_s": figures["ttft_mean_s"] - server.ttft_mean_s,
                    "added_e2e_share": figures["e2e_mean_s"] / server.e2e_mean_s - 1,
                    "client_cores": round(client / host.seconds, 3),
                    "other_work_cores_without_client": round(
                        max(0.0, host.other_work_cores - client / host.seconds), 3
                    ),
                    "host": asdict(host),
                }
                (out / (name + "-conditions.json")).write_text(json.dumps(record, indent=2) + "\n")
                print(json.dumps({k: v for k, v in record.items() if k != "host"}), flush=True)
