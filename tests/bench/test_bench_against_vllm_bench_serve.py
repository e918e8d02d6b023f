"""`peagle bench --request-rate` and vLLM's own `vllm bench serve` against the same local server, with the
same settings, measure the same output tokens/s, median TTFT and median TPOT (within a stated tolerance).

vLLM's load tester ships with the CPU build (facts §11); it is run as docs/baselines/README.md's
cross-check ran it. Matching settings: open loop at the same rate, Poisson, seed, request count, output
length (ignore_eos), sampling (greedy: the tiny pair's acceptance is pinned only greedy) and prompt
length: vllm's random dataset is given the mean token count of bench's `short` prompts, as the
cross-check found prompt length moves TTFT (and with it tokens/s) under speculation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from local_engine import REPO_ROOT

pytestmark = pytest.mark.engine

RATE, REQUESTS, OUTPUT_TOKENS, SEED = 4, 16, 32, 0

# Tolerances, from runs on these 2-core machines (the tiny pair, rate 4, 16 requests of 32 tokens; each
# tool once): output tok/s agreed within 2% (121.4 vs 121.1, 120.2 vs 121.8), median TTFT 38.7 vs 53.1 ms
# and 38.3 vs 37.6 ms, median TPOT 2.12 vs 2.58 ms (and 1.9 vs 1.4 ms on a one-sequence server): TPOT is a couple of milliseconds that a busy CPU moves by half
# (a starved API server sometimes delivers a whole stream in one burst, for either tool).
# - output tok/s: within 20%. Both divide all output tokens by vllm bench serve's duration (schedule start
#   to last answer), which at a rate the server carries is set by the schedule, so it is the tight check.
# - median TTFT and TPOT: within a factor of 1.75, or 30 ms / 0.75 ms apart. Generous for noise, yet a
#   grossly wrong definition fails: TPOT taken per SSE event (5 tokens per event at K=4) is several times
#   vLLM's. A subtle one does not: TPOT as e2e / tokens (first token included) read 3.2 ms against vLLM's
#   2.0 ms (1.6x), inside the tolerance at this TTFT share; the client's and peagle.slo's own tests pin
#   the formula, this test that the two tools measure the same server alike.
TOKENS_PER_S_TOLERANCE = 0.20
LATENCY_FACTOR = 1.75
TTFT_SLACK_S, TPOT_SLACK_S = 0.030, 0.00075


def _close(ours: float, theirs: float, slack: float) -> bool:
    return abs(ours - theirs) <= slack or 1 / LATENCY_FACTOR <= ours / theirs <= LATENCY_FACTOR


def _peagle_bench(url: str, out) -> dict:
    """`peagle bench` in its own process, as a user runs it and as vLLM's tool runs below
    (tests/bench/test_bench_adds_nothing.py says why not inside this pytest process)."""
    command = [sys.executable, "-m", "peagle.cli", "bench", "--url", url, "--request-rate", str(RATE)]
    command += ["--requests", str(REQUESTS), "--max-tokens", str(OUTPUT_TOKENS), "--buckets", "short"]
    command += ["--seed", str(SEED), "--temperature", "0", "--slo", "ttft:1000 tpot:100", "--out", str(out)]
    finished = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    level = json.loads((out / "results.json").read_text())["runs"][0]["levels"][0]
    assert level["output_tokens"] == REQUESTS * OUTPUT_TOKENS
    return level


def _vllm_bench_serve(url: str, tokenizer, prompt_tokens: int, out_dir) -> dict:
    command = [sys.executable, "-m", "peagle_serve.vllm_cli", "bench", "serve", "--backend", "openai"]
    command += ["--base-url", url, "--endpoint", "/v1/completions", "--model", "tiny-pair"]
    command += ["--tokenizer", str(tokenizer), "--dataset-name", "random"]
    command += ["--random-input-len", str(prompt_tokens), "--random-output-len", str(OUTPUT_TOKENS)]
    command += ["--num-prompts", str(REQUESTS), "--request-rate", str(RATE), "--burstiness", "1"]
    command += ["--seed", str(SEED), "--ignore-eos", "--temperature", "0", "--goodput", "ttft:1000", "tpot:100"]
    command += ["--save-result", "--result-dir", str(out_dir), "--result-filename", "vllm.json", "--disable-tqdm"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "inference_image")}
    finished = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    result = json.loads((out_dir / "vllm.json").read_text())
    assert (result["completed"], result["total_output_tokens"]) == (REQUESTS, REQUESTS * OUTPUT_TOKENS)
    assert result["total_input_tokens"] / REQUESTS == pytest.approx(prompt_tokens, abs=2)
    return result


def _disagreements(ours: dict, theirs: dict) -> list[str]:
    wrong = []
    if ours["output_tokens_per_s"] != pytest.approx(theirs["output_throughput"], rel=TOKENS_PER_S_TOLERANCE):
        wrong.append("output tok/s")
    if not _close(ours["ttft_s"]["p50"], theirs["median_ttft_ms"] / 1000, TTFT_SLACK_S):
        wrong.append("median TTFT")
    if not _close(ours["tpot_s"]["p50"], theirs["median_tpot_ms"] / 1000, TPOT_SLACK_S):
        wrong.append("median TPOT")
    return wrong


def test_bench_agrees_with_vllm_bench_serve_at_the_same_request_rate(local_server, tiny_pair, tmp_path):
    """Each tool once; if they disagree, both once more and the second pair decides. Other work on these
    shared 2 cores can spoil one run (a burst put one bench run's median TTFT at 1.9 s against vLLM's 38 ms);
    a definition that differs spoils every pair."""
    shown = []
    for attempt in (1, 2):
        ours = _peagle_bench(local_server.url, tmp_path / f"peagle{attempt}")
        prompt_tokens = round(ours["prompt_tokens"] / ours["requests"])
        (tmp_path / f"vllm{attempt}").mkdir()
        theirs = _vllm_bench_serve(
            local_server.url, tiny_pair.root / "target", prompt_tokens, tmp_path / f"vllm{attempt}"
        )
        figures = {
            "output tok/s": (ours["output_tokens_per_s"], theirs["output_throughput"]),
            "median TTFT (ms)": (ours["ttft_s"]["p50"] * 1000, theirs["median_ttft_ms"]),
            "median TPOT (ms)": (ours["tpot_s"]["p50"] * 1000, theirs["median_tpot_ms"]),
            "goodput (req/s)": (ours["slo"]["goodput_requests_per_s"], theirs["request_goodput"]),
        }
        shown.append(
            f"pair {attempt}: " + "; ".join(f"{k}: peagle {a:.4g}, vllm {b:.4g}" for k, (a, b) in figures.items())
        )
        print(shown[-1])  # with -s: the agreement measured
        wrong = _disagreements(ours, theirs)
        if not wrong:
            break
    assert not wrong, f"{', '.join(wrong)} disagree: " + " | ".join(shown)
    # Goodput: with so loose an SLO every request is good in both tools, so both are requests / duration.
    if ours["slo"]["all_bounds"] == 1.0 and theirs["request_goodput"] is not None:
        assert ours["slo"]["goodput_requests_per_s"] == pytest.approx(theirs["request_goodput"], rel=0.2), shown
