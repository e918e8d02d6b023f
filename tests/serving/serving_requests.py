"""Small HTTP helpers for the serving tests (plain urllib: what any client would send)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from peagle_serve.metrics import MetricsSnapshot


def post(
    url: str, body: bytes | dict | None, *, content_type: str | None = "application/json", timeout: float = 120
) -> tuple[int, str]:
    data = json.dumps(body).encode() if isinstance(body, dict) else (body or b"")
    headers = {"Content-Type": content_type} if content_type else {}
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")


def post_json(url: str, body: dict, **kwargs) -> tuple[int, dict]:
    status, text = post(url, body, **kwargs)
    return status, json.loads(text)


def metrics(base_url: str) -> MetricsSnapshot:
    with urllib.request.urlopen(base_url + "/metrics", timeout=10) as response:
        return MetricsSnapshot.parse(response.read().decode())


GREEDY = {"temperature": 0}
# Sampling as users deploy it: the profiles' (peagle/catalog/profiles.yaml: chatbot 0.7/0.9, codegen
# 0.2/0.95, batch 0.3/0.9), vLLM's default temperature 1.0, and top_k, which the CPU sampler takes
# another path for. Not min_p: vLLM 0.32 refuses it with speculation ("The min_p and logit_bias
# sampling parameters are not yet supported with speculative decoding.", 400).
SAMPLINGS = {
    "codegen T0.2 top_p0.95": {"temperature": 0.2, "top_p": 0.95},
    "chatbot T0.7 top_p0.9": {"temperature": 0.7, "top_p": 0.9},
    "T1.0": {"temperature": 1.0},
    "T0.7 top_k5": {"temperature": 0.7, "top_k": 5},
    "T1.0 top_p0.9 top_k20": {"temperature": 1.0, "top_p": 0.9, "top_k": 20},
}


def completion(base_url: str, prompt: str, max_tokens: int, sampling: dict) -> dict:
    status, body = post_json(
        base_url + "/invocations",
        {"prompt": prompt, "max_tokens": max_tokens, "return_token_ids": True, **sampling},
    )
    assert status == 200, body
    return body


def greedy_completion(base_url: str, prompt: str, max_tokens: int) -> dict:
    return completion(base_url, prompt, max_tokens, GREEDY)
