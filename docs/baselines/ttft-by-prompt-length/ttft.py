"""Run from the repository root: python docs/baselines/ttft-by-prompt-length/ttft.py OUT ROUNDS K [K ...].

Mean TTFT by prompt length with speculation off and on, on the `partial` pair (`peagle local --pair partial
-k K --max-model-len 2048 -- --no-enable-prefix-caching`, which sets the plan's token budget,
peagle/planning/engine_budget.py), measured by vLLM's own load tester and by `peagle bench` on the same prompts:
8 prompts of 64, 256, 512 and 1024 tokens per point (random letters, one token each in the pair's byte
tokenizer; new prompts every round, the same ones for every K), one JSONL that `vllm bench serve` reads with
`--dataset-name custom --skip-chat-template` and `peagle bench` with `--prompts-file`, 32 output tokens,
concurrency 1, at the chatbot profile's sampling (T 0.7, top_p 0.9), one warm-up request each (the first prompt).

Prefix caching is off so that no prompt is served from the cache: the two tools send the same prompts one
after the other, and an earlier version of this baseline, which repeated its prompts in round 2 with
caching on, measured K=0 from the cache (0.96 s at 1024 tokens against 3.3 s in round 1) and read a 2x
speculation cost into it. Each run is set beside what the server measured over it (vLLM's /metrics
histograms) and records its host conditions, the CPU model and vector flags among them (cpu.json too)."""

import json
import os
import random
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root
from peagle.bench.host_conditions import BusyLimit, HostWatch, cpu_model, cpu_vector_flags
from peagle.bench.server_probe import scrape_metrics
from peagle.bench.vllm_counters import server_latency_between
from peagle.local.served import serve_local

out, rounds, ks = Path(sys.argv[1]), int(sys.argv[2]), [int(k) for k in sys.argv[3:]]
LENGTHS, REQUESTS, TOKENS = (64, 256, 512, 1024), 8, 32
out.mkdir(parents=True, exist_ok=True)
repo = Path(__file__).resolve().parents[3]
tokenizer = repo / "local-models/partial-pair/target"
env = {**os.environ, "PYTHONPATH": str(repo / "inference_image")}
(out / "cpu.json").write_text(
    json.dumps({"model": cpu_model(), "cores": os.cpu_count(), "vector_flags": list(cpu_vector_flags())}, indent=2)
    + "\n"
)


def prompts_file(round_: int, length: int) -> Path:
    """REQUESTS prompts of ``length`` letters: ``length`` tokens (the pair's tokenizer adds no BOS)."""
    rng = random.Random(round_ * 10_000 + length)
    path = out / f"prompts-in{length}-round{round_}.jsonl"
    lines = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(length)) for _ in range(REQUESTS)]
    path.write_text("".join(json.dumps({"prompt": line}) + "\n" for line in lines))
    return path


def vllm_bench_serve(url: str, prompts: Path, name: str) -> dict:
    command = [sys.executable, "-m", "peagle_serve.vllm_cli", "bench", "serve", "--backend", "openai"]
    command += ["--base-url", url, "--endpoint", "/v1/completions", "--model", "partial-pair"]
    command += ["--tokenizer", str(tokenizer), "--num-prompts", str(REQUESTS)]
    command += ["--dataset-name", "custom", "--dataset-path", str(prompts), "--skip-chat-template"]
    command += ["--custom-output-len", str(TOKENS), "--max-concurrency", "1", "--request-rate", "inf", "--ignore-eos"]
    command += ["--temperature", "0.7", "--top-p", "0.9", "--num-warmups", "1", "--seed", "0"]
    command += ["--percentile-metrics", "ttft,tpot,itl,e2el"]
    command += ["--save-result", "--result-dir", str(out), "--result-filename", name + ".json", "--disable-tqdm"]
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads((out / (name + ".json")).read_text())
    return {
        "ttft_mean_s": result["mean_ttft_ms"] / 1000,
        "ttft_median_s": result["median_ttft_ms"] / 1000,
        "tpot_median_s": result["median_tpot_ms"] / 1000,
        "prompt_tokens_mean": result["total_input_tokens"] / result["completed"],
        "requests": result["completed"],
    }


def peagle_bench(url: str, prompts: Path, name: str) -> dict:
    command = [sys.executable, "-m", "peagle", "bench", "--url", url, "--concurrency", "1"]
    command += ["--requests", str(REQUESTS), "--prompts-file", str(prompts), "--buckets", "none"]
    command += ["--max-tokens", str(TOKENS), "--warmup", "1", "--out", str(out / name)]
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    level = json.loads((out / name / "results.json").read_text())["runs"][0]["levels"][0]
    return {
        "ttft_mean_s": level["ttft_s"]["mean"],
        "ttft_median_s": level["ttft_s"]["p50"],
        "tpot_median_s": level["tpot_s"]["p50"],
        "prompt_tokens_mean": level["prompt_tokens"] / level["requests"],
        "requests": level["requests"],
    }


for k in ks:
    options = ["--pair", "partial", "--speculative-tokens", str(k), "--max-model-len", "2048"]
    options += ["--", "--no-enable-prefix-caching"]
    with serve_local(options, log_path=out / f"server-K{k}.log", label=f"K={k}", parent="ttft") as url:
        for round_ in range(1, rounds + 1):
            for length in LENGTHS:
                prompts = prompts_file(round_, length)
                for tool, run in (("vllm-bench-serve", vllm_bench_serve), ("peagle-bench", peagle_bench)):
                    name = f"partial-K{k}-in{length}-round{round_}-{tool}"
                    before = scrape_metrics(url)
                    with HostWatch(url) as watch:
                        figures = run(url, prompts, name)
                    server = server_latency_between(before, scrape_metrics(url))
                    record = {
                        "K": k,
                        "tool": tool,
                        "prompt_tokens": length,
                        "round": round_,
                        **figures,
                        "server_ttft_mean_s": server.ttft_mean_s,
                        "host": asdict(watch.conditions(BusyLimit())),
                    }
                    (out / (name + "-conditions.json")).write_text(json.dumps(record, indent=2) + "\n")
                    print(json.dumps({key: value for key, value in record.items() if key != "host"}), flush=True)
