"""Upload progress: bytes sent per file and overall on stderr when it is a terminal, nothing
otherwise. boto3 reports bytes as it reads the file into the request, so S3 here is a
``before-send`` handler that reads each body as the network would (the Stubber answers
before the body is read, and would show no progress at all)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import sys
import termios

import boto3
from botocore.awsrequest import AWSResponse

from peagle import progress
from peagle.aws import S3Location
from peagle.stage.upload import StagedFile, upload_files

PREFIX = S3Location("my-models-bucket", "models/tiny-pair/")


class _Body:
    def stream(self, **kwargs):
        yield b""


def _s3_that_reads_every_body():
    s3 = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    received: dict[str, int] = {}

    def send(request, **kwargs):
        if request.method == "HEAD":
            return AWSResponse(request.url, 404, {}, _Body())
        received[request.url] = len(request.body.read())
        return AWSResponse(request.url, 200, {"ETag": '"1"'}, _Body())

    s3.meta.events.register("before-send.s3", send)
    return s3, received


def _files(tmp_path) -> list[StagedFile]:
    files = []
    for name, size in (("target/model.safetensors", 300), ("drafter/model.safetensors", 200)):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"w" * size)
        files.append(StagedFile(path, name, size))
    return files


def test_on_a_terminal_each_file_and_the_whole_run_show_bytes_sent(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(progress, "is_terminal", lambda stream: True)
    s3, received = _s3_that_reads_every_body()

    summary = upload_files(s3, PREFIX, _files(tmp_path), max_concurrency=2)

    out, err = capsys.readouterr()
    assert len(received) == 2 and summary.bytes_uploaded == 500
    assert "2 file(s): 100%" in err and "500/500" in err  # the whole run
    # Each file's own bar (redrawn at most every 0.1 s, so here caught at its start).
    assert "target/model.safetensors:   0%" in err and "/300 [" in err
    assert "drafter/model.safetensors:   0%" in err and "/200 [" in err
    assert "B/s]" in err  # the rate, beside the elapsed time and the ETA
    assert "  upload  target/model.safetensors" in out and "%" not in out  # results stay on stdout


def test_when_stderr_is_not_a_terminal_there_is_no_progress(tmp_path, capsys):
    s3, received = _s3_that_reads_every_body()

    upload_files(s3, PREFIX, _files(tmp_path), max_concurrency=2)

    out, err = capsys.readouterr()
    assert len(received) == 2
    assert err == ""
    assert out.count("  upload  ") == 2


def test_the_helper_turns_progress_on_for_a_real_terminal_only(monkeypatch):
    controller, terminal_fd = pty.openpty()
    fcntl.ioctl(terminal_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a window tqdm can fill
    with os.fdopen(terminal_fd, "w") as terminal:
        monkeypatch.setattr(sys, "stderr", terminal)
        with progress.progress_bar(total=300, unit="B", desc="shard") as bar:
            bar.update(300)
        terminal.flush()
        shown = _read_all(controller)
    os.close(controller)
    assert "shard: 100%" in shown and "300/300" in shown

    with open(os.devnull, "w") as not_a_terminal:
        monkeypatch.setattr(sys, "stderr", not_a_terminal)
        assert not progress.progress_enabled()
        assert progress.progress_bar(total=1, unit="B").disable


def _read_all(controller: int) -> str:
    """Everything written to the pty so far: one read() may return only the first of tqdm's writes."""
    chunks = []
    while select.select([controller], [], [], 0.5)[0]:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal side is closed and drained
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode()
