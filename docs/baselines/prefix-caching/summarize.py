"""Run from the repository root: python docs/baselines/prefix-caching/summarize.py RUNS.

Reads what measure.py wrote into RUNS and prints (and writes to RUNS/../summary.json) the three answers: are the
outputs the same where they must be, is the acceptance length unchanged, and what the cache does to the time to
first token on prompts that share a prefix against prompts that share none; and the host while it was measured."""

import json
import statistics
import sys
from itertools import combinations
from pathlib import Path

runs = Path(sys.argv[1])
records = [json.loads(path.read_text()) for path in sorted(runs.glob("*-conditions.json"))]
outputs = {
    path.stem.removeprefix("outputs-"): json.loads(path.read_text()) for path in sorted(runs.glob("outputs-*.json"))
}
summary: dict = {"outputs": [], "acceptance": [], "ttft": [], "host": {}}


def label(pair: str, k: int, caching: str) -> str:
    return f"{pair}-K{k}-cache-{caching}"


# 1. Outputs: the same where they must be.
pairs = sorted({record["pair"] for record in records})
for pair in pairs:
    checks = []
    for k in (0, 4):
        for caching in ("off", "on"):
            server = outputs[label(pair, k, caching)]
            sequential = [first for first, _ in server["T0"]]
            checks.append((f"K={k} cache {caching}: greedy, miss then hit", all(a == b for a, b in server["T0"])))
            checks.append(
                (f"K={k} cache {caching}: seeded T 0.7, twice", all(a == b for a, b in server["T0.7-seeded"]))
            )
            checks.append(
                (
                    f"K={k} cache {caching}: greedy, 4 at once on an empty cache and again, as one at a time",
                    all(round_ == sequential for round_ in server["T0-concurrent"]),
                )
            )
        off, on = outputs[label(pair, k, "off")], outputs[label(pair, k, "on")]
        checks.append((f"K={k}: greedy, cache off = on", off["T0"] == on["T0"]))
        checks.append((f"K={k}: seeded T 0.7, cache off = on", off["T0.7-seeded"] == on["T0.7-seeded"]))
    for caching in ("off", "on"):
        zero, four = outputs[label(pair, 0, caching)], outputs[label(pair, 4, caching)]
        checks.append((f"cache {caching}: greedy, K=0 = K=4", zero["T0"] == four["T0"]))
    summary["outputs"] += [{"pair": pair, "check": name, "same": same} for name, same in checks]

# 2. Acceptance length at K=4, from vLLM's counters over each run: cache off beside cache on.
for pair in pairs:
    for prompts in ("shared", "unshared"):
        for tool, sampling in (("vllm-bench-serve", "T0.7"), ("peagle-bench", "T0.7"), ("peagle-bench", "T0")):
            row = {"pair": pair, "prompts": prompts, "tool": tool, "sampling": sampling}
            for r in records:
                if (r["pair"], r["K"], r["prompts"], r["tool"], r["sampling"]) == (pair, 4, prompts, tool, sampling):
                    row[f"cache_{r['prefix_caching']}"] = round(r["acceptance_length"], 3)
            summary["acceptance"].append(row)

# 3. TTFT at the chatbot sampling, both tools.
for pair in pairs:
    for k in (0, 4):
        for caching in ("off", "on"):
            row = {"pair": pair, "K": k, "cache": caching}
            for prompts in ("shared", "unshared"):
                chosen = [
                    r
                    for r in records
                    if (r["pair"], r["K"], r["prefix_caching"], r["prompts"], r["sampling"])
                    == (pair, k, caching, prompts, "T0.7")
                ]
                row[prompts] = {r["tool"]: round(r["ttft_mean_s"], 3) for r in chosen}
                row[prompts]["server"] = round(statistics.mean(r["server_ttft_mean_s"] for r in chosen), 3)
                queries = sum(r["prefix_cache_queries"] for r in chosen)
                row[prompts]["hit_share"] = (
                    round(sum(r["prefix_cache_hits"] for r in chosen) / queries, 3) if queries else 0.0
                )
            row["shared_over_unshared"] = round(row["shared"]["server"] / row["unshared"]["server"], 3)
            summary["ttft"].append(row)

# Host: the worst of every run.
hosts = [r["host"] for r in records]
summary["host"] = {
    "runs": len(hosts),
    "other_work_cores_max": max(h["other_work_cores"] for h in hosts),
    "load_1m_max": max(h["load_1m_max"] for h in hosts),
    "steal_share_max": max(h["steal_share"] for h in hosts),
    "other_engines_max": max(
        len(h["other_engines"]) if isinstance(h["other_engines"], list) else h["other_engines"] for h in hosts
    ),
    "busy": sorted({problem for h in hosts for problem in h["busy"]}),
}
# The tools against each other on the same prompts and server: TTFT ratios.
POINT = ("pair", "K", "prefix_caching", "prompts", "sampling")
ratios = []
for a, b in combinations(records, 2):
    if [a[key] for key in POINT] == [b[key] for key in POINT] and {a["tool"], b["tool"]} == {
        "peagle-bench",
        "vllm-bench-serve",
    }:
        ours, theirs = (a, b) if a["tool"] == "peagle-bench" else (b, a)
        ratios.append(ours["ttft_mean_s"] / theirs["ttft_mean_s"])
summary["peagle_over_vllm_ttft"] = {
    "pairs": len(ratios),
    "median": round(statistics.median(ratios), 3) if ratios else None,
    "min": round(min(ratios), 3) if ratios else None,
    "max": round(max(ratios), 3) if ratios else None,
}
(runs.parent / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
print(json.dumps(summary, indent=1))
