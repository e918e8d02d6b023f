"""A model in isolated subnets (no NAT, no internet route) and the VPC endpoints they need
(peagle_cdk/model_placement.py): before, a VPC without them was accepted without a word."""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Annotations, Match, Template

from peagle_cdk import INTERFACE_ENDPOINTS, ModelWeights, PeagleEndpoint, PrivateNetwork

_MISSING_INTERFACES = "peagle:isolated-subnets-without-interface-endpoints"


def _stack() -> Stack:
    return Stack(App(), "Consumer")


def _isolated_vpc(stack: Stack) -> ec2.Vpc:
    return ec2.Vpc(
        stack,
        "Vpc",
        max_azs=2,
        nat_gateways=0,
        subnet_configuration=[ec2.SubnetConfiguration(name="model", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)],
    )


def _endpoint(stack: Stack, vpc: ec2.IVpc, **props) -> PeagleEndpoint:
    weights = ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/")
    return PeagleEndpoint(stack, "Chat", name="chat", weights=weights, vpc=vpc, **props)


def _warnings(stack: Stack, text: str) -> list:
    return Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(text))


def test_isolated_subnets_without_an_s3_gateway_endpoint_fail_synth_saying_how_to_add_it():
    stack = _stack()
    _endpoint(stack, _isolated_vpc(stack))
    with pytest.raises(RuntimeError, match=r"no S3 gateway endpoint, so the model cannot read its weights") as failed:
        Template.from_stack(stack)
    assert 'vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3)' in str(failed.value)


def test_an_s3_endpoint_added_after_the_endpoint_counts_and_the_missing_interface_endpoints_are_a_warning():
    stack = _stack()
    vpc = _isolated_vpc(stack)
    _endpoint(stack, vpc)
    vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3)  # after: checked at synth
    Template.from_stack(stack)
    (warning,) = _warnings(stack, "no .* interface endpoint")
    assert "EcrApi, EcrDocker, Logs, Monitoring, Sts" in str(warning.entry.data)


def test_a_private_network_has_every_endpoint_and_gets_no_word():
    stack = _stack()
    network = PrivateNetwork(stack, "Network")
    _endpoint(stack, network.vpc, security_groups=[network.security_group])
    Template.from_stack(stack)
    assert _warnings(stack, "interface endpoint|VPC endpoints") == []


def test_one_interface_endpoint_missing_is_named_alone():
    stack = _stack()
    vpc = _isolated_vpc(stack)
    vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3)
    for name, service in INTERFACE_ENDPOINTS.items():
        if name != "Sts":
            vpc.add_interface_endpoint(name, service=service)
    _endpoint(stack, vpc)
    Template.from_stack(stack)
    (warning,) = _warnings(stack, "no .* interface endpoint")
    assert "and no Sts interface endpoint(s)" in str(warning.entry.data)


def test_an_imported_vpcs_endpoints_are_unknown_so_it_gets_a_warning_of_what_it_needs():
    stack = _stack()
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Imported",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        isolated_subnet_ids=["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
    )
    _endpoint(stack, vpc)
    Template.from_stack(stack)
    assert _warnings(stack, "imported VPC, whose VPC endpoints cannot be seen at synth; it needs an S3 gateway")


def test_subnets_with_egress_need_no_endpoints():
    stack = _stack()
    _endpoint(stack, ec2.Vpc(stack, "Vpc", max_azs=2))
    Template.from_stack(stack)
    assert _warnings(stack, "interface endpoint|VPC endpoints") == []
