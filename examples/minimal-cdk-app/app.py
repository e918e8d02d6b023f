#!/usr/bin/env python3
"""The smallest CDK app with a P-EAGLE endpoint: a catalog pair on its default instance type, weights
in a bucket you already have, the serving image built in the account during `cdk deploy` (no Docker
anywhere on your side), alarms (to a topic of their own) and a dashboard, and cdk-nag's AWS Solutions
rules run as the app synthesizes. `cdk synth` needs no AWS credentials and no Docker.

The bucket is named by the context key ``weightsBucket`` (default ``my-model-weights``); stage the pair
there with the wheel's CLI: `peagle stage --model gpt-oss-20b --s3-uri s3://<bucket>/models/gpt-oss-20b/`.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3
from cdk_nag import AwsSolutionsChecks

from peagle_cdk import EndpointMonitoring, ModelPairs, ModelWeights, PeagleEndpoint, RuntimeAccessChecks, ServingImage

app = cdk.App()
stack = cdk.Stack(app, "MinimalChat")
bucket = s3.Bucket.from_bucket_name(stack, "Weights", app.node.try_get_context("weightsBucket") or "my-model-weights")
endpoint = PeagleEndpoint(
    stack,
    "Chat",
    model=ModelPairs.GPT_OSS_20B,
    weights=ModelWeights.from_bucket(bucket, "models/gpt-oss-20b/"),
    # Built by CodeBuild in your account from the build context the wheel ships (the default, written out);
    # ServingImage.from_asset() builds it with your Docker and pushes it from your machine instead.
    image=ServingImage.build_in_account(),
)
EndpointMonitoring(stack, "ChatMonitoring", endpoint=endpoint)
# cdk-nag 3 runs as a policy-validation plugin (Aspects.of(app).add(...) fails on it): a finding that no
# acknowledgement covers fails the synth with the rule and the resource. Beside it, the runtime-access check: a
# role that could not do what AWS will ask of it once deployed (pull the image, read and decrypt the weights, write
# its logs, build the image) fails the synth with the principal, action, resource and the prop that grants it.
cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app), RuntimeAccessChecks())
app.synth()
