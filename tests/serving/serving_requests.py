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


def greedy_completion(base_url: str, prompt: str, max_tokens: int) -> dict:
    status, body = post_json(
        base_url + "/invocations",
        {
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": 0,
            "return_token_ids": True,
        },
    )
    assert status == 200, body
    return body
