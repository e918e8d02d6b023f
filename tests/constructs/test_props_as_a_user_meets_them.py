"""What a CDK user hits first with PeagleEndpoint, each found by a user of the installed library: a VPC
without security groups, a standard VPC's subnets, errors that spoke the deployment file, wrong types
failing deep inside, a measured capacity that was ignored. Each test failed before its fix."""

from __future__ import annotations

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from peagle.settings import MeasuredCapacity
from peagle.settings.errors import PeagleError
from peagle.settings.words import field_words
from peagle_cdk import Autoscaling, EndpointMode, ModelWeights, PeagleEndpoint, Rollout, Routing
from peagle_cdk.endpoint_config import endpoint_settings
from peagle_cdk.endpoint_props import AbBaseline, Speculation


def _stack() -> Stack:
    return Stack(App(), "Consumer")


def _endpoint(stack: Stack, **props) -> PeagleEndpoint:
    props.setdefault("weights", ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/"))
    return PeagleEndpoint(stack, "Chat", name="chat", **props)


def _vpc_config(template: Template) -> dict:
    (model,) = template.find_resources("AWS::SageMaker::Model").values()
    return model["Properties"]["VpcConfig"]


# --- a VPC that works ----------------------------------------------------------------------------


def test_a_vpc_without_security_groups_gets_one_without_ingress_that_only_speaks_https():
    """Before: SecurityGroupIds [] on the Model and the endpoint config (CloudFormation requires at least one)."""
    stack = _stack()
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    endpoint = _endpoint(stack, vpc=vpc)
    template = Template.from_stack(stack)
    group_id = {"Fn::GetAtt": [stack.get_logical_id(endpoint.security_group.node.default_child), "GroupId"]}
    placed = [
        resource["Properties"]["VpcConfig"]
        for resource in template.to_json()["Resources"].values()
        if "VpcConfig" in resource.get("Properties", {})
    ]
    assert placed and all(config["SecurityGroupIds"] == [group_id] for config in placed)
    group_props = template.find_resources("AWS::EC2::SecurityGroup")[group_id["Fn::GetAtt"][0]]["Properties"]
    assert "SecurityGroupIngress" not in group_props
    assert [
        {key: rule[key] for key in ("IpProtocol", "FromPort", "ToPort", "CidrIp")}
        for rule in group_props["SecurityGroupEgress"]
    ] == [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0"}]


def test_a_standard_vpc_places_the_model_in_its_private_subnets_with_egress():
    """Before: isolated subnets only, so ec2.Vpc's defaults failed with jsii's "There are no 'Isolated' subnet
    groups in this VPC"."""
    stack = _stack()
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    group = ec2.SecurityGroup(stack, "Mine", vpc=vpc)
    _endpoint(stack, vpc=vpc, security_groups=[group])
    subnets = _vpc_config(Template.from_stack(stack))["Subnets"]
    private = [stack.get_logical_id(subnet.node.default_child) for subnet in vpc.private_subnets]
    assert [subnet["Ref"] for subnet in subnets] == private


def test_a_vpc_with_isolated_subnets_only_places_the_model_there():
    stack = _stack()
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        max_azs=2,
        nat_gateways=0,
        subnet_configuration=[ec2.SubnetConfiguration(name="model", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)],
    )
    vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3)  # the weights' route (isolated subnets)
    _endpoint(stack, vpc=vpc)
    isolated = [stack.get_logical_id(subnet.node.default_child) for subnet in vpc.isolated_subnets]
    assert [subnet["Ref"] for subnet in _vpc_config(Template.from_stack(stack))["Subnets"]] == isolated


def test_a_vpc_with_public_subnets_only_is_refused_with_what_to_do():
    stack = _stack()
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        max_azs=2,
        subnet_configuration=[ec2.SubnetConfiguration(name="web", subnet_type=ec2.SubnetType.PUBLIC)],
    )
    with pytest.raises(ValueError, match=r"PeagleEndpoint Consumer/Chat: the VPC has no private subnets.*vpc_subnets="):
        _endpoint(stack, vpc=vpc)


def _public_and_private_vpc(stack: Stack, id: str = "Vpc") -> ec2.Vpc:
    return ec2.Vpc(stack, id, max_azs=2, nat_gateways=1)  # CDK's default: public and private-with-egress subnets


def test_public_subnets_chosen_with_vpc_subnets_are_refused_like_a_vpc_with_only_public_ones():
    """Before: vpc_subnets=SubnetSelection(subnet_type=PUBLIC) was taken, while the same public subnets as a VPC's
    only ones were refused: instances there get no public address, so they reach nothing outside the VPC."""
    for selection in (
        ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC),
        ec2.SubnetSelection(subnet_group_name="Public"),
    ):
        stack = _stack()
        vpc = _public_and_private_vpc(stack)
        with pytest.raises(ValueError) as error:
            _endpoint(stack, vpc=vpc, vpc_subnets=selection)
        message = str(error.value)
        assert message.startswith("PeagleEndpoint Consumer/Chat: vpc_subnets selects public subnets of vpc")
        assert "no public address" in message
        assert "ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)" in message
        assert "leave vpc_subnets out" in message
    stack = _stack()
    vpc = _public_and_private_vpc(stack)
    with pytest.raises(ValueError, match=r"vpc_subnets selects public subnets"):
        _endpoint(stack, vpc=vpc, vpc_subnets=ec2.SubnetSelection(subnets=[vpc.public_subnets[0]]))
    # Its private subnets, chosen the same way, are taken.
    stack = _stack()
    vpc = _public_and_private_vpc(stack)
    _endpoint(stack, vpc=vpc, vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS))
    private = [stack.get_logical_id(subnet.node.default_child) for subnet in vpc.private_subnets]
    assert [subnet["Ref"] for subnet in _vpc_config(Template.from_stack(stack))["Subnets"]] == private


def test_a_security_group_of_another_vpc_is_refused():
    """Before: taken, and the endpoint failed at deploy: a VPC config's security groups are for the VPC of its
    subnets."""
    stack = _stack()
    vpc, other = _public_and_private_vpc(stack), _public_and_private_vpc(stack, "Other")
    ours, theirs = ec2.SecurityGroup(stack, "Ours", vpc=vpc), ec2.SecurityGroup(stack, "Theirs", vpc=other)
    with pytest.raises(ValueError) as error:
        _endpoint(stack, vpc=vpc, security_groups=[ours, theirs])
    message = str(error.value)
    assert message.startswith(
        "PeagleEndpoint Consumer/Chat: security_groups[1] (Consumer/Theirs) is in another VPC (Consumer/Other) than "
        "vpc (Consumer/Vpc)"
    )
    assert "pass security groups of vpc, or leave security_groups out" in message
    # Two VPC ids given as text: known at synth as well.
    stack = _stack()
    vpc = ec2.Vpc.from_vpc_attributes(
        stack, "Vpc", vpc_id="vpc-0a", availability_zones=["eu-west-1a"], private_subnet_ids=["subnet-0a"]
    )
    elsewhere = ec2.Vpc.from_vpc_attributes(stack, "Elsewhere", vpc_id="vpc-0b", availability_zones=["eu-west-1a"])
    group = ec2.SecurityGroup(stack, "Group", vpc=elsewhere)
    with pytest.raises(ValueError, match=r"security_groups\[0\] \(Consumer/Group\) is in another VPC \(vpc-0b\)"):
        _endpoint(stack, vpc=vpc, security_groups=[group])


def test_security_groups_whose_vpc_is_not_known_or_that_are_associated_with_vpc_are_taken():
    """An imported group's VPC is unknown at synth; a group associated with vpc (AssociateSecurityGroupVpc) in the
    app may be used there; a group made on a VPC imported by vpc's own id is in it."""
    stack = _stack()
    vpc, other = _public_and_private_vpc(stack), _public_and_private_vpc(stack, "Other")
    imported = ec2.SecurityGroup.from_security_group_id(stack, "Imported", "sg-0123456789abcdef0")
    associated = ec2.SecurityGroup(stack, "Shared", vpc=other)
    ec2.CfnSecurityGroupVpcAssociation(stack, "SharedInVpc", group_id=associated.security_group_id, vpc_id=vpc.vpc_id)
    same = ec2.SecurityGroup(
        stack,
        "SameVpc",
        vpc=ec2.Vpc.from_vpc_attributes(stack, "ById", vpc_id=vpc.vpc_id, availability_zones=vpc.availability_zones),
    )
    _endpoint(stack, vpc=vpc, security_groups=[imported, associated, same])
    assert len(_vpc_config(Template.from_stack(stack))["SecurityGroupIds"]) == 3


def test_subnets_without_a_vpc_need_security_groups_and_too_many_groups_are_refused():
    stack = _stack()
    subnets = ec2.SubnetSelection(subnets=[ec2.Subnet.from_subnet_id(stack, "S", "subnet-0123456789abcdef0")])
    with pytest.raises(ValueError, match="vpc_subnets without vpc needs security_groups"):
        _endpoint(stack, vpc_subnets=subnets)
    stack = _stack()
    subnets = ec2.SubnetSelection(subnets=[ec2.Subnet.from_subnet_id(stack, "S", "subnet-0123456789abcdef0")])
    groups = [ec2.SecurityGroup.from_security_group_id(stack, f"G{i}", f"sg-0{i}") for i in range(6)]
    with pytest.raises(ValueError, match="6 security group.*at most 5"):
        _endpoint(stack, vpc_subnets=subnets, security_groups=groups)


# --- errors in the props' words ------------------------------------------------------------------


def _message(**props) -> str:
    with pytest.raises(PeagleError) as error:
        _endpoint(_stack(), **props)
    return str(error.value)


def test_autoscaling_bounds_are_named_as_the_props_that_set_them():
    """Before: "adjust autoscaling.min_instances/max_instances in the deployment file (or set autoscaling.enabled:
    false)", and a 400-character legend under every message."""
    message = _message(autoscaling=Autoscaling(min_capacity=3, max_capacity=2))
    assert "Autoscaling(min_capacity=...) (3)" in message and "Autoscaling(max_capacity=...) (2)" in message
    assert "(or autoscaling=None)" in message
    for file_word in ("deployment file", "autoscaling.min_instances", "enabled: false", "as deployment-file fields"):
        assert file_word not in message, message


def test_a_model_too_big_names_the_instance_type_prop_and_no_context_key():
    message = _message(model="gpt-oss-120b", instance_type="ml.g5.xlarge")
    assert "Smallest that fits: ml." in message and "set instance_type" in message
    assert "-c instanceType" not in message and "instance.type" not in message, message


def test_zero_instances_in_variants_mode_says_components_can_scale_to_zero():
    """Before: "autoscaling.min_instances: Input should be greater than 0", naming neither the prop nor the mode
    that can."""
    message = _message(autoscaling=Autoscaling(min_capacity=0))
    assert "Autoscaling(min_capacity=0): a production variant keeps at least one instance" in message
    assert "use mode=EndpointMode.inference_components(...), whose copies may scale to 0" in message


def test_a_metric_publish_frequency_the_alarms_cannot_read_is_refused_in_the_props_words():
    """Before: Duration.minutes(2) was taken, and the one-minute latency, error and scale-to-zero alarms then had
    a datapoint in every second minute."""
    message = _message(metric_publish_frequency=Duration.minutes(2))
    assert "PeagleEndpoint Consumer/Chat: invalid props" in message
    assert "metric_publish_frequency: 120 s is longer than" in message
    assert (
        "set metric_publish_frequency=Duration.seconds(10), metric_publish_frequency=Duration.seconds(30) or "
        "metric_publish_frequency=Duration.seconds(60) (the default)" in message
    )
    assert "observability." not in message and "set 10, 30 or 60" not in message, message
    for taken in (Duration.seconds(10), Duration.seconds(30), Duration.minutes(1)):
        stack = _stack()
        _endpoint(stack, metric_publish_frequency=taken)
        Template.from_stack(stack).has_resource_properties(
            "AWS::SageMaker::EndpointConfig",
            {"MetricsConfig": Match.object_like({"MetricPublishFrequencyInSeconds": taken.to_seconds()})},
        )


def test_every_field_the_props_set_is_named_by_its_prop():
    """A message can only name a setting in props words if its field says how (peagle/settings/words.py): every
    field a construct's props set, section by section, has its prop spelling in the model's metadata."""
    config = endpoint_settings(
        owner="PeagleEndpoint Consumer/Chat",
        mode=EndpointMode.inference_components(scale_to_zero_after=Duration.minutes(45)),
        autoscaling=Autoscaling(measured_capacity=None, target_concurrency=3, min_capacity=0, max_capacity=4),
        name="n",
        model="qwen3-8b",
        custom_pair=None,
        instance_type="ml.g6e.48xlarge",
        instance_facts=None,
        instance_count=1,
        price_per_hour_usd=2.0,
        inference_ami_version="al2-ami-sagemaker-inference-gpu-3-1",
        # Variants only (refused in this mode); named in props words: tests/infra/test_instance_pools.py.
        fallback_instance_types=None,
        instance_provision_timeout=None,
        ml_reservation_arn=None,
        profile="chatbot",
        profile_overrides=None,
        slo=None,
        speculation=Speculation.fixed(3),
        rollout=Rollout.rolling(),
        ab_baseline=AbBaseline(),
        capture=None,  # inference_components mode refuses Data Capture (request_log is allowed): tests/infra/test_data_capture.py
        routing=Routing.prefix_aware(prefix_length=4096, concurrency_threshold=5),
        weights=ModelWeights.from_hub(),
        network_isolation=False,
        container_startup_timeout=Duration.minutes(20),
        model_download_timeout=Duration.minutes(20),
        latency_sla=Duration.seconds(10),
        log_retention_days=30,
        kpi_interval=Duration.minutes(1),
        metric_publish_frequency=Duration.minutes(1),
        detailed_observability=True,
        vllm_args={"enforce-eager": True},
    )

    def set_fields(model, prefix: str = ""):
        for name in model.model_fields_set:
            value, path = getattr(model, name), f"{prefix}{name}"
            if hasattr(value, "model_fields_set") and name not in ("measured_capacity",):
                yield from set_fields(value, path + ".")
            else:
                yield path

    paths = sorted(set_fields(config))
    assert "autoscaling.min_capacity" in paths and "rollout.rolling.wait_seconds" in paths
    unnamed = [path for path in paths if not field_words(path)["own"]]
    assert unnamed == [], f"fields the props set with no prop spelling (json_schema_extra=spelled(...)): {unnamed}"


# --- types checked where props enter ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        (
            {"latency_sla": "10s"},
            r"PeagleEndpoint Consumer/Chat: latency_sla must be a Duration, e.g. Duration\.seconds\(10\), not str '10s'",
        ),
        (
            {"container_startup_timeout": 600},
            r"container_startup_timeout must be a Duration, e\.g\. Duration\.minutes\(20\), not int 600",
        ),
        ({"instance_count": "2"}, r"instance_count must be a whole number, not str '2'"),
        (
            {"mode": "inference_components"},
            r"mode must be EndpointMode\.variants\(\) or EndpointMode\.inference_components",
        ),
        ({"security_groups": "sg-123"}, r"security_groups must be a list of an ec2\.ISecurityGroup, not str"),
        ({"vpc": "vpc-123"}, r"vpc must be an ec2\.IVpc, not str 'vpc-123'"),
        (
            {"weights": "s3://bucket/models/"},
            r"weights must be ModelWeights\.from_bucket\(bucket, prefix\) or ModelWeights\.from_hub\(\)",
        ),
    ],
)
def test_a_prop_of_the_wrong_type_is_a_type_error_naming_it(props, expected):
    """Before: AttributeError: 'str' object has no attribute 'to_seconds', from endpoint_config.py."""
    stack = _stack()
    if "weights" not in props:
        props["weights"] = ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/")
    with pytest.raises(TypeError, match=expected):
        PeagleEndpoint(stack, "Chat", **props)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: Rollout.blue_green(wait=600), r"Rollout\.blue_green: wait must be a Duration"),
        (lambda: Rollout.rolling(max_execution="2h"), r"Rollout\.rolling: max_execution must be a Duration"),
        (lambda: Autoscaling(scale_in_cooldown=900), r"Autoscaling: scale_in_cooldown must be a Duration"),
        (lambda: Autoscaling(max_capacity=2.5), r"Autoscaling: max_capacity must be a whole number, not float 2\.5"),
        (
            lambda: EndpointMode.inference_components(scale_to_zero_after=40),
            r"EndpointMode\.inference_components: scale_to_zero_after must be a Duration",
        ),
        (
            lambda: ModelWeights.from_bucket("my-bucket", "models/"),
            r"ModelWeights\.from_bucket: bucket must be an s3\.IBucket",
        ),
    ],
)
def test_a_value_type_built_with_the_wrong_type_says_which_argument(make, expected):
    with pytest.raises(TypeError, match=expected):
        make()


# --- a measured capacity is the target --------------------------------------------------------------


def test_a_measured_capacity_without_a_target_scales_on_what_was_measured_times_its_headroom():
    """Before: the 75% guess ("24 requests in flight (a guess...)") although the props promised measured x
    headroom."""
    measured = MeasuredCapacity(
        requests_per_second=1.2, concurrency=10.5, headroom=0.8, slo="95% of requests: TTFT <= 1 s", source="test"
    )
    stack = _stack()
    endpoint = _endpoint(stack, autoscaling=Autoscaling(measured_capacity=measured))
    assert endpoint.plan.scaling.concurrency == 8.4
    assert endpoint.plan.scaling.source.startswith("measured: 1.2 req/s with 10.5 in flight")
    Template.from_stack(stack).has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {"TargetTrackingScalingPolicyConfiguration": Match.object_like({"TargetValue": 8.4})},
    )


def test_a_generated_name_keeps_the_ids_readable_within_the_files_24_characters():
    """Before: Names.unique_resource_name cut letters out of the middle: "llmservig-coder-0ec20bdf"."""
    app = App()
    long = PeagleEndpoint(
        Stack(app, "LlmServingPlatform"), "Coder", weights=ModelWeights.from_hub(), network_isolation=False
    )
    short = PeagleEndpoint(Stack(app, "Chat"), "Bot", weights=ModelWeights.from_hub(), network_isolation=False)
    other = PeagleEndpoint(Stack(app, "Chat2"), "Bot", weights=ModelWeights.from_hub(), network_isolation=False)
    name = long.endpoint_name.removesuffix("-endpoint")
    assert name.startswith("llmservingplatf") and len(name) <= 24
    assert short.endpoint_name.removesuffix("-endpoint").startswith("chat-bot-")
    assert short.endpoint_name != other.endpoint_name  # the path's hash tells them apart


# --- one front door ------------------------------------------------------------------------------------


def test_the_props_defaults_are_the_deployment_files():
    """Defaults are written once (peagle/settings/): a PeagleEndpoint given only its weights plans the
    deployment file that gives nothing but the same name and weights source."""
    from peagle.settings import parse_deployment_config

    endpoint = _endpoint(_stack())
    from_file = parse_deployment_config({"name": "chat", "artifacts": {"source": "s3"}})
    assert endpoint.config.model_dump() == from_file.model_dump()


def test_from_config_plans_the_config_it_is_given_and_speaks_the_files_words():
    """The YAML app's door: EndpointStack hands its validated config over; nothing is rebuilt into props and
    validated again (the round trip that hid the ignored measured capacity)."""
    from peagle.settings import parse_deployment_config

    config = parse_deployment_config(
        {"name": "chat", "model": "qwen3-8b", "autoscaling": {"headroom": 0.6, "scale_in_cooldown_seconds": 600}}
    )
    stack = _stack()
    weights = ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/qwen3-8b/")
    endpoint = PeagleEndpoint.from_config(stack, "Chat", config=config, weights=weights)
    assert endpoint.config is config and endpoint.plan.pair_id == "qwen3-8b"
    too_big = parse_deployment_config({"name": "big", "model": "gpt-oss-120b", "instance": {"type": "ml.g5.xlarge"}})
    with pytest.raises(PeagleError, match=r"set instance\.type: ml\.g6\.12xlarge$"):
        PeagleEndpoint.from_config(_stack(), "Big", config=too_big, weights=ModelWeights.from_hub())
    with pytest.raises(TypeError, match="config must be a peagle.settings.DeploymentConfig"):
        PeagleEndpoint.from_config(_stack(), "Chat", config={"model": "qwen3-8b"}, weights=ModelWeights.from_hub())


# --- messages in the props' words, with units (issue 33) ---------------------------------------------


def test_k_above_the_trained_count_names_speculation_fixed():
    """Before: "e.g. -c speculativeTokens=5", a CDK context key a construct user has no use for."""
    message = _message(speculation=Speculation.fixed(11))
    assert "Speculation.fixed(11) exceeds what the gpt-oss-20b drafter" in message
    assert "Speculation.fixed(7)" in message and "Speculation.off() to turn speculation off" in message
    assert "-c " not in message and "speculative_tokens" not in message, message


def test_a_short_idle_window_is_refused_in_minutes_as_a_duration():
    """Before: "Input should be greater than or equal to 5 (given: 1)", no unit and no prop."""
    with pytest.raises(PeagleError) as error:
        EndpointMode.inference_components(scale_to_zero_after=Duration.minutes(1))
    message = str(error.value)
    assert (
        "EndpointMode.inference_components(scale_to_zero_after=...): should be at least Duration.minutes(5) "
        "(given: Duration.minutes(1))" in message
    )


def test_a_duration_that_is_not_whole_minutes_names_the_two_around_it():
    """Before: jsii's raw CannotConvertedIntoWhole from Duration.to_minutes()."""
    with pytest.raises(PeagleError) as error:
        EndpointMode.inference_components(scale_to_zero_after=Duration.seconds(90))
    assert (
        "EndpointMode.inference_components: scale_to_zero_after is 90 s, not a whole number of minutes; pass "
        "Duration.minutes(1) or Duration.minutes(2)" in str(error.value)
    )


def test_copies_that_do_not_fit_name_the_autoscaling_and_mode_props():
    """Before: "raise max_instances to 2 or lower max_copies to 1", two vocabularies and neither a prop."""
    message = _message(
        model="qwen3-8b",
        instance_type="ml.g6e.48xlarge",
        mode=EndpointMode.inference_components(max_instances=1),
        autoscaling=Autoscaling(min_capacity=0, max_capacity=20),
        rollout=Rollout.rolling(),
    )
    assert "Autoscaling(max_capacity=...) 20 copies do not fit" in message
    assert "raise EndpointMode.inference_components(max_instances=3)" in message
    assert "lower Autoscaling(max_capacity=8)" in message
    assert "max_copies" not in message and "endpoint.inference_components" not in message, message


def test_a_wrong_image_lists_every_way_to_make_one():
    with pytest.raises(TypeError) as error:
        _endpoint(_stack(), image="vllm/vllm-openai:latest")
    assert "ServingImage.build_in_account(...)" in str(error.value)
