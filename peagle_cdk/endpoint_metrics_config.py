"""The MetricsConfig every endpoint config this library writes states in full: real-time (variants), inference
components and asynchronous. Nothing is left to SageMaker's defaults, which changed under deployed templates before.

What SageMaker does with each field (SageMaker API Reference, MetricsConfig,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_MetricsConfig.html; botocore 1.44.5's service model):

- EnableDetailedObservability: with it, "Container-level inference metrics scraped from the container's Prometheus
  endpoint", "Per-GPU metrics (utilization, memory, and temperature)", "Per-instance host metrics (CPU, memory, and disk
  utilization)" and "Inference component placement metrics" are published. "The default value for new endpoint
  configurations is True" (for "endpoint configurations created after June 17, 2026", SageMaker Developer Guide,
  "Getting started with detailed observability",
  https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-detailed-observability-getting-started.html), so a config
  that leaves it out has it on: `observability.detailed_observability: false` is honoured only where it is stated.
- EnableEnhancedMetrics: "utilization and invocation data at instance and container granularity ... The default is
  False".
- MetricPublishFrequencyInSeconds: "Defaults to 60. Valid values: 10, 30, 60, 120, 180, 240, 300"
  (peagle/settings/observability.py ObservabilitySettings refuses the ones above 60).

Asynchronous endpoint configs: neither botocore's CreateEndpointConfig nor CloudFormation's resource schema of
AWS::SageMaker::EndpointConfig (cfn-lint 1.58.0, 3529e18613d41f86.json) restricts MetricsConfig beside
AsyncInferenceConfig (the same model does say so where it applies: CrossRegionTrafficConfig "You can't specify it with
serverless variants or with AsyncInferenceConfig"), and the default above applies to every new config. So the async
config states it too. SageMaker's pages describe detailed observability and enhanced metrics for "real-time
inference endpoints" ("Amazon SageMaker AI detailed observability for inference endpoints",
https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch-detailed-observability.html; "Enhanced metrics
provide instance-level and container-level monitoring data for Amazon SageMaker AI real-time endpoints",
https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch-enhanced-metrics.html): what an async endpoint
publishes with them is not documented and not verified on AWS. Enhanced metrics stay at their default there (False):
stating True would ask for a feature documented for real-time endpoints only.

Where SageMaker scrapes the container (detailed observability): "If this configuration is not provided, the default path
/metrics on port 8080 is used with a default publishing frequency of 60 seconds" (ContainerMetricsConfig, botocore
1.44.5; its MetricsEndpoint has a path, "If not specified, defaults to /metrics", and a frequency, "Valid values: 10,
30, 60, 120, 180, 240, 300. Defaults to 60", but no port). vLLM itself listens on 8080 in the container
(inference_image/peagle_serve/settings.py, "SageMaker requires 8080") and serves its Prometheus metrics at /metrics
there, so the default is where they are, and no template states it:
- a production variant's container cannot: botocore's ContainerDefinition has ContainerMetricsConfig, but
  CloudFormation's AWS::SageMaker::Model (cfn-lint 1.58.0, f713429cd3f0c181.json) and CfnModel.ContainerDefinitionProperty
  have no such property, and no API is called behind CloudFormation's back (docs/catalog.md, "What waits on
  CloudFormation");
- an inference component could (Specification.Container.ContainerMetricsConfig is in its schema, eddb9f584c0b6de8.json),
  but its Specification names the Model (ModelName), and whether SageMaker accepts ModelName together with a Container
  holding only ContainerMetricsConfig is documented nowhere (botocore's InferenceComponentSpecification and the schema
  neither allow nor forbid it). Stating it would gain only a publish frequency other than 60 s and could fail a deploy
  that works today: not stated until that is verified on AWS.

Changing any field replaces the endpoint config ("/properties/MetricsConfig" is among the createOnlyProperties of
AWS::SageMaker::EndpointConfig in that schema) and updates the endpoint onto the new one: `peagle preflight` says so
(peagle/preflight/rules.py, rule metrics-config).
"""

from __future__ import annotations

from aws_cdk import aws_sagemaker as sagemaker


def metrics_config(
    *, detailed_observability: bool, metric_publish_frequency_seconds: int, real_time: bool = True
) -> sagemaker.CfnEndpointConfig.MetricsConfigProperty:
    """Every field stated: detailed observability as given, enhanced metrics on real-time endpoints only (the module
    docstring says why), the publish frequency as given."""
    return sagemaker.CfnEndpointConfig.MetricsConfigProperty(
        enable_detailed_observability=detailed_observability,
        enable_enhanced_metrics=real_time,
        metric_publish_frequency_in_seconds=metric_publish_frequency_seconds,
    )
