"""Where PeagleEndpoint's model runs in a VPC: its subnets and security groups from the ``vpc``, ``vpc_subnets`` and
``security_groups`` props, refused where SageMaker could not use them, and the VPC endpoints isolated subnets need,
checked when the app synthesizes.

CloudFormation's VpcConfig (AWS::SageMaker::Model and ::EndpointConfig, "VpcConfig",
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-sagemaker-model-vpcconfig.html)
requires both lists: SecurityGroupIds "Required: Yes ... Minimum: 1 Maximum: 5", Subnets "Required: Yes ...
Minimum: 1 Maximum: 16".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jsii
from aws_cdk import Annotations, Stack, Token
from aws_cdk import aws_ec2 as ec2
from constructs import Construct, IValidation

from peagle_cdk.private_network import INTERFACE_ENDPOINTS

MAX_VPC_SECURITY_GROUPS, MAX_VPC_SUBNETS = 5, 16


@dataclass(frozen=True)
class ModelPlacement:
    """The model's subnets and security groups (None, None: SageMaker's managed network)."""

    subnet_ids: list[str] | None
    security_group_ids: list[str] | None
    security_group: ec2.SecurityGroup | None = None  # the one made when vpc came without security_groups


def place_model(
    scope: Construct,
    vpc: ec2.IVpc | None,
    vpc_subnets: ec2.SubnetSelection | None,
    security_groups: Sequence[ec2.ISecurityGroup] | None,
    *,
    weights_in_s3: bool,
) -> ModelPlacement:
    """Subnets default as CDK's own ``select_subnets()`` picks them (private with egress, else isolated;
    aws-cdk-lib aws-ec2 vpc.ts, ``reifySelectionDefaults``), and are never public ones, by default or chosen
    (_refuse_public_subnets says why). Without ``security_groups`` one is created (child "SecurityGroup" of
    ``scope``), as @aws-cdk/aws-sagemaker-alpha's ``Model`` does (lib/model.ts, ``configureNetworking``: "new
    ec2.SecurityGroup(this, 'SecurityGroup', ...)"), here least-privilege: no ingress, HTTPS out only (to the VPC
    endpoints or a NAT: S3, ECR, CloudWatch, the Hub); groups given are refused when they are known to be of another
    VPC (_refuse_groups_of_other_vpcs). Isolated subnets are checked for their VPC endpoints at synth
    (IsolatedSubnetEndpoints)."""
    path = scope.node.path
    if vpc is None and vpc_subnets is None:
        if security_groups:
            raise ValueError(f"PeagleEndpoint {path}: security_groups needs vpc=... (or vpc_subnets=...)")
        return ModelPlacement(None, None)
    if vpc is not None:
        selection = vpc_subnets or _default_subnets(vpc, path)
        selected = vpc.select_subnets(**_selection_kwargs(selection))
        _refuse_public_subnets(vpc, selected.subnets, path)
        subnet_ids = list(selected.subnet_ids)
        _refuse_groups_of_other_vpcs(scope, vpc, security_groups or [], path)
        isolated = {subnet.subnet_id for subnet in vpc.isolated_subnets}
        if any(subnet_id in isolated for subnet_id in subnet_ids):
            scope.node.add_validation(IsolatedSubnetEndpoints(scope, vpc, weights_in_s3=weights_in_s3))
    elif vpc_subnets is not None and vpc_subnets.subnets:
        subnet_ids = [subnet.subnet_id for subnet in vpc_subnets.subnets]
    else:
        raise ValueError(
            f"PeagleEndpoint {path}: vpc_subnets without a vpc must list its subnets "
            "(ec2.SubnetSelection(subnets=[...])), or pass vpc=... with it"
        )
    made = None
    if not security_groups:
        if vpc is None:
            raise ValueError(
                f"PeagleEndpoint {path}: vpc_subnets without vpc needs security_groups=[...] (a VPC config "
                "needs at least one); or pass vpc=... and a security group without ingress is created"
            )
        made = ec2.SecurityGroup(
            scope,
            "SecurityGroup",
            vpc=vpc,
            description="P-EAGLE model instances: no ingress; HTTPS out (VPC endpoints or NAT)",
            allow_all_outbound=False,
        )
        made.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS to S3, ECR, CloudWatch and STS")
        security_groups = [made]
    if len(security_groups) > MAX_VPC_SECURITY_GROUPS or len(subnet_ids) > MAX_VPC_SUBNETS:
        raise ValueError(
            f"PeagleEndpoint {path}: {len(security_groups)} security group(s) and {len(subnet_ids)} subnet(s); "
            f"a SageMaker VPC config takes at most {MAX_VPC_SECURITY_GROUPS} and {MAX_VPC_SUBNETS} (narrow "
            "vpc_subnets, e.g. one_per_az=True)"
        )
    return ModelPlacement(subnet_ids, [group.security_group_id for group in security_groups], made)


# What isolated subnets (no NAT, no internet route) need, and how loudly a missing one is said:
# - The S3 gateway endpoint, an error: the weights are read from S3, and "If you configure your VPC so that model
#   containers don't have access to the internet, they can't connect to the Amazon S3 buckets that contain your data
#   unless you create a VPC endpoint that allows access" (SageMaker Developer Guide, "Give SageMaker AI Hosted
#   Endpoints Access to Resources in Your Amazon VPC", https://docs.aws.amazon.com/sagemaker/latest/dg/host-vpc.html).
#   CloudFormation would create the model and endpoint config, and the endpoint would then fail to start.
# - The interface endpoints of INTERFACE_ENDPOINTS (ECR, CloudWatch Logs and metrics, STS), a warning: the same
#   guide asks for the S3 endpoint, and the model's image is in ECR, reached in the access mode SageMaker's API
#   Reference sets apart from the VPC one (ImageConfig RepositoryAccessMode: "Platform - The model image is hosted in
#   Amazon ECR", "Vpc - The model image is hosted in a private Docker registry in your VPC",
#   https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ImageConfig.html). Neither says hosting needs
#   them, so the deploy is not refused; PrivateNetwork adds them for what runs in the container and calls AWS.
#   Whether hosting needs them: not verified on AWS.
# Only a VPC of this app is checked: the endpoints of an imported one (ec2.Vpc.from_lookup) are not known at synth,
# so that VPC gets a warning saying what it must have.
_SERVICE_SUFFIX = {"S3": ".s3", **{name: "." + service.short_name for name, service in INTERFACE_ENDPOINTS.items()}}


@jsii.implements(IValidation)
class IsolatedSubnetEndpoints:
    """At synth (the app's endpoints may be added after this construct): the VPC endpoints of ``vpc`` the model's
    isolated subnets need, an error for S3 (with weights in S3), a warning for the others."""

    def __init__(self, scope: Construct, vpc: ec2.IVpc, *, weights_in_s3: bool) -> None:
        self._scope, self._vpc, self._weights_in_s3 = scope, vpc, weights_in_s3

    def validate(self) -> list[str]:
        scope, vpc, path = self._scope, self._vpc, self._scope.node.path
        if not isinstance(vpc, ec2.Vpc):
            Annotations.of(scope).add_warning_v2(
                "peagle:isolated-subnets-endpoints-unknown",
                f"PeagleEndpoint {path}: the model runs in isolated subnets of an imported VPC, whose VPC endpoints "
                "cannot be seen at synth; it needs an S3 gateway endpoint to read the weights, and the interface "
                "endpoints in peagle_cdk.INTERFACE_ENDPOINTS for calls to AWS from the container",
            )
            return []
        found = _endpoint_services(scope, vpc)
        missing = [name for name, suffix in _SERVICE_SUFFIX.items() if not any(f'{suffix}"' in s for s in found)]
        interface = [name for name in missing if name != "S3"]
        if interface:
            Annotations.of(scope).add_warning_v2(
                "peagle:isolated-subnets-without-interface-endpoints",
                f"PeagleEndpoint {path}: vpc ({vpc.node.path}) has isolated subnets and no {', '.join(interface)} "
                "interface endpoint(s), which the container's calls to AWS need; add them "
                "(for name, service in peagle_cdk.INTERFACE_ENDPOINTS.items(): vpc.add_interface_endpoint(name, "
                "service=service, ...)), or make the VPC with PrivateNetwork(scope, id)",
            )
        if "S3" in missing and self._weights_in_s3:
            return [
                f"PeagleEndpoint {path}: vpc ({vpc.node.path}) has isolated subnets (no NAT, no internet route) and "
                "no S3 gateway endpoint, so the model cannot read its weights from S3 and the endpoint would fail to "
                'start; add one: vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3), or '
                "make the VPC with PrivateNetwork(scope, id), or choose subnets with egress "
                "(vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS))"
            ]
        return []


def _endpoint_services(scope: Construct, vpc: ec2.Vpc) -> list[str]:
    """The service names of the VPC endpoints this app declares in ``vpc``, as CloudFormation JSON
    (``{"Fn::Join": ["", ["com.amazonaws.", {"Ref": "AWS::Region"}, ".s3"]]}``: the region is a token)."""
    return [
        json.dumps(Stack.of(found).resolve(found.service_name))
        for found in scope.node.root.node.find_all()
        if isinstance(found, ec2.CfnVPCEndpoint) and found.vpc_id == vpc.vpc_id
    ]


# Why a model never runs in public subnets. SageMaker: "The ENIs provide your model containers with a network
# connection within your VPC that is not connected to the internet" (SageMaker Developer Guide, "Give SageMaker
# Hosted Endpoints Access to Resources in Your Amazon VPC", https://docs.aws.amazon.com/sagemaker/latest/dg/host-vpc.html),
# and "If your model needs access to ... a resource outside of AWS, create a NAT gateway" (same page). A public
# subnet's internet gateway does not help them: it "enables resources in your public subnets (such as EC2 instances)
# to connect to the internet if the resource has a public IPv4 address or an IPv6 address" (Amazon VPC User Guide,
# "Connect to the internet using an internet gateway", https://docs.aws.amazon.com/vpc/latest/userguide/VPC_Internet_Gateway.html).
_PUBLIC_SUBNETS_REACH_NOTHING = "where the model's instances get no public address to reach anything"


def _default_subnets(vpc: ec2.IVpc, path: str) -> ec2.SubnetSelection:
    """Private subnets with egress, else isolated ones (CDK's default order, public ones left out)."""
    if vpc.private_subnets:
        return ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
    if vpc.isolated_subnets:
        return ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
    raise ValueError(
        f"PeagleEndpoint {path}: the VPC has no private subnets (with egress or isolated), only public ones, "
        f"{_PUBLIC_SUBNETS_REACH_NOTHING}; add private subnets, or pass a vpc that has them (PrivateNetwork(scope, "
        "id) makes one); vpc_subnets=... cannot choose its public ones either"
    )


def _refuse_public_subnets(vpc: ec2.IVpc, subnets: Sequence[ec2.ISubnet], path: str) -> None:
    """``vpc_subnets`` may not choose what the default never does: the VPC's public subnets (by type, group name
    or as subnet objects), for the reason above."""
    public_ids = {subnet.subnet_id for subnet in vpc.public_subnets}
    public = [s for s in subnets if s.subnet_id in public_ids or isinstance(s, ec2.PublicSubnet)]
    if public:
        raise ValueError(
            f"PeagleEndpoint {path}: vpc_subnets selects public subnets of vpc ({len(public)} of the "
            f"{len(subnets)} selected), {_PUBLIC_SUBNETS_REACH_NOTHING}; choose private ones, e.g. "
            "vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS) (or PRIVATE_ISOLATED "
            "with the VPC endpoints in peagle_cdk.INTERFACE_ENDPOINTS), or leave vpc_subnets out (vpc's private "
            "subnets are chosen)"
        )


def _refuse_groups_of_other_vpcs(
    scope: Construct, vpc: ec2.IVpc, security_groups: Sequence[ec2.ISecurityGroup], path: str
) -> None:
    """A security group known at synth to be of another VPC than ``vpc``. SageMaker's VpcConfig: SecurityGroupIds
    "Specify the security groups for the VPC that is specified in the Subnets field" (SageMaker API Reference,
    VpcConfig, https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_VpcConfig.html; botocore 1.44.5). EC2
    lets a group serve another VPC only once associated with it: AssociateSecurityGroupVpc "Associates a security
    group with another VPC in the same Region. This enables you to use the same security group with network
    interfaces and instances in the specified VPC" (Amazon EC2 API Reference,
    https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_AssociateSecurityGroupVpc.html), so a group this app
    associates with ``vpc`` (ec2.CfnSecurityGroupVpcAssociation) is taken (whether SageMaker accepts such a group
    is not verified). Known means: both VPC ids are given as text (vpc-...), or both are VPCs (ec2.Vpc) of this app;
    a group imported by id, or a VPC of unknown id, is not checked."""
    constructs = scope.node.root.node.find_all()
    app_vpcs = {found.vpc_id: found.node.path for found in constructs if isinstance(found, ec2.Vpc)}
    associated = {
        (found.group_id, found.vpc_id) for found in constructs if isinstance(found, ec2.CfnSecurityGroupVpcAssociation)
    }

    def known(vpc_id: str) -> tuple[str, str] | None:
        if not Token.is_unresolved(vpc_id):
            return "id", vpc_id
        return ("app", app_vpcs[vpc_id]) if vpc_id in app_vpcs else None

    ours = known(vpc.vpc_id)
    for index, group in enumerate(security_groups):
        resource = group.node.default_child if isinstance(group, ec2.SecurityGroup) else None
        group_vpc_id = getattr(resource, "vpc_id", None)
        if ours is None or group_vpc_id is None or group_vpc_id == vpc.vpc_id:
            continue
        theirs = known(group_vpc_id)
        if theirs is None or theirs[0] != ours[0] or (group.security_group_id, vpc.vpc_id) in associated:
            continue
        raise ValueError(
            f"PeagleEndpoint {path}: security_groups[{index}] ({group.node.path}) is in another VPC ({theirs[1]}) "
            f"than vpc ({ours[1]}), and a SageMaker VPC config takes security groups of its subnets' VPC; pass "
            "security groups of vpc, or leave security_groups out and one without ingress is made in vpc (a group "
            "you associated with vpc through AssociateSecurityGroupVpc: declare its ec2.CfnSecurityGroupVpcAssociation "
            "in this app, or pass the group by id, ec2.SecurityGroup.from_security_group_id)"
        )


def _selection_kwargs(selection: ec2.SubnetSelection) -> dict[str, Any]:
    """A SubnetSelection as select_subnets' keywords (jsii's Python binding takes them flattened)."""
    fields = ("availability_zones", "one_per_az", "subnet_filters", "subnet_group_name", "subnets", "subnet_type")
    return {name: getattr(selection, name) for name in fields if getattr(selection, name) is not None}
