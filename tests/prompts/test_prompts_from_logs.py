"""`peagle prompts --from-logs`: the container's request log, read from CloudWatch Logs (FilterLogEvents, page by
page, through botocore's Stubber on a real client), to the same prompts file and summary as Data Capture, with the
same privacy controls. The lines are written by the container's own writer (peagle_serve/request_log.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from boto3.session import Session
from botocore.stub import Stubber

from peagle.bench.prompts import load_prompt_file
from peagle.cli import main
from peagle.prompts_capture import cli as prompts_cli
from peagle.prompts_capture import request_log
from peagle.prompts_capture.records import BATCHED_PROMPT
from peagle_serve.request_log import RequestLogConfig, kept_body, request_lines

GROUP = "/aws/sagemaker/Endpoints/chat-endpoint"
START, END = "2026-12-01T09:00Z", "2026-12-01T11:00Z"
START_MS, END_MS = 1796115600000, 1796122800000  # the window above, in ms since the epoch
CHAT = {
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is EAGLE?"}],
    "max_tokens": 200,
    "temperature": 0.7,
    "top_p": 0.9,
    "model": "peagle",
    "user": "alice@example.com",
}
COMPLETION = {"prompt": "Summarise the notes: the team met.", "max_tokens": 64, "temperature": 0.0, "seed": 7}


def logged(request: dict, *, request_id: str, variant: str = "Primary", max_body_bytes: int = 256 * 1024) -> list:
    """The lines the container writes for one served request."""
    body, not_kept = kept_body(request)
    config = RequestLogConfig(100, max_body_bytes, "chat-endpoint", variant)
    lines = request_lines(
        body, not_kept=not_kept, path="/invocations", config=config, request_id=request_id, time="2026-12-01T10:00:00Z"
    )
    return [json.dumps(line, separators=(",", ":")) for line in lines]


def events(stream: str, lines: list[str]) -> list[dict]:
    return [{"logStreamName": stream, "message": line, "timestamp": START_MS + 1000, "eventId": "e"} for line in lines]


class StubbedLogs:
    """A real boto3 CloudWatch Logs client under Stubber, put in place of the one the log is read with."""

    def __init__(self, monkeypatch) -> None:
        session = Session(region_name="us-east-1", aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret")
        self.client = session.client("logs")
        self.stubber = Stubber(self.client)
        monkeypatch.setattr(request_log, "logs_client", lambda region: self.client)
        self.stubber.activate()

    def pages(self, pages: list[list[dict]], *, start_ms: int = START_MS, end_ms: int = END_MS) -> None:
        for number, page in enumerate(pages):
            expected = {
                "logGroupName": GROUP,
                "startTime": start_ms,
                "endTime": end_ms,
                # The marker the container writes (contract.REQUEST_LOG_EVENT), as a JSON filter pattern.
                "filterPattern": '{ $.event = "peagle_request" }',
            }
            if number:
                expected["nextToken"] = f"token-{number}"
            response: dict = {"events": page}
            if number < len(pages) - 1:
                response["nextToken"] = f"token-{number + 1}"
            self.stubber.add_response("filter_log_events", response, expected)


def _argv(tmp_path, *extra: str) -> list[str]:
    return ["prompts", "--from-logs", GROUP, "--start", START, "--end", END, "--out", str(tmp_path / "p.jsonl"), *extra]


def test_logged_requests_become_a_prompts_file_page_by_page(monkeypatch, tmp_path, capsys):
    logs = StubbedLogs(monkeypatch)
    long_one = logged({"prompt": "long " * 3000, "max_tokens": 32}, request_id="c")
    too_large = logged({"prompt": "x" * 5000}, request_id="d", max_body_bytes=1024)
    straddling = logged({"prompt": "y" * 20000}, request_id="e")[1:]  # its first line fell before --start
    primary, baseline = "Primary/i-0aaa", "Baseline/i-0bbb"
    logs.pages(
        [
            events(primary, logged(CHAT, request_id="a") + long_one[:2]),
            [],  # an empty page that is not the last one
            events(baseline, logged(COMPLETION, request_id="b", variant="Baseline") + straddling)
            + events(primary, long_one[2:] + logged(COMPLETION, request_id="f") + too_large)
            + events(primary, ['{"event": "peagle_kpi", "requests_per_second": 1}']),
        ]
    )
    assert main(_argv(tmp_path)) == 0
    logs.stubber.assert_no_pending_responses()

    cases = load_prompt_file(tmp_path / "p.jsonl")
    assert len(cases) == 3  # the chat, the completion (once: its second copy is a duplicate), the long one
    chat = next(case for case in cases if case.messages)
    assert chat.messages == CHAT["messages"] and chat.max_tokens == 200
    assert dict(chat.extra) == {"temperature": 0.7, "top_p": 0.9}
    assert any(case.prompt == "long " * 3000 for case in cases)
    assert "alice@example.com" not in (tmp_path / "p.jsonl").read_text()

    summary = json.loads((tmp_path / "p.summary.json").read_text())
    assert summary["source"] == "request_log" and summary["log_streams"] == 2 and "capture_files" not in summary
    assert summary["records_read"] == 7 and summary["kept"] == 3
    assert summary["dropped"] == {
        "duplicate": 1,
        request_log.INCOMPLETE: 1,
        request_log.TOO_LARGE: 1,
        request_log.MALFORMED_LOG_LINE: 1,
    }
    assert summary["endpoints_variants"] == {"chat-endpoint/Primary": 2, "chat-endpoint/Baseline": 1}
    assert summary["fields_not_kept"] == {"model": 1, "user": 1}  # names the container wrote, never values
    assert summary["capture"] == f"log group {GROUP} from 2026-12-01T09:00:00Z to 2026-12-01T11:00:00Z"
    assert "3 kept (1 chat, 2 completion) of 7 records in 2 log stream(s)" in capsys.readouterr().out


def test_the_privacy_controls_are_the_same_as_for_data_capture(monkeypatch, tmp_path):
    logs = StubbedLogs(monkeypatch)
    logs.pages([events("Primary/i-0aaa", logged(CHAT, request_id="a") + logged(COMPLETION, request_id="b"))])
    assert main(_argv(tmp_path, "--drop-field", "temperature", "--hash-field", "messages", "--limit", "5")) == 0
    lines = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert all("temperature" not in line for line in lines)
    (chat,) = [line for line in lines if "messages" in line]
    assert [message["role"] for message in chat["messages"]] == ["system", "user"]
    assert all(len(message["content"]) == 64 for message in chat["messages"])
    assert "What is EAGLE?" not in (tmp_path / "p.jsonl").read_text()


def test_days_reads_the_last_days_until_now(monkeypatch, tmp_path):
    logs = StubbedLogs(monkeypatch)
    monkeypatch.setattr(prompts_cli, "_utc_now", lambda: datetime(2026, 12, 1, 11, 0, tzinfo=UTC))
    logs.pages([events("Primary/i-0aaa", logged(COMPLETION, request_id="a"))], start_ms=END_MS - 2 * 86400000)
    out = str(tmp_path / "p.jsonl")
    assert main(["prompts", "--from-logs", GROUP, "--days", "2", "--out", out]) == 0
    logs.stubber.assert_no_pending_responses()


def test_access_denied_names_the_permissions(monkeypatch, tmp_path, capsys):
    logs = StubbedLogs(monkeypatch)
    logs.stubber.add_client_error("filter_log_events", service_error_code="AccessDeniedException", http_status_code=400)
    assert main(_argv(tmp_path)) == 3  # ExitCode.AWS, as every command that calls AWS
    err = capsys.readouterr().err
    assert f"logs:FilterLogEvents on the log group {GROUP}" in err and "kms:Decrypt" in err


def test_no_logged_request_is_an_actionable_error(monkeypatch, tmp_path, capsys):
    logs = StubbedLogs(monkeypatch)
    logs.pages([events("Primary/i-0aaa", logged({"prompt": ["a", "batch"]}, request_id="a"))])
    assert main(_argv(tmp_path)) == 2
    err = capsys.readouterr().err
    assert f"no usable request in log group {GROUP}" in err and "capture.method: request_log" in err
    assert f"1 {BATCHED_PROMPT}" in err
    assert not (tmp_path / "p.jsonl").exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["prompts", "s3://b/p", "--from-logs", GROUP, "--days", "1"], "either CAPTURE"),
        (["prompts"], "either CAPTURE"),
        (["prompts", "--from-logs", GROUP], "--from-logs needs a window"),
        (["prompts", "./capture", "--days", "1"], "go with --from-logs"),
        (["prompts", "--from-logs", GROUP, "--start", END, "--end", START], "is not after --start"),
        (["prompts", "--from-logs", GROUP, "--start", "yesterday"], "not an ISO 8601 date or time"),
    ],
)
def test_bad_arguments_exit_2_before_any_call(argv, expected, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "p.jsonl")]) == 2
    assert expected in capsys.readouterr().err
