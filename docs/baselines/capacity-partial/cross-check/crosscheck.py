"""Run from the repository root: python docs/baselines/capacity-partial/cross-check/crosscheck.py K RATES OUT DATASETS.

vllm bench serve --request-rate at the knee and 1.5x it, against peagle local --pair partial -k K,
with the host conditions of each level (the vllm bench serve process's CPU taken out of other work)."""

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))  # the repository root
from peagle.bench.host_conditions import BusyLimit, HostWatch
from peagle.local.served import serve_local

K, rates, out = int(sys.argv[1]), [float(r) for r in sys.argv[2].split(",")], Path(sys.argv[3])
datasets = sys.argv[4].split(",")  # capacity-prompts and/or random64
out.mkdir(parents=True, exist_ok=True)
repo = Path(__file__).resolve().parents[4]
with serve_local(
    ["--pair", "partial", "--speculative-tokens", str(K)],
    log_path=out / "server.log",
    label=f"K={K}",
    parent="crosscheck",
) as url:
    for rate, dataset in [(r, d) for r in rates for d in datasets]:
        name = f"vllm-bench-serve-{rate:g}-{dataset}"
        command = [
            sys.executable,
            "-m",
            "peagle_serve.vllm_cli",
            "bench",
            "serve",
            "--backend",
            "openai",
            "--base-url",
            url,
            "--endpoint",
            "/v1/completions",
            "--model",
            "partial-pair",
            "--tokenizer",
            str(repo / "local-models/partial-pair/target"),
            *(
                ["--dataset-name", "random", "--random-input-len", "64", "--random-output-len", "128"]
                if dataset == "random64"
                else [
                    "--dataset-name",
                    "custom",
                    "--dataset-path",
                    str(Path(__file__).with_name("capacity-prompts.jsonl")),
                    "--skip-chat-template",
                    "--custom-output-len",
                    "128",
                ]
            ),
            "--num-prompts",
            "24",
            "--request-rate",
            str(rate),
            "--burstiness",
            "1",
            "--seed",
            "0",
            "--ignore-eos",
            "--temperature",
            "0.7",
            "--top-p",
            "0.9",
            "--goodput",
            "ttft:1000",
            "tpot:100",
            "--num-warmups",
            "2",
            "--save-result",
            "--result-dir",
            str(out),
            "--result-filename",
            name + ".json",
            "--disable-tqdm",
        ]
        env = {**os.environ, "PYTHONPATH": str(repo / "inference_image")}
        before = os.times()
        with HostWatch(url) as watch:
            done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
        after = os.times()
        client = (after.children_user + after.children_system) - (before.children_user + before.children_system)
        host = watch.conditions(BusyLimit())
        (out / (name + ".log")).write_text(done.stdout + done.stderr)
        result = json.loads((out / (name + ".json")).read_text())
        other = max(0.0, host.other_work_cores - client / host.seconds)
        record = {
            "rate": rate,
            "K": K,
            "dataset": dataset,
            "mean_input_tokens": result["total_input_tokens"] / result["completed"],
            "client_cores": round(client / host.seconds, 3),
            "other_work_cores_without_client": round(other, 3),
            "host": asdict(host),
            "completed": result["completed"],
            "request_goodput": result["request_goodput"],
            "goodput_share": result["request_goodput"] / result["request_throughput"]
            if result["request_throughput"]
            else None,
            "mean_ttft_ms": result["mean_ttft_ms"],
            "p99_ttft_ms": result["p99_ttft_ms"],
            "mean_tpot_ms": result["mean_tpot_ms"],
            "output_throughput": result["output_throughput"],
            "request_throughput": result["request_throughput"],
        }
        (out / (name + "-conditions.json")).write_text(json.dumps(record, indent=2) + "\n")
        print(json.dumps({k: v for k, v in record.items() if k != "host"}))
