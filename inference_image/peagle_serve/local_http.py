"""Minimal HTTP calls from the launcher to its own vLLM server over loopback (stdlib only)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


def get_text(url: str, timeout: float) -> tuple[int, str]:
    """GET ``url``; (status, body). Connection failures raise OSError."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")


def post_json(url: str, payload: dict, timeout: float) -> tuple[int, dict | str]:
    """POST a JSON body; (status, parsed JSON or raw text)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, body = response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read().decode("utf-8", "replace")
    try:
        return status, json.loads(body)
    except json.JSONDecodeError:
        return status, body
