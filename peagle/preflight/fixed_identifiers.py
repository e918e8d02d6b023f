"""Resource types whose identity in the account is a name the template can fix, and which of their properties
CloudFormation can only set when it creates the resource: the facts the fixed-name rules of rules.py build on.

Each row copies two fields of the type's CloudFormation resource provider schema (``aws cloudformation
describe-type --type RESOURCE --type-name <type>``; the copies cited are the ones cfn-lint 1.58.0 ships,
``cfnlint/data/schemas/resources/<file>.json``, found through ``cfnlint/data/schemas/providers/us-east-1.json``):

- ``primaryIdentifier``: "Must be either a single property, or a set of properties which can be used to uniquely
  identify the resource. If multiple properties are specified, these are treated as a composite key";
- ``createOnlyProperties``: "A property in the `createOnlyProperties` cannot be specified in an UPDATE request,
  and can only be specified in a CREATE request. [...] if you wish to change such a property on a live resource,
  you should replace that resource by creating a new instance of the resource and terminating the old one. This is
  the behaviour CloudFormation follows for all properties documented as 'Update Requires: Replacement'."

(aws-cloudformation/cloudformation-resource-schema, README.md, "Resource Semantics"; the same section:
"The default CloudFormation replacement behavior is to create a new resource first, then delete the old
resource", unless the schema's ``replacementStrategy`` is ``delete_then_create``; none of these types sets it.)

preflight runs without cfn-lint (a dev dependency), so the rows are vendored here;
tests/preflight/test_fixed_identifiers_schemas.py compares every row with the schema cfn-lint ships, so a schema
change turns that test red.

``name`` is what makes two resources the same one: the primary identifier itself, or, for the SageMaker types
whose primary identifier is the ARN SageMaker assigns, the name the ARN is built from, which the API requires to
be unique (quoted on the rows).
"""

from __future__ import annotations

from dataclasses import dataclass

CFN_LINT = "cfn-lint 1.58.0"


@dataclass(frozen=True)
class FixedIdentifier:
    resource_type: str
    kind: str  # what the messages call it
    name: tuple[str, ...]  # JSON pointers of the properties that name the resource (several: a composite key)
    primary_identifier: tuple[str, ...]  # the schema's primaryIdentifier, as written
    create_only: tuple[str, ...]  # the schema's createOnlyProperties, as written
    schema_file: str  # the copy cited: cfnlint/data/schemas/resources/<schema_file>

    @property
    def source(self) -> str:
        return (
            f"the {self.resource_type} resource schema ({CFN_LINT}, cfnlint/data/schemas/resources/{self.schema_file})"
        )


PULL_THROUGH_CACHE_RULE = "AWS::ECR::PullThroughCacheRule"
ECR_REPOSITORY = "AWS::ECR::Repository"
REPOSITORY_CREATION_TEMPLATE = "AWS::ECR::RepositoryCreationTemplate"
LOG_GROUP = "AWS::Logs::LogGroup"
ENDPOINT = "AWS::SageMaker::Endpoint"
INFERENCE_COMPONENT = "AWS::SageMaker::InferenceComponent"
COMPOSITE_ALARM = "AWS::CloudWatch::CompositeAlarm"
SCALABLE_TARGET = "AWS::ApplicationAutoScaling::ScalableTarget"
BUCKET = "AWS::S3::Bucket"

_ROWS = (
    # The in-account image build's Docker Hub cache (peagle_cdk/serving_image_build.py). Every property is
    # create-only: a new CredentialArn (a recreated secret has a new ARN suffix) or upstream under the same prefix
    # is a new rule. (The ECR API could update the credentials in place: UpdatePullThroughCacheRule takes
    # credentialArn and customRoleArn, botocore 1.44.5's ECR model. The CloudFormation resource replaces instead.)
    FixedIdentifier(
        PULL_THROUGH_CACHE_RULE,
        "pull-through cache rule",
        name=("/properties/EcrRepositoryPrefix",),
        primary_identifier=("/properties/EcrRepositoryPrefix",),
        create_only=(
            "/properties/EcrRepositoryPrefix",
            "/properties/UpstreamRegistryUrl",
            "/properties/CredentialArn",
            "/properties/UpstreamRegistry",
            "/properties/CustomRoleArn",
            "/properties/UpstreamRepositoryPrefix",
        ),
        schema_file="25ab0343333b54d0.json",
    ),
    # The settings ECR gives the repositories the cache creates (peagle_cdk/serving_image_cache.py): one template per
    # cache rule, under the rule's own prefix, which is derived from the stack and the secret.
    FixedIdentifier(
        REPOSITORY_CREATION_TEMPLATE,
        "ECR repository creation template",
        name=("/properties/Prefix",),
        primary_identifier=("/properties/Prefix",),
        create_only=("/properties/Prefix",),
        schema_file="e78e85951d60931c.json",
    ),
    # The serving image's repository is named by CloudFormation in this app; a RepositoryName given through the
    # library fixes it.
    FixedIdentifier(
        ECR_REPOSITORY,
        "ECR repository",
        name=("/properties/RepositoryName",),
        primary_identifier=("/properties/RepositoryName",),
        create_only=(
            "/properties/RepositoryName",
            "/properties/EncryptionConfiguration",
            "/properties/EncryptionConfiguration/EncryptionType",
            "/properties/EncryptionConfiguration/KmsKey",
        ),
        schema_file="3feaf06a6adf4eab.json",
    ),
    # The endpoints' and components' log groups (/aws/sagemaker/Endpoints/<name>, peagle_cdk/endpoint_logs.py).
    # Only the name is create-only: KmsKeyId, retention and class are updated in place, so a named log group is
    # never replaced under its own name; two of them with one name, or one moved to a new logical id, still fail.
    FixedIdentifier(
        LOG_GROUP,
        "log group",
        name=("/properties/LogGroupName",),
        primary_identifier=("/properties/LogGroupName",),
        create_only=("/properties/LogGroupName",),
        schema_file="8614d83fb64a3f33.json",
    ),
    # Primary identifier: EndpointArn. CreateEndpoint, EndpointName: "The name must be unique within an Amazon Web
    # Services Region in your Amazon Web Services account." (SageMaker API reference,
    # https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateEndpoint.html; botocore 1.44.5.)
    FixedIdentifier(
        ENDPOINT,
        "endpoint",
        name=("/properties/EndpointName",),
        primary_identifier=("/properties/EndpointArn",),
        create_only=("/properties/EndpointName",),
        schema_file="8c0105c1afacbace.json",
    ),
    # Primary identifier: InferenceComponentArn; no create-only property (component_rules.py: a component is
    # always updated in place). CreateInferenceComponent, InferenceComponentName: "A unique name to assign to the
    # inference component." (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateInferenceComponent.html.)
    FixedIdentifier(
        INFERENCE_COMPONENT,
        "inference component",
        name=("/properties/InferenceComponentName",),
        primary_identifier=("/properties/InferenceComponentArn",),
        create_only=(),
        schema_file="eddb9f584c0b6de8.json",
    ),
    # The endpoint-unhealthy composite alarm (peagle_cdk/endpoint_alarms.py): CDK writes a name derived from its
    # construct path into the template (AlarmName PeagleEndpointMonitoringEndpointUnhealthy963FD716).
    FixedIdentifier(
        COMPOSITE_ALARM,
        "composite alarm",
        name=("/properties/AlarmName",),
        primary_identifier=("/properties/AlarmName",),
        create_only=("/properties/AlarmName",),
        schema_file="bbd2884a025072a1.json",
    ),
    # A variant's or a component's registration with Application Auto Scaling: identified by what it scales.
    FixedIdentifier(
        SCALABLE_TARGET,
        "scalable target",
        name=("/properties/ResourceId", "/properties/ScalableDimension", "/properties/ServiceNamespace"),
        primary_identifier=("/properties/ResourceId", "/properties/ScalableDimension", "/properties/ServiceNamespace"),
        create_only=("/properties/ResourceId", "/properties/ScalableDimension", "/properties/ServiceNamespace"),
        schema_file="1895e8c86f58be70.json",
    ),
    # The weights bucket <name>-models-<account>-<region> (the artifacts stack, which preflight does not read;
    # here for templates that hold one).
    FixedIdentifier(
        BUCKET,
        "S3 bucket",
        name=("/properties/BucketName",),
        primary_identifier=("/properties/BucketName",),
        create_only=("/properties/BucketName", "/properties/BucketNamePrefix", "/properties/BucketNamespace"),
        schema_file="69ff2c30cdaed778.json",
    ),
)

FIXED_IDENTIFIERS: dict[str, FixedIdentifier] = {row.resource_type: row for row in _ROWS}
