"""`peagle prompts` then `peagle capacity --prompts-file` against the shared local server: the capture's
prompts are what the levels send, and the figure names the file they came from. A tiny search: a few short
levels, 16-token answers, a loose SLO; the figure itself is not the subject."""

from __future__ import annotations

import hashlib
import json

from peagle.cli import main


def _capture(root, prompts: list[str]) -> None:
    """One hour of capture records for these completion requests, in SageMaker's documented format
    (tests/prompts/capture_records.py has the long form)."""
    path = root / "peagle-endpoint" / "AllTraffic" / "2026" / "12" / "01" / "10" / "capture.jsonl"
    path.parent.mkdir(parents=True)
    records = [
        {
            "captureData": {
                "endpointInput": {
                    "observedContentType": "application/json",
                    "mode": "INPUT",
                    "data": json.dumps({"prompt": prompt, "max_tokens": 16, "stream": True}),
                    "encoding": "JSON",
                }
            },
            "eventMetadata": {"eventId": f"event-{i}", "inferenceTime": "2026-12-01T10:00:00Z"},
            "eventVersion": "0",
        }
        for i, prompt in enumerate(prompts)
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def test_capacity_measures_the_captured_prompts_and_names_their_file(local_server, tmp_path, capsys):
    prompts = [f"Production request {i}: summarise the notes above in one line." for i in range(4)]
    _capture(tmp_path / "capture", prompts)
    prompts_file = tmp_path / "prompts.jsonl"
    assert main(["prompts", str(tmp_path / "capture"), "--out", str(prompts_file)]) == 0

    out = tmp_path / "capacity"
    argv = ["capacity", "--url", local_server.url, "--prompts-file", str(prompts_file), "--out", str(out)]
    argv += ["--slo", "ttft:5000", "--attainment", "0.5", "--start-rate", "1", "--max-rate", "2", "--repeats", "1"]
    argv += ["--time-budget", "20", "--min-level-seconds", "2", "--requests-per-level", "4", "--warmup", "1"]
    argv += ["--busy-limit", "1"]  # the search is not the subject: a busy CI machine must not stop it
    assert main(argv) in (0, 1), capsys.readouterr().err
    document = json.loads((out / "capacity.json").read_text())
    digest = hashlib.sha256(prompts_file.read_bytes()).hexdigest()[:12]
    assert document["prompts"] == f"{prompts_file} (sha256 {digest}, 4 prompts; max_tokens set by 4)"
    assert document["points"] and all(point["requests"] >= 1 for point in document["points"])
    assert "synthetic prompts" not in capsys.readouterr().err


def test_input_tokens_of_a_chat_capture_count_the_rendered_template_not_the_encodings_fields(tiny_pair, tmp_path):
    """apply_chat_template(tokenize=True) returns a BatchEncoding in recent transformers: its len() is 2."""
    path = tmp_path / "capture" / "peagle-endpoint" / "AllTraffic" / "2026" / "12" / "01" / "10" / "chat.jsonl"
    path.parent.mkdir(parents=True)
    words = "Summarise the release notes of the last three versions in one short paragraph please"
    body = {"messages": [{"role": "user", "content": words}], "max_tokens": 16}
    record = {
        "captureData": {
            "endpointInput": {
                "observedContentType": "application/json",
                "mode": "INPUT",
                "data": json.dumps(body),
                "encoding": "JSON",
            }
        },
        "eventMetadata": {"eventId": "chat-0", "inferenceTime": "2026-12-01T10:00:00Z"},
        "eventVersion": "0",
    }
    path.write_text(json.dumps(record) + "\n")
    out = tmp_path / "prompts.jsonl"
    tokenizer = str(tiny_pair.root / "target")
    assert main(["prompts", str(tmp_path / "capture"), "--out", str(out), "--tokenizer", tokenizer]) == 0
    summary = json.loads(out.with_name("prompts.summary.json").read_text())
    assert summary["input_tokens"]["max"] >= len(words.split()), summary["input_tokens"]
