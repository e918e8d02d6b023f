"""What /invocations (the SageMaker container contract, which peagle bench calls) adds over vLLM's own
/v1/completions (which vllm bench serve calls) on the same server: 1-token requests, the two routes
alternating, one keep-alive connection, the median of each.

Run from the repository root against a running server, e.g. `peagle local --pair partial
--speculative-tokens 0 --port 8191`, then: python docs/baselines/cross-check/route_cost.py
http://127.0.0.1:8191 60 > docs/baselines/cross-check/route-cost-partial-pair.json
"""

import json
import statistics
import sys
import time

import httpx

url, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 60
body = {"prompt": "The quick brown fox jumps over the lazy dog and", "max_tokens": 1, "temperature": 0}
model = httpx.get(url + "/v1/models").json()["data"][0]["id"]
payloads = {"/invocations": body, "/v1/completions": {**body, "model": model}}
times: dict[str, list[float]] = {route: [] for route in payloads}
with httpx.Client(base_url=url, timeout=60) as client:
    for route, payload in list(payloads.items()) * 5:  # warm both routes
        client.post(route, json=payload)
    for index in range(rounds):
        for route in payloads if index % 2 == 0 else reversed(payloads):
            start = time.perf_counter()
            response = client.post(route, json=payloads[route])
            elapsed = time.perf_counter() - start
            assert response.status_code == 200, response.text
            times[route].append(elapsed)
summary = {
    route: {"median_ms": statistics.median(values) * 1000, "mean_ms": statistics.mean(values) * 1000, "n": len(values)}
    for route, values in times.items()
}
summary["invocations_minus_completions_median_ms"] = (
    summary["/invocations"]["median_ms"] - summary["/v1/completions"]["median_ms"]
)
print(json.dumps(summary, indent=1))
