"""Every endpoint config the project writes states MetricsConfig in full, asynchronous ones included: left out,
EnableDetailedObservability is on for a new config ("The default value for new endpoint configurations is True",
botocore 1.44.5), so observability.detailed_observability: false would not turn it off
(peagle_cdk/endpoint_metrics_config.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cdk_synth import REPO_ROOT, write_deployment

from peagle.settings import load_deployment_config

ENDPOINT_CONFIG = "AWS::SageMaker::EndpointConfig"
SHIPPED = sorted((REPO_ROOT / "deployments").glob("*.yaml")) + sorted(
    (REPO_ROOT / "tests" / "infra" / "deployments").glob("*.yaml")
)


def _endpoint_configs(result) -> list[dict]:
    return [
        resource["Properties"]
        for template in result.templates.values()
        for resource in template["Resources"].values()
        if resource["Type"] == ENDPOINT_CONFIG
    ]


@pytest.mark.parametrize("deployment", SHIPPED, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_every_endpoint_config_of_every_shipped_deployment_states_its_metrics_config(synth, deployment: Path):
    observability = load_deployment_config(deployment).observability
    configs = _endpoint_configs(synth(deployment=str(deployment)))
    assert configs
    for config in configs:
        metrics = config.get("MetricsConfig")
        assert metrics is not None, config
        assert metrics["EnableDetailedObservability"] is observability.detailed_observability
        assert metrics["MetricPublishFrequencyInSeconds"] == observability.metric_publish_frequency_seconds
        # Enhanced metrics: documented for real-time endpoints; left at its default (False) on an async one.
        assert metrics["EnableEnhancedMetrics"] is ("AsyncInferenceConfig" not in config)


def test_detailed_observability_false_reaches_the_asynchronous_endpoint_config_too(synth, tmp_path):
    """The fault: async-summarization.yaml's asynchronous endpoint config had no MetricsConfig, so SageMaker's default
    (on) held there whatever the setting said."""
    settings = yaml.safe_load((REPO_ROOT / "deployments" / "async-summarization.yaml").read_text())
    settings["observability"] = {"detailed_observability": False, "metric_publish_frequency_seconds": 30}
    configs = _endpoint_configs(synth(deployment=write_deployment(tmp_path, yaml.safe_dump(settings))))
    asynchronous = [config for config in configs if "AsyncInferenceConfig" in config]
    assert len(asynchronous) == 1 and len(configs) == 2
    for config in configs:
        assert config["MetricsConfig"]["EnableDetailedObservability"] is False
        assert config["MetricsConfig"]["MetricPublishFrequencyInSeconds"] == 30
