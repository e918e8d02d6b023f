"""Capture records in SageMaker's documented format ("Capture data from real-time endpoint", View Captured
Data: one JSON object per line with captureData.endpointInput/endpointOutput {observedContentType, mode,
data, encoding}, eventMetadata {eventId, inferenceTime[, inferenceId]} and eventVersion "0"), written
under the documented key layout {endpoint}/{variant}/yyyy/mm/dd/hh/filename.jsonl."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

ENDPOINT, VARIANT = "peagle-endpoint", "AllTraffic"


def captured(payload: Any, *, encoding: str = "JSON", mode: str = "INPUT", content_type: str = "application/json"):
    text = payload if isinstance(payload, str) else json.dumps(payload)
    data = base64.b64encode(text.encode()).decode() if encoding == "BASE64" else text
    return {"observedContentType": content_type, "mode": mode, "data": data, "encoding": encoding}


def record(request: Any, *, encoding: str = "JSON", response: Any = None, event: int = 0, **input_options) -> str:
    capture = {"endpointInput": captured(request, encoding=encoding, **input_options)}
    if response is not None:
        capture["endpointOutput"] = captured(response, encoding=encoding, mode="OUTPUT")
    return json.dumps(
        {
            "captureData": capture,
            "eventMetadata": {
                "eventId": f"aaaaaaaa-bbbb-cccc-dddd-{event:012d}",
                "inferenceId": f"request-{event}",
                "inferenceTime": f"2026-12-01T10:{event % 60:02d}:00Z",
            },
            "eventVersion": "0",
        }
    )


def capture_key(hour: int = 10, name: str = "capture.jsonl") -> str:
    return f"{ENDPOINT}/{VARIANT}/2026/12/01/{hour:02d}/{name}"


def write_capture(root: Path, lines: list[str], *, hour: int = 10, name: str = "capture.jsonl") -> Path:
    path = root / capture_key(hour, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


CHAT = {
    "model": "peagle",
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is EAGLE?"}],
    "max_tokens": 200,
    "temperature": 0.7,
    "top_p": 0.9,
    "stream": True,
    "stream_options": {"include_usage": True},
    "user": "alice@example.com",
}
COMPLETION = {"prompt": "Summarise the notes: the team met.", "max_tokens": 64, "temperature": 0.0, "seed": 7}
CHAT_RESPONSE = {
    "choices": [{"message": {"role": "assistant", "content": "A drafter."}}],
    "usage": {"prompt_tokens": 20, "completion_tokens": 42, "total_tokens": 62},
}
