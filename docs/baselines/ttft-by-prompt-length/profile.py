"""Run from the repository root: python docs/baselines/ttft-by-prompt-length/profile.py OUT LENGTH K [K ...].

Where the prefill step's time goes with speculation off and on: one `peagle local --pair partial -k K
--max-model-len 2048 -- --no-enable-prefix-caching` server per K, three warm-up prompts, then 8 new prompts of
LENGTH tokens sent one at a time (2 output tokens each, chatbot sampling) while py-spy (requirements-dev.txt)
samples every process of the server 100 times a second. The raw stacks go to OUT/profile-K{K}-in{LENGTH}.txt;
the summary (profile-K{K}-in{LENGTH}.json, printed) gives, for vLLM's worker process (the one that runs the
models), the share of its samples in the target's forward, in the drafter (vLLM's propose_draft_token_ids,
P-EAGLE's pass over the prompt and its parallel-drafting slots), in attention and in matrix multiplies, with
the mean TTFT the client saw. py-spy itself takes CPU from the 2 cores (load ~2.5 while sampling), so the
TTFT here is slower than in the baseline; the shares are what this is for."""

import json
import os
import random
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root
from peagle.client import GenerationRequest, PeagleClient
from peagle.local.served import serve_local

out, length, ks = Path(sys.argv[1]), int(sys.argv[2]), [int(k) for k in sys.argv[3:]]
PROMPTS = 8
out.mkdir(parents=True, exist_ok=True)
# Frames (py-spy's "function (file:line)") that name each part of the worker's step.
PARTS = {
    "drafter (propose_draft_token_ids)": "propose_draft_token_ids",
    "model forward (target and drafter)": "_model_forward",
    "attention": "cpu_attention_with_kv_cache",
    "matrix multiplies (oneDNN)": "onednn_mm",
    "sampler": "Sampler.forward",
}


def summarise(stacks: Path) -> dict:
    """The worker's samples by part (a sample counts for every part its stack passes through)."""
    total, parts = 0, Counter()
    for line in stacks.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if not any(frame.startswith("process ") and "VLLM::Worker" in frame for frame in frames):
            continue
        total += int(count)
        for part, marker in PARTS.items():
            if any(marker in frame for frame in frames):
                parts[part] += int(count)
    return {"worker_samples": total, "shares": {part: round(parts[part] / total, 3) for part in PARTS}}


def prompt(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(length))


for k in ks:
    rng = random.Random(length)  # the same prompts for every K
    options = ["--pair", "partial", "--speculative-tokens", str(k), "--max-model-len", "2048"]
    options += ["--", "--no-enable-prefix-caching"]
    log = out / f"profile-server-K{k}.log"
    with (
        serve_local(options, log_path=log, label=f"K={k}", parent="profile") as url,
        PeagleClient.for_url(url) as client,
    ):
        for _ in range(3):
            client.generate(GenerationRequest(prompt=prompt(rng), max_tokens=2, temperature=0.7, top_p=0.9))
        pgrep = subprocess.run(["pgrep", "-f", f"peagle local --port {url.rsplit(':', 1)[1]}"], capture_output=True)
        stacks = out / f"profile-K{k}-in{length}.txt"
        spy = [str(Path(sys.executable).parent / "py-spy")]
        spy += ["record", "--subprocesses", "--nonblocking", "-r", "100", "-f", "raw", "-o", str(stacks)]
        sampler = subprocess.Popen([*spy, "-p", pgrep.stdout.split()[0].decode()], stdout=subprocess.DEVNULL)
        ttfts = []
        for _ in range(PROMPTS):
            answer = client.generate(GenerationRequest(prompt=prompt(rng), max_tokens=2, temperature=0.7, top_p=0.9))
            ttfts.append(answer.timings.ttft_s)
        sampler.send_signal(2)  # SIGINT: py-spy writes the stacks and exits
        sampler.wait(60)
    summary = {"K": k, "prompt_tokens": length, "ttft_mean_s": round(statistics.mean(ttfts), 3), **summarise(stacks)}
    summary["load_1m"] = os.getloadavg()[0]
    (out / f"profile-K{k}-in{length}.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary), flush=True)
