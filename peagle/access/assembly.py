"""A synthesized cloud assembly (cdk.out), with every template value as one symbolic string.

The runtime-access check compares what a principal is granted (policy Resources, Principals, condition values)
with what it will ask for (the ARNs of resources the templates derive). Both sides are template values written
in different intrinsic forms: a grant ``{"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::",
{"Ref": "Bucket"}, "/models/*"]]}`` and a request built from ``{"Fn::GetAtt": ["Bucket", "Arn"]}`` must read
the same: ``arn:aws:s3:::${Stack/Bucket}/models/*``. ``Assembly.resolve`` does that, following what
CloudFormation returns for each function and each resource type (the table below, each entry with its source).

What a value turns into:

- Literals as written; numbers and booleans as their JSON text where a string is needed.
- ``AWS::Partition`` is ``aws`` and ``AWS::URLSuffix`` ``amazonaws.com``: this assumes the standard partition
  (China and GovCloud stacks would resolve to ARNs of the wrong partition). ``AWS::AccountId``/``AWS::Region``
  are the stack's environment from the manifest when concrete, else the literal placeholders
  ``${AWS::AccountId}``/``${AWS::Region}`` (one unknown account and region shared by every env-agnostic stack).
- A value CloudFormation only knows at deploy time is a placeholder: ``${<stack id>/<LogicalId>}`` for a
  resource's physical id or generated name, ``${<stack id>/<LogicalId>.<Attribute>}`` for an attribute the
  table does not derive, ``${<stack id>/<Parameter>}`` for a parameter without a usable default,
  ``${Fn::ImportValue:<name>}`` for an export no stack of the assembly makes. A placeholder is one opaque
  token: ``Fn::Split`` never cuts through it, and peagle.access.policy_eval matches it as literal text.
- A Secrets Manager secret's ARN ends in ``-??????``: Secrets Manager appends six random characters that no
  template knows, and ``?`` is IAM's one-character wildcard, so a policy resolved from ``Ref`` matches the
  real secret, and a derived request matches grants of ``name-??????`` or ``name-*``.
- ``resolve`` returns None when a value cannot be decided: ``Fn::GetAZs``, ``Fn::Cidr``, ``Fn::Transform`` and
  the AWS::LanguageExtensions functions, ``Fn::If`` on a condition that depends on something unknown (unless
  both branches agree), ``Fn::Base64`` of anything but literal text, ``AWS::NotificationARNs``, dynamic
  references (``{{resolve:...}}``), out-of-range ``Fn::Select``, ``Fn::FindInMap`` keys not in the Mappings.
  ``resolve_document`` writes ``UNRESOLVED`` (``${?unresolved}``) there instead: literal text to IAM
  matching (its ``?`` a wildcard for one character), so it matches no real ARN, principal or value.
- Not modelled: ``AWS::StackId``'s UUID (a placeholder inside the stack ARN), IAM unique ids (``RoleId``,
  ``PolicyId``), SageMaker's lower-casing of names in some ARNs (CloudFormation's examples show
  ``model/mymodel`` for a model named ``MyModel``; names are kept as written), rules on a custom event bus
  (their Ref and Arn are placeholders).

Sources. "CFN <type>" is the Return values section of that type's page in the CloudFormation Template
Reference, https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/<page>.html#<page>-return-values
(page "aws-resource-s3-bucket" for AWS::S3::Bucket, and so on), quoted from its source in
github.com/awsdocs/aws-cloudformation-user-guide (doc_source/<page>.md, last content commit 6c68a17,
2023-09-19); "CDK 2.275" is aws-cdk-lib 2.275.0 in this venv, whose generated L1 classes carry the attribute
documentation and say which of Ref/GetAtt each reference returns (``get keyRef(){return{keyId:this.ref,
keyArn:this.attrArn}}``); "botocore 1.44.5" is the service model in this venv.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from peagle.errors import PeagleError

UNRESOLVED = "${?unresolved}"
# CFN pseudo-parameter-reference: "AWS::Partition ... For standard AWS Regions, the partition is `aws`";
# "AWS::URLSuffix ... The suffix is typically `amazonaws.com`, but might differ by Region" (standard partition).
PARTITION = "aws"
URL_SUFFIX = "amazonaws.com"
# CFN aws-resource-secretsmanager-secret, Name: "Secrets Manager automatically adds a hyphen and six random
# characters after the secret name at the end of the ARN." Six IAM one-character wildcards stand for them.
SECRET_SUFFIX = "??????"
# CDK's cloud-assembly-api 2.5.0 (in CDK 2.275), lib/environment.js: "AWS_ENV_REGEX =
# /aws\:\/\/([a-z0-9A-Z\-\@\.\_]+)\/([a-z\-0-9]+)/", "UNKNOWN_ACCOUNT = 'unknown-account'",
# "UNKNOWN_REGION = 'unknown-region'" (what an environment-agnostic stack's manifest entry says).
_ENVIRONMENT = re.compile(r"^aws://([a-zA-Z0-9@._-]+)/([a-z0-9-]+)$")
_UNKNOWN = ("unknown-account", "unknown-region")
# CFN intrinsic-function-reference-sub: "Write variables as ${MyVarName}" ... "To write a dollar sign and curly
# braces (${}) literally, add an exclamation point (!) after the open curly brace, such as ${!Literal}.
# CloudFormation resolves this text as ${Literal}."
_SUB_VARIABLE = re.compile(r"\$\{(!?)([^}]*)\}")


class AssemblyError(PeagleError):
    """No readable cloud assembly where one was expected."""


class _NoValue:
    """``Ref: AWS::NoValue``: CFN pseudo-parameter-reference, "Removes the corresponding resource property when
    specified as a return value in the Fn::If intrinsic function"; dropped from lists and documents."""


NO_VALUE = _NoValue()


@dataclass(frozen=True)
class _Kind:
    """What CloudFormation returns for one resource type, as str.format patterns over {name} (the physical
    name, or the placeholder when generated), {path} (IAM paths, without the leading "/"), {partition},
    {region}, {account} and {suffix}."""

    name_property: str | None
    ref: str
    attributes: Mapping[str, str]
    has_path: bool = False


def _sagemaker(kind: str, name_property: str, name_attribute: str | None) -> _Kind:
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
    return _Kind(name_property, arn, attributes)


_ALARM_ARN = "arn:{partition}:cloudwatch:{region}:{account}:alarm:{name}"
_KINDS: dict[str, _Kind] = {
    # CFN aws-resource-s3-bucket: Ref "returns the bucket name"; "Arn: Returns the Amazon Resource Name (ARN) of
    # the specified bucket. Example: arn:aws:s3:::DOC-EXAMPLE-BUCKET"; "DomainName ... DOC-EXAMPLE-BUCKET.s3.
    # amazonaws.com"; "RegionalDomainName ... DOC-EXAMPLE-BUCKET.s3.us-east-2.amazonaws.com"; "DualStackDomainName
    # ... DOC-EXAMPLE-BUCKET.s3.dualstack.us-east-2.amazonaws.com". WebsiteURL (two formats by Region): placeholder.
    "AWS::S3::Bucket": _Kind(
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
    "AWS::KMS::Key": _Kind(
        None, "{name}", {"Arn": "arn:{partition}:kms:{region}:{account}:key/{name}", "KeyId": "{name}"}
    ),
    # CFN aws-resource-kms-alias: "Ref returns the alias name, such as alias/exampleAlias" (no attributes).
    "AWS::KMS::Alias": _Kind("AliasName", "{name}", {}),
    # CFN aws-resource-ecr-repository: Ref "returns the resource name, such as test-repository"; "Arn ... For
    # example, arn:aws:ecr:eu-west-1:123456789012:repository/test-repository"; "RepositoryUri ... For example,
    # 123456789012.dkr.ecr.us-west-2.amazonaws.com/repository".
    "AWS::ECR::Repository": _Kind(
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
    "AWS::ECR::PullThroughCacheRule": _Kind("EcrRepositoryPrefix", "{name}", {}),
    # CFN aws-resource-iam-role: "Ref returns the resource name"; "Arn ... This will return a value such as
    # arn:aws:iam::1234567890:role/MyRole-AJJHDSKSDF"; Path "defaults to a slash (/)". IAM User Guide, IAM
    # identifiers (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html): "Another user
    # with a path reflecting an organization chart: arn:aws:iam::123456789012:user/division_abc/subdivision_xyz/Bob".
    "AWS::IAM::Role": _Kind("RoleName", "{name}", {"Arn": "arn:{partition}:iam::{account}:role/{path}{name}"}, True),
    # CFN aws-resource-iam-managedpolicy: "Ref returns the ARN ... such as arn:aws:iam::123456789012:policy/
    # teststack-CreateTestDBPolicy-16M23YE3CS700"; PolicyArn the same (CDK 2.275: "The Amazon Resource Name (ARN)
    # of the managed policy"); Path as for roles.
    "AWS::IAM::ManagedPolicy": _Kind(
        "ManagedPolicyName",
        "arn:{partition}:iam::{account}:policy/{path}{name}",
        {"PolicyArn": "arn:{partition}:iam::{account}:policy/{path}{name}"},
        True,
    ),
    # CFN aws-resource-iam-policy: Ref "returns the resource name", an id CloudFormation makes; CDK 2.275 reads Ref
    # as the policy's Id ("policyRef(){return{policyId:this.ref}}"), so both are the placeholder.
    "AWS::IAM::Policy": _Kind(None, "{name}", {"Id": "{name}"}),
    # CFN aws-resource-logs-loggroup: Ref "returns the resource name"; "Arn: The ARN of the log group, such as
    # arn:aws:logs:us-west-1:123456789012:log-group:/mystack-testgroup-12ABC1AB12A1:*".
    "AWS::Logs::LogGroup": _Kind(
        "LogGroupName", "{name}", {"Arn": "arn:{partition}:logs:{region}:{account}:log-group:{name}:*"}
    ),
    # CFN aws-resource-lambda-function: Ref "returns the resource name"; "Arn: The Amazon Resource Name (ARN) of the
    # function". botocore 1.44.5 lambda FunctionArn pattern: "arn:(aws[a-zA-Z-]*)?:lambda:...:\d{12}:function:
    # [a-zA-Z0-9-_]+(:(\$LATEST|[a-zA-Z0-9-_]+))?".
    "AWS::Lambda::Function": _Kind(
        "FunctionName", "{name}", {"Arn": "arn:{partition}:lambda:{region}:{account}:function:{name}"}
    ),
    # CFN aws-resource-codebuild-project: "Ref returns the name of the AWS CodeBuild project, such as myProjectName";
    # "Arn: The ARN of the AWS CodeBuild project, such as arn:aws:codebuild:us-west-2:123456789012:project/myProjectName".
    "AWS::CodeBuild::Project": _Kind(
        "Name", "{name}", {"Arn": "arn:{partition}:codebuild:{region}:{account}:project/{name}"}
    ),
    # CFN aws-resource-sns-topic: "Ref returns the topic ARN, for example: arn:aws:sns:us-east-1:123456789012:
    # mystack-mytopic-NZJ5JSMVGFIE"; "TopicArn: Returns the ARN of an Amazon SNS topic"; "TopicName: Returns the
    # name of an Amazon SNS topic".
    "AWS::SNS::Topic": _Kind(
        "TopicName",
        "arn:{partition}:sns:{region}:{account}:{name}",
        {"TopicArn": "arn:{partition}:sns:{region}:{account}:{name}", "TopicName": "{name}"},
    ),
    # CFN aws-resource-secretsmanager-secret: Ref "returns the ARN of the secret configured such as:
    # arn:aws:secretsmanager:us-west-2:123456789012:secret:my-path/my-secret-name-1a2b3c"; "Id: The ARN of the secret".
    "AWS::SecretsManager::Secret": _Kind(
        "Name",
        "arn:{partition}:secretsmanager:{region}:{account}:secret:{name}-" + SECRET_SUFFIX,
        {"Id": "arn:{partition}:secretsmanager:{region}:{account}:secret:{name}-" + SECRET_SUFFIX},
    ),
    # CFN aws-resource-cloudwatch-alarm: "Ref returns the alarm name, such as TestAlarm"; "Arn: The ARN of the
    # CloudWatchalarm, such as arn:aws:cloudwatch:us-west-2:123456789012:alarm:myCloudWatchAlarm-CPUAlarm-UXMMZK36R55Z".
    # Composite alarms: CFN aws-resource-cloudwatch-compositealarm "Ref returns the alarm name"; its Arn example
    # ("...:alarm/CompositeAlarmName") differs, but botocore 1.44.5 cloudwatch TagResource says "The ARN format of
    # an alarm is arn:aws:cloudwatch:Region:account-id:alarm:alarm-name", which both kinds are.
    "AWS::CloudWatch::Alarm": _Kind("AlarmName", "{name}", {"Arn": _ALARM_ARN}),
    "AWS::CloudWatch::CompositeAlarm": _Kind("AlarmName", "{name}", {"Arn": _ALARM_ARN}),
    # CFN aws-resource-events-rule: Ref "returns event rule ID, such as mystack-ScheduledRule-ABCDEFGHIJK" (its name
    # on the default bus); "Arn: The ARN of the rule, such as arn:aws:events:us-east-2:123456789012:rule/example";
    # CDK 2.275 "RuleName: The name of the rule, exposed as a read-only attribute for use with Fn::GetAtt".
    # EventBusName: "If you omit this, the default event bus is used"; a custom bus: placeholders (_kind_of).
    "AWS::Events::Rule": _Kind(
        "Name", "{name}", {"Arn": "arn:{partition}:events:{region}:{account}:rule/{name}", "RuleName": "{name}"}
    ),
    "AWS::SageMaker::Model": _sagemaker("model", "ModelName", "ModelName"),
    "AWS::SageMaker::EndpointConfig": _sagemaker("endpoint-config", "EndpointConfigName", "EndpointConfigName"),
    "AWS::SageMaker::Endpoint": _sagemaker("endpoint", "EndpointName", "EndpointName"),
    "AWS::SageMaker::InferenceComponent": _sagemaker("inference-component", "InferenceComponentName", None),
    # Custom::* and AWS::CloudFormation::CustomResource are not listed: their Ref is the physical id the provider
    # returns and every attribute is the provider's Data, so both stay placeholders (as for any unlisted type).
}


@dataclass(frozen=True, eq=False)  # identity equality: one object per stack, and a template is not hashable
class AssemblyStack:
    id: str  # artifact id in manifest.json (e.g. "PeagleEndpoint"), or the template file's stem
    stack_name: str  # properties.stackName from the manifest if known, else id
    path: Path  # the template file
    template: Mapping[str, Any] = field(repr=False)
    account: str | None = None  # the manifest's "aws://<account>/<region>" when concrete, else None
    region: str | None = None

    def resources(self, resource_type: str | None = None) -> dict[str, Mapping[str, Any]]:
        """Logical id -> resource definition, of one type or all, in template order."""
        resources = self.template.get("Resources") or {}
        return {key: value for key, value in resources.items() if resource_type in (None, value.get("Type"))}

    def placeholder(self, name: str) -> str:
        """The symbol for something of this stack only known once deployed: ``${<id>/<name>}``."""
        return "${" + f"{self.id}/{name}" + "}"


class Assembly:
    """The stacks of a cloud assembly, and their template values as symbolic strings (module docstring)."""

    def __init__(self, stacks: Sequence[AssemblyStack]) -> None:
        ids = [stack.id for stack in stacks]
        duplicates = sorted({stack_id for stack_id in ids if ids.count(stack_id) > 1})
        if duplicates:
            # Placeholders are named by stack id, so two stacks of one id would share them.
            raise AssemblyError(f"the cloud assembly has two stacks with the id {', '.join(duplicates)}")
        self.stacks = list(stacks)
        self._busy: set[tuple[str, ...]] = set()  # values being resolved: a template referring to itself
        self._exports: dict[str, list[tuple[AssemblyStack, Mapping[str, Any]]]] | None = None
        self._by_value: dict[str, list[tuple[AssemblyStack, str]]] | None = None
        self._functions: dict[str, Callable[[AssemblyStack, Any], Any]] = {
            "Ref": self._ref,
            "Fn::GetAtt": self._get_att,
            "Fn::Join": self._join,
            "Fn::Sub": self._sub,
            "Fn::Select": self._select,
            "Fn::Split": self._split,
            "Fn::ImportValue": self._import_value,
            "Fn::FindInMap": self._find_in_map,
            "Fn::If": self._if,
            "Fn::Base64": self._base64,
        }

    # --- loading -------------------------------------------------------------------------------------------------

    @classmethod
    def from_cdk_out(cls, directory: str | Path) -> Assembly:
        """Every CloudFormation stack of the assembly in ``directory``, nested assemblies (CDK Stages) included."""
        directory = Path(directory)
        if not directory.is_dir():
            raise AssemblyError(
                f"{directory} is not a directory: run `cdk synth` first (it writes the cloud assembly to cdk.out), "
                "or pass the directory it wrote"
            )
        stacks = list(_stacks_in(directory))
        if not stacks:
            raise AssemblyError(f"{directory / 'manifest.json'} lists no CloudFormation stack: run `cdk synth` again")
        return cls(stacks)

    @classmethod
    def from_template_files(cls, paths: Sequence[str | Path]) -> Assembly:
        """The stacks of these template files (what a CDK policy-validation plugin is given): ids, names and
        environments from a manifest.json beside them when there is one, else each file's stem."""
        stacks = []
        for path in map(Path, paths):
            known = _manifest_entries(path.parent).get(path.resolve())
            if known is not None:
                stacks.append(_stack(path.parent, *known))
            else:
                stem = path.name.removesuffix(".template.json") if path.name.endswith(".template.json") else path.stem
                stacks.append(AssemblyStack(stem, stem, path, _read_json(path, "stack template")))
        return cls(stacks)

    def stack(self, id_or_name: str) -> AssemblyStack:
        """The stack of that artifact id, else the only one of that stack name."""
        by_id = [stack for stack in self.stacks if stack.id == id_or_name]
        by_name = [stack for stack in self.stacks if stack.stack_name == id_or_name]
        found = by_id or by_name
        if len(found) != 1:
            known = ", ".join(f"{stack.id} ({stack.stack_name})" for stack in self.stacks)
            how = "two stacks are named" if found else "no stack is"
            raise AssemblyError(f"{how} {id_or_name!r} in the cloud assembly; its stacks: {known}")
        return found[0]

    # --- resolution ----------------------------------------------------------------------------------------------

    def resolve(self, stack: AssemblyStack | str, value: Any) -> str | None:
        """``value`` as one symbolic string, or None when it cannot be decided (module docstring)."""
        result = self._value(self._as_stack(stack), value)
        return result if isinstance(result, str) else None

    def resolve_list(self, stack: AssemblyStack | str, value: Any) -> list[str] | None:
        """A list-valued ``value`` (a literal list, Fn::Split, a CommaDelimitedList parameter) as strings; a single
        string as a list of one; None when any element cannot be decided."""
        result = self._value(self._as_stack(stack), value)
        return [result] if isinstance(result, str) else result if isinstance(result, list) else None

    def resolve_document(self, stack: AssemblyStack | str, document: Any) -> dict[str, Any]:
        """A policy document (a mapping, or JSON text as ECR repository policies may be) with every intrinsic
        resolved: strings and lists of strings, ``UNRESOLVED`` where undecidable, AWS::NoValue removed; literal
        numbers and booleans as written. Anything but a mapping gives {}."""
        if isinstance(document, str):
            try:
                document = json.loads(document)
            except ValueError:
                return {}
        result = self._document_value(self._as_stack(stack), document)
        return result if isinstance(result, dict) else {}

    def find_resource(self, stack: AssemblyStack | str, value: Any) -> tuple[AssemblyStack, str] | None:
        """The (stack, logical id) ``value`` refers to: a Ref or Fn::GetAtt of it, an Fn::ImportValue of an output
        that does, or any value resolving to one of a resource's Ref or attribute values (its name, ARN, URI...),
        a resource of ``stack`` first, then the first in assembly order."""
        stack = self._as_stack(stack)
        if value is None:
            return None
        direct = self._refers_to(stack, value)
        if direct is not None:
            return direct
        text = self.resolve(stack, value)
        matches = self._resource_values().get(text, []) if text is not None else []
        return next((match for match in matches if match[0] is stack), matches[0] if matches else None)

    # --- values --------------------------------------------------------------------------------------------------

    def _as_stack(self, stack: AssemblyStack | str) -> AssemblyStack:
        return self.stack(stack) if isinstance(stack, str) else stack

    def _value(self, stack: AssemblyStack, node: Any) -> str | list[str] | _NoValue | None:
        if isinstance(node, str):
            # CFN dynamic-references: "'{{resolve:service-name:reference-key}}'": deploy-time values.
            return None if "{{resolve:" in node else node
        if isinstance(node, bool):
            return "true" if node else "false"
        if isinstance(node, int | float):
            return json.dumps(node)
        if isinstance(node, list):
            items = [item for item in (self._value(stack, item) for item in node) if item is not NO_VALUE]
            texts = [item for item in items if isinstance(item, str)]
            return texts if len(texts) == len(items) else None
        if isinstance(node, Mapping) and len(node) == 1:
            ((name, argument),) = node.items()
            function = self._functions.get(name)
            return function(stack, argument) if function else None
        return None

    def _list(self, stack: AssemblyStack, node: Any) -> list[str] | None:
        result = self._value(stack, node)
        return result if isinstance(result, list) else None

    def _document_value(self, stack: AssemblyStack, node: Any) -> Any:
        if _is_intrinsic(node):
            result = self._value(stack, node)
            return UNRESOLVED if result is None else result
        if isinstance(node, Mapping):
            resolved = {key: self._document_value(stack, value) for key, value in node.items()}
            return {key: value for key, value in resolved.items() if value is not NO_VALUE}
        if isinstance(node, list):
            items: list[Any] = []
            for item in (self._document_value(stack, item) for item in node):
                # An intrinsic giving a list inside a list (Fn::Split in a Resource list) adds its elements.
                items += item if isinstance(item, list) else [] if item is NO_VALUE else [item]
            return items
        return node

    # --- Ref, parameters, pseudo parameters ----------------------------------------------------------------------

    def _ref(self, stack: AssemblyStack, name: Any) -> str | list[str] | _NoValue | None:
        # CFN intrinsic-function-reference-ref: "When you specify a parameter's logical name, it returns the value
        # of the parameter"; for a resource, "the documentation for that resource" (the _KINDS table).
        if not isinstance(name, str):
            return None
        if name.startswith("AWS::"):  # parameter names are alphanumeric, so "AWS::" is always a pseudo parameter
            return _pseudo(stack, name)
        parameter = (stack.template.get("Parameters") or {}).get(name)
        if parameter is not None:
            return _parameter(stack, name, parameter)
        return self._attribute(stack, name, None) if _resource(stack, name) else None

    # --- Fn::GetAtt and the resource table -----------------------------------------------------------------------

    def _get_att(self, stack: AssemblyStack, argument: Any) -> str | None:
        # CFN intrinsic-function-reference-getatt: { "Fn::GetAtt" : [ "logicalNameOfResource", "attributeName" ] };
        # YAML's short form "!GetAtt logicalNameOfResource.attributeName" may arrive as one string.
        if isinstance(argument, str):
            logical_id, _, attribute = argument.partition(".")
        elif isinstance(argument, list) and len(argument) == 2:
            logical_id, attribute = argument[0], self._value(stack, argument[1])
        else:
            return None
        if not (
            isinstance(logical_id, str) and isinstance(attribute, str) and attribute and _resource(stack, logical_id)
        ):
            return None
        return self._attribute(stack, logical_id, attribute)

    def _attribute(self, stack: AssemblyStack, logical_id: str, attribute: str | None) -> str | None:
        """Ref (attribute None) or Fn::GetAtt of a resource of ``stack``, per _KINDS, else a placeholder."""
        key = (stack.id, logical_id, attribute or "")
        if key in self._busy:  # a name built from its own resource's ARN: CloudFormation would refuse the cycle
            return None
        self._busy.add(key)
        try:
            resource = _resource(stack, logical_id) or {}
            kind = _kind_of(resource)
            pattern = (kind.ref if attribute is None else kind.attributes.get(attribute)) if kind else None
            if kind is None or pattern is None:
                return stack.placeholder(logical_id if attribute is None else f"{logical_id}.{attribute}")
            fields = self._fields(stack, logical_id, resource, kind)
            return pattern.format(**fields) if fields is not None else None
        finally:
            self._busy.discard(key)

    def _fields(self, stack: AssemblyStack, logical_id: str, resource: Mapping, kind: _Kind) -> dict[str, str] | None:
        properties = resource.get("Properties") or {}
        name = self._value(stack, properties.get(kind.name_property)) if kind.name_property else None
        # CFN aws-resource-iam-role, Path: "a forward slash (/) by itself or a string that must begin and end with
        # forward slashes"; "If it is not included, it defaults to a slash (/)".
        path = self._value(stack, properties.get("Path", "/")) if kind.has_path else "/"
        if not (isinstance(path, str) and path.startswith("/")):
            return None
        return {
            "name": name if isinstance(name, str) else stack.placeholder(logical_id),  # generated, or undecidable
            "path": path[1:],
            "partition": PARTITION,
            "suffix": URL_SUFFIX,
            "region": _region(stack),
            "account": _account(stack),
        }

    # --- Fn::Join, Fn::Sub, Fn::Select, Fn::Split ----------------------------------------------------------------

    def _join(self, stack: AssemblyStack, argument: Any) -> str | None:
        # CFN intrinsic-function-reference-join: { "Fn::Join" : [ "delimiter", [ comma-delimited list of values ] ] },
        # "For the Fn::Join delimiter, you can't use any functions. You must specify a string value."
        if not (isinstance(argument, list) and len(argument) == 2 and isinstance(argument[0], str)):
            return None
        items = self._list(stack, argument[1])
        return argument[0].join(items) if items is not None else None

    def _sub(self, stack: AssemblyStack, argument: Any) -> str | None:
        # CFN intrinsic-function-reference-sub: { "Fn::Sub" : [ String, { Var1Name: Var1Value, ... } ] } or
        # { "Fn::Sub" : String }.
        if isinstance(argument, str):
            text, variables = argument, {}
        elif (
            isinstance(argument, list)
            and len(argument) == 2
            and isinstance(argument[0], str)
            and isinstance(argument[1], Mapping)
        ):
            text, variables = argument
        else:
            return None
        pieces, start = [], 0
        for variable in _SUB_VARIABLE.finditer(text):
            literal, name = variable.groups()
            value = "${" + name + "}" if literal else self._sub_variable(stack, name, variables)
            if not isinstance(value, str):
                return None
            pieces += [text[start : variable.start()], value]
            start = variable.end()
        return "".join(pieces) + text[start:]

    def _sub_variable(self, stack: AssemblyStack, name: str, variables: Mapping[str, Any]) -> Any:
        # CFN intrinsic-function-reference-sub: "If you specify template parameter names or resource logical IDs,
        # such as ${InstanceTypeParameter}, CloudFormation returns the same values as if you used the Ref intrinsic
        # function. If you specify resource attributes, such as ${MyInstance.PublicIp}, CloudFormation returns the
        # same values as if you used the Fn::GetAtt intrinsic function."
        if name in variables:
            return self._value(stack, variables[name])
        logical_id, dot, attribute = name.partition(".")
        if dot and _resource(stack, logical_id):
            return self._attribute(stack, logical_id, attribute)
        return self._ref(stack, name)

    def _select(self, stack: AssemblyStack, argument: Any) -> str | None:
        # CFN intrinsic-function-reference-select: { "Fn::Select" : [ index, listOfObjects ] }, "This must be a value
        # from zero to N-1"; out of bounds "will result in a stack error".
        if not (isinstance(argument, list) and len(argument) == 2):
            return None
        index, items = self._value(stack, argument[0]), self._list(stack, argument[1])
        if not (isinstance(index, str) and index.isdigit() and items is not None and int(index) < len(items)):
            return None
        return items[int(index)]

    def _split(self, stack: AssemblyStack, argument: Any) -> list[str] | None:
        # CFN intrinsic-function-reference-split: { "Fn::Split" : [ "delimiter", "source string" ] }, "If you split a
        # string with consecutive delimiters, the resulting list will include an empty string"; the delimiter
        # "can't use any functions". Placeholders are not cut: "${AWS::AccountId}" holds "::".
        if not (isinstance(argument, list) and len(argument) == 2 and isinstance(argument[0], str) and argument[0]):
            return None
        source = self._value(stack, argument[1])
        return _split_outside_placeholders(source, argument[0]) if isinstance(source, str) else None

    # --- Fn::ImportValue, Fn::FindInMap, Fn::If, Fn::Base64 ------------------------------------------------------

    def _import_value(self, stack: AssemblyStack, argument: Any) -> str | list[str] | None:
        # CFN intrinsic-function-reference-importvalue: "returns the value of an output exported by another stack";
        # "For each AWS account, Export names must be unique within a region." An export no stack of the assembly
        # makes is one opaque value, the same symbol wherever it is imported.
        name = self._value(stack, argument)
        if not isinstance(name, str):
            return None
        exporter = self._exporter(stack, name)
        if exporter is None:
            return "${Fn::ImportValue:" + name + "}"
        value = self._value(exporter[0], exporter[1].get("Value"))
        return value if isinstance(value, str | list) else None

    def _exporter(self, importer: AssemblyStack, name: str) -> tuple[AssemblyStack, Mapping[str, Any]] | None:
        """The (stack, output) exporting ``name``: in the importer's account and Region when several do."""
        if self._exports is None:
            self._exports = {}
            for stack in self.stacks:
                for output in (stack.template.get("Outputs") or {}).values():
                    export = self.resolve(stack, (output.get("Export") or {}).get("Name"))
                    if export is not None:
                        self._exports.setdefault(export, []).append((stack, output))
        candidates = self._exports.get(name, [])
        same_env = [
            found for found in candidates if (found[0].account, found[0].region) == (importer.account, importer.region)
        ]
        return (same_env or candidates or [None])[0]

    def _find_in_map(self, stack: AssemblyStack, argument: Any) -> str | list[str] | None:
        # CFN intrinsic-function-reference-findinmap: { "Fn::FindInMap" : [ "MapName", "TopLevelKey",
        # "SecondLevelKey"] } "returns the value corresponding to keys in a two-level map that's declared in the
        # Mappings section". (The four-argument DefaultValue form needs AWS::LanguageExtensions: undecided.)
        if not (isinstance(argument, list) and len(argument) == 3):
            return None
        keys = [self._value(stack, key) for key in argument]
        value: Any = stack.template.get("Mappings") or {}
        for key in keys:
            value = value.get(key) if isinstance(key, str) and isinstance(value, Mapping) else None
        result = self._value(stack, value) if value is not None else None
        return result if isinstance(result, str | list) else None

    def _if(self, stack: AssemblyStack, argument: Any) -> Any:
        # CFN intrinsic-function-reference-conditions: "Fn::If": [condition_name, value_if_true, value_if_false].
        if not (isinstance(argument, list) and len(argument) == 3 and isinstance(argument[0], str)):
            return None
        decided = self._condition(stack, argument[0])
        if decided is not None:
            return self._value(stack, argument[1] if decided else argument[2])
        when_true, when_false = self._value(stack, argument[1]), self._value(stack, argument[2])
        return when_true if when_true == when_false else None

    def _condition(self, stack: AssemblyStack, name: str) -> bool | None:
        key = (stack.id, "Conditions", name)
        if key in self._busy:
            return None
        self._busy.add(key)
        try:
            return self._truth(stack, (stack.template.get("Conditions") or {}).get(name))
        finally:
            self._busy.discard(key)

    def _truth(self, stack: AssemblyStack, node: Any) -> bool | None:
        """A condition, True/False when decidable from known text, None otherwise (three-valued And/Or/Not)."""
        if not (isinstance(node, Mapping) and len(node) == 1):
            return None
        ((function, argument),) = node.items()
        if function == "Condition":
            return self._condition(stack, argument) if isinstance(argument, str) else None
        if not isinstance(argument, list):
            return None
        if function == "Fn::Equals" and len(argument) == 2:
            return _equals(self._value(stack, argument[0]), self._value(stack, argument[1]))
        values = [self._truth(stack, item) for item in argument]
        if function == "Fn::Not" and len(values) == 1:
            return None if values[0] is None else not values[0]
        if function == "Fn::And":
            return False if False in values else True if all(values) else None
        if function == "Fn::Or":
            return True if True in values else False if values and all(v is False for v in values) else None
        return None

    def _base64(self, stack: AssemblyStack, argument: Any) -> str | None:
        # CFN Fn::Base64 "returns the Base64 representation of the input string": decidable for literal text only.
        text = self._value(stack, argument)
        return base64.b64encode(text.encode()).decode() if isinstance(text, str) and "${" not in text else None

    # --- find_resource -------------------------------------------------------------------------------------------

    def _refers_to(self, stack: AssemblyStack, value: Any) -> tuple[AssemblyStack, str] | None:
        if not (isinstance(value, Mapping) and len(value) == 1):
            return None
        ((function, argument),) = value.items()
        if function == "Fn::GetAtt":
            argument = argument.partition(".")[0] if isinstance(argument, str) else (argument or [None])[0]
        if function in ("Ref", "Fn::GetAtt") and isinstance(argument, str) and _resource(stack, argument):
            return stack, argument
        if function == "Fn::ImportValue":
            name = self.resolve(stack, argument)
            exporter = self._exporter(stack, name) if name is not None else None
            return self.find_resource(exporter[0], exporter[1].get("Value")) if exporter else None
        return None

    def _resource_values(self) -> dict[str, list[tuple[AssemblyStack, str]]]:
        """Every resource's Ref and table attribute values -> the resources having it (built once)."""
        if self._by_value is None:
            self._by_value = {}
            for stack, logical_id, attribute in self._resource_attributes():
                value = self._attribute(stack, logical_id, attribute)
                if value is not None and (stack, logical_id) not in self._by_value.get(value, []):
                    self._by_value.setdefault(value, []).append((stack, logical_id))
        return self._by_value

    def _resource_attributes(self) -> Iterator[tuple[AssemblyStack, str, str | None]]:
        for stack in self.stacks:
            for logical_id, resource in stack.resources().items():
                kind = _kind_of(resource)
                for attribute in (None, *(kind.attributes if kind else ())):
                    yield stack, logical_id, attribute


# --- helpers ---------------------------------------------------------------------------------------------------------


def _is_intrinsic(node: Any) -> bool:
    # CFN intrinsic function reference: every function is written { "Fn::<Name>" : ... } or { "Ref" : ... }.
    return (
        isinstance(node, Mapping)
        and len(node) == 1
        and (next(iter(node)) == "Ref" or next(iter(node)).startswith("Fn::"))
    )


def _resource(stack: AssemblyStack, logical_id: str) -> Mapping[str, Any] | None:
    resource = (stack.template.get("Resources") or {}).get(logical_id)
    return resource if isinstance(resource, Mapping) else None


def _kind_of(resource: Mapping[str, Any]) -> _Kind | None:
    kind = _KINDS.get(resource.get("Type", ""))
    bus = (resource.get("Properties") or {}).get("EventBusName")
    if resource.get("Type") == "AWS::Events::Rule" and bus not in (None, "default"):
        return None  # a rule on a custom bus: its Ref and ARN carry the bus, left as placeholders
    return kind


def _account(stack: AssemblyStack) -> str:
    return stack.account or "${AWS::AccountId}"


def _region(stack: AssemblyStack) -> str:
    return stack.region or "${AWS::Region}"


def _pseudo(stack: AssemblyStack, name: str) -> str | _NoValue | None:
    # CFN pseudo-parameter-reference: "AWS::StackId: Returns the ID of the stack ..., such as arn:aws:cloudformation:
    # us-west-2:123456789012:stack/teststack/51af3dc0-da77-11e4-872e-1234567db123"; "AWS::StackName: Returns the name
    # of the stack"; "AWS::NotificationARNs: Returns the list of notification Amazon Resource Names (ARNs) for the
    # current stack" (set at deploy time: undecided).
    if name == "AWS::NoValue":
        return NO_VALUE
    stack_id = f"arn:{PARTITION}:cloudformation:{_region(stack)}:{_account(stack)}:stack/{stack.stack_name}/"
    return {
        "AWS::Partition": PARTITION,
        "AWS::URLSuffix": URL_SUFFIX,
        "AWS::AccountId": _account(stack),
        "AWS::Region": _region(stack),
        "AWS::StackName": stack.stack_name,
        "AWS::StackId": stack_id + stack.placeholder("AWS::StackId"),
    }.get(name)


def _parameter(stack: AssemblyStack, name: str, parameter: Mapping[str, Any]) -> str | list[str] | None:
    # CFN parameters-section-structure: SSM parameter types: "You specify a Systems Manager parameter key as the
    # value of the SSM parameter, and AWS CloudFormation fetches the latest value from Parameter Store" (so the
    # Default of CDK's BootstrapVersion, "/cdk-bootstrap/hnb659fds/version", is a key, not the value: a placeholder);
    # "CommaDelimitedList ... users could specify "test,dev,prod", and a Ref would result in ["test","dev","prod"]
    # ... each member string is space trimmed"; "List<Number> ... the parameter value becomes a list of strings".
    kind = str(parameter.get("Type", "String"))
    default = parameter.get("Default")
    is_list = kind == "CommaDelimitedList" or kind.startswith("List<")
    if kind.startswith("AWS::SSM::Parameter::Value<") or default is None:
        return None if is_list else stack.placeholder(name)
    text = default if isinstance(default, str) else json.dumps(default)
    return [item.strip() for item in text.split(",")] if is_list else text


def _equals(left: Any, right: Any) -> bool | None:
    # Equal text is the same value; different text is only different when no placeholder could be either.
    if not (isinstance(left, str) and isinstance(right, str)):
        return None
    if left == right:
        return True
    return None if "${" in left or "${" in right else False


def _split_outside_placeholders(text: str, delimiter: str) -> list[str]:
    parts, current, index = [], "", 0
    while index < len(text):
        end = text.find("}", index) if text.startswith("${", index) else -1
        if end != -1:
            current, index = current + text[index : end + 1], end + 1
        elif text.startswith(delimiter, index):
            parts, current, index = [*parts, current], "", index + len(delimiter)
        else:
            current, index = current + text[index], index + 1
    return [*parts, current]


# --- reading the assembly ----------------------------------------------------------------------------------------


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AssemblyError(f"{path}: no such {what}: run `cdk synth` to write the cloud assembly") from None
    except (OSError, ValueError) as error:
        raise AssemblyError(f"{path}: unreadable {what} ({error}): run `cdk synth` again to rewrite it") from None
    if not isinstance(data, dict):
        raise AssemblyError(f"{path}: not a {what} (expected a JSON object): run `cdk synth` again to rewrite it")
    return data


def _stacks_in(directory: Path) -> Iterator[AssemblyStack]:
    # CDK cloud-assembly-schema 55.4.0 (cloud-assembly.schema.json): artifact "type" one of "aws:cloudformation:stack",
    # "cdk:cloud-assembly", ...; AwsCloudFormationStackProperties.templateFile "A file relative to the assembly root
    # which contains the CloudFormation template for this stack"; NestedCloudAssemblyProperties.directoryName
    # "Relative path to the nested cloud assembly" (a CDK Stage's stacks live there).
    manifest = _read_json(directory / "manifest.json", "cloud assembly manifest")
    for artifact_id, artifact in (manifest.get("artifacts") or {}).items():
        properties = artifact.get("properties") or {}
        if artifact.get("type") == "aws:cloudformation:stack":
            yield _stack(directory, artifact_id, artifact)
        elif artifact.get("type") == "cdk:cloud-assembly" and properties.get("directoryName"):
            yield from _stacks_in(directory / properties["directoryName"])


def _stack(directory: Path, artifact_id: str, artifact: Mapping[str, Any]) -> AssemblyStack:
    properties = artifact.get("properties") or {}
    if not properties.get("templateFile"):
        raise AssemblyError(
            f"{directory / 'manifest.json'}: stack {artifact_id} names no templateFile: run `cdk synth` again"
        )
    path = directory / properties["templateFile"]
    account, region = _environment(artifact.get("environment"))
    # AwsCloudFormationStackProperties.stackName: "The name to use for the CloudFormation stack. (Default - name
    # derived from artifact ID)".
    name = properties.get("stackName") or artifact_id
    return AssemblyStack(artifact_id, name, path, _read_json(path, "stack template"), account, region)


def _environment(text: Any) -> tuple[str | None, str | None]:
    found = _ENVIRONMENT.match(text) if isinstance(text, str) else None
    if found is None:
        return None, None
    account, region = found.groups()
    return (None if account == _UNKNOWN[0] else account), (None if region == _UNKNOWN[1] else region)


def _manifest_entries(directory: Path) -> dict[Path, tuple[str, Mapping[str, Any]]]:
    """Template path -> (directory, artifact id, artifact) for the stacks of a manifest.json in ``directory``;
    {} when there is none or it cannot be read (the file stems stand in)."""
    try:
        manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
        artifacts = manifest.get("artifacts") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    return {
        (directory / artifact["properties"]["templateFile"]).resolve(): (artifact_id, artifact)
        for artifact_id, artifact in artifacts.items()
        if isinstance(artifact, Mapping)
        and artifact.get("type") == "aws:cloudformation:stack"
        and (artifact.get("properties") or {}).get("templateFile")
    }
