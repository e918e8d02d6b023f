"""The Hugging Face token for hub downloads inside the container, read at start-up
from Secrets Manager so it never appears in a template, an env var of the model,
or a log line. Only used when network isolation is off (otherwise there is no network
and no AWS credentials, and weights come from the S3 model channel)."""

from __future__ import annotations

import logging
from typing import Any

from .contract import hub_token_from_secret
from .errors import ConfigError

log = logging.getLogger("peagle_serve")


def hub_token_environment(secret_arn: str, *, secrets_client: Any = None) -> dict[str, str]:
    """``{"HF_TOKEN": <token>}`` for vLLM's process, or {} when no ARN is configured.

    :param secrets_client: a boto3 Secrets Manager client (default: one for the ARN's region).
    """
    if not secret_arn:
        return {}
    try:
        import boto3  # the image installs it (Dockerfile); vLLM's own image may not have it
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        raise ConfigError(
            "PEAGLE_HF_TOKEN_SECRET_ARN is set but boto3 is not installed in the image: "
            "rebuild it from inference_image/Dockerfile"
        ) from None
    region = secret_arn.split(":")[3] if secret_arn.count(":") >= 6 else None
    client = secrets_client or boto3.client("secretsmanager", region_name=region)
    try:
        value = client.get_secret_value(SecretId=secret_arn)
    except (BotoCoreError, ClientError) as error:
        raise ConfigError(
            f"could not read the Hugging Face token from {secret_arn}: {error}. The execution role "
            "needs secretsmanager:GetSecretValue on it, and network isolation must be off"
        ) from None
    try:
        token = hub_token_from_secret(value.get("SecretString"))
    except ValueError as problem:
        raise ConfigError(f"secret {secret_arn} {problem}") from None
    log.info("Hugging Face token read from Secrets Manager (%s)", secret_arn)
    return {"HF_TOKEN": token}
