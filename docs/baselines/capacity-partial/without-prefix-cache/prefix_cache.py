"""Run from the repository root: python docs/baselines/capacity-partial/without-prefix-cache/prefix_cache.py OUT.

What the prefix cache gives each K on the prompts capacity sent (../cross-check/capacity-prompts.jsonl: 24 prompts
of ~164 tokens, cycled): one `peagle local --pair partial -k K` server per K (prefix caching on, as `peagle
capacity --pair` served them), every prompt sent twice, one at a time, 1 output token each at the chatbot
profile's sampling; vLLM's counters vllm:prefix_cache_queries and vllm:prefix_cache_hits (tokens) over the
second pass, and the mean TTFT of each pass.

Why it matters: vLLM's CPU platform sets the KV block size to 128 tokens (vllm/platforms/cpu.py: "elif not
cache_config.user_specified_block_size: cache_config.block_size = 128"), prefix-cache hits come in whole
blocks, and with an EAGLE drafter vLLM drops the last matched block ("If eagle is enabled, drop the last
matched block to force recompute the last block to get the required hidden states for eagle drafting head",
vllm/v1/core/single_type_kv_cache_manager.py, find_longest_cache_hit). A 164-token prompt seen before thus
has one block (128 tokens) from the cache with speculation off and none with it on."""

import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))  # the repository root
from peagle.bench.host_conditions import cpu_model, cpu_vector_flags
from peagle.bench.server_probe import scrape_metrics
from peagle.client import GenerationRequest, PeagleClient
from peagle.local.served import serve_local

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
here = Path(__file__).resolve().parent
prompts = [
    json.loads(line)["prompt"] for line in (here.parent / "cross-check/capacity-prompts.jsonl").read_text().splitlines()
]
results = {"cpu": {"model": cpu_model(), "vector_flags": list(cpu_vector_flags())}, "servers": []}
for k in (0, 4):
    options = ["--pair", "partial", "--speculative-tokens", str(k)]
    log = out / f"prefix-cache-server-K{k}.log"
    with (
        serve_local(options, log_path=log, label=f"K={k}", parent="prefix_cache") as url,
        PeagleClient.for_url(url) as client,
    ):
        passes = []
        for _ in range(2):
            before = scrape_metrics(url)
            ttfts = [
                client.generate(GenerationRequest(prompt=p, max_tokens=1, temperature=0.7, top_p=0.9)).timings.ttft_s
                for p in prompts
            ]
            after = scrape_metrics(url)
            queries = after.total("vllm:prefix_cache_queries_total") - before.total("vllm:prefix_cache_queries_total")
            hits = after.total("vllm:prefix_cache_hits_total") - before.total("vllm:prefix_cache_hits_total")
            passes.append(
                {
                    "ttft_mean_s": round(statistics.mean(ttfts), 3),
                    "prompt_tokens_queried": queries,
                    "prompt_tokens_from_cache": hits,
                    "hit_rate": round(hits / queries, 3) if queries else None,
                }
            )
    results["servers"].append(
        {"K": k, "first_pass": passes[0], "second_pass": passes[1], "load_1m": os.getloadavg()[0]}
    )
    print(json.dumps(results["servers"][-1]), flush=True)
(out / "prefix-cache.json").write_text(json.dumps(results, indent=2) + "\n")
