"""The Hugging Face token is used but never shown: real huggingface_hub requests go to a
local stand-in Hub (--hf-endpoint) that records the Authorization header and refuses."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pytest
from botocore.stub import Stubber

from peagle.cli import main
from peagle.stage.hub import HubError, resolve_hub_token

TOKEN = "hf_TestTokenThatMustNeverBePrinted0123456789"


@pytest.fixture
def refusing_hub():
    """An HTTP server answering 401 to everything; ``.authorizations`` lists the headers it saw."""
    authorizations: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def _refuse(self) -> None:
            authorizations.append(self.headers.get("Authorization"))
            body = json.dumps({"error": "Invalid credentials in Authorization header"}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Error-Message", "Invalid credentials in Authorization header")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_HEAD = _refuse

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    server.authorizations = authorizations
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()
    server.server_close()


def test_env_token_is_sent_to_the_hub_and_never_printed(refusing_hub, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")

    exit_code = main(
        [
            "stage",
            "--model",
            "gpt-oss-20b",
            "--s3-uri",
            "s3://my-models-bucket/models/x/",
            "--dry-run",
            "--hf-endpoint",
            refusing_hub.url,
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
    )

    out, err = capsys.readouterr()
    assert exit_code == 1
    assert f"Bearer {TOKEN}" in refusing_hub.authorizations  # the token really was used
    assert TOKEN not in out + err
    assert "from HF_TOKEN" in out  # only where it came from is shown
    assert "the Hub rejected the token from HF_TOKEN for openai/gpt-oss-20b (401)" in err and "Traceback" not in err
    assert not any(TOKEN in path.read_text(errors="ignore") for path in tmp_path.rglob("*") if path.is_file())


def test_secrets_manager_token_json_or_text_and_hidden_repr():
    client = boto3.client("secretsmanager", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    arn = "arn:aws:secretsmanager:us-east-1:111122223333:secret:hf-token-AbCdEf"
    with Stubber(client) as stubber:
        stubber.add_response("get_secret_value", {"SecretString": json.dumps({"HF_TOKEN": TOKEN})}, {"SecretId": arn})
        stubber.add_response("get_secret_value", {"SecretString": f"{TOKEN}\n"}, {"SecretId": arn})
        stubber.add_response("get_secret_value", {"SecretString": json.dumps({"user": "x"})}, {"SecretId": arn})
        stubber.add_client_error(
            "get_secret_value", service_error_code="AccessDeniedException", service_message="not allowed"
        )

        from_json = resolve_hub_token(arn, {"HF_TOKEN": "ignored"}, secrets_client=client)
        from_text = resolve_hub_token(arn, {}, secrets_client=client)
        with pytest.raises(HubError, match="without a token key; use one of HF_TOKEN"):
            resolve_hub_token(arn, {}, secrets_client=client)
        with pytest.raises(Exception, match=r"secretsmanager:GetSecretValue on arn:aws:secretsmanager"):
            resolve_hub_token(arn, {}, secrets_client=client)

    assert from_json.value == from_text.value == TOKEN
    assert TOKEN not in repr(from_json) and arn in from_json.source
    assert from_json.scrub(f"401 for token {TOKEN}") == "401 for token ***"
    assert resolve_hub_token(None, {}) is None
