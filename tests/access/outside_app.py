"""A user's app whose capture key and weights bucket live outside it, as docs/library.md lets one write it:

- the weights in a bucket the app imports by name (``s3.Bucket.from_bucket_name``), encrypted with a key the app
  names by ARN (``ModelWeights.from_bucket(bucket, prefix, key=...)``);
- SageMaker Data Capture with a key of the user's, named by ARN (``DataCapture(key=kms.Key.from_key_arn(...))``);
- cdk-nag and the runtime-access check as policy-validation plugins.

Neither policy (the bucket's, the keys') is in the templates, so the check can only say what the role's own
policies grant and what to verify by hand. ``build(outdir, weights_key=False)`` leaves the weights key out.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3

from peagle_cdk import DataCapture, ModelWeights, PeagleEndpoint, RuntimeAccessChecks

STACK = "ChatService"
ACCOUNT = "111122223333"
WEIGHTS_BUCKET = "team-llm-weights"
WEIGHTS_KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1111aaaa-22bb-33cc-44dd-555555eeeeee"
CAPTURE_KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/9999ffff-88ee-77dd-66cc-444444bbbbbb"


def build(outdir: Path, *, weights_key: bool = True) -> Path:
    app = cdk.App(outdir=str(outdir))
    stack = Stack(app, STACK, env=cdk.Environment(account=ACCOUNT, region="us-east-1"))
    bucket = s3.Bucket.from_bucket_name(stack, "Weights", WEIGHTS_BUCKET)
    key = kms.Key.from_key_arn(stack, "WeightsKey", WEIGHTS_KEY) if weights_key else None
    PeagleEndpoint(
        stack,
        "Chat",
        name="chat",
        model="gpt-oss-20b",
        instance_type="ml.g6e.xlarge",
        weights=ModelWeights.from_bucket(bucket, "models/gpt-oss-20b/", key=key),
        capture=DataCapture(key=kms.Key.from_key_arn(stack, "CaptureKey", CAPTURE_KEY)),
    )
    cdk.Validations.of(app).add_plugins(RuntimeAccessChecks())  # pyright: ignore[reportArgumentType]
    app.synth()
    return outdir
