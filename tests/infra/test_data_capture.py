"""SageMaker Data Capture, opt-in: off by default; on, the endpoint config captures into a bucket of the stack's with a
lifecycle rule, and the endpoint's role may put objects under the capture prefix only. Both front doors (the
deployment file, PeagleEndpoint's props) build the same DataCaptureConfig. cdk-nag and cfn-lint run on the
capture-on app in tests/infra/test_app_checks.py ("data-capture")."""

from __future__ import annotations

import re

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template
from cdk_synth import REPO_ROOT

from peagle.settings import parse_deployment_config
from peagle.settings.errors import ConfigError
from peagle.settings.words import field_words
from peagle_cdk import AbBaseline, DataCapture, EndpointMode, ModelArtifactsLocation, ModelWeights, PeagleEndpoint
from peagle_cdk.model_artifacts import artifacts_bucket_name, pair_prefix

CAPTURE_FILE = str(REPO_ROOT / "tests" / "infra" / "deployments" / "data-capture.yaml")
KEY_ARN = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


@pytest.fixture(scope="module")
def captured(synth):
    return synth(deployment=CAPTURE_FILE)


def _data_capture_configs(template: Template) -> list[dict]:
    configs = template.find_resources("AWS::SageMaker::EndpointConfig")
    return [config["Properties"].get("DataCaptureConfig") for config in configs.values()]


def _capture_bucket_id(template: Template) -> str:
    buckets = template.find_resources("AWS::S3::Bucket")
    (bucket_id,) = [bucket_id for bucket_id in buckets if bucket_id.startswith("DataCaptureBucket")]
    return bucket_id


def _statements(template: Template) -> list[dict]:
    return [
        statement
        for policy in template.find_resources("AWS::IAM::ManagedPolicy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


# --- off by default ---------------------------------------------------------------------------


def test_capture_is_off_by_default(default_synth):
    template = default_synth.template()
    template.has_resource_properties("AWS::SageMaker::EndpointConfig", {"DataCaptureConfig": Match.absent()})
    assert _data_capture_configs(template) == [None]
    assert not [name for name in template.to_json()["Resources"] if "DataCapture" in name]
    assert "DataCaptureS3Uri" not in template.to_json().get("Outputs", {})
    assert parse_deployment_config({}).capture.enabled is False


# --- the endpoint config ----------------------------------------------------------------------


def test_the_endpoint_config_captures_into_the_stacks_bucket(captured):
    template = captured.template()
    bucket_id = _capture_bucket_id(template)
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "DataCaptureConfig": {
                "EnableCapture": True,
                "InitialSamplingPercentage": 25,
                "CaptureOptions": [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}],
                "DestinationS3Uri": {"Fn::Join": ["", ["s3://", {"Ref": bucket_id}, "/capture"]]},
                "KmsKeyId": {"Fn::GetAtt": [Match.string_like_regexp("^DataCaptureKey"), "Arn"]},
                "CaptureContentTypeHeader": {"JsonContentTypes": ["application/json"]},
            },
            "EndpointConfigName": Match.absent(),  # generated: a changed capture is a new config, never a name clash
        },
    )
    outputs = template.to_json()["Outputs"]
    assert outputs["DataCaptureS3Uri"]["Value"] == {"Fn::Join": ["", ["s3://", {"Ref": bucket_id}, "/capture"]]}


def test_request_mode_captures_the_input_only():
    stack = Stack(App(), "Consumer")
    _endpoint(stack, capture=DataCapture())
    (config,) = _data_capture_configs(Template.from_stack(stack))
    assert config["CaptureOptions"] == [{"CaptureMode": "Input"}]
    assert config["InitialSamplingPercentage"] == 10  # the default


# --- the bucket -------------------------------------------------------------------------------


def test_the_bucket_expires_what_was_captured_and_is_private_encrypted_and_logged(captured):
    template = captured.template()
    bucket_id = _capture_bucket_id(template)
    bucket = template.find_resources("AWS::S3::Bucket")[bucket_id]
    assert "BucketName" not in bucket["Properties"]  # a generated name
    assert bucket["DeletionPolicy"] == "Retain"  # emptied by its lifecycle rule, not by a stack delete
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "LifecycleConfiguration": {
                "Rules": [
                    Match.object_like(
                        {
                            "Id": "ExpireCapturedData",
                            "Status": "Enabled",
                            "ExpirationInDays": 14,
                            "NoncurrentVersionExpiration": {"NoncurrentDays": 1},
                        }
                    )
                ]
            },
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {
                        "BucketKeyEnabled": True,
                        "ServerSideEncryptionByDefault": {
                            "SSEAlgorithm": "aws:kms",
                            "KMSMasterKeyID": {"Fn::GetAtt": [Match.string_like_regexp("^DataCaptureKey"), "Arn"]},
                        },
                    }
                ]
            },
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "LoggingConfiguration": {
                "DestinationBucketName": {"Ref": Match.string_like_regexp("^DataCaptureAccessLogs")},
                "LogFilePrefix": "capture/",
            },
        },
    )
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": bucket_id},
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            },
        },
    )


def test_expiry_is_configurable_and_defaults_to_thirty_days():
    assert parse_deployment_config({"capture": {"enabled": True}}).capture.expire_after_days == 30
    stack = Stack(App(), "Consumer")
    _endpoint(stack, capture=DataCapture(expire_after=Duration.days(7)))
    rules = [
        rule
        for bucket_id, bucket in Template.from_stack(stack).find_resources("AWS::S3::Bucket").items()
        if "DataCaptureBucket" in bucket_id
        for rule in bucket["Properties"]["LifecycleConfiguration"]["Rules"]
    ]
    assert [rule["ExpirationInDays"] for rule in rules] == [7]


# --- the role ---------------------------------------------------------------------------------


def test_the_role_may_put_objects_under_the_capture_prefix_and_nothing_more(captured):
    template = captured.template()
    bucket_id = _capture_bucket_id(template)
    statements = _statements(template)
    on_bucket = [statement for statement in statements if f"'Ref': '{bucket_id}'" in str(statement["Resource"])]
    assert on_bucket == [
        {
            "Sid": "WriteDataCapture",
            "Effect": "Allow",
            "Action": "s3:PutObject",
            "Resource": {
                "Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::", {"Ref": bucket_id}, "/capture/*"]]
            },
        }
    ]
    (encrypt,) = [statement for statement in statements if statement.get("Sid") == "EncryptDataCapture"]
    assert sorted(encrypt["Action"]) == ["kms:Encrypt", "kms:GenerateDataKey"]
    assert encrypt["Resource"]["Fn::GetAtt"][0].startswith("DataCaptureKey")


# --- two doors, one DataCaptureConfig -----------------------------------------------------------


def _endpoint(stack: Stack, id: str = "Chat", **props) -> PeagleEndpoint:
    props.setdefault("weights", ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/"))
    props.setdefault("name", "chat")
    return PeagleEndpoint(stack, id, **props)


def test_the_props_build_the_data_capture_config_the_deployment_file_does(captured):
    # The YAML app's endpoint is the construct with the id "Default" (stacks/endpoint_stack.py); so is this one, so
    # the logical ids of the bucket and key agree too.
    stack = Stack(App(), "Consumer")
    weights = ModelWeights.from_location(
        ModelArtifactsLocation(bucket_name=artifacts_bucket_name("peagle"), prefix=pair_prefix("gpt-oss-20b"))
    )
    capture = DataCapture(sampling_percentage=25, mode="request_and_response", expire_after=Duration.days(14))
    PeagleEndpoint(stack, "Default", name="peagle", weights=weights, capture=capture)
    from_props = Template.from_stack(stack)
    from_file = captured.template()
    assert _data_capture_configs(from_props) == _data_capture_configs(from_file)
    bucket_id = _capture_bucket_id(from_file)
    assert _capture_bucket_id(from_props) == bucket_id
    lifecycle = [
        template.find_resources("AWS::S3::Bucket")[bucket_id]["Properties"]["LifecycleConfiguration"]
        for template in (from_props, from_file)
    ]
    assert lifecycle[0] == lifecycle[1]


def test_a_given_key_is_the_one_both_doors_encrypt_with():
    config = parse_deployment_config({"name": "chat", "capture": {"enabled": True, "kms_key_arn": KEY_ARN}})
    file_stack, props_stack = Stack(App(), "File"), Stack(App(), "Props")
    weights = ModelWeights.from_location(ModelArtifactsLocation(bucket_name="weights", prefix="models/gpt-oss-20b/"))
    PeagleEndpoint.from_config(file_stack, "Chat", config=config, weights=weights)
    key = kms.Key.from_key_arn(props_stack, "CaptureKey", KEY_ARN)
    PeagleEndpoint(props_stack, "Chat", name="chat", weights=weights, capture=DataCapture(key=key))
    for stack in (file_stack, props_stack):
        template = Template.from_stack(stack)
        (config_json,) = _data_capture_configs(template)
        assert config_json["KmsKeyId"] == KEY_ARN
        (encrypt,) = [statement for statement in _statements(template) if statement.get("Sid") == "EncryptDataCapture"]
        assert encrypt["Resource"] == KEY_ARN
        assert (
            template.find_resources(
                "AWS::KMS::Key", {"Properties": {"Description": Match.string_like_regexp("capture")}}
            )
            == {}
        )
        template.has_resource_properties(
            "AWS::S3::Bucket",
            {
                "BucketEncryption": {
                    "ServerSideEncryptionConfiguration": [
                        Match.object_like(
                            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": KEY_ARN}}
                        )
                    ]
                }
            },
        )


# --- bad values fail, in each door's words -----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "why"),
    [(0, "0 would capture nothing"), (101, r"InitialSamplingPercentage is a whole number of percent, 0-100")],
)
def test_a_sampling_percentage_outside_1_to_100_fails(value, why):
    with pytest.raises(ConfigError, match=rf"capture\.sampling_percentage: {value} is not a share of requests.*{why}"):
        parse_deployment_config({"capture": {"enabled": True, "sampling_percentage": value}})
    with pytest.raises(
        ConfigError, match=rf"DataCapture\(sampling_percentage=\.\.\.\): {value} .*set a whole number 1-100"
    ):
        DataCapture(sampling_percentage=value).settings()


def test_a_mode_sagemaker_cannot_capture_prompts_with_fails():
    with pytest.raises(ConfigError, match=r"capture\.mode: 'response' is not a capture mode; use 'request'"):
        parse_deployment_config({"capture": {"enabled": True, "mode": "response"}})


def test_a_key_alias_fails_with_what_to_give():
    with pytest.raises(ConfigError, match=r"'alias/capture' is not a KMS key ARN; give arn:aws:kms:"):
        parse_deployment_config({"capture": {"enabled": True, "kms_key_arn": "alias/capture"}})


def test_an_expiry_of_part_of_a_day_fails_in_props_words():
    with pytest.raises(
        ConfigError, match=r"DataCapture: expire_after .* not a whole number of days; pass Duration\.days"
    ):
        DataCapture(expire_after=Duration.hours(36)).settings()


def test_capture_in_inference_components_mode_fails_with_the_source():
    with pytest.raises(
        ConfigError, match=r"capture\.enabled: true: SageMaker documents Data Capture for endpoints whose"
    ):
        parse_deployment_config({"endpoint": {"mode": "inference_components"}, "capture": {"enabled": True}})
    stack = Stack(App(), "Consumer")
    with pytest.raises(
        ConfigError,
        match=r"capture=DataCapture\(\.\.\.\): .*Use DataCapture\(method='request_log'\) .*or mode=EndpointMode\.variants\(\)",
    ):
        _endpoint(stack, mode=EndpointMode.inference_components(), capture=DataCapture())


def test_every_capture_field_the_props_set_is_named_by_its_prop():
    """A message names a capture setting in props words (peagle/settings/words.py) for each field DataCapture sets."""
    section = DataCapture(key=None).settings()
    for name in section.model_fields_set:
        assert field_words(f"capture.{name}")["prop"], f"capture.{name} has no prop spelling"
    assert field_words("capture.sampling_percentage")["prop"] == "DataCapture(sampling_percentage=...)"


# --- the other method: the container's request log ---------------------------------------------
# For an account that may not be able to use Data Capture (peagle_cdk/data_capture.py: AWS does not say). The
# template's only change is one variable in the models' environment: no bucket, no DataCaptureConfig, no grant.

REQUEST_LOG_ENV = "PEAGLE_REQUEST_LOG_SAMPLING_PERCENT"


def _models_environment(template: Template) -> dict[str, dict[str, str]]:
    return {
        logical_id: model["Properties"]["PrimaryContainer"]["Environment"]
        for logical_id, model in template.find_resources("AWS::SageMaker::Model").items()
    }


def test_without_the_request_log_no_model_has_its_variable(default_synth):
    assert REQUEST_LOG_ENV not in default_synth.container_environment()
    stack = Stack(App(), "Consumer")
    _endpoint(stack, capture=DataCapture(), ab_baseline=AbBaseline())  # Data Capture: the container does not log
    Template.from_stack(stack).all_resources_properties(
        "AWS::SageMaker::Model",
        {"PrimaryContainer": {"Environment": Match.object_like({REQUEST_LOG_ENV: Match.absent()})}},
    )


def test_the_request_log_is_the_models_variable_and_nothing_else_both_doors():
    capture = DataCapture(method="request_log", sampling_percentage=25, expire_after=Duration.days(30))
    props_stack, file_stack = Stack(App(), "Props"), Stack(App(), "File")
    _endpoint(props_stack, capture=capture, ab_baseline=AbBaseline(), log_retention_days=30)
    config = parse_deployment_config(
        {
            "name": "chat",
            "capture": {"enabled": True, "method": "request_log", "sampling_percentage": 25},
            "observability": {"log_retention_days": 30},
            "ab_test": {"enabled": True},
        }
    )
    weights = ModelWeights.from_location(ModelArtifactsLocation(bucket_name="weights", prefix="models/gpt-oss-20b/"))
    PeagleEndpoint.from_config(file_stack, "Chat", config=config, weights=weights)
    for stack in (props_stack, file_stack):
        template = Template.from_stack(stack)
        # Both variants' models (the A/B baseline too) log, each line naming its variant.
        template.resource_count_is("AWS::SageMaker::Model", 2)
        template.all_resources_properties(
            "AWS::SageMaker::Model",
            {"PrimaryContainer": {"Environment": Match.object_like({REQUEST_LOG_ENV: "25"})}},
        )
        template.has_resource_properties("AWS::SageMaker::EndpointConfig", {"DataCaptureConfig": Match.absent()})
        assert not [name for name in template.to_json()["Resources"] if "DataCapture" in name]
        template.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 30})


def test_the_asynchronous_endpoints_model_does_not_log_its_requests_are_objects_already():
    stack = Stack(App(), "Consumer")
    endpoint = _endpoint(stack, capture=DataCapture(method="request_log"), log_retention_days=30)
    endpoint.add_async_endpoint(bucket_name="jobs-bucket")
    environments = _models_environment(Template.from_stack(stack))
    (async_id,) = [logical_id for logical_id in environments if logical_id.startswith("ChatAsyncModel")]
    assert REQUEST_LOG_ENV not in environments.pop(async_id)
    assert [environment[REQUEST_LOG_ENV] for environment in environments.values()] == ["10"]


def test_the_request_log_works_for_inference_components_where_data_capture_is_refused():
    stack = Stack(App(), "Consumer")
    _endpoint(
        stack,
        mode=EndpointMode.inference_components(),
        capture=DataCapture(method="request_log"),
        log_retention_days=30,
    )
    Template.from_stack(stack).has_resource_properties(
        "AWS::SageMaker::Model",
        {"PrimaryContainer": {"Environment": Match.object_like({REQUEST_LOG_ENV: "10"})}},
    )


def test_the_request_log_may_not_keep_prompts_longer_than_capture_promises():
    with pytest.raises(
        ConfigError,
        match=r"capture\.method: request_log keeps the sampled prompts in the endpoint's log group, which keeps its "
        r"logs 365 days .* set observability\.log_retention_days: 14 ",
    ):
        parse_deployment_config({"capture": {"enabled": True, "method": "request_log", "expire_after_days": 20}})
    with pytest.raises(ConfigError, match=r"set log_retention_days=30 .*or DataCapture\(expire_after=Duration\.days"):
        _endpoint(Stack(App(), "Consumer"), capture=DataCapture(method="request_log"))


def test_the_request_log_retention_fix_runs_as_printed():
    """Both fixes the message names, applied as printed, give a valid deployment (the first one synthesized)."""
    settings = {"capture": {"enabled": True, "method": "request_log", "expire_after_days": 20}}
    with pytest.raises(ConfigError) as refused:
        parse_deployment_config(settings)
    fixes = re.search(
        r"set observability\.log_retention_days: (\d+) .*or capture\.expire_after_days: (\d+) ", str(refused.value)
    )
    assert fixes, str(refused.value)
    retention, expiry = int(fixes.group(1)), int(fixes.group(2))
    parse_deployment_config({**settings, "observability": {"log_retention_days": retention}})
    parse_deployment_config({"capture": {**settings["capture"], "expire_after_days": expiry}})
    _endpoint(Stack(App(), "Consumer"), capture=DataCapture(method="request_log"), log_retention_days=30)


def test_what_the_request_log_cannot_do_fails_with_what_to_use():
    with pytest.raises(ConfigError, match=r"capture\.mode: request_and_response needs Data Capture"):
        parse_deployment_config(
            {
                "capture": {"enabled": True, "method": "request_log", "mode": "request_and_response"},
                "observability": {"log_retention_days": 30},
            }
        )
    with pytest.raises(ConfigError, match=r"capture\.kms_key_arn encrypts the Data Capture bucket; .*leave it unset"):
        parse_deployment_config(
            {
                "capture": {"enabled": True, "method": "request_log", "kms_key_arn": KEY_ARN},
                "observability": {"log_retention_days": 30},
            }
        )
    key = kms.Key.from_key_arn(Stack(App(), "Keys"), "Key", KEY_ARN)
    with pytest.raises(
        ConfigError, match=r'DataCapture: key is the Data Capture bucket\'s key; with method="request_log"'
    ):
        DataCapture(method="request_log", key=key).settings()
    with pytest.raises(ConfigError, match=r"capture\.method: Input should be 'data_capture' or 'request_log'"):
        parse_deployment_config({"capture": {"enabled": True, "method": "logs"}})
