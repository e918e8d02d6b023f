"""The batch record protocol for real: `peagle batch --url` against the shared P-EAGLE server.

A handful of records with small max_tokens (the CPU is shared): completion and chat
records succeed, each answer with its acceptance (metrics.speculative_decoding), a record
the model rejects (max_tokens past max_model_len) gets an error record with vLLM's 400,
and the output keeps input order, one line per record.
"""

from __future__ import annotations

import json

import pytest

from peagle.cli import main

pytestmark = pytest.mark.engine

RECORDS = [
    {"id": "a", "prompt": "Hello, world", "max_tokens": 6, "temperature": 0.0},
    {"id": "b", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5, "temperature": 0.0},
    {"id": "too-long", "prompt": "Hi", "max_tokens": 100_000},
    {"id": "d", "prompt": "Speculative decoding", "max_tokens": 7, "temperature": 0.0},
]


def _write_jsonl(path, records) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


def test_each_line_is_one_invocation_joined_in_order_and_a_rejected_line_gets_an_error_record(
    local_server, tmp_path, capsys
):
    prompts, output = tmp_path / "prompts.jsonl", tmp_path / "out" / "answers.jsonl"
    _write_jsonl(prompts, RECORDS)

    exit_code = main(
        [
            "batch",
            "--url",
            local_server.url,
            "--input",
            str(prompts),
            "--output",
            str(output),
            "--max-concurrent-transforms",
            "2",
        ]
    )

    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert exit_code == 1  # one record failed; the others were still answered
    assert [line["id"] for line in lines] == ["a", "b", "too-long", "d"]

    completion, chat, rejected, last = lines
    # JoinSource=Input: the record's own fields, plus the server's whole JSON answer.
    assert completion["prompt"] == "Hello, world" and completion["SageMakerOutput"]["object"] == "text_completion"
    assert completion["SageMakerOutput"]["usage"]["completion_tokens"] == 6
    assert len(completion["SageMakerOutput"]["choices"][0]["text"]) == 6  # one character per token
    assert chat["SageMakerOutput"]["object"] == "chat.completion"
    assert chat["SageMakerOutput"]["usage"]["completion_tokens"] == 5
    assert last["SageMakerOutput"]["usage"]["completion_tokens"] == 7
    # Each answer keeps its own acceptance (the launcher turns on vLLM's per-request spec-decode metrics).
    for answered in (completion, chat, last):
        spec = answered["SageMakerOutput"]["metrics"]["speculative_decoding"]
        assert spec["num_spec_tokens"] == 4 and spec["num_spec_steps"] == sum(spec["acceptance_histogram"]) > 0

    assert "SageMakerOutput" not in rejected
    assert rejected["error"]["status"] == 400 and "max_model_len" in rejected["error"]["message"]
    assert "line 3:" in err and "400" in err
    assert "4 records: 3 ok, 1 failed" in out and "18 output tokens" in out


def test_records_are_checked_before_anything_is_sent(local_server, tmp_path, capsys):
    prompts, output = tmp_path / "prompts.jsonl", tmp_path / "answers.jsonl"
    prompts.write_text('{"prompt": "ok", "max_tokens": 2}\n{"prompt": "x", "stream": true}\n', encoding="utf-8")

    exit_code = main(["batch", "--url", local_server.url, "--input", str(prompts), "--output", str(output)])

    assert exit_code == 2 and not output.exists()
    assert "line 2: 'stream': true" in capsys.readouterr().err
