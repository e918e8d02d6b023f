"""The endpoint config's RoutingConfig, from the plan's routing settings (one place for both endpoint kinds).

CloudFormation (AWS::SageMaker::EndpointConfig RoutingConfig, https://docs.aws.amazon.com/AWSCloudFormation/latest/
TemplateReference/aws-properties-sagemaker-endpointconfig-routingconfig.html): RoutingStrategy and
PrefixAwareRoutingConfig both "Update requires: Replacement" (of the endpoint config; the endpoint then updates onto
the new one: `peagle preflight`, rule routing). SageMaker takes PrefixAwareRoutingConfig "only when you set
RoutingStrategy to PREFIX_AWARE" (API Reference, ProductionVariantRoutingConfig); the settings model holds the rest
of SageMaker's rules (peagle/settings/routing.py, RoutingSettings).
"""

from __future__ import annotations

from aws_cdk import aws_sagemaker as sagemaker

from peagle_cdk.settings_model import RoutingSettings


def routing_config(routing: RoutingSettings) -> sagemaker.CfnEndpointConfig.RoutingConfigProperty:
    prefix_aware = (
        sagemaker.CfnEndpointConfig.PrefixAwareRoutingConfigProperty(
            prefix_length=routing.prefix_length, concurrency_threshold=routing.concurrency_threshold
        )
        if routing.strategy == "PREFIX_AWARE"
        else None
    )
    return sagemaker.CfnEndpointConfig.RoutingConfigProperty(
        routing_strategy=routing.strategy, prefix_aware_routing_config=prefix_aware
    )
