"""Progress of `peagle batch --url`: records done/total, failures and output tokens/s on
stderr, only when it is a terminal (the job's heartbeat is in test_batch_job_follow.py).

The server is a small HTTP stand-in speaking the record protocol (the real engine's
answers are covered by test_batch_against_local_server.py); the subject is what the
command prints while it works.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from peagle import progress
from peagle.cli import main


class _RecordServer(BaseHTTPRequestHandler):
    """Answers /invocations like vLLM: 4 completion tokens, or 400 for a record asking for too many."""

    def do_POST(self) -> None:
        record = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if record["max_tokens"] > 100:
            status, answer = 400, {"error": {"message": "max_tokens is too large"}}
        else:
            status = 200
            answer = {"object": "text_completion", "choices": [{"text": "abcd"}], "usage": {"completion_tokens": 4}}
        body = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def record_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RecordServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _run_batch(record_server: str, tmp_path) -> int:
    prompts = tmp_path / "prompts.jsonl"
    lines = [{"prompt": f"record {n}", "max_tokens": 4} for n in range(5)] + [{"prompt": "x", "max_tokens": 999}]
    prompts.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    arguments = ["batch", "--url", record_server, "--input", str(prompts), "--output", str(tmp_path / "out.jsonl")]
    return main([*arguments, "--max-attempts", "1"])


def test_url_run_on_a_terminal_shows_records_done_failures_and_tokens_per_second(
    record_server, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(progress, "is_terminal", lambda stream: True)

    assert _run_batch(record_server, tmp_path) == 1  # one record failed

    out, err = capsys.readouterr()
    assert "records: 100%" in err and "6/6" in err
    assert "1 failed" in err and "output tok/s" in err
    assert "line 6: " in err and "400" in err  # the failed record's own line, as without progress
    assert "6 records: 5 ok, 1 failed" in out and "%|" not in out


def test_url_run_without_a_terminal_prints_no_progress(record_server, tmp_path, capsys):
    assert _run_batch(record_server, tmp_path) == 1

    out, err = capsys.readouterr()
    assert len(err.splitlines()) == 1 and err.startswith("line 6: ")  # only the failed record's line
    assert "6 records: 5 ok, 1 failed" in out
