"""PeagleEndpoint where it lives: a bare Stack, its template read with Template.from_stack.

The YAML app's whole-stack synths (tests/infra) keep cdk-nag, cfn-lint and the snapshots; these tests
are the construct's own contract: typed props in, resources, grants and rules out.
"""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from peagle.catalog import load_catalog
from peagle.planning.deployment_rules import DeploymentRuleError, plan_checked_deployment
from peagle.planning.unit_plan import pool_of
from peagle.settings import config_from_overrides, parse_deployment_config
from peagle.settings.errors import ConfigError, PlanError
from peagle.settings.refs import Door
from peagle_cdk import (
    AbBaseline,
    Autoscaling,
    EndpointMode,
    ModelWeights,
    PeagleEndpoint,
    Rollout,
    Routing,
    ServingImage,
    Speculation,
)


def _stack() -> Stack:
    return Stack(App(), "Consumer")


def _endpoint(stack: Stack, id: str = "Chat", **props) -> PeagleEndpoint:
    bucket = props.pop("bucket", None) or s3.Bucket(stack, "Weights")
    props.setdefault("weights", ModelWeights.from_bucket(bucket, "models/gpt-oss-20b/"))
    props.setdefault("name", "chat")
    return PeagleEndpoint(stack, id, **props)


def _resources(template: Template, resource_type: str) -> dict[str, dict]:
    return template.find_resources(resource_type)


def _environment(template: Template) -> dict[str, str]:
    (model,) = _resources(template, "AWS::SageMaker::Model").values()
    return model["Properties"]["PrimaryContainer"]["Environment"]


def _policy_statements(template: Template) -> list[dict]:
    return [
        statement
        for policy in _resources(template, "AWS::IAM::ManagedPolicy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


# --- the plan and the speculative config ------------------------------------------------------


def test_it_plans_itself_and_exposes_the_plan_read_only():
    stack = _stack()
    endpoint = _endpoint(stack)
    pair = load_catalog().pairs["gpt-oss-20b"]
    assert endpoint.plan.pair_id == "gpt-oss-20b"
    assert endpoint.plan.speculative_tokens == pair.recommended_k["chatbot"]
    with pytest.raises(AttributeError):
        endpoint.plan = None  # a property without a setter
    spec = json.loads(_environment(Template.from_stack(stack))["SM_VLLM_SPECULATIVE_CONFIG"])
    assert spec["num_speculative_tokens"] == endpoint.plan.speculative_tokens
    assert spec["parallel_drafting"] is True


def test_speculation_fixed_off_and_by_batch_size():
    stack = _stack()
    fixed = _endpoint(stack, "Fixed", name="fixed", speculation=Speculation.fixed(2))
    off = _endpoint(stack, "Off", name="off", speculation=Speculation.off(), bucket=s3.Bucket(stack, "B2"))
    assert fixed.plan.speculative_tokens == 2
    assert off.plan.speculative_tokens == 0 and not off.plan.speculation_enabled
    bands = [(1, 4, 7), (5, 16, 3), (17, 32, 0)]
    dynamic = _endpoint(_stack(), speculation=Speculation.by_batch_size(bands), profile_overrides=None, name="dyn")
    assert dynamic.plan.speculative_schedule == tuple(bands)


def test_the_same_props_plan_as_the_same_deployment_file():
    """The construct reads its props into the deployment model: what `peagle plan` prints for a file."""
    endpoint = _endpoint(_stack(), instance_type="ml.g6e.12xlarge", profile="codegen")
    from_file = plan_checked_deployment(
        config_from_overrides({"instanceType": "ml.g6e.12xlarge", "profile": "codegen"}, base={"name": "chat"})
    ).plan
    assert endpoint.plan.summary_lines() == from_file.summary_lines()


# --- typed props: weights, image, role, network ------------------------------------------------


def test_weights_from_bucket_grant_read_on_that_prefix_only():
    stack = _stack()
    bucket = s3.Bucket(stack, "Weights")
    _endpoint(stack, bucket=bucket, weights=ModelWeights.from_bucket(bucket, "models/pair/"))
    template = Template.from_stack(stack)
    (model,) = _resources(template, "AWS::SageMaker::Model").values()
    source = model["Properties"]["PrimaryContainer"]["ModelDataSource"]["S3DataSource"]
    assert source["S3DataType"] == "S3Prefix" and source["CompressionType"] == "None"
    assert "models/pair/" in json.dumps(source["S3Uri"])
    read = next(s for s in _policy_statements(template) if s["Sid"] == "ReadModelWeights")
    assert read["Action"] == "s3:GetObject"
    resource = json.dumps(read["Resource"])
    assert '"/models/pair/*"' in resource
    assert stack.get_logical_id(bucket.node.default_child) in resource


def _decrypt_statements(stack: Stack) -> list[dict]:
    return [s for s in _policy_statements(Template.from_stack(stack)) if s["Sid"] == "DecryptModelWeights"]


def _arn_of(stack: Stack, key: kms.IKey) -> dict:
    return {"Fn::GetAtt": [stack.get_logical_id(key.node.default_child), "Arn"]}


def test_weights_in_a_kms_encrypted_bucket_may_be_decrypted_with_the_buckets_key():
    """Before: s3:GetObject and s3:ListBucket but no kms:Decrypt unless key= was passed too, so SageMaker
    could list the weights and read none of them."""
    stack = _stack()
    key = kms.Key(stack, "WeightsKey")
    bucket = s3.Bucket(stack, "Weights", encryption_key=key)
    _endpoint(stack, bucket=bucket, weights=ModelWeights.from_bucket(bucket, "models/pair/"))
    (decrypt,) = _decrypt_statements(stack)
    assert decrypt["Action"] == "kms:Decrypt" and decrypt["Resource"] == _arn_of(stack, key)
    # encryption=KMS without a key: the bucket makes its own, which the role needs as much.
    stack = _stack()
    bucket = s3.Bucket(stack, "Weights", encryption=s3.BucketEncryption.KMS)
    _endpoint(stack, bucket=bucket, weights=ModelWeights.from_bucket(bucket, "models/pair/"))
    (decrypt,) = _decrypt_statements(stack)
    assert decrypt["Resource"] == _arn_of(stack, bucket.encryption_key)


def test_an_explicit_weights_key_wins_and_a_bucket_without_one_gets_no_decrypt():
    stack = _stack()
    bucket = s3.Bucket(stack, "Weights", encryption_key=kms.Key(stack, "BucketKey"))
    mine = kms.Key(stack, "ObjectsKey")
    _endpoint(stack, bucket=bucket, weights=ModelWeights.from_bucket(bucket, "models/pair/", key=mine))
    (decrypt,) = _decrypt_statements(stack)
    assert decrypt["Resource"] == _arn_of(stack, mine)
    stack = _stack()
    bucket = s3.Bucket(stack, "Weights")  # SSE-S3: nothing to decrypt with a key
    _endpoint(stack, bucket=bucket, weights=ModelWeights.from_bucket(bucket, "models/pair/"))
    assert _decrypt_statements(stack) == []


def test_an_ecr_image_and_your_own_role():
    stack = _stack()
    repository = ecr.Repository(stack, "Images")
    role = iam.Role(stack, "MyRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
    endpoint = _endpoint(stack, image=ServingImage.from_ecr_repository(repository, "v1"), role=role)
    template = Template.from_stack(stack)
    assert endpoint.role is role
    template.resource_count_is("AWS::IAM::Role", 1)  # yours; none made
    template.has_resource_properties(
        "AWS::IAM::ManagedPolicy", {"Roles": [{"Ref": stack.get_logical_id(role.node.default_child)}]}
    )
    (model,) = _resources(template, "AWS::SageMaker::Model").values()
    assert ":v1" in json.dumps(model["Properties"]["PrimaryContainer"]["Image"])
    pull = next(s for s in _policy_statements(template) if s["Sid"] == "PullServingImage")
    assert stack.get_logical_id(repository.node.default_child) in json.dumps(pull["Resource"])


def test_your_vpc_subnets_and_security_groups():
    stack = _stack()
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        max_azs=2,
        nat_gateways=0,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="model", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=24)
        ],
    )
    vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3)  # the weights' route (isolated subnets)
    group = ec2.SecurityGroup(stack, "ModelGroup", vpc=vpc, allow_all_outbound=False)
    _endpoint(stack, vpc=vpc, security_groups=[group])
    template = Template.from_stack(stack)
    (model,) = _resources(template, "AWS::SageMaker::Model").values()
    placement = model["Properties"]["VpcConfig"]
    assert len(placement["Subnets"]) == 2
    assert all("Vpcmodel" in subnet["Ref"] for subnet in placement["Subnets"])
    assert placement["SecurityGroupIds"] == [
        {"Fn::GetAtt": [stack.get_logical_id(group.node.default_child), "GroupId"]}
    ]
    assert any(s["Sid"] == "AttachToVpc" for s in _policy_statements(template))


def test_endpoint_name_is_generated_unless_given():
    stack = _stack()
    generated = PeagleEndpoint(stack, "Chat", weights=ModelWeights.from_bucket(s3.Bucket(stack, "W"), "m/"))
    named = _endpoint(stack, "Named", name="named", endpoint_name="my-endpoint")
    assert generated.endpoint_name.endswith("-endpoint") and generated.endpoint_name.islower()
    assert named.endpoint_name == "my-endpoint"
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::SageMaker::Endpoint", {"EndpointName": "my-endpoint"})
    template.has_resource_properties("AWS::Logs::LogGroup", {"LogGroupName": "/aws/sagemaker/Endpoints/my-endpoint"})


# --- both modes behind one interface ------------------------------------------------------------


def test_inference_components_mode_scales_copies_to_zero_with_the_same_keywords():
    stack = _stack()
    endpoint = _endpoint(
        stack,
        model="qwen3-8b",
        instance_type="ml.g6e.48xlarge",
        mode=EndpointMode.inference_components(min_instances=0, max_instances=2),
        autoscaling=Autoscaling(min_capacity=0, max_capacity=8, target_concurrency=6),
    )
    template = Template.from_stack(stack)
    assert endpoint.inference_component_names == ["chat-primary"]
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {"ResourceId": "inference-component/chat-primary", "MinCapacity": 0, "MaxCapacity": 8},
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {"TargetTrackingScalingPolicyConfiguration": Match.object_like({"TargetValue": 6})},
    )
    assert set(endpoint.cfn_inference_components) == {"chat-primary"}


def test_a_component_setting_of_the_file_is_a_prop_by_the_same_name():
    """EndpointMode.inference_components takes every field of endpoint.inference_components (data_cache here, on by
    default like the file's key), and refuses a name the section does not have, naming the ones it does."""
    for mode, caching in (
        (EndpointMode.inference_components(), True),
        (EndpointMode.inference_components(data_cache=False), False),
    ):
        stack = _stack()
        _endpoint(
            stack,
            model="qwen3-8b",
            instance_type="ml.g6e.48xlarge",
            mode=mode,
            autoscaling=Autoscaling(min_capacity=0),
        )
        Template.from_stack(stack).has_resource_properties(
            "AWS::SageMaker::InferenceComponent",
            {"Specification": Match.object_like({"DataCacheConfig": {"EnableCaching": caching}})},
        )
    with pytest.raises(TypeError, match=r"no setting named data_cash; it takes .*, data_cache"):
        EndpointMode.inference_components(data_cash=True)


def test_routing_is_one_prop_for_either_mode_with_the_files_rules_in_props_words():
    """routing=Routing...: the file's endpoint.routing, the same template in both modes, its refusals naming the prop."""
    prefix_aware = Routing.prefix_aware(prefix_length=4096, concurrency_threshold=9)
    expected = {
        "RoutingStrategy": "PREFIX_AWARE",
        "PrefixAwareRoutingConfig": {"PrefixLength": 4096, "ConcurrencyThreshold": 9},
    }
    for mode in (EndpointMode.variants(), EndpointMode.inference_components()):
        stack = _stack()
        _endpoint(stack, model="qwen3-8b", instance_type="ml.g6e.48xlarge", mode=mode, routing=prefix_aware)
        Template.from_stack(stack).has_resource_properties(
            "AWS::SageMaker::EndpointConfig",
            {"ProductionVariants": [Match.object_like({"RoutingConfig": expected})]},
        )
    stack = _stack()
    _endpoint(stack, routing=Routing.random())
    Template.from_stack(stack).has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {"ProductionVariants": [Match.object_like({"RoutingConfig": {"RoutingStrategy": "RANDOM"}})]},
    )
    with pytest.raises(
        ConfigError,
        match=r"(?s)Routing.prefix_aware: .*Routing.prefix_aware\(prefix_length=\.\.\.\): 512 is outside SageMaker's range",
    ):
        Routing.prefix_aware(prefix_length=512)
    with pytest.raises(TypeError, match=r"Routing.prefix_aware: prefix_length must be a whole number"):
        Routing.prefix_aware(prefix_length="4k")  # pyright: ignore[reportArgumentType]
    # gpt-oss-20b (the default model) refuses caching with its drafter: the refusal names the prop, not the file key.
    with pytest.raises(PlanError) as refused:
        _endpoint(_stack(), routing=prefix_aware)
    assert "routing=Routing.prefix_aware(prefix_length=...)" in str(refused.value)
    assert "routing=Routing.least_outstanding_requests()" in str(refused.value)
    assert "endpoint.routing" not in str(refused.value)


def test_variants_mode_scales_instances_with_the_same_keywords():
    stack = _stack()
    _endpoint(stack, autoscaling=Autoscaling(min_capacity=1, max_capacity=3, target_concurrency=6))
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {"ResourceId": "endpoint/chat-endpoint/variant/Primary", "MinCapacity": 1, "MaxCapacity": 3},
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {"TargetTrackingScalingPolicyConfiguration": Match.object_like({"TargetValue": 6})},
    )


def test_auto_scale_capacity_takes_the_same_policies_in_both_modes():
    stack = _stack()
    variants = _endpoint(stack, "Variants", name="variants")
    components = _endpoint(
        stack,
        "Components",
        name="components",
        model="qwen3-8b",
        instance_type="ml.g6e.48xlarge",
        mode=EndpointMode.inference_components(),
        autoscaling=Autoscaling(min_capacity=0),
        bucket=s3.Bucket(stack, "W2"),
    )
    for endpoint in (variants, components):
        endpoint.auto_scale_capacity().scale_on_concurrency(
            "MyConcurrency",
            target_requests_per_unit=3,
            scale_in_cooldown=Duration.minutes(5),
            scale_out_cooldown=Duration.minutes(1),
        )
    policies = Template.from_stack(stack).find_resources("AWS::ApplicationAutoScaling::ScalingPolicy")
    mine = [p for logical_id, p in policies.items() if "MyConcurrency" in logical_id]
    assert len(mine) == 2
    assert {p["Properties"]["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] for p in mine} == {3}
    with pytest.raises(ValueError, match="units that scale"):
        variants.auto_scale_capacity(unit_name="Baseline")


def test_no_autoscaling_means_fixed_capacity():
    stack = _stack()
    _endpoint(stack, autoscaling=None)
    components = _endpoint(
        stack,
        "Components",
        name="components",
        model="qwen3-8b",
        instance_type="ml.g6e.48xlarge",
        mode=EndpointMode.inference_components(initial_copies=2),
        autoscaling=None,
        bucket=s3.Bucket(stack, "W2"),
    )
    assert pool_of(components.plan.units).min_copies == 2  # the deploy's copies stay: none scale to zero
    Template.from_stack(stack).resource_count_is("AWS::ApplicationAutoScaling::ScalableTarget", 0)


def test_rollout_rolling_and_none():
    stack = _stack()
    _endpoint(
        stack,
        "Rolling",
        name="rolling",
        instance_count=4,
        autoscaling=Autoscaling(min_capacity=4, max_capacity=6),
        rollout=Rollout.rolling(batch_percent=25),
    )
    _endpoint(stack, "Plain", name="plain", rollout=Rollout.none(), bucket=s3.Bucket(stack, "W2"))
    endpoints = _resources(Template.from_stack(stack), "AWS::SageMaker::Endpoint")
    by_name = {resource["Properties"]["EndpointName"]: resource["Properties"] for resource in endpoints.values()}
    rolling = by_name["rolling-endpoint"]["DeploymentConfig"]["RollingUpdatePolicy"]
    assert rolling["MaximumBatchSize"] == {"Type": "CAPACITY_PERCENT", "Value": 25}
    assert "DeploymentConfig" not in by_name["plain-endpoint"]


def test_ab_baseline_is_a_second_variant_child_ids_by_name():
    stack = _stack()
    endpoint = _endpoint(stack, ab_baseline=AbBaseline(traffic_percent=20))
    template = Template.from_stack(stack)
    assert endpoint.unit_names == ["Primary", "Baseline"]
    (config,) = _resources(template, "AWS::SageMaker::EndpointConfig").values()
    weights = {v["VariantName"]: v["InitialVariantWeight"] for v in config["Properties"]["ProductionVariants"]}
    assert weights == {"Primary": 0.8, "Baseline": 0.2}
    assert any(
        logical_id.startswith("ChatBaselineModel") for logical_id in _resources(template, "AWS::SageMaker::Model")
    )


def test_component_children_are_named_by_component_not_position():
    stack = _stack()
    _endpoint(
        stack,
        model="qwen3-8b",
        instance_type="ml.g6e.48xlarge",
        mode=EndpointMode.inference_components(),
        autoscaling=Autoscaling(min_capacity=0),
        ab_baseline=AbBaseline(),
    )
    components = _resources(Template.from_stack(stack), "AWS::SageMaker::InferenceComponent")
    by_name = {
        resource["Properties"]["InferenceComponentName"]: logical_id for logical_id, resource in components.items()
    }
    assert by_name["chat-primary"].startswith("ChatPeagleEndpointComponent")
    assert by_name["chat-baseline"].startswith("ChatPeagleEndpointComponentChatBaseline")


# --- grants, metrics, escape hatches ---------------------------------------------------------------


def test_grant_invoke_metric_options_and_escape_hatches():
    stack = _stack()
    endpoint = _endpoint(stack)
    caller = iam.Role(stack, "Caller", assumed_by=iam.AccountRootPrincipal())
    endpoint.grant_invoke(caller)
    metric = endpoint.metric_invocations(period=Duration.minutes(5), label="calls", color="#ff0000")
    assert (metric.metric_name, metric.statistic, metric.label, metric.color) == (
        "Invocations",
        "Sum",
        "calls",
        "#ff0000",
    )
    assert metric.dimensions == {"EndpointName": "chat-endpoint", "VariantName": "Primary"}
    endpoint.cfn_endpoint_config.add_property_override("Tags", [{"Key": "team", "Value": "ml"}])
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::SageMaker::EndpointConfig", {"Tags": [{"Key": "team", "Value": "ml"}]})
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {
                            "Action": [
                                "sagemaker:InvokeEndpoint",
                                "sagemaker:InvokeEndpointWithResponseStream",
                                "sagemaker:InvokeEndpointAsync",
                            ]
                        }
                    )
                ]
            }
        },
    )
    assert endpoint.cfn_model.enable_network_isolation is True


# --- bad input: the deployment file's rule, in the props' words ---------------------------------------


def _file_problem(data: dict) -> str:
    """What `cdk synth` of the YAML app says for the same input (its first problem line), spelled for the
    construct (peagle/settings/words.py): the same rule, the props' names."""
    try:
        plan_checked_deployment(
            parse_deployment_config({"name": "chat", **data}, source="deployment.yaml", door=Door.PROPS)
        )
    except (ConfigError, DeploymentRuleError) as error:
        return error.in_words(Door.PROPS).splitlines()[1].removeprefix("  - ").removeprefix("[gpu-driver] ")
    raise AssertionError(f"{data} planned without error")


def test_a_driver_too_old_for_the_image_fails_synth_with_the_files_rule():
    stack = _stack()
    _endpoint(stack, inference_ami_version="al2-ami-sagemaker-inference-gpu-2")
    expected = _file_problem({"instance": {"ami_version": "al2-ami-sagemaker-inference-gpu-2"}})
    assert "CannotStartContainerError" in expected
    with pytest.raises(RuntimeError) as error:
        Template.from_stack(stack)
    assert expected in str(error.value)
    assert "[Consumer/Chat]" in str(error.value)


def test_a_schedule_that_misses_batch_sizes_fails_synth_with_the_files_rule():
    stack = _stack()
    _endpoint(stack, speculation=Speculation.by_batch_size([(1, 4, 3)]))
    expected = _file_problem({"speculation": {"schedule": [{"min_batch": 1, "max_batch": 4, "speculative_tokens": 3}]}})
    assert "speculation-schedule" in expected
    with pytest.raises(RuntimeError) as error:
        Template.from_stack(stack)
    assert expected in str(error.value)


def test_an_unknown_instance_type_needs_its_gpu_facts():
    expected = _file_problem({"instance": {"type": "ml.g7.xlarge"}})
    with pytest.raises(ConfigError) as error:
        _endpoint(_stack(), instance_type="ml.g7.xlarge")
    assert expected in str(error.value)
    assert "instance_facts" in str(error.value)  # the prop that gives them

    facts = load_catalog().instances["ml.g6e.xlarge"].model_copy(update={"price_per_hour_usd": 2.5})
    endpoint = _endpoint(_stack(), instance_type="ml.g7.xlarge", instance_facts=facts)
    assert endpoint.plan.instance == facts


def test_a_price_prop_overrides_the_catalog_and_a_bad_one_fails_with_the_files_rule():
    endpoint = _endpoint(_stack(), price_per_hour_usd=1.75, instance_count=2)
    assert (endpoint.plan.price_per_hour_usd, endpoint.plan.price_source) == (1.75, "instance.price_per_hour_usd")
    assert endpoint.plan.cost_per_hour_usd == 3.5
    expected = _file_problem({"instance": {"price_per_hour_usd": -2}})
    with pytest.raises(ConfigError) as error:
        _endpoint(_stack(), price_per_hour_usd=-2)
    assert expected in str(error.value)
    assert "instance.price_per_hour_usd" not in str(error.value)  # the prop's name, not the file's field


def test_a_volume_key_on_local_nvme_storage_is_refused():
    from aws_cdk import aws_kms as kms

    stack = _stack()
    _endpoint(stack, instance_type="ml.g6e.xlarge", volume_key=kms.Key(stack, "Mine"))
    assert load_catalog().instances["ml.g6e.xlarge"].local_nvme
    with pytest.raises(RuntimeError, match="volume_key: ml.g6e.xlarge has local NVMe instance storage"):
        Template.from_stack(stack)


def test_weights_from_the_hub_with_an_async_endpoint_on_your_encrypted_bucket():
    from aws_cdk import aws_kms as kms

    stack = _stack()
    key = kms.Key(stack, "JobsKey")
    jobs = s3.Bucket(stack, "Jobs", encryption_key=key)
    endpoint = _endpoint(stack, weights=ModelWeights.from_hub(), network_isolation=False)
    endpoint.add_async_endpoint(bucket_name=jobs.bucket_name, bucket_key=key)
    template = Template.from_stack(stack)
    sids = {s["Sid"]: s for s in _policy_statements(template)}
    assert "ReadModelWeights" not in sids and "DecryptModelWeights" not in sids  # nothing to read in S3
    assert sids["ReadAsyncInput"]["Action"] == "s3:GetObject"
    assert sids["DecryptInputs"]["Action"] == "kms:Decrypt"  # the inputs are encrypted with your key
    assert sids["EncryptResults"]["Action"] == "kms:GenerateDataKey"
    models = _resources(template, "AWS::SageMaker::Model")
    assert len(models) == 2
    assert all("ModelDataSource" not in m["Properties"]["PrimaryContainer"] for m in models.values())
