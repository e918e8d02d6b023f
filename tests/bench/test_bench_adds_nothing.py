"""`peagle bench` adds nothing to a request's latency that vLLM's own client does not: both load testers
send the same prompts (one JSONL both read: vllm bench serve's `--dataset-name custom
--skip-chat-template`, bench's `--prompts-file`) closed loop at concurrency 1 and 4 to the same server,
and each tool's figures are set against what the server itself measured over that run (vLLM's
/metrics histograms: vllm:time_to_first_token_seconds and vllm:e2e_request_latency_seconds, scraped
before and after), so what is compared is what each client adds, not how fast the server was at that
moment.

Why not the raw figures: on these 2 shared cores the same tool's output tokens/s moves 15-20% from
one run to the next (240.7 and 292.8 tok/s a minute apart at concurrency 1, with the server's own TPOT
3.38 and 2.74 ms), so a 5% agreement between two runs measures the machine's drift. Measured quietly
(load average 1.4-2.0, other work 0.02 cores), raw, three pairs at concurrency 1: mean TTFT peagle
45.7 / 52.1 / 52.3 ms against vllm 49.8 / 51.3 / 46.4 ms. The ~20 ms extra first token reported
for an earlier version did not reproduce; this test keeps it from coming back.

The route differs, as SageMaker users' does: bench calls /invocations (the container contract),
vllm bench serve /v1/completions; the server-side TTFT of each run covers its own route's work inside
vLLM, so the route's cost is not counted as the client's.
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

pytestmark = pytest.mark.engine

REQUESTS, OUTPUT_TOKENS = 24, 64
# What a client may add beyond vLLM's own, per request: 5 ms or 10% of vLLM's client TTFT, whichever is
# more, to the first token (the "mean TTFT within 10% or 5 ms"; at concurrency 4 the server's own
# TTFT is 70-130 ms and a busier CI machine moved the added figure by 5 ms); 5% to the wall time
# its tokens/s divides by. Measured quietly: at concurrency 1 each client added 3.8 ms to the server's
# TTFT and 2.1% to its e2e; at 4, bench 4.6 ms and 1.8%, vllm bench serve 6.7 ms and 1.7%.
TTFT_SLACK_S, TTFT_SLACK_SHARE = 0.005, 0.10
WALL_SHARE = 0.05


@pytest.fixture(scope="module")
def prompts_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("prompts") / "prompts.jsonl"
    lines = [json.dumps({"prompt": case.prompt}) for case in synthetic_prompts(["short"], seed=0)[:REQUESTS]]
    path.write_text("\n".join(lines) + "\n")
    return path


def _client_over_server(url: str, run) -> dict:
    """Run ``run()`` (one load test), and return its client-side figures beside the server's over it."""
    before = scrape_metrics(url)
    ours = run()
    server = server_latency_between(before, scrape_metrics(url))
    return {**ours, "server_ttft_s": server.ttft_mean_s, "server_e2e_s": server.e2e_mean_s}


def _peagle(url: str, prompts_file, concurrency: int, out) -> dict:
    argv = ["bench", "--url", url, "--concurrency", str(concurrency), "--requests", str(REQUESTS)]
    argv += ["--prompts-file", str(prompts_file), "--buckets", "none", "--max-tokens", str(OUTPUT_TOKENS)]
    assert main([*argv, "--temperature", "0", "--warmup", "0", "--out", str(out)]) == 0
    level = json.loads((out / "results.json").read_text())["runs"][0]["levels"][0]
    assert level["output_tokens"] == REQUESTS * OUTPUT_TOKENS
    return {"ttft_s": level["ttft_s"]["mean"], "e2e_s": level["e2e_s"]["mean"]}


def _vllm(url: str, tokenizer, prompts_file, concurrency: int, out) -> dict:
    command = [sys.executable, "-m", "peagle_serve.vllm_cli", "bench", "serve", "--backend", "openai"]
    command += [
        "--base-url",
        url,
        "--endpoint",
        "/v1/completions",
        "--model",
        "tiny-pair",
        "--tokenizer",
        str(tokenizer),
    ]
    command += ["--dataset-name", "custom", "--dataset-path", str(prompts_file), "--skip-chat-template"]
    command += ["--custom-output-len", str(OUTPUT_TOKENS), "--num-prompts", str(REQUESTS), "--request-rate", "inf"]
    command += ["--max-concurrency", str(concurrency), "--ignore-eos", "--temperature", "0", "--num-warmups", "0"]
    command += ["--percentile-metrics", "ttft,tpot,itl,e2el"]  # e2el is reported only when asked for
    command += ["--save-result", "--result-dir", str(out), "--result-filename", "vllm.json", "--disable-tqdm"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "inference_image")}
    finished = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    result = json.loads((out / "vllm.json").read_text())
    assert (result["completed"], result["total_output_tokens"]) == (REQUESTS, REQUESTS * OUTPUT_TOKENS)
    return {"ttft_s": result["mean_ttft_ms"] / 1000, "e2e_s": result["mean_e2el_ms"] / 1000}


def _one_pair(url: str, target, prompts_file, concurrency: int, out) -> tuple[bool, str]:
    """Both tools once, vLLM's first; (whether bench added no more than vLLM's tool, what each added)."""
    (out / "vllm").mkdir(parents=True)
    theirs = _client_over_server(url, lambda: _vllm(url, target, prompts_file, concurrency, out / "vllm"))
    ours = _client_over_server(url, lambda: _peagle(url, prompts_file, concurrency, out / "peagle"))
    added = {
        name: {
            "ttft_s": figures["ttft_s"] - figures["server_ttft_s"],
            "e2e_share": figures["e2e_s"] / figures["server_e2e_s"] - 1,
        }
        for name, figures in (("peagle", ours), ("vllm", theirs))
    }
    shown = f"c={concurrency}: peagle {ours} vllm {theirs} added {added}"
    print(shown)  # with -s: what each client added
    slack = max(TTFT_SLACK_S, TTFT_SLACK_SHARE * theirs["ttft_s"])
    agree = (
        added["peagle"]["ttft_s"] <= added["vllm"]["ttft_s"] + slack
        and added["peagle"]["e2e_share"] <= added["vllm"]["e2e_share"] + WALL_SHARE
    )
    return agree, shown


@pytest.mark.parametrize("concurrency", [1, 4])
def test_bench_adds_no_more_than_vllm_bench_serve_to_what_the_server_measured(
    local_server, tiny_pair, prompts_file, tmp_path, concurrency
):
    """One pair of runs decides; only if bench added more, both run once more and the second pair decides.
    A single slow request moves a 24-request mean by several milliseconds on these shared cores (in CI once:
    bench's TTFT p50 27.9 ms against vLLM's tool's mean 30.9 ms, but one request near 200 ms put bench's mean
    12.7 ms above the server's against vLLM's 4.4), while a client that adds to every request, as the ~20 ms
    once reported did, fails both pairs."""
    url, target = local_server.url, tiny_pair.root / "target"
    agree, shown = _one_pair(url, target, prompts_file, concurrency, tmp_path / "first")
    if not agree:
        agree, again = _one_pair(url, target, prompts_file, concurrency, tmp_path / "second")
        shown = f"first pair: {shown}\nsecond pair: {again}"
    assert agree, shown
