"""A user's app as docs/library.md describes one: two P-EAGLE endpoints in one stack.

- a chat endpoint (gpt-oss-20b, production variants) and a code endpoint that scales to zero (qwen3-8b,
  inference components), both built in the account through one ECR pull-through cache of Docker Hub;
- the code endpoint's image from a build context of its own (the shipped one plus a team file);
- the weights in a bucket with its own KMS key, handed over as ``ModelWeights.from_bucket(bucket, prefix)``
  with no ``key=`` (the library takes the bucket's key);
- cdk-nag's AWS Solutions checks and the runtime-access check as policy-validation plugins.

``build(outdir, context_dir)`` synthesizes it and returns the assembly's directory.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from cdk_nag import AwsSolutionsChecks

from peagle_cdk import (
    Autoscaling,
    BaseImage,
    EndpointMode,
    EndpointMonitoring,
    ModelWeights,
    PeagleEndpoint,
    RuntimeAccessChecks,
    ServingImage,
)
from peagle_cdk.endpoint_props import INFERENCE_IMAGE_DIR

STACK = "LlmService"
DOCKER_HUB_SECRET = "arn:aws:secretsmanager:us-east-1:111122223333:secret:ecr-pullthroughcache/docker-hub-AbCdEf"


def code_build_context(directory: Path) -> Path:
    """The shipped build context plus a file of the team's: a context of its own, so an image of its own."""
    shutil.copytree(INFERENCE_IMAGE_DIR, directory, ignore=shutil.ignore_patterns("__pycache__"))
    (directory / "peagle_serve" / "team_settings.py").write_text('"""The code team\'s serving defaults."""\n')
    return directory


def build(outdir: Path, context_dir: Path, *, checks: bool = True) -> Path:
    app = cdk.App(outdir=str(outdir))
    stack = Stack(app, STACK, env=cdk.Environment(account="111122223333", region="us-east-1"))
    key = kms.Key(stack, "WeightsKey", enable_key_rotation=True, description="LLM service weights")
    bucket = s3.Bucket(
        stack,
        "Weights",
        encryption=s3.BucketEncryption.KMS,
        encryption_key=key,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        versioned=True,
        server_access_logs_prefix="access-logs/",
        removal_policy=RemovalPolicy.RETAIN,
    )
    docker_hub = secretsmanager.Secret.from_secret_complete_arn(stack, "DockerHub", DOCKER_HUB_SECRET)
    base = BaseImage.pull_through_cache(docker_hub)
    chat = PeagleEndpoint(
        stack,
        "Chat",
        model="gpt-oss-20b",
        instance_type="ml.g6e.xlarge",
        weights=ModelWeights.from_bucket(bucket, "models/gpt-oss-20b/"),
        image=ServingImage.build_in_account(base=base),
    )
    code = PeagleEndpoint(
        stack,
        "Code",
        model="qwen3-8b",
        instance_type="ml.g6e.xlarge",
        profile="codegen",
        weights=ModelWeights.from_bucket(bucket, "models/qwen3-8b/"),
        image=ServingImage.build_in_account(base=base, directory=code_build_context(context_dir)),
        mode=EndpointMode.inference_components(min_instances=0, max_instances=1),
        autoscaling=Autoscaling(min_capacity=0, max_capacity=1),
    )
    for id, endpoint in (("ChatMonitoring", chat), ("CodeMonitoring", code)):
        EndpointMonitoring(stack, id, endpoint=endpoint)
    if checks:
        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app), RuntimeAccessChecks())
    app.synth()
    return outdir
