"""Fine-grained assertions on the synthesized endpoint stack (the real app, cdk-nag on)."""

import json

import pytest
from aws_cdk.assertions import Match
from cdk_synth import write_deployment


def test_model_mounts_one_prefix_with_target_and_drafter_and_is_network_isolated(default_synth):
    default_synth.template().has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "EnableNetworkIsolation": True,
            "PrimaryContainer": {
                "Mode": "SingleModel",
                "ModelDataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "CompressionType": "None",
                        "S3Uri": {
                            "Fn::Join": [
                                "",
                                [
                                    "s3://peagle-models-",
                                    {"Ref": "AWS::AccountId"},
                                    "-",
                                    {"Ref": "AWS::Region"},
                                    "/models/gpt-oss-20b/",
                                ],
                            ]
                        },
                    }
                },
            },
        },
    )


def test_container_environment_carries_the_plan_and_p_eagle_parallel_drafting(default_synth):
    env = default_synth.container_environment()
    assert json.loads(env["SM_VLLM_SPECULATIVE_CONFIG"]) == {
        "method": "eagle3",
        "model": "/opt/ml/model/drafter",
        "num_speculative_tokens": 7,
        "parallel_drafting": True,
    }
    assert env["SM_VLLM_MODEL"] == "/opt/ml/model/target"
    assert env["SM_VLLM_SERVED_MODEL_NAME"] == "gpt-oss-20b"
    assert env["SM_VLLM_TENSOR_PARALLEL_SIZE"] == "1"
    assert env["SM_VLLM_MAX_MODEL_LEN"] == "8192"
    assert env["SM_VLLM_KV_CACHE_DTYPE"] == "fp8"
    assert json.loads(env["SM_VLLM_OVERRIDE_GENERATION_CONFIG"]) == {
        "temperature": 0.7,
        "top_p": 0.9,
    }  # no max_tokens: it would become a cap in vLLM 0.32
    assert env["PEAGLE_DRAFTER_TRAINED_K"] == "10"
    assert env["PEAGLE_SPECULATION_SELF_CHECK"] == "true"
    assert int(env["PEAGLE_SHUTDOWN_DRAIN_SECONDS"]) < 30  # SageMaker SIGKILLs 30 s after SIGTERM
    (config,) = default_synth.resources("PeagleEndpoint", "AWS::SageMaker::EndpointConfig").values()
    startup = config["Properties"]["ProductionVariants"][0]["ContainerStartupHealthCheckTimeoutInSeconds"]
    # One start-up budget: the launcher gets SageMaker's whole health-check timeout and splits it
    # itself (engine start, self-check, margin), so it fails with its own message before SageMaker.
    assert env["PEAGLE_STARTUP_TIMEOUT_SECONDS"] == str(startup)
    assert all(isinstance(value, str) for value in env.values())


def test_no_secrets_or_hub_tokens_reach_the_template(default_synth):
    text = json.dumps(default_synth.templates).lower()
    # The in-account image build's spec logs Docker in to ECR with a token it fetches at build time: command
    # names, no secret (peagle_cdk/serving_image_build.py BUILD_SPEC).
    for command in ("get-login-password", "--password-stdin"):
        text = text.replace(command, "")
    for needle in ("hf_token", "hugging_face_hub_token", "secret_access_key", "password"):
        assert needle not in text


def test_speculation_off_removes_the_drafter_config_and_the_self_check(synth):
    env = synth(speculativeTokens=0).container_environment()
    assert "SM_VLLM_SPECULATIVE_CONFIG" not in env
    assert env["PEAGLE_SPECULATION_SELF_CHECK"] == "false"


def test_endpoint_config_sizes_timeouts_and_routes_to_the_least_busy_instance(default_synth):
    default_synth.template().has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                {
                    "VariantName": "Primary",
                    "InstanceType": "ml.g6e.xlarge",
                    "InitialInstanceCount": 1,
                    "ContainerStartupHealthCheckTimeoutInSeconds": Match.any_value(),
                    "ModelDataDownloadTimeoutInSeconds": Match.any_value(),
                    "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
                    "ModelName": {"Fn::GetAtt": [Match.string_like_regexp("PeagleModel"), "ModelName"]},
                }
            ]
        },
    )
    (config,) = default_synth.resources("PeagleEndpoint", "AWS::SageMaker::EndpointConfig").values()
    variant = config["Properties"]["ProductionVariants"][0]
    assert 600 <= variant["ContainerStartupHealthCheckTimeoutInSeconds"] <= 3600
    assert 600 <= variant["ModelDataDownloadTimeoutInSeconds"] <= 3600
    assert "KmsKeyId" not in config["Properties"]  # L40S instances have NVMe: a key would not encrypt it


def test_model_and_endpoint_config_have_generated_names(default_synth):
    template = default_synth.template()
    template.has_resource_properties("AWS::SageMaker::Model", {"ModelName": Match.absent()})
    template.has_resource_properties("AWS::SageMaker::EndpointConfig", {"EndpointConfigName": Match.absent()})
    # The endpoint's name is physical (<name>-endpoint) so its log group can exist first;
    # endpoint updates swap configs in place, so the name never forces a replacement.
    template.has_resource_properties("AWS::SageMaker::Endpoint", {"EndpointName": "peagle-endpoint"})


def test_outputs_publish_endpoint_role_image_and_weights_prefix(default_synth):
    outputs = default_synth.templates["PeagleEndpoint"]["Outputs"]
    assert {"EndpointName", "ExecutionRoleArn", "ImageUri", "ModelDataS3Uri"} <= set(outputs)
    assert outputs["EndpointName"]["Value"] == "peagle-endpoint"
    assert {"AlarmTopicArn", "DashboardName"} <= set(outputs)


def _policy_statements(synth_result):
    statements = []
    for policy in synth_result.resources("PeagleEndpoint", "AWS::IAM::ManagedPolicy").values():
        statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def test_execution_role_is_least_privilege(default_synth):
    template = default_synth.template()
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [{"Action": "sts:AssumeRole", "Principal": {"Service": "sagemaker.amazonaws.com"}}]
            },
            "ManagedPolicyArns": Match.absent(),  # no AWS-managed FullAccess policies
        },
    )
    # No inline policies, but the in-account image build's two roles (its CodeBuild project and its custom-resource
    # handler), whose default policies aws-cdk-lib makes (acknowledged in peagle_cdk/serving_image_build.py).
    inline = default_synth.resources("PeagleEndpoint", "AWS::IAM::Policy")
    assert sorted(name[: -len("DefaultPolicy12345678")] for name in inline) == [
        "PeagleServingImagesHandlerServiceRole",
        "PeagleServingImagesProjectRole",
    ]
    statements = {s["Sid"]: s for s in _policy_statements(default_synth)}
    assert set(statements) == {
        "ReadModelWeights",
        "ListReadModelWeights",
        "WriteEndpointLogs",
        "PublishMetrics",
        "PullServingImage",
        "EcrLogin",
        "DecryptModelWeights",
        "ReadRollbackAlarms",
    }
    for statement in statements.values():
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert all(action != "*" and not action.endswith(":*") for action in actions)
    wildcard_resources = {sid for sid, s in statements.items() if s["Resource"] == "*"}
    assert wildcard_resources == {"PublishMetrics", "EcrLogin"}  # APIs without resource-level permissions
    assert statements["ListReadModelWeights"]["Condition"] == {"StringLike": {"s3:prefix": ["models/gpt-oss-20b/*"]}}
    assert statements["DecryptModelWeights"]["Action"] == "kms:Decrypt"


def test_bring_your_own_prefix_needs_no_artifacts_stack(synth, tmp_path):
    path = write_deployment(tmp_path, "artifacts:\n  s3_uri: s3://team-weights/llm/gpt-oss-20b/\n")
    result = synth(deployment=path)
    assert set(result.templates) == {"PeagleEndpoint"}
    result.template().has_resource_properties(
        "AWS::SageMaker::Model",
        {"PrimaryContainer": {"ModelDataSource": {"S3DataSource": {"S3Uri": "s3://team-weights/llm/gpt-oss-20b/"}}}},
    )
    sids = {s["Sid"] for s in _policy_statements(result)}
    assert "DecryptModelWeights" not in sids  # no key given


def test_vpc_mode_attaches_the_model_to_private_subnets(synth, tmp_path):
    path = write_deployment(
        tmp_path, "network:\n  vpc:\n    subnet_ids: [subnet-0a, subnet-0b]\n    security_group_ids: [sg-01]\n"
    )
    result = synth(deployment=path)
    result.template().has_resource_properties(
        "AWS::SageMaker::Model",
        {"VpcConfig": {"Subnets": ["subnet-0a", "subnet-0b"], "SecurityGroupIds": ["sg-01"]}},
    )
    assert "AttachToVpc" in {s["Sid"] for s in _policy_statements(result)}


@pytest.mark.parametrize(
    ("context", "variant"),
    [
        ({"model": "gpt-oss-120b", "instanceType": "ml.p5.48xlarge"}, {"InstanceType": "ml.p5.48xlarge"}),
        ({"instanceCount": "2", "profile": "codegen"}, {"InitialInstanceCount": 2}),
    ],
)
def test_context_overrides_reach_the_template(synth, context, variant):
    result = synth(**context)
    result.template().has_resource_properties(
        "AWS::SageMaker::EndpointConfig", {"ProductionVariants": [Match.object_like(variant)]}
    )


def test_artifacts_stack_bucket_is_private_encrypted_and_retained(default_synth):
    template = default_synth.template("PeagleArtifacts")
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketName": {
                "Fn::Join": ["", ["peagle-models-", {"Ref": "AWS::AccountId"}, "-", {"Ref": "AWS::Region"}]]
            },
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms"}, "BucketKeyEnabled": True}
                ]
            },
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "VersioningConfiguration": {"Status": "Enabled"},
            "LoggingConfiguration": Match.object_like({"LogFilePrefix": "artifacts/"}),
        },
    )
    template.has_resource("AWS::S3::Bucket", {"DeletionPolicy": "Retain"})
    template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})
