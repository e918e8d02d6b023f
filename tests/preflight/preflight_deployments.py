"""The deployment variants preflight's rules are checked on: name -> deployment file content. A module of its
own, not conftest.py, so a test imports it by a name no other folder's conftest shares (a bare
`from conftest import` finds whichever conftest pytest put first on sys.path)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "infra"))  # the same helper tests/infra uses
from cdk_synth import REPO_ROOT  # noqa: E402


def _deployment(base: str, **changes: Any) -> dict:
    data = yaml.safe_load((REPO_ROOT / "deployments" / base).read_text())
    for dotted, value in changes.items():
        node = data
        *parents, leaf = dotted.split("__")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return data


PULL_THROUGH_SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:ecr-pullthroughcache/docker-hub-AbCdEf"

# name -> deployment file content (`a__b=v` sets a.b: v)
DEPLOYMENTS = {
    "default": _deployment("default.yaml"),
    "ab": _deployment("ab-test.yaml"),
    "ab-off": _deployment("ab-test.yaml", ab_test__enabled=False),
    "ab-off-none": _deployment("ab-test.yaml", ab_test__enabled=False, rollout__strategy="none"),
    "bigger-instance": _deployment("default.yaml", instance__type="ml.g6e.12xlarge"),
    "no-autoscaling": _deployment("default.yaml", autoscaling__enabled=False),
    "renamed": _deployment("default.yaml", name="peagle-b"),
    "own-prefix": _deployment("default.yaml", artifacts__s3_uri="s3://my-weights-bucket/models/gpt-oss-20b/"),
    "components": _deployment("default.yaml", endpoint__mode="inference_components", rollout__strategy="rolling"),
    # Inference components scaled to zero (copy counts registered, MinCapacity 0, rolling updates), and
    # one change each: the component renamed (with the deployment's name), the instances, autoscaling
    # off, a new Model (another K: the component rolls), a floor of one copy.
    "s2z": _deployment("scale-to-zero.yaml"),
    "s2z-renamed": _deployment("scale-to-zero.yaml", name="peagle-s2z-b"),
    "s2z-other-instance": _deployment("scale-to-zero.yaml", instance__type="ml.g6e.12xlarge"),
    "s2z-no-autoscaling": _deployment("scale-to-zero.yaml", autoscaling__enabled=False, autoscaling__min_capacity=None),
    "s2z-new-model": _deployment("scale-to-zero.yaml", speculation__speculative_tokens=3),
    "s2z-min-one": _deployment("scale-to-zero.yaml", autoscaling__min_capacity=1),
    # Routing changed (endpoint.routing): prefix-aware on the Blackwell example, from the default routing; and on
    # the scale-to-zero components' endpoint.
    "prefix-aware": _deployment("prefix-aware.yaml"),
    "prefix-aware-by-load": _deployment(
        "prefix-aware.yaml", endpoint__routing={"strategy": "LEAST_OUTSTANDING_REQUESTS"}
    ),
    "s2z-random": _deployment("scale-to-zero.yaml", endpoint__routing={"strategy": "RANDOM"}),
    # Detailed observability turned off (a new MetricsConfig: the endpoint config is replaced); the asynchronous
    # example, whose endpoint config states MetricsConfig since issue 43.
    "no-detailed-observability": _deployment("default.yaml", observability__detailed_observability=False),
    "async": _deployment("async-summarization.yaml"),
    # The vLLM base pulled through an ECR pull-through cache rule (a resource named by its prefix).
    "pull-through": _deployment("default.yaml", image__pull_through_cache_secret_arn=PULL_THROUGH_SECRET),
}
