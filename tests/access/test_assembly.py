"""peagle.cloud_assembly (symbolic mode): template values as symbolic strings, the same whichever intrinsic form wrote them.

Small hand-written templates pin each rule (expected strings written out, not rebuilt from the module's
patterns); the repository's real app (the session's shared synth) and a small app of CDK Stages check that
what the CDK really writes resolves consistently across forms and stacks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peagle.cloud_assembly import UNRESOLVED, Assembly, AssemblyError, AssemblyStack

ACCOUNT, REGION = "111122223333", "eu-west-1"


def stack_of(resources=None, *, stack_id="Stack", name=None, account=None, region=None, **sections) -> AssemblyStack:
    template = {"Resources": resources or {}, **sections}
    return AssemblyStack(stack_id, name or stack_id, Path(f"{stack_id}.template.json"), template, account, region)


def resolver(resources=None, **kwargs) -> tuple[Assembly, AssemblyStack]:
    stack = stack_of(resources, **kwargs)
    return Assembly([stack]), stack


def ref(logical_id):
    return {"Ref": logical_id}


def get_att(logical_id, attribute):
    return {"Fn::GetAtt": [logical_id, attribute]}


def join(*parts, delimiter=""):
    return {"Fn::Join": [delimiter, list(parts)]}


BUCKET = {"Bucket83908E77": {"Type": "AWS::S3::Bucket"}}


# --- the forms agree ---------------------------------------------------------------------------------------------


def test_join_of_ref_and_getatt_of_an_unnamed_bucket_read_the_same():
    assembly, stack = resolver(BUCKET)
    grant = join("arn:", ref("AWS::Partition"), ":s3:::", ref("Bucket83908E77"), "/models/*")
    derived = join(get_att("Bucket83908E77", "Arn"), "/models/x")
    assert assembly.resolve(stack, grant) == "arn:aws:s3:::${Stack/Bucket83908E77}/models/*"
    assert assembly.resolve(stack, derived) == "arn:aws:s3:::${Stack/Bucket83908E77}/models/x"


def test_sub_reads_like_ref_and_getatt_and_keeps_escaped_variables():
    assembly, stack = resolver(BUCKET, Parameters={"Prefix": {"Type": "String", "Default": "models"}})
    expected = "arn:aws:s3:::${Stack/Bucket83908E77}/models/*"
    assert assembly.resolve(stack, {"Fn::Sub": "${Bucket83908E77.Arn}/${Prefix}/*"}) == expected
    assert assembly.resolve(stack, {"Fn::Sub": "arn:${AWS::Partition}:s3:::${Bucket83908E77}/models/*"}) == expected
    with_map = {"Fn::Sub": ["${Arn}/${P}/*", {"Arn": get_att("Bucket83908E77", "Arn"), "P": "models"}]}
    assert assembly.resolve(stack, with_map) == expected
    # "${!Literal}" is written as "${Literal}" (an IAM policy variable survives as text).
    assert (
        assembly.resolve(stack, {"Fn::Sub": "home/${!aws:username}/${AWS::Region}"})
        == "home/${aws:username}/${AWS::Region}"
    )


def test_bootstrap_bucket_sub_and_join_agree():
    assembly, stack = resolver(account=ACCOUNT, region=REGION)
    sub = {"Fn::Sub": "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"}
    joined = join("cdk-hnb659fds-assets-", ref("AWS::AccountId"), "-", ref("AWS::Region"))
    assert assembly.resolve(stack, sub) == assembly.resolve(stack, joined) == f"cdk-hnb659fds-assets-{ACCOUNT}-{REGION}"


# --- pseudo parameters and parameters ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("account", "region", "expected_account", "expected_region"),
    [(ACCOUNT, REGION, ACCOUNT, REGION), (None, None, "${AWS::AccountId}", "${AWS::Region}")],
)
def test_pseudo_parameters(account, region, expected_account, expected_region):
    assembly, stack = resolver(name="peagle-endpoint", account=account, region=region)
    assert assembly.resolve(stack, ref("AWS::Partition")) == "aws"
    assert assembly.resolve(stack, ref("AWS::URLSuffix")) == "amazonaws.com"
    assert assembly.resolve(stack, ref("AWS::AccountId")) == expected_account
    assert assembly.resolve(stack, ref("AWS::Region")) == expected_region
    assert assembly.resolve(stack, ref("AWS::StackName")) == "peagle-endpoint"
    assert assembly.resolve(stack, ref("AWS::StackId")) == (
        f"arn:aws:cloudformation:{expected_region}:{expected_account}:stack/peagle-endpoint/${{Stack/AWS::StackId}}"
    )
    assert assembly.resolve(stack, ref("AWS::NotificationARNs")) is None


def test_no_value_is_dropped_from_lists_and_documents():
    assembly, stack = resolver()
    assert assembly.resolve(stack, join("a", ref("AWS::NoValue"), "b", delimiter="-")) == "a-b"
    assert assembly.resolve(stack, ref("AWS::NoValue")) is None
    document = {"Statement": [{"Effect": "Allow", "Sid": ref("AWS::NoValue"), "Resource": ["x", ref("AWS::NoValue")]}]}
    assert assembly.resolve_document(stack, document) == {"Statement": [{"Effect": "Allow", "Resource": ["x"]}]}


def test_parameters():
    parameters = {
        "Plain": {"Type": "String", "Default": "models"},
        "Count": {"Type": "Number", "Default": 3},
        "NoDefault": {"Type": "String"},
        # CDK's BootstrapVersion: the Default is the SSM key, not the value CloudFormation fetches.
        "BootstrapVersion": {
            "Type": "AWS::SSM::Parameter::Value<String>",
            "Default": "/cdk-bootstrap/hnb659fds/version",
        },
        "Subnets": {"Type": "CommaDelimitedList", "Default": "a, b,c"},
    }
    assembly, stack = resolver(Parameters=parameters)
    assert assembly.resolve(stack, ref("Plain")) == "models"
    assert assembly.resolve(stack, ref("Count")) == "3"
    assert assembly.resolve(stack, ref("NoDefault")) == "${Stack/NoDefault}"
    assert assembly.resolve(stack, ref("BootstrapVersion")) == "${Stack/BootstrapVersion}"
    assert assembly.resolve_list(stack, ref("Subnets")) == ["a", "b", "c"]
    assert assembly.resolve(stack, {"Fn::Select": [1, ref("Subnets")]}) == "b"
    assert assembly.resolve(stack, ref("Missing")) is None


# --- the resource table ------------------------------------------------------------------------------------------

A, R = ACCOUNT, REGION
# (type, properties, Ref, {attribute: value}) in account A, Region R; each expected string written out in full.
TABLE = [
    (
        "AWS::S3::Bucket",
        {"BucketName": "weights"},
        "weights",
        {
            "Arn": "arn:aws:s3:::weights",
            "DomainName": "weights.s3.amazonaws.com",
            "RegionalDomainName": f"weights.s3.{R}.amazonaws.com",
            "DualStackDomainName": f"weights.s3.dualstack.{R}.amazonaws.com",
        },
    ),
    ("AWS::KMS::Key", {}, "${Stack/It}", {"Arn": f"arn:aws:kms:{R}:{A}:key/${{Stack/It}}", "KeyId": "${Stack/It}"}),
    ("AWS::KMS::Alias", {"AliasName": "alias/weights"}, "alias/weights", {}),
    (
        "AWS::ECR::Repository",
        {"RepositoryName": "serving"},
        "serving",
        {"Arn": f"arn:aws:ecr:{R}:{A}:repository/serving", "RepositoryUri": f"{A}.dkr.ecr.{R}.amazonaws.com/serving"},
    ),
    ("AWS::ECR::PullThroughCacheRule", {"EcrRepositoryPrefix": "docker-hub"}, "docker-hub", {}),
    ("AWS::IAM::Role", {"RoleName": "exec"}, "exec", {"Arn": f"arn:aws:iam::{A}:role/exec"}),
    ("AWS::IAM::Role", {}, "${Stack/It}", {"Arn": f"arn:aws:iam::{A}:role/${{Stack/It}}"}),
    (
        "AWS::IAM::ManagedPolicy",
        {"ManagedPolicyName": "read", "Path": "/"},
        f"arn:aws:iam::{A}:policy/read",
        {"PolicyArn": f"arn:aws:iam::{A}:policy/read"},
    ),
    ("AWS::IAM::Policy", {"PolicyName": "inline"}, "${Stack/It}", {"Id": "${Stack/It}"}),
    (
        "AWS::Logs::LogGroup",
        {"LogGroupName": "/aws/sagemaker/Endpoints/e"},
        "/aws/sagemaker/Endpoints/e",
        {"Arn": f"arn:aws:logs:{R}:{A}:log-group:/aws/sagemaker/Endpoints/e:*"},
    ),
    ("AWS::Lambda::Function", {"FunctionName": "fn"}, "fn", {"Arn": f"arn:aws:lambda:{R}:{A}:function:fn"}),
    ("AWS::CodeBuild::Project", {"Name": "build"}, "build", {"Arn": f"arn:aws:codebuild:{R}:{A}:project/build"}),
    (
        "AWS::SNS::Topic",
        {"TopicName": "alarms"},
        f"arn:aws:sns:{R}:{A}:alarms",
        {"TopicArn": f"arn:aws:sns:{R}:{A}:alarms", "TopicName": "alarms"},
    ),
    (
        "AWS::SecretsManager::Secret",
        {"Name": "hf-token"},
        f"arn:aws:secretsmanager:{R}:{A}:secret:hf-token-??????",
        {"Id": f"arn:aws:secretsmanager:{R}:{A}:secret:hf-token-??????"},
    ),
    ("AWS::CloudWatch::Alarm", {"AlarmName": "5xx"}, "5xx", {"Arn": f"arn:aws:cloudwatch:{R}:{A}:alarm:5xx"}),
    ("AWS::CloudWatch::CompositeAlarm", {"AlarmName": "all"}, "all", {"Arn": f"arn:aws:cloudwatch:{R}:{A}:alarm:all"}),
    (
        "AWS::Events::Rule",
        {"Name": "ended"},
        "ended",
        {"Arn": f"arn:aws:events:{R}:{A}:rule/ended", "RuleName": "ended"},
    ),
    (
        "AWS::SageMaker::Model",
        {"ModelName": "m"},
        f"arn:aws:sagemaker:{R}:{A}:model/m",
        {"ModelName": "m", "ModelArn": f"arn:aws:sagemaker:{R}:{A}:model/m"},
    ),
    (
        "AWS::SageMaker::EndpointConfig",
        {"EndpointConfigName": "c"},
        f"arn:aws:sagemaker:{R}:{A}:endpoint-config/c",
        {"EndpointConfigName": "c", "EndpointConfigArn": f"arn:aws:sagemaker:{R}:{A}:endpoint-config/c"},
    ),
    (
        "AWS::SageMaker::Endpoint",
        {"EndpointName": "e"},
        f"arn:aws:sagemaker:{R}:{A}:endpoint/e",
        {"EndpointName": "e", "EndpointArn": f"arn:aws:sagemaker:{R}:{A}:endpoint/e"},
    ),
    (
        "AWS::SageMaker::InferenceComponent",
        {"InferenceComponentName": "ic"},
        f"arn:aws:sagemaker:{R}:{A}:inference-component/ic",
        {"InferenceComponentArn": f"arn:aws:sagemaker:{R}:{A}:inference-component/ic"},
    ),
    # Placeholders: custom resources, attributes nobody can derive, types the table does not know.
    ("Custom::PeagleServingImageBuild", {"ImageTag": "t"}, "${Stack/It}", {"ImageTag": "${Stack/It.ImageTag}"}),
    ("AWS::CloudFormation::CustomResource", {}, "${Stack/It}", {"Anything": "${Stack/It.Anything}"}),
    ("AWS::IAM::Role", {"RoleName": "exec"}, "exec", {"RoleId": "${Stack/It.RoleId}"}),
    ("AWS::S3::Bucket", {"BucketName": "w"}, "w", {"WebsiteURL": "${Stack/It.WebsiteURL}"}),
    ("AWS::EC2::VPC", {}, "${Stack/It}", {"VpcId": "${Stack/It.VpcId}"}),
    # A rule on a custom event bus: its id and ARN carry the bus.
    ("AWS::Events::Rule", {"Name": "r", "EventBusName": "bus"}, "${Stack/It}", {"Arn": "${Stack/It.Arn}"}),
]


@pytest.mark.parametrize(("resource_type", "properties", "expected_ref", "attributes"), TABLE)
def test_ref_and_getatt_per_resource_type(resource_type, properties, expected_ref, attributes):
    assembly, stack = resolver({"It": {"Type": resource_type, "Properties": properties}}, account=A, region=R)
    assert assembly.resolve(stack, ref("It")) == expected_ref
    for attribute, expected in attributes.items():
        assert assembly.resolve(stack, get_att("It", attribute)) == expected, attribute
        assert assembly.resolve(stack, {"Fn::GetAtt": f"It.{attribute}"}) == expected, attribute  # YAML's short form


def test_iam_paths_go_between_the_resource_type_and_the_name():
    resources = {
        "Role": {"Type": "AWS::IAM::Role", "Properties": {"RoleName": "exec", "Path": "/peagle/serving/"}},
        "Policy": {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"ManagedPolicyName": "p", "Path": "/peagle/"}},
        "BadPath": {"Type": "AWS::IAM::Role", "Properties": {"Path": {"Fn::GetAZs": ""}}},
    }
    assembly, stack = resolver(resources, account=A)
    assert assembly.resolve(stack, get_att("Role", "Arn")) == f"arn:aws:iam::{A}:role/peagle/serving/exec"
    assert assembly.resolve(stack, ref("Policy")) == f"arn:aws:iam::{A}:policy/peagle/p"
    assert assembly.resolve(stack, get_att("BadPath", "Arn")) is None


def test_a_name_set_from_parameters_and_pseudo_parameters_is_used():
    name = join("peagle-models-", ref("AWS::AccountId"), "-", ref("AWS::Region"))
    assembly, stack = resolver({"B": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": name}}})
    assert assembly.resolve(stack, get_att("B", "Arn")) == "arn:aws:s3:::peagle-models-${AWS::AccountId}-${AWS::Region}"


def test_a_name_built_from_its_own_arn_does_not_loop():
    # CloudFormation refuses such a template (a circular dependency); resolution must still end.
    own = {"Fn::Join": ["", [get_att("B", "Arn"), "-x"]]}
    assembly, stack = resolver({"B": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": own}}})
    assert assembly.resolve(stack, get_att("B", "Arn")) == "arn:aws:s3:::${Stack/B}"


# --- Select, Split, ImportValue, FindInMap, If, the rest --------------------------------------------------------


def repository_uri_as_the_cdk_writes_it(logical_id):
    """aws-cdk-lib's Repository.repositoryUri: account and Region cut out of the repository's ARN."""

    def arn_part(index):
        return {"Fn::Select": [index, {"Fn::Split": [":", get_att(logical_id, "Arn")]}]}

    return join(arn_part(4), ".dkr.ecr.", arn_part(3), ".", ref("AWS::URLSuffix"), "/", ref(logical_id))


@pytest.mark.parametrize(("account", "region"), [(ACCOUNT, REGION), (None, None)])
def test_select_of_split_rebuilds_the_repository_uri(account, region):
    # Placeholders are not cut by Fn::Split: "${AWS::AccountId}" holds "::".
    assembly, stack = resolver({"Repo": {"Type": "AWS::ECR::Repository"}}, account=account, region=region)
    uri = assembly.resolve(stack, repository_uri_as_the_cdk_writes_it("Repo"))
    assert uri == assembly.resolve(stack, get_att("Repo", "RepositoryUri"))
    assert uri == f"{account or '${AWS::AccountId}'}.dkr.ecr.{region or '${AWS::Region}'}.amazonaws.com/${{Stack/Repo}}"


def test_split_and_select_as_documented():
    assembly, stack = resolver()
    assert assembly.resolve_list(stack, {"Fn::Split": ["|", "a||c|"]}) == ["a", "", "c", ""]
    assert assembly.resolve(stack, {"Fn::Select": ["1", ["apples", "grapes", "oranges"]]}) == "grapes"
    assert assembly.resolve(stack, {"Fn::Select": [3, ["apples"]]}) is None


def two_stacks_with_an_export(importer_env=(None, None)):
    exporter = stack_of(
        {"Key": {"Type": "AWS::KMS::Key"}},
        stack_id="Data",
        name="peagle-data",
        Outputs={
            "KeyArn": {"Value": get_att("Key", "Arn"), "Export": {"Name": {"Fn::Sub": "${AWS::StackName}:KeyArn"}}}
        },
    )
    importer = stack_of(
        {"Policy": {"Type": "AWS::IAM::ManagedPolicy"}},
        stack_id="Serve",
        account=importer_env[0],
        region=importer_env[1],
    )
    return Assembly([exporter, importer]), exporter, importer


def test_import_value_resolves_the_exporting_output_in_its_own_stack():
    assembly, exporter, importer = two_stacks_with_an_export()
    imported = assembly.resolve(importer, {"Fn::ImportValue": "peagle-data:KeyArn"})
    assert imported == assembly.resolve(exporter, get_att("Key", "Arn"))
    assert imported == "arn:aws:kms:${AWS::Region}:${AWS::AccountId}:key/${Data/Key}"
    # An export no stack of the assembly makes: one symbol, the same wherever it is imported.
    assert assembly.resolve(importer, {"Fn::ImportValue": "elsewhere"}) == "${Fn::ImportValue:elsewhere}"


def test_an_export_of_the_importers_environment_is_preferred():
    in_account = [
        stack_of(
            {"Key": {"Type": "AWS::KMS::Key"}},
            stack_id=f"Data{account}",
            account=account,
            region=REGION,
            Outputs={"K": {"Value": get_att("Key", "Arn"), "Export": {"Name": "shared"}}},
        )
        for account in ("111111111111", "222222222222")
    ]
    importer = stack_of(stack_id="Serve", account="222222222222", region=REGION)
    assembly = Assembly([*in_account, importer])
    expected = f"arn:aws:kms:{REGION}:222222222222:key/${{Data222222222222/Key}}"
    assert assembly.resolve(importer, {"Fn::ImportValue": "shared"}) == expected


def test_find_in_map():
    mappings = {"Regions": {REGION: {"Ami": "ami-1", "Zones": ["a", "b"]}}}
    assembly, known = resolver(Mappings=mappings, region=REGION)
    assert assembly.resolve(known, {"Fn::FindInMap": ["Regions", ref("AWS::Region"), "Ami"]}) == "ami-1"
    assert assembly.resolve_list(known, {"Fn::FindInMap": ["Regions", REGION, "Zones"]}) == ["a", "b"]
    unknown_region = stack_of(stack_id="Other", Mappings=mappings)
    assert (
        Assembly([unknown_region]).resolve(unknown_region, {"Fn::FindInMap": ["Regions", ref("AWS::Region"), "Ami"]})
        is None
    )


def test_if_when_the_condition_is_decidable_or_both_branches_agree():
    conditions = {
        "IsChina": {"Fn::Equals": [ref("AWS::Partition"), "aws-cn"]},
        "NotChina": {"Fn::Not": [{"Condition": "IsChina"}]},
        "InIreland": {"Fn::Equals": [ref("AWS::Region"), "eu-west-1"]},
        "Either": {"Fn::Or": [{"Condition": "InIreland"}, {"Condition": "NotChina"}]},
        "Both": {"Fn::And": [{"Condition": "InIreland"}, {"Condition": "NotChina"}]},
    }
    assembly, stack = resolver(Conditions=conditions)  # Region unknown
    assert assembly.resolve(stack, {"Fn::If": ["IsChina", "cn", "global"]}) == "global"
    assert assembly.resolve(stack, {"Fn::If": ["NotChina", "global", "cn"]}) == "global"
    assert assembly.resolve(stack, {"Fn::If": ["Either", "yes", "no"]}) == "yes"
    assert assembly.resolve(stack, {"Fn::If": ["Both", "yes", "no"]}) is None
    assert assembly.resolve(stack, {"Fn::If": ["InIreland", "same", "same"]}) == "same"
    assert assembly.resolve(stack, {"Fn::If": ["InIreland", "a", "b"]}) is None


def test_functions_that_stay_undecided():
    assembly, stack = resolver()
    assert assembly.resolve(stack, {"Fn::Base64": "echo hi"}) == "ZWNobyBoaQ=="
    assert assembly.resolve(stack, {"Fn::Base64": {"Fn::Sub": "${AWS::Region}"}}) is None
    assert assembly.resolve_list(stack, {"Fn::GetAZs": ""}) is None
    assert assembly.resolve_list(stack, {"Fn::Cidr": ["10.0.0.0/16", 2, 8]}) is None
    assert assembly.resolve(stack, "{{resolve:ssm:/peagle/token}}") is None
    assert assembly.resolve(stack, 42) == "42"
    assert assembly.resolve(stack, True) == "true"
    assert assembly.resolve(stack, None) is None


# --- lists, documents, find_resource -----------------------------------------------------------------------------


def test_resolve_list():
    assembly, stack = resolver(BUCKET)
    assert assembly.resolve_list(stack, "*") == ["*"]
    assert assembly.resolve_list(stack, [get_att("Bucket83908E77", "Arn"), "x"]) == [
        "arn:aws:s3:::${Stack/Bucket83908E77}",
        "x",
    ]
    assert assembly.resolve_list(stack, ["x", {"Fn::GetAZs": ""}]) is None


def test_resolve_document():
    assembly, stack = resolver(BUCKET)
    document = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": join("arn:", ref("AWS::Partition"), ":iam::", ref("AWS::AccountId"), ":root")},
                "Action": ["s3:GetObject"],
                "Resource": [join(get_att("Bucket83908E77", "Arn"), "/*"), {"Fn::Split": [",", "a,b"]}],
                "Condition": {
                    "Bool": {"aws:SecureTransport": True},
                    "StringEquals": {"aws:SourceVpc": {"Fn::GetAZs": ""}},
                },
            }
        ],
    }
    assert assembly.resolve_document(stack, document)["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::${AWS::AccountId}:root"},
            "Action": ["s3:GetObject"],
            "Resource": ["arn:aws:s3:::${Stack/Bucket83908E77}/*", "a", "b"],
            "Condition": {"Bool": {"aws:SecureTransport": True}, "StringEquals": {"aws:SourceVpc": UNRESOLVED}},
        }
    ]
    # ECR repository policies may be JSON text.
    assert assembly.resolve_document(stack, json.dumps({"Statement": []})) == {"Statement": []}
    assert assembly.resolve_document(stack, "not json") == {}


def test_find_resource():
    assembly, exporter, importer = two_stacks_with_an_export()
    key = (exporter, "Key")
    assert assembly.find_resource(exporter, ref("Key")) == key
    assert assembly.find_resource(exporter, get_att("Key", "Arn")) == key
    assert assembly.find_resource(importer, {"Fn::ImportValue": "peagle-data:KeyArn"}) == key
    assert assembly.find_resource(importer, "arn:aws:kms:${AWS::Region}:${AWS::AccountId}:key/${Data/Key}") == key
    assert assembly.find_resource(importer, ref("Policy")) == (importer, "Policy")
    assert assembly.find_resource(importer, "arn:aws:kms:eu-west-1:111122223333:key/other") is None
    assert assembly.find_resource(importer, None) is None


def test_find_resource_prefers_the_asking_stack():
    named = {"Topic": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": "alarms"}}}
    first, second = stack_of(named, stack_id="First"), stack_of(named, stack_id="Second")
    assembly = Assembly([first, second])
    arn = "arn:aws:sns:${AWS::Region}:${AWS::AccountId}:alarms"
    assert assembly.find_resource(second, arn) == (second, "Topic")
    assert assembly.find_resource(first, "alarms") == (first, "Topic")


# --- reading assemblies ------------------------------------------------------------------------------------------


def write_assembly(directory: Path, stacks: dict[str, dict], nested: dict[str, str] | None = None) -> Path:
    """A manifest.json with one stack artifact per entry (id -> {"name", "env", "template"}) and nested ones."""
    directory.mkdir(parents=True, exist_ok=True)
    artifacts = {}
    for artifact_id, spec in stacks.items():
        (directory / f"{artifact_id}.template.json").write_text(json.dumps(spec["template"]))
        properties = {"templateFile": f"{artifact_id}.template.json"} | (
            {"stackName": spec["name"]} if "name" in spec else {}
        )
        artifacts[artifact_id] = {
            "type": "aws:cloudformation:stack",
            "environment": spec["env"],
            "properties": properties,
        }
    for artifact_id, directory_name in (nested or {}).items():
        artifacts[artifact_id] = {"type": "cdk:cloud-assembly", "properties": {"directoryName": directory_name}}
    artifacts["Tree"] = {"type": "cdk:tree", "properties": {"file": "tree.json"}}
    (directory / "manifest.json").write_text(json.dumps({"version": "55.0.0", "artifacts": artifacts}))
    return directory


def test_from_cdk_out_reads_names_environments_and_nested_assemblies(tmp_path):
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}
    root = write_assembly(
        tmp_path / "cdk.out",
        {"Top": {"env": "aws://unknown-account/unknown-region", "template": template}},
        nested={"assembly-Prod": "assembly-Prod"},
    )
    write_assembly(
        root / "assembly-Prod", {"ProdServeA1B2": {"name": "Prod-Serve", "env": f"aws://{A}/{R}", "template": template}}
    )
    assembly = Assembly.from_cdk_out(root)
    assert [(s.id, s.stack_name, s.account, s.region) for s in assembly.stacks] == [
        ("Top", "Top", None, None),
        ("ProdServeA1B2", "Prod-Serve", A, R),
    ]
    prod = assembly.stack("Prod-Serve")
    assert prod.path == root / "assembly-Prod" / "ProdServeA1B2.template.json"
    assert assembly.resolve(prod, ref("Topic")) == f"arn:aws:sns:{R}:{A}:${{ProdServeA1B2/Topic}}"


def test_from_template_files_uses_a_manifest_beside_them_else_file_stems(tmp_path):
    template = {"Resources": {}}
    root = write_assembly(
        tmp_path / "cdk.out",
        {"PeagleEndpoint": {"name": "peagle-endpoint", "env": f"aws://{A}/{R}", "template": template}},
    )
    with_manifest = Assembly.from_template_files([root / "PeagleEndpoint.template.json"]).stacks[0]
    assert (with_manifest.id, with_manifest.stack_name, with_manifest.account, with_manifest.region) == (
        "PeagleEndpoint", "peagle-endpoint", A, R,
    )  # fmt: skip
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "MyStack.template.json").write_text(json.dumps(template))
    (loose / "other.json").write_text(json.dumps(template))
    stacks = Assembly.from_template_files([loose / "MyStack.template.json", str(loose / "other.json")]).stacks
    assert [(s.id, s.stack_name, s.account) for s in stacks] == [("MyStack", "MyStack", None), ("other", "other", None)]


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("no directory", "is not a directory"),
        ("no manifest", "no such cloud assembly manifest"),
        ("broken manifest", "unreadable cloud assembly manifest"),
        ("missing template", "no such stack template"),
        ("no stacks", "lists no CloudFormation stack"),
    ],
)
def test_an_unreadable_assembly_says_what_and_to_run_cdk_synth(tmp_path, damage, says):
    root = write_assembly(tmp_path / "cdk.out", {"S": {"env": "aws://unknown-account/unknown-region", "template": {}}})
    if damage == "no directory":
        root = tmp_path / "nowhere"
    elif damage == "no manifest":
        (root / "manifest.json").unlink()
    elif damage == "broken manifest":
        (root / "manifest.json").write_text("{")
    elif damage == "missing template":
        (root / "S.template.json").unlink()
    else:
        write_assembly(root, {})
    with pytest.raises(AssemblyError, match=f"{says}.*cdk synth"):
        Assembly.from_cdk_out(root)


def test_stack_lookup():
    assembly = Assembly([stack_of(stack_id="PeagleEndpoint", name="peagle-endpoint"), stack_of(stack_id="Other")])
    assert assembly.stack("PeagleEndpoint") is assembly.stack("peagle-endpoint") is assembly.stacks[0]
    with pytest.raises(AssemblyError, match="no stack is 'missing'.*PeagleEndpoint \\(peagle-endpoint\\)"):
        assembly.stack("missing")
    with pytest.raises(AssemblyError, match="two stacks with the id"):
        Assembly([stack_of(stack_id="Same"), stack_of(stack_id="Same")])


# --- the repository's real app -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def app(cdk_synthesized) -> Assembly:
    return Assembly.from_cdk_out(cdk_synthesized().outdir)


def only(resources: dict) -> tuple[str, dict]:
    ((logical_id, resource),) = resources.items()
    return logical_id, resource


def statement(assembly: Assembly, stack: AssemblyStack, sid: str) -> dict:
    for policy in stack.resources("AWS::IAM::ManagedPolicy").values():
        for found in assembly.resolve_document(stack, policy["Properties"]["PolicyDocument"])["Statement"]:
            if found.get("Sid") == sid:
                return found
    raise AssertionError(f"no statement {sid}")


def test_real_app_weights_grant_and_model_uri_name_the_same_bucket(app):
    endpoint, artifacts = app.stack("PeagleEndpoint"), app.stack("PeagleArtifacts")
    _, model = only(endpoint.resources("AWS::SageMaker::Model"))
    uri = app.resolve(endpoint, model["Properties"]["PrimaryContainer"]["ModelDataSource"]["S3DataSource"]["S3Uri"])
    bucket, prefix = uri.removeprefix("s3://").split("/", 1)
    assert statement(app, endpoint, "ReadModelWeights")["Resource"] == f"arn:aws:s3:::{bucket}/{prefix}*"
    found = app.find_resource(endpoint, f"arn:aws:s3:::{bucket}")
    assert found is not None and found[0] is artifacts
    assert app.resolve(artifacts, ref(found[1])) == bucket == "peagle-models-${AWS::AccountId}-${AWS::Region}"


def test_real_app_key_arn_imported_across_stacks_is_one_string(app):
    endpoint, artifacts = app.stack("PeagleEndpoint"), app.stack("PeagleArtifacts")
    key_id, _ = only(artifacts.resources("AWS::KMS::Key"))
    exported = app.resolve(artifacts, get_att(key_id, "Arn"))
    granted = statement(app, endpoint, "DecryptModelWeights")["Resource"]
    assert granted == exported == f"arn:aws:kms:${{AWS::Region}}:${{AWS::AccountId}}:key/${{PeagleArtifacts/{key_id}}}"
    raw = next(
        s["Resource"]
        for p in endpoint.resources("AWS::IAM::ManagedPolicy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Sid") == "DecryptModelWeights"
    )
    assert "Fn::ImportValue" in raw  # the grant really is an import
    assert app.find_resource(endpoint, raw) == (artifacts, key_id)


def test_real_app_image_uri_and_repository_arn_agree_on_the_repository(app):
    endpoint = app.stack("PeagleEndpoint")
    repository_id, _ = only(endpoint.resources("AWS::ECR::Repository"))
    _, model = only(endpoint.resources("AWS::SageMaker::Model"))
    image = app.resolve(endpoint, model["Properties"]["PrimaryContainer"]["Image"])
    name = app.resolve(endpoint, ref(repository_id))
    assert image.startswith(app.resolve(endpoint, get_att(repository_id, "RepositoryUri")) + ":")
    assert image.split(".amazonaws.com/", 1)[1].rsplit(":", 1)[0] == name == f"${{PeagleEndpoint/{repository_id}}}"
    arn = app.resolve(endpoint, get_att(repository_id, "Arn"))
    assert arn == f"arn:aws:ecr:${{AWS::Region}}:${{AWS::AccountId}}:repository/{name}"
    assert statement(app, endpoint, "PullServingImage")["Resource"] == arn


def test_real_app_execution_role_is_found_from_the_model_and_its_policy(app):
    endpoint = app.stack("PeagleEndpoint")
    _, model = only(endpoint.resources("AWS::SageMaker::Model"))
    role = app.find_resource(endpoint, model["Properties"]["ExecutionRoleArn"])
    assert role is not None and role[0] is endpoint
    policy = next(iter(endpoint.resources("AWS::IAM::ManagedPolicy").values()))
    assert app.find_resource(endpoint, policy["Properties"]["Roles"][0]) == role
    role_arn = app.resolve(endpoint, model["Properties"]["ExecutionRoleArn"])
    assert role_arn == f"arn:aws:iam::${{AWS::AccountId}}:role/${{PeagleEndpoint/{role[1]}}}"
    assert app.find_resource(endpoint, role_arn) == role


def test_real_app_every_policy_document_resolves_completely(app):
    documents = {"KeyPolicy", "PolicyDocument", "AssumeRolePolicyDocument"}
    seen = 0
    for stack in app.stacks:
        for logical_id, resource in stack.resources().items():
            for key in documents & set(resource.get("Properties") or {}):
                text = json.dumps(app.resolve_document(stack, resource["Properties"][key]))
                assert UNRESOLVED not in text and "Fn::" not in text and '"Ref"' not in text, f"{stack.id}/{logical_id}"
                seen += 1
    assert seen >= 8


def test_real_app_template_files_read_like_the_assembly(app):
    again = Assembly.from_template_files([stack.path for stack in app.stacks])
    assert [(s.id, s.stack_name, s.account) for s in again.stacks] == [
        (s.id, s.stack_name, s.account) for s in app.stacks
    ]


def test_cdk_stages_are_read_from_nested_assemblies(tmp_path):
    import aws_cdk as cdk
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_s3 as s3

    app = cdk.App(outdir=str(tmp_path / "cdk.out"))
    for stage_name, account in (("Beta", "111111111111"), ("Prod", "222222222222")):
        stage = cdk.Stage(app, stage_name, env=cdk.Environment(account=account, region=REGION))
        key = kms.Key(cdk.Stack(stage, "Data"), "Key")
        s3.Bucket(cdk.Stack(stage, "Serve"), "Bucket", encryption_key=key)  # imports the key across stacks
    app.synth()

    assembly = Assembly.from_cdk_out(tmp_path / "cdk.out")
    assert sorted(stack.stack_name for stack in assembly.stacks) == [
        "Beta-Data",
        "Beta-Serve",
        "Prod-Data",
        "Prod-Serve",
    ]
    for stage_name, account in (("Beta", "111111111111"), ("Prod", "222222222222")):
        data, serve = assembly.stack(f"{stage_name}-Data"), assembly.stack(f"{stage_name}-Serve")
        assert (serve.account, serve.region) == (account, REGION)
        _, bucket = only(serve.resources("AWS::S3::Bucket"))
        (rule,) = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        imported = rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"]
        key_id, _ = only(data.resources("AWS::KMS::Key"))
        assert app_key_arn(assembly, serve, imported) == f"arn:aws:kms:{REGION}:{account}:key/${{{data.id}/{key_id}}}"
        assert assembly.find_resource(serve, imported) == (data, key_id)


def app_key_arn(assembly: Assembly, stack: AssemblyStack, value) -> str | None:
    assert "Fn::ImportValue" in value
    return assembly.resolve(stack, value)
