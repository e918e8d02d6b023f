"""`peagle prompts`: capture records in SageMaker's documented format to a prompts file that bench's
loader reads, with a summary; S3 through botocore's Stubber on a real S3 client; errors exit 2."""

from __future__ import annotations

import io
import json
import re

import pytest
from boto3.session import Session
from botocore.response import StreamingBody
from botocore.stub import Stubber
from capture_records import CHAT, CHAT_RESPONSE, COMPLETION, capture_key, record, write_capture

from peagle.bench.prompts import load_prompt_file
from peagle.cli import main
from peagle.prompts_capture import source
from peagle.prompts_capture.records import CSV_INPUT, MALFORMED_LINE, NOT_GENERATION, NOT_JSON, decode_line

SSE_WITH_USAGE = (
    'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n'
    'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":17}}\n\ndata: [DONE]\n\n'
)


def _mixed_capture(root):
    """Two hours of records: chat (BASE64, response with usage), completion (JSON), a duplicate, a CSV
    record, a non-JSON body, a TGI-style body, a malformed line."""
    write_capture(
        root,
        [
            record(CHAT, encoding="BASE64", response=CHAT_RESPONSE, event=1),
            record(COMPLETION, event=2),
            record(COMPLETION, event=3),  # the same prompt and sampling: a duplicate
            record("69,0,153.7,109", encoding="CSV", content_type="text/csv", event=4),
        ],
        hour=10,
    )
    write_capture(
        root,
        [
            record({**COMPLETION, "prompt": "Another prompt."}, response=SSE_WITH_USAGE, event=5),
            record("plain text, not JSON", event=6),
            record({"inputs": "TGI-style body", "parameters": {"max_new_tokens": 10}}, event=7),
            '{"captureData": {"endpointInput": ',  # a line cut short
        ],
        hour=11,
    )


def test_records_become_a_prompts_file_that_bench_reads(tmp_path, capsys):
    _mixed_capture(tmp_path / "capture")
    out = tmp_path / "prompts.jsonl"
    assert main(["prompts", str(tmp_path / "capture"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out

    cases = load_prompt_file(out)
    assert len(cases) == 3
    chat = next(case for case in cases if case.messages)
    assert chat.messages == CHAT["messages"] and chat.max_tokens == 200
    # Sampling kept; transport and identity (model, stream, stream_options, user) are not.
    assert dict(chat.extra) == {"temperature": 0.7, "top_p": 0.9}
    assert {case.prompt for case in cases if case.prompt} == {COMPLETION["prompt"], "Another prompt."}

    summary = json.loads((tmp_path / "prompts.summary.json").read_text())
    assert summary["records_read"] == 8 and summary["capture_files"] == 2 and summary["kept"] == 3
    assert summary["dropped"] == {"duplicate": 1, CSV_INPUT: 1, NOT_JSON: 1, NOT_GENERATION: 1, MALFORMED_LINE: 1}
    assert summary["kept_by_kind"] == {"chat": 1, "completion": 2}
    assert summary["output_tokens_captured"]["count"] == 2  # the JSON response's usage and the SSE stream's
    assert sorted([summary["output_tokens_captured"]["min"], summary["output_tokens_captured"]["max"]]) == [17, 42]
    assert summary["max_tokens"]["spread"]["max"] == 200 and summary["max_tokens"]["not_set"] == 0
    assert summary["sampling"]["temperature"] == {"0.0": 2, "0.7": 1}
    assert summary["endpoints_variants"] == {"peagle-endpoint/AllTraffic": 3}
    assert summary["fields_not_kept"] == {"model": 1, "stream": 1, "stream_options": 1, "user": 1}
    lengths = summary["input_characters"]  # the chat's is its messages' contents joined
    assert [lengths["min"], lengths["p50"], lengths["max"]] == [15, len("Be brief.\nWhat is EAGLE?"), 34]
    assert "3 kept (1 chat, 2 completion) of 8 records" in printed
    assert "1 duplicate" in printed and f"1 {CSV_INPUT}" in printed


def test_drop_and_hash_fields(tmp_path):
    write_capture(
        tmp_path / "capture",
        [record(CHAT, event=1), record({**CHAT, "user": "bob@example.com"}, event=2), record(COMPLETION, event=3)],
    )
    out = tmp_path / "private.jsonl"
    argv = ["prompts", str(tmp_path / "capture"), "--out", str(out)]
    assert main([*argv, "--drop-field", "temperature", "--hash-field", "user", "--hash-field", "messages"]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert all("temperature" not in line for line in lines)
    chats = [line for line in lines if "messages" in line]
    # A key otherwise not kept is kept hashed; different values stay different.
    assert len(chats) == 2 and len({line["user"] for line in chats}) == 2
    assert all(re.fullmatch(r"[0-9a-f]{64}", line["user"]) for line in chats)
    # messages: roles kept, contents hashed (equal contents equal within the file), so the file stays chat.
    assert [message["role"] for message in chats[0]["messages"]] == ["system", "user"]
    assert chats[0]["messages"] == chats[1]["messages"]
    assert "What is EAGLE?" not in out.read_text() and "alice" not in out.read_text()
    assert load_prompt_file(out)  # still a prompts file

    # The salt is drawn per run and not kept: another run hashes the same value differently.
    again = tmp_path / "again.jsonl"
    assert main(["prompts", str(tmp_path / "capture"), "--out", str(again), "--hash-field", "user"]) == 0
    assert json.loads(again.read_text().splitlines()[0])["user"] not in {line["user"] for line in chats}


def test_limit_stops_after_n_prompts(tmp_path):
    write_capture(tmp_path / "capture", [record({"prompt": f"p{i}"}, event=i) for i in range(5)])
    out = tmp_path / "prompts.jsonl"
    assert main(["prompts", str(tmp_path / "capture"), "--out", str(out), "--limit", "2"]) == 0
    assert [case.prompt for case in load_prompt_file(out)] == ["p0", "p1"]
    assert json.loads((tmp_path / "prompts.summary.json").read_text())["stopped_at_limit"] is True


def test_max_completion_tokens_is_the_prompts_files_max_tokens():
    decoded = decode_line(record({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 9}))
    assert decoded.body == {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 9}


def test_nothing_usable_is_an_actionable_error(tmp_path, capsys):
    write_capture(tmp_path / "capture", [record("1,2,3", encoding="CSV", content_type="text/csv"), "not json"])
    assert main(["prompts", str(tmp_path / "capture"), "--out", str(tmp_path / "p.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "no usable request" in err and f"1 {CSV_INPUT}" in err and "JsonContentTypes" in err
    assert not (tmp_path / "p.jsonl").exists()


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda root: None, "neither an s3:// prefix nor a local directory"),
        (lambda root: root.mkdir(), "no .jsonl capture files under"),
    ],
)
def test_missing_or_empty_location_exits_2(tmp_path, capsys, make, expected):
    make(tmp_path / "capture")
    assert main(["prompts", str(tmp_path / "capture"), "--out", str(tmp_path / "p.jsonl")]) == 2
    assert expected in capsys.readouterr().err


def test_bad_flags_exit_2(tmp_path, capsys):
    write_capture(tmp_path / "capture", [record(COMPLETION)])
    argv = ["prompts", str(tmp_path / "capture"), "--out", str(tmp_path / "p.jsonl")]
    assert main([*argv, "--limit", "0"]) == 2
    assert "--limit 0" in capsys.readouterr().err
    assert main([*argv, "--drop-field", "seed", "--hash-field", "seed"]) == 2
    assert "both --drop-field and --hash-field" in capsys.readouterr().err


class StubbedS3:
    """A real boto3 S3 client under Stubber, put in place of the one capture files are read with."""

    def __init__(self, monkeypatch) -> None:
        session = Session(region_name="us-east-1", aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret")
        self.client = session.client("s3")
        self.stubber = Stubber(self.client)
        monkeypatch.setattr(source, "s3_client", lambda region: self.client)
        self.stubber.activate()

    def listing(self, prefix: str, pages: list[list[str]]) -> None:
        for number, keys in enumerate(pages):
            last = number == len(pages) - 1
            expected = {"Bucket": "capture-bucket", "Prefix": prefix}
            if number:
                expected["ContinuationToken"] = f"token-{number}"
            response = {"Contents": [{"Key": key} for key in keys], "IsTruncated": not last, "KeyCount": len(keys)}
            if not last:
                response["NextContinuationToken"] = f"token-{number + 1}"
            self.stubber.add_response("list_objects_v2", response, expected)

    def object(self, key: str, lines: list[str]) -> None:
        text = ("\n".join(lines) + "\n").encode()
        self.stubber.add_response(
            "get_object",
            {"Body": StreamingBody(io.BytesIO(text), len(text))},
            {"Bucket": "capture-bucket", "Key": key},
        )


def test_s3_prefix_is_listed_page_by_page_and_read(monkeypatch, tmp_path):
    s3 = StubbedS3(monkeypatch)
    first, second = f"datacapture/{capture_key(10)}", f"datacapture/{capture_key(11)}"
    # Two pages; a non-.jsonl object is not read.
    s3.listing("datacapture/", [[first, "datacapture/notes.txt"], [second]])
    s3.object(first, [record(COMPLETION, event=1)])
    s3.object(second, [record(CHAT, encoding="BASE64", response=CHAT_RESPONSE, event=2)])
    out = tmp_path / "prompts.jsonl"
    assert main(["prompts", "s3://capture-bucket/datacapture", "--out", str(out)]) == 0
    s3.stubber.assert_no_pending_responses()
    assert [bool(case.messages) for case in load_prompt_file(out)] == [False, True]
    summary = json.loads((tmp_path / "prompts.summary.json").read_text())
    assert summary["capture_files"] == 2 and summary["endpoints_variants"] == {"peagle-endpoint/AllTraffic": 2}


def test_s3_access_denied_names_the_permission(monkeypatch, tmp_path, capsys):
    s3 = StubbedS3(monkeypatch)
    s3.stubber.add_client_error(
        "list_objects_v2",
        service_error_code="AccessDenied",
        http_status_code=403,
        expected_params={"Bucket": "capture-bucket", "Prefix": "datacapture/"},
    )
    assert (
        main(["prompts", "s3://capture-bucket/datacapture/", "--out", str(tmp_path / "p.jsonl")]) == 3
    )  # ExitCode.AWS, as every command that calls AWS
    assert "s3:ListBucket on arn:aws:s3:::capture-bucket" in capsys.readouterr().err


def test_empty_s3_prefix_exits_2(monkeypatch, tmp_path, capsys):
    s3 = StubbedS3(monkeypatch)
    s3.listing("datacapture/", [[]])
    assert main(["prompts", "s3://capture-bucket/datacapture", "--out", str(tmp_path / "p.jsonl")]) == 2
    assert "no .jsonl capture files under s3://capture-bucket/datacapture/" in capsys.readouterr().err
