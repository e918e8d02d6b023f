"""Local checks of JSONL batch records: every bad line reported at once, by line number."""

from __future__ import annotations

import json
import socket

import pytest

from peagle.batch.records import RecordsError, find_bad_lines, joined_output, read_records, split_records
from peagle.cli import main

GOOD = [
    b'{"prompt": "Summarise: ...", "max_tokens": 64}',
    b'{"messages": [{"role": "user", "content": "Hi"}], "temperature": 0.2}',
    b'{"prompt": [1, 2, 3]}',
]


def test_good_records_pass_and_a_final_newline_is_not_a_record(tmp_path):
    path = tmp_path / "prompts.jsonl"
    path.write_bytes(b"\n".join(GOOD) + b"\n")
    assert read_records(path) == GOOD


def test_every_bad_line_is_reported_with_its_number(tmp_path):
    lines = [
        GOOD[0],
        b"not json",
        b'["a list"]',
        b"",
        b'{"max_tokens": 5}',
        b'{"prompt": "a", "messages": [{"role": "user", "content": "b"}]}',
        b'{"prompt": "a", "stream": true}',
        b'{"messages": []}',
        b'{"prompt": 7}',
        GOOD[1],
    ]
    path = tmp_path / "prompts.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    with pytest.raises(RecordsError) as raised:
        read_records(path)

    bad = {line.line_number: line.problem for line in raised.value.bad_lines}
    assert sorted(bad) == [2, 3, 4, 5, 6, 7, 8, 9]
    assert "not JSON" in bad[2]
    assert "expected an object" in bad[3]
    assert "empty line" in bad[4]
    assert bad[5] == "needs 'prompt' (completion) or 'messages' (chat); keys: max_tokens"
    assert "both" in bad[6]
    assert "stream" in bad[7]
    assert "'messages' must be a non-empty list" in bad[8]
    assert "'prompt' must be a string" in bad[9]
    message = str(raised.value)
    assert "8 line(s)" in message and "line 2:" in message and "line 9:" in message


def test_a_record_larger_than_the_payload_limit_is_rejected():
    big = json.dumps({"prompt": "x" * (1024 * 1024 + 10)}).encode()
    assert [bad.line_number for bad in find_bad_lines([GOOD[0], big], max_payload_mb=1)] == [2]
    assert find_bad_lines([GOOD[0], big], max_payload_mb=6) == []


def test_split_keeps_interior_empty_lines_as_records():
    assert split_records(b"a\n\nb\n") == [b"a", b"", b"b"]


def test_joined_output_matches_sagemaker_join_source_input():
    assert joined_output(b'{"id": 1, "prompt": "p"}', {"choices": []}) == {
        "id": 1,
        "prompt": "p",
        "SageMakerOutput": {"choices": []},
    }
    assert joined_output(b'"just text"', {"x": 1}) == {"SageMakerInput": "just text", "SageMakerOutput": {"x": 1}}


def test_the_cli_lists_bad_lines_and_sends_nothing(tmp_path, capsys):
    with socket.socket() as sock:  # a port nothing listens on: validation must stop the run first
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    path = tmp_path / "prompts.jsonl"
    path.write_bytes(GOOD[0] + b"\n{oops\n" + GOOD[1] + b"\n{}\n")

    exit_code = main(
        ["batch", "--url", f"http://127.0.0.1:{port}", "--input", str(path), "--output", str(tmp_path / "o.jsonl")]
    )

    err = capsys.readouterr().err
    assert exit_code == 2
    assert "2 line(s)" in err and "line 2: not JSON" in err and "line 4: needs 'prompt'" in err
    assert not (tmp_path / "o.jsonl").exists()


def test_an_unreachable_server_stops_the_run_with_one_message(tmp_path, capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    path = tmp_path / "prompts.jsonl"
    path.write_bytes(b"\n".join(GOOD) + b"\n")

    exit_code = main(
        [
            "batch",
            "--url",
            f"http://127.0.0.1:{port}",
            "--input",
            str(path),
            "--output",
            str(tmp_path / "o.jsonl"),
            "--max-attempts",
            "1",
        ]
    )

    err = capsys.readouterr().err
    assert exit_code == 1 and "Is the server running" in err and "Traceback" not in err


def test_records_without_max_tokens_get_the_profile_default_and_others_keep_theirs():
    from peagle.batch.records import with_default_max_tokens

    records = [b'{"prompt":"a"}', b'{"prompt":"b","max_tokens":7}', b'{"messages":[],"max_completion_tokens":3}']
    filled = [json.loads(line) for line in with_default_max_tokens(records, 1024)]
    assert [r.get("max_tokens") for r in filled] == [1024, 7, None]
    assert filled[2]["max_completion_tokens"] == 3
