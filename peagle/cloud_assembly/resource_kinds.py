"""What CloudFormation returns for a Ref or an Fn::GetAtt of each resource type the tools meet: the table the
symbolic mode of peagle.cloud_assembly.intrinsics derives names and ARNs from.

Sources. "CFN <type>" is the Return values section of that type's page in the CloudFormation Template
Reference, https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/<page>.html#<page>-return-values
(page "aws-resource-s3-bucket" for AWS::S3::Bucket, and so on), quoted from its source in
github.com/awsdocs/aws-cloudformation-user-guide (doc_source/<page>.md, last content commit 6c68a17,
2023-09-19); "CDK 2.275" is aws-cdk-lib 2.275.0 in this venv, whose generated L1 classes carry the attribute
documentation and say which of Ref/GetAtt each reference returns (``get keyRef(){return{keyId:this.ref,
keyArn:this.attrArn}}``); "botocore 1.44.5" is the service model in this venv.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# CFN pseudo-parameter-reference: "AWS::Partition ... For standard AWS Regions, the partition is `aws`";
# "AWS::URLSuffix ... The suffix is typically `amazonaws.com`, but might differ by Region" (standard partition).
PARTITION = "aws"
URL_SUFFIX = "amazonaws.com"
# CFN aws-resource-secretsmanager-secret, Name: "Secrets Manager automatically adds a hyphen and six random
# characters after the secret name at the end of the ARN." Six IAM one-character wildcards stand for them.
SECRET_SUFFIX = "??????"


@dataclass(frozen=True)
class ResourceKind:
    """What CloudFormation returns for one resource type, as str.format patterns over {name} (the physical
    name, or the placeholder when generated), {path} (IAM paths, without the leading "/"), {partition},
    {region}, {account} and {suffix}."""

    name_property: str | None
    ref: str
    attributes: Mapping[str, str]
    has_path: bool = False


def _sagemaker(kind: str, name_property: str, name_attribute: str | None) -> ResourceKind:
    # CFN aws-resource-sagemaker-model: "Ref returns the Amazon Resource Name (ARN) of the model, such as
    # arn:aws:sagemaker:us-west-2:012345678901:model/mymodel"; "ModelName: The name of the model, such as
    # MyModel". Likewise endpoint-config ("...:endpoint-config/myendpointconfig", EndpointConfigName) and
    # endpoint ("...:endpoint/myendpoint", EndpointName). The *Arn attributes: CDK 2.275 CfnModel.attr_model_arn
    # "The Amazon Resource Name (ARN) of the model. :cloudformationAttribute: ModelArn" (and EndpointConfigArn,
    # EndpointArn, InferenceComponentArn), whose Ref is the same ARN ("get modelRef(){return{modelArn:this.ref}}",
    # "inferenceComponentRef(){return{inferenceComponentArn:this.ref}}"); botocore 1.44.5 sagemaker ModelArn
    # pattern "arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:model/.*" (endpoint/, endpoint-config/ alike).
    # The inference-component/ segment follows the same scheme (not quoted from a primary source).
    arn = f"arn:{{partition}}:sagemaker:{{region}}:{{account}}:{kind}/{{name}}"
    arn_attribute = "".join(part.title() for part in kind.split("-")) + "Arn"
    attributes = {arn_attribute: arn} | ({name_attribute: "{name}"} if name_attribute else {})
    return ResourceKind(name_property, arn, attributes)


_ALARM_ARN = "arn:{partition}:cloudwatch:{region}:{account}:alarm:{name}"
KINDS: dict[str, ResourceKind] = {
    # CFN aws-resource-s3-bucket: Ref "returns the bucket name"; "Arn: Returns the Amazon Resource Name (ARN) of
    # the specified bucket. Example: arn:aws:s3:::DOC-EXAMPLE-BUCKET"; "DomainName ... DOC-EXAMPLE-BUCKET.s3.
    # amazonaws.com"; "RegionalDomainName ... DOC-EXAMPLE-BUCKET.s3.us-east-2.amazonaws.com"; "DualStackDomainName
    # ... DOC-EXAMPLE-BUCKET.s3.dualstack.us-east-2.amazonaws.com". WebsiteURL (two formats by Region): placeholder.
    "AWS::S3::Bucket": ResourceKind(
        "BucketName",
        "{name}",
        {
            "Arn": "arn:{partition}:s3:::{name}",
            "DomainName": "{name}.s3.{suffix}",
            "RegionalDomainName": "{name}.s3.{region}.{suffix}",
            "DualStackDomainName": "{name}.s3.dualstack.{region}.{suffix}",
        },
    ),
    # CFN aws-resource-kms-key: "Ref returns the key ID, such as 1234abcd-12ab-34cd-56ef-1234567890ab"; "Arn: The
    # Amazon Resource Name (ARN) of the KMS key, such as arn:aws:kms:us-west-2:111122223333:key/1234abcd-...";
    # "KeyId: The key ID of the KMS key". The id is generated: the placeholder stands for it.
    "AWS::KMS::Key": ResourceKind(
        None, "{name}", {"Arn": "arn:{partition}:kms:{region}:{account}:key/{name}", "KeyId": "{name}"}
    ),
    # CFN aws-resource-kms-alias: "Ref returns the alias name, such as alias/exampleAlias" (no attributes).
    "AWS::KMS::Alias": ResourceKind("AliasName", "{name}", {}),
    # CFN aws-resource-ecr-repository: Ref "returns the resource name, such as test-repository"; "Arn ... For
    # example, arn:aws:ecr:eu-west-1:123456789012:repository/test-repository"; "RepositoryUri ... For example,
    # 123456789012.dkr.ecr.us-west-2.amazonaws.com/repository".
    "AWS::ECR::Repository": ResourceKind(
        "RepositoryName",
        "{name}",
        {
            "Arn": "arn:{partition}:ecr:{region}:{account}:repository/{name}",
            "RepositoryUri": "{account}.dkr.ecr.{region}.{suffix}/{name}",
        },
    ),
    # No Return values section; CFN parameters-section-structure: "In the Return values section, the Ref function
    # return value represents the resource properties that comprise the resource type's primary identifier", which
    # is EcrRepositoryPrefix (cfn-lint 1.58.0's registry schema: "primaryIdentifier": ["/properties/
    # EcrRepositoryPrefix"]; CDK 2.275 "pullThroughCacheRuleRef(){return{ecrRepositoryPrefix:this.ref}}").
    "AWS::ECR::PullThroughCacheRule": ResourceKind("EcrRepositoryPrefix", "{name}", {}),
    # CFN aws-resource-iam-role: "Ref returns the resource name"; "Arn ... This will return a value such as
    # arn:aws:iam::1234567890:role/MyRole-AJJHDSKSDF"; Path "defaults to a slash (/)". IAM User Guide, IAM
    # identifiers (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html): "Another user
    # with a path reflecting an organization chart: arn:aws:iam::123456789012:user/division_abc/subdivision_xyz/Bob".
    "AWS::IAM::Role": ResourceKind(
        "RoleName", "{name}", {"Arn": "arn:{partition}:iam::{account}:role/{path}{name}"}, True
    ),
    # CFN aws-resource-iam-managedpolicy: "Ref returns the ARN ... such as arn:aws:iam::123456789012:policy/
    # teststack-CreateTestDBPolicy-16M23YE3CS700"; PolicyArn the same (CDK 2.275: "The Amazon Resource Name (ARN)
    # of the managed policy"); Path as for roles.
    "AWS::IAM::ManagedPolicy": ResourceKind(
        "ManagedPolicyName",
        "arn:{partition}:iam::{account}:policy/{path}{name}",
        {"PolicyArn": "arn:{partition}:iam::{account}:policy/{path}{name}"},
        True,
    ),
    # CFN aws-resource-iam-policy: Ref "returns the resource name", an id CloudFormation makes; CDK 2.275 reads Ref
    # as the policy's Id ("policyRef(){return{policyId:this.ref}}"), so both are the placeholder.
    "AWS::IAM::Policy": ResourceKind(None, "{name}", {"Id": "{name}"}),
    # CFN aws-resource-logs-loggroup: Ref "returns the resource name"; "Arn: The ARN of the log group, such as
    # arn:aws:logs:us-west-1:123456789012:log-group:/mystack-testgroup-12ABC1AB12A1:*".
    "AWS::Logs::LogGroup": ResourceKind(
        "LogGroupName", "{name}", {"Arn": "arn:{partition}:logs:{region}:{account}:log-group:{name}:*"}
    ),
    # CFN aws-resource-lambda-function: Ref "returns the resource name"; "Arn: The Amazon Resource Name (ARN) of the
    # function". botocore 1.44.5 lambda FunctionArn pattern: "arn:(aws[a-zA-Z-]*)?:lambda:...:\d{12}:function:
    # [a-zA-Z0-9-_]+(:(\$LATEST|[a-zA-Z0-9-_]+))?".
    "AWS::Lambda::Function": ResourceKind(
        "FunctionName", "{name}", {"Arn": "arn:{partition}:lambda:{region}:{account}:function:{name}"}
    ),
    # CFN aws-resource-codebuild-project: "Ref returns the name of the AWS CodeBuild project, such as myProjectName";
    # "Arn: The ARN of the AWS CodeBuild project, such as arn:aws:codebuild:us-west-2:123456789012:project/myProjectName".
    "AWS::CodeBuild::Project": ResourceKind(
        "Name", "{name}", {"Arn": "arn:{partition}:codebuild:{region}:{account}:project/{name}"}
    ),
    # CFN aws-resource-sns-topic: "Ref returns the topic ARN, for example: arn:aws:sns:us-east-1:123456789012:
    # mystack-mytopic-NZJ5JSMVGFIE"; "TopicArn: Returns the ARN of an Amazon SNS topic"; "TopicName: Returns the
    # name of an Amazon SNS topic".
    "AWS::SNS::Topic": ResourceKind(
        "TopicName",
        "arn:{partition}:sns:{region}:{account}:{name}",
        {"TopicArn": "arn:{partition}:sns:{region}:{account}:{name}", "TopicName": "{name}"},
    ),
    # CFN aws-resource-secretsmanager-secret: Ref "returns the ARN of the secret configured such as:
    # arn:aws:secretsmanager:us-west-2:123456789012:secret:my-path/my-secret-name-1a2b3c"; "Id: The ARN of the secret".
    "AWS::SecretsManager::Secret": ResourceKind(
        "Name",
        "arn:{partition}:secretsmanager:{region}:{account}:secret:{name}-" + SECRET_SUFFIX,
        {"Id": "arn:{partition}:secretsmanager:{region}:{account}:secret:{name}-" + SECRET_SUFFIX},
    ),
    # CFN aws-resource-cloudwatch-alarm: "Ref returns the alarm name, such as TestAlarm"; "Arn: The ARN of the
    # CloudWatchalarm, such as arn:aws:cloudwatch:us-west-2:123456789012:alarm:myCloudWatchAlarm-CPUAlarm-UXMMZK36R55Z".
    # Composite alarms: CFN aws-resource-cloudwatch-compositealarm "Ref returns the alarm name"; its Arn example
    # ("...:alarm/CompositeAlarmName") differs, but botocore 1.44.5 cloudwatch TagResource says "The ARN format of
    # an alarm is arn:aws:cloudwatch:Region:account-id:alarm:alarm-name", which both kinds are.
    "AWS::CloudWatch::Alarm": ResourceKind("AlarmName", "{name}", {"Arn": _ALARM_ARN}),
    "AWS::CloudWatch::CompositeAlarm": ResourceKind("AlarmName", "{name}", {"Arn": _ALARM_ARN}),
    # CFN aws-resource-events-rule: Ref "returns event rule ID, such as mystack-ScheduledRule-ABCDEFGHIJK" (its name
    # on the default bus); "Arn: The ARN of the rule, such as arn:aws:events:us-east-2:123456789012:rule/example";
    # CDK 2.275 "RuleName: The name of the rule, exposed as a read-only attribute for use with Fn::GetAtt".
    # EventBusName: "If you omit this, the default event bus is used"; a custom bus: placeholders (kind_of).
    "AWS::Events::Rule": ResourceKind(
        "Name", "{name}", {"Arn": "arn:{partition}:events:{region}:{account}:rule/{name}", "RuleName": "{name}"}
    ),
    "AWS::SageMaker::Model": _sagemaker("model", "ModelName", "ModelName"),
    "AWS::SageMaker::EndpointConfig": _sagemaker("endpoint-config", "EndpointConfigName", "EndpointConfigName"),
    "AWS::SageMaker::Endpoint": _sagemaker("endpoint", "EndpointName", "EndpointName"),
    "AWS::SageMaker::InferenceComponent": _sagemaker("inference-component", "InferenceComponentName", None),
    # Custom::* and AWS::CloudFormation::CustomResource are not listed: their Ref is the physical id the provider
    # returns and every attribute is the provider's Data, so both stay placeholders (as for any unlisted type).
}


def kind_of(resource: Mapping[str, Any]) -> ResourceKind | None:
    """The table's entry for a resource definition; None for a type it does not list."""
    kind = KINDS.get(resource.get("Type", ""))
    bus = (resource.get("Properties") or {}).get("EventBusName")
    if resource.get("Type") == "AWS::Events::Rule" and bus not in (None, "default"):
        return None  # a rule on a custom bus: its Ref and ARN carry the bus, left as placeholders
    return kind
