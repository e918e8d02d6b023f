"""Served, request by request: python docs/baselines/k-by-load/engine-only/waves.py URL

Three waves of 8 streaming completions sent at once to a `peagle local --pair partial` server (64 tokens each, T 0.7,
top_p 0.9); prints each request's (TTFT s, end-to-end s, chunks). Run the server with `-- --enable-logging-iteration-details`
to see, in its log, which requests each engine step prefilled and how long the step took
(served-iterations-*.txt)."""

import random
import sys
import threading
import time

import httpx

URL = sys.argv[1]
rng = random.Random(0)


def one(out: dict, index: int) -> None:
    body = {
        "model": "partial-pair",
        "prompt": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(64)),
        "max_tokens": 64,
        "ignore_eos": True,
        "temperature": 0.7,
        "top_p": 0.9,
        "stream": True,
    }
    start, first, chunks = time.perf_counter(), None, 0
    with httpx.stream("POST", URL + "/v1/completions", json=body, timeout=120) as response:
        for line in response.iter_lines():
            if line.startswith("data: {"):
                first = time.perf_counter() - start if first is None else first
                chunks += 1
    out[index] = (round(first or 0.0, 2), round(time.perf_counter() - start, 2), chunks)


for wave in range(3):
    answers: dict = {}
    threads = [threading.Thread(target=one, args=(answers, index)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("wave", wave, [answers[index] for index in range(8)], flush=True)
