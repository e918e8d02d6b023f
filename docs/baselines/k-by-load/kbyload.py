"""Run from the repository root: python docs/baselines/k-by-load/kbyload.py NAME OUT SEEDS -- PEAGLE_LOCAL_OPTIONS...

One speculation setting of the local partial pair (`peagle local --pair partial OPTIONS`, e.g.
`--speculative-tokens 4` or `--speculative-schedule 1-2:4,3-16:0`) measured with vLLM's own load tester
(`vllm bench serve`) at the levels issue 46 asks for: closed loop at concurrency 1, 4 and 8, and open loop at
Poisson 0.5 and 1.0 requests/s, once per seed. A seed picks the prompt set (peagle bench's synthetic `short`
prompts, 147-187 tokens on the constructed pairs' one-token-per-character vocabulary,
`synthetic_prompts(["short"], per_bucket=8, seed=SEED)`, cycled over a level's requests) and the arrival times
(`vllm bench serve --seed SEED`), so two settings run on the same seeds are compared paired by seed
(peagle/bench/intervals.py). Sampling is the chatbot profile's (temperature 0.7, top_p 0.9), 64 output tokens with
ignore_eos, goodput under `ttft:1000 tpot:100` (milliseconds), as the issue's figures were. One server serves
every seed and level of a setting; each run's host conditions are recorded beside its figures (`peagle.bench`'s
HostWatch: the load, other work's cores, steal)."""

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
from peagle.local.served import serve_local

NAME, out, seeds = sys.argv[1], Path(sys.argv[2]), [int(seed) for seed in sys.argv[3].split(",")]
OPTIONS = sys.argv[sys.argv.index("--") + 1 :]
TOKENS, GOODPUT = 64, ["ttft:1000", "tpot:100"]
# (level name, max concurrency or None, request rate, requests)
LEVELS = [
    ("c1", 1, "inf", 8),
    ("c4", 4, "inf", 16),
    ("c8", 8, "inf", 16),
    ("r0.5", None, "0.5", 20),
    ("r1.0", None, "1.0", 30),
]
# KBYLOAD_LEVELS=c4,c8 measures only those levels (the no-prefix-cache runs).
LEVELS = [level for level in LEVELS if level[0] in os.environ.get("KBYLOAD_LEVELS", level[0]).split(",")]
out.mkdir(parents=True, exist_ok=True)
repo = Path(__file__).resolve().parents[3]
env = {**os.environ, "PYTHONPATH": str(repo / "inference_image")}


def prompts_file(seed: int) -> Path:
    path = out / f"prompts-seed{seed}.jsonl"
    cases = synthetic_prompts(["short"], per_bucket=8, seed=seed)
    path.write_text("".join(json.dumps({"prompt": case.prompt}) + "\n" for case in cases))
    return path


def vllm_bench_serve(url: str, seed: int, level: tuple, name: str) -> dict:
    _, concurrency, rate, requests = level
    command = [sys.executable, "-m", "peagle_serve.vllm_cli", "bench", "serve", "--backend", "openai"]
    command += ["--base-url", url, "--endpoint", "/v1/completions", "--model", "partial-pair"]
    command += ["--tokenizer", str(repo / "local-models/partial-pair/target"), "--num-prompts", str(requests)]
    command += ["--dataset-name", "custom", "--dataset-path", str(prompts_file(seed)), "--skip-chat-template"]
    command += ["--custom-output-len", str(TOKENS), "--request-rate", rate, "--seed", str(seed)]
    command += ["--max-concurrency", str(concurrency)] if concurrency else []
    command += ["--ignore-eos", "--temperature", "0.7", "--top-p", "0.9", "--num-warmups", "1"]
    command += ["--percentile-metrics", "ttft,tpot,itl,e2el", "--goodput", *GOODPUT]
    command += ["--save-result", "--result-dir", str(out), "--result-filename", name + ".json", "--disable-tqdm"]
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads((out / (name + ".json")).read_text())
    return {
        "output_tokens_per_s": result["output_throughput"],
        "request_goodput_rps": result.get("request_goodput"),
        "completed": result["completed"],
        "ttft_mean_s": result["mean_ttft_ms"] / 1000,
        "tpot_median_s": result["median_tpot_ms"] / 1000,
        "e2e_mean_s": result["mean_e2el_ms"] / 1000,
    }


def server_means(before, after) -> dict:
    """What the server measured over the run (vLLM's /metrics histograms): where a request's first token waited."""
    means = {}
    for metric in ("time_to_first_token", "request_queue_time", "request_prefill_time", "request_decode_time"):
        name = f"vllm:{metric}_seconds"
        count = after.total(name + "_count") - before.total(name + "_count")
        means[metric + "_mean_s"] = (
            (after.total(name + "_sum") - before.total(name + "_sum")) / count if count else None
        )
    return means


with serve_local(
    ["--pair", "partial", *OPTIONS], log_path=out / f"{NAME}-server.log", label=NAME, parent="kbyload"
) as url:
    for seed in seeds:
        for level in LEVELS:
            name = f"{NAME}-{level[0]}-seed{seed}"
            before = scrape_metrics(url)
            with HostWatch(url) as watch:
                figures = vllm_bench_serve(url, seed, level, name)
            figures["server"] = server_means(before, scrape_metrics(url))
            host = watch.conditions(BusyLimit())
            record = {
                "setting": NAME,
                "options": OPTIONS,
                "level": level[0],
                "seed": seed,
                **figures,
                "host": asdict(host),
            }
            (out / (name + "-conditions.json")).write_text(json.dumps(record, indent=2) + "\n")
            print(json.dumps({k: v for k, v in record.items() if k != "host"}), flush=True)
