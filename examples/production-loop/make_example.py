"""Writes the production loop's worked example (docs/production-loop.md): capture records in SageMaker's
Data Capture format, as an endpoint with capture on would leave them in S3, and a day of per-minute
invocations in the trace format `peagle traffic` writes. Deterministic; the committed files are its output:

    .venv/bin/python examples/production-loop/make_example.py

Record format ("Capture data from real-time endpoint", View Captured Data,
https://docs.aws.amazon.com/sagemaker/latest/dg/model-monitor-data-capture-endpoint.html): one JSON object
per line, ``captureData.endpointInput`` {``observedContentType``, ``mode``, ``data``, ``encoding``},
``eventMetadata`` {``eventId``, ``inferenceTime``}, ``eventVersion`` "0"; keys
``{prefix}/{endpoint}/{variant}/yyyy/mm/dd/hh/*.jsonl``. Without ``JsonContentTypes`` SageMaker stores
bodies base64-encoded ("If no headers are specified SageMaker AI will by default base64 encode when
capturing the data", CaptureContentTypeHeader), so most records here are BASE64 and some JSON.
"""

from __future__ import annotations

import base64
import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENDPOINT, VARIANT = "peagle-endpoint", "Primary"
SYSTEM = (
    "You are the support assistant of a cloud storage company. Answer in plain English, in at most five "
    "sentences, and only about the company's products: file sync, shared folders, version history, "
    "retention policies and the desktop and mobile apps. If a question is about billing, say that the "
    "billing team answers it and give the support address. Never invent a feature; if you do not know, say so."
)
QUESTIONS = [
    "How do I restore a file I deleted yesterday?",
    "Can I share a folder with someone who has no account?",
    "Why does the desktop app say 'sync paused'?",
    "How long is version history kept on the business plan?",
    "Is there a limit on the size of a single file?",
    "How do I move my files from another provider?",
    "Can two people edit the same spreadsheet at once?",
    "What happens to shared links when I leave the team?",
    "How do I turn on two-factor authentication?",
    "The mobile app uses a lot of battery. What can I do?",
    "Can I choose which folders sync to my laptop?",
    "How do retention policies interact with deleting a file?",
    "Why is my upload stuck at 99%?",
    "Can I see who opened a shared file?",
    "How do I recover an earlier version of a document?",
    "Does the app work offline on a plane?",
    "How do I transfer ownership of a folder to a colleague?",
    "Can I set an expiry date on a shared link?",
    "Why are some files marked with a red cross?",
    "How do I stop syncing a folder without deleting it from the cloud?",
]


def _record(body: dict, when: datetime, encoding: str) -> dict:
    text = json.dumps(body)
    data = base64.b64encode(text.encode()).decode() if encoding == "BASE64" else text
    return {
        "captureData": {
            "endpointInput": {
                "observedContentType": "application/json",
                "mode": "INPUT",
                "data": data,
                "encoding": encoding,
            }
        },
        "eventMetadata": {"eventId": str(uuid.UUID(int=random.getrandbits(128))), "inferenceTime": when.isoformat()},
        "eventVersion": "0",
    }


def capture(root: Path) -> None:
    start = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
    records = []
    for index in range(48):
        question = QUESTIONS[index % len(QUESTIONS)]  # the busiest questions come back: duplicates
        body = {
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
            "max_tokens": random.choice([96, 128, 128, 192]),
            "temperature": 0.7,
            "top_p": 0.9,
            "stream": True,
        }
        if index % 4 == 3:  # a few callers send completions
            body = {"prompt": question, "max_tokens": 64, "temperature": 0.7, "top_p": 0.9, "stream": True}
        when = start + timedelta(seconds=37 * index)
        records.append(_record(body, when, "JSON" if index % 5 == 0 else "BASE64"))
    folder = root / ENDPOINT / VARIANT / start.strftime("%Y/%m/%d/%H")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "capture-example.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def day(path: Path) -> None:
    """A quiet night, a morning ramp to 300 requests/minute, a day there, an evening fall, and a
    10-minute spike to 1,500 at 14:00 (the issue's day)."""
    rows = []
    for minute in range(1440):
        hour = minute / 60
        rate = 5.0
        if 6 <= hour < 9:
            rate = 5 + 295 * (hour - 6) / 3
        elif 9 <= hour < 18:
            rate = 300.0
        elif 18 <= hour < 21:
            rate = 300 - 295 * (hour - 18) / 3
        if 840 <= minute < 850:
            rate = 1500.0
        rows.append(f"{minute},{round(rate)}")
    header = [
        "# start: 2026-11-30T00:00:00Z",
        f"# source: a made-up day shaped like {ENDPOINT}/{VARIANT}'s, in the format `peagle traffic` writes",
        "# period: 60 s; minutes without a row carried no requests",
        "minute,requests",
    ]
    path.write_text("\n".join(header + rows) + "\n")


if __name__ == "__main__":
    random.seed(0)
    capture(HERE / "capture")
    day(HERE / "day.csv")
