"""The Hugging Face Hub side of staging: the token, listing a repository, downloading it.

The token comes from ``HF_TOKEN`` or from a Secrets Manager secret
(``--hf-token-secret-arn``). It is held in a ``HubToken`` whose repr hides it, passed
to huggingface_hub as an argument, and scrubbed from any error text shown: it is
never printed, logged or written to disk (``snapshot_download`` is called with
``token=`` and never stores it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from peagle.aws import aws_call, aws_client
from peagle.settings.errors import PeagleError
from peagle.stage.checkpoints import SKIPPED_FOLDERS, CheckpointFiles, is_staged_path
from peagle_serve.contract import hub_token_from_secret

# Not downloaded at all (see checkpoints.SKIPPED_FOLDERS); the rest is filtered by is_staged_path.
HUB_IGNORE_PATTERNS = [f"{folder}/*" for folder in SKIPPED_FOLDERS] + [".gitattributes", "*.gguf"]
TOKEN_ENV_NAMES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


class HubError(PeagleError):
    """The Hub refused or failed a request; the message never contains the token."""


@dataclass(frozen=True)
class HubToken:
    value: str = field(repr=False)
    source: str  # "HF_TOKEN", "Secrets Manager", ...: safe to print

    def scrub(self, text: str) -> str:
        return text.replace(self.value, "***") if self.value else text


def resolve_hub_token(
    secret_arn: str | None, environ: Mapping[str, str], *, session: Any = None, secrets_client: Any = None
) -> HubToken | None:
    """The token from ``secret_arn`` (Secrets Manager) if given, else from the environment, else None."""
    if secret_arn:
        client = secrets_client or aws_client(session, "secretsmanager")
        with aws_call(
            f"reading the Hugging Face token secret {secret_arn}",
            permission=f"secretsmanager:GetSecretValue on {secret_arn} (and kms:Decrypt on its key if customer-managed)",
        ):
            response = client.get_secret_value(SecretId=secret_arn)
        return HubToken(
            _token_from_secret(response.get("SecretString"), secret_arn), source=f"Secrets Manager ({secret_arn})"
        )
    for name in TOKEN_ENV_NAMES:
        if environ.get(name):
            return HubToken(environ[name].strip(), source=name)
    return None


def _token_from_secret(secret_string: str | None, secret_arn: str) -> str:
    try:
        return hub_token_from_secret(secret_string)  # the container's own parser: stage and serve agree
    except ValueError as problem:
        raise HubError(f"secret {secret_arn} {problem}") from None


def _explain_hub_failure(error: Exception, repo_id: str, token: HubToken | None) -> HubError:
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    # huggingface_hub wraps the HTTP failure (e.g. DryRunError from HfHubHTTPError): find the cause.
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    status = next(
        (
            getattr(getattr(item, "response", None), "status_code", None)
            for item in chain
            if getattr(getattr(item, "response", None), "status_code", None)
        ),
        None,
    )
    detail = str(chain[-1]).splitlines()[0] if str(chain[-1]) else type(chain[-1]).__name__
    if token is not None:
        detail = token.scrub(detail)
    who = f"the token from {token.source}" if token else "no token (set HF_TOKEN or --hf-token-secret-arn)"
    if any(isinstance(item, GatedRepoError) for item in chain) or status == 403:
        hint = f"{repo_id} is gated or forbidden for {who}: accept its license on the Hub with that account"
    elif status == 401:
        hint = (
            f"the Hub rejected {who} for {repo_id} (401): check the token is valid and not expired"
            if token
            else f"{repo_id} needs a Hugging Face token (401): set HF_TOKEN or pass --hf-token-secret-arn"
        )
    elif any(isinstance(item, RepositoryNotFoundError) for item in chain) or status == 404:
        hint = f"{repo_id} was not found or is private for {who}; check the id (catalog hf_id) and the token's access"
    else:
        hint = f"the Hub request for {repo_id} failed; check network access to the Hub (or HF_ENDPOINT / --hf-endpoint)"
    return HubError(f"{hint}. Hub said: {detail}")


def list_hub_checkpoint(
    repo_id: str, role: str, *, token: HubToken | None, endpoint: str | None, download_dir: Path
) -> tuple[CheckpointFiles, dict | None]:
    """What a download would fetch (names, sizes; no weights downloaded) and the parsed config.json."""
    from huggingface_hub import hf_hub_download, snapshot_download

    try:
        listing = snapshot_download(
            repo_id,
            local_dir=download_dir,
            token=token.value if token else None,
            endpoint=endpoint,
            ignore_patterns=HUB_IGNORE_PATTERNS,
            dry_run=True,
        )
        files = {item.filename: int(item.file_size or 0) for item in listing if is_staged_path(item.filename)}
        config = None
        if "config.json" in files:
            config_path = hf_hub_download(
                repo_id, "config.json", local_dir=download_dir, token=token.value if token else None, endpoint=endpoint
            )
            config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    except Exception as error:  # huggingface_hub raises many types; all are reported the same way
        raise _explain_hub_failure(error, repo_id, token) from None
    return CheckpointFiles(role=role, root=None, files=files), config


def download_hub_checkpoint(repo_id: str, *, token: HubToken | None, endpoint: str | None, download_dir: Path) -> Path:
    """Download (or resume) ``repo_id`` into ``download_dir``; returns it."""
    from huggingface_hub import snapshot_download

    download_dir.mkdir(parents=True, exist_ok=True)
    try:
        snapshot_download(
            repo_id,
            local_dir=download_dir,
            token=token.value if token else None,
            endpoint=endpoint,
            ignore_patterns=HUB_IGNORE_PATTERNS,
        )
    except Exception as error:
        raise _explain_hub_failure(error, repo_id, token) from None
    return download_dir


def default_cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "peagle" / "stage"
