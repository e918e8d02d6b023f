"""What a SageMaker endpoint adds to its models' needs (peagle.access.requirements), read from its endpoint config
and endpoint: the auto-rollback alarms, asynchronous inference, Data Capture and the ML storage volume's key.

Sources, beside each function:

- Auto-rollback alarms: "ensure that your execution role has permission to perform the cloudwatch:DescribeAlarms
  action on your auto-rollback alarms" (SageMaker Developer Guide, "CreateModel API: Execution Role Permissions").
- Asynchronous inference: SageMaker reads each request's input object, writes the result or the failure and
  publishes the notification with the Model's execution role; S3 objects under a KMS key need kms:Decrypt to read
  and kms:GenerateDataKey to write ("To upload an object encrypted with an AWS KMS key to Amazon S3, you need
  kms:GenerateDataKey permissions on the key", Amazon S3 User Guide, "Using server-side encryption with AWS KMS keys
  (SSE-KMS)", https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingKMSEncryption.html; "you need the
  permission to decrypt the AWS KMS key" to download one, https://repost.aws/knowledge-center/decrypt-kms-encrypted-
  objects-s3); publishing to an encrypted topic: "The publisher must have the kms:GenerateDataKey and kms:Decrypt
  permissions for the AWS KMS key" (Amazon SNS Developer Guide, "Key management", "Allow a user to send messages to
  a topic with SSE", https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html).
- Data Capture: _capture_needs.
- The volume key: _volume_key_needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from peagle.access.need import (
    HTTPS,
    S3_URI,
    Need,
    bucket_key,
    in_stack,
)
from peagle.cloud_assembly import Assembly, AssemblyStack
from peagle.planning.plan_record import ASYNC_INPUT_METADATA_KEY

# Where S3 calls KMS from on the caller's behalf (the kms:ViaService value S3 sets, as the capture and weights needs
# have it since peagle.access was written; AWS KMS Developer Guide, "kms:ViaService").
S3_VIA = "s3.${AWS::Region}.amazonaws.com"
# A representative request payload under the recorded input prefix (any key there is what a caller may name).
ASYNC_INPUT_OBJECT = "request.json"
# The caller of a deploy-time need (Need.deployer): named in reports, never matched against a policy.
DEPLOYER = "the identity that deploys the stack"


def endpoint_needs(assembly: Assembly, stack: AssemblyStack) -> list[Need]:
    """Every need the stack's endpoint configs and endpoints add, in template order."""
    needs = _rollback_alarm_needs(assembly, stack)
    for config_id, config in stack.resources("AWS::SageMaker::EndpointConfig").items():
        needs += _async_needs(assembly, stack, config_id, config)
        needs += _capture_needs(assembly, stack, config_id, config)
        needs += _volume_key_needs(assembly, stack, config_id, config)
    return needs


def _roles_of_endpoint(assembly: Assembly, stack: AssemblyStack, config_value: Any) -> list[Any]:
    """The execution roles of the Models an endpoint config serves (its variants' models, or its own role)."""
    found = assembly.find_resource(stack, config_value)
    if found is None:
        return []
    config = found[0].template["Resources"][found[1]].get("Properties", {})
    roles = [config["ExecutionRoleArn"]] if config.get("ExecutionRoleArn") else []
    for variant in config.get("ProductionVariants", []):
        model = assembly.find_resource(found[0], variant.get("ModelName")) if variant.get("ModelName") else None
        if model is not None:
            role = model[0].template["Resources"][model[1]].get("Properties", {}).get("ExecutionRoleArn")
            if role is not None and role not in roles:
                roles.append(role)
    return roles


def _rollback_alarm_needs(assembly: Assembly, stack: AssemblyStack) -> list[Need]:
    needs = []
    deployments = [
        (endpoint.get("Properties", {}).get("DeploymentConfig") or {}, endpoint["Properties"].get("EndpointConfigName"))
        for endpoint in stack.resources("AWS::SageMaker::Endpoint").values()
    ]
    roles_of = [(deployment, _roles_of_endpoint(assembly, stack, config)) for deployment, config in deployments]
    # An inference component rolls out on its own, under its own DeploymentConfig, with its Model's role.
    for component in stack.resources("AWS::SageMaker::InferenceComponent").values():
        properties = component.get("Properties", {})
        model = assembly.find_resource(stack, (properties.get("Specification") or {}).get("ModelName"))
        role = model and model[0].template["Resources"][model[1]].get("Properties", {}).get("ExecutionRoleArn")
        roles_of.append((properties.get("DeploymentConfig") or {}, [role] if role is not None else []))
    for deployment, roles in roles_of:
        alarms = (deployment.get("AutoRollbackConfiguration") or {}).get("Alarms", [])
        for role in roles:
            for alarm in alarms:
                name = assembly.resolve(stack, alarm.get("AlarmName"))
                arn = in_stack(stack, f"arn:aws:cloudwatch:${{AWS::Region}}:${{AWS::AccountId}}:alarm:{name}")
                why = f"SageMaker reads auto-rollback alarm {name} during an endpoint update"
                needs.append(Need(stack, role, "cloudwatch:DescribeAlarms", arn, why, "rollback-alarms"))
    return needs


# --- asynchronous inference -----------------------------------------------------------------------------------


def _async_needs(assembly: Assembly, stack: AssemblyStack, config_id: str, config: Mapping[str, Any]) -> list[Need]:
    settings = config.get("Properties", {}).get("AsyncInferenceConfig")
    if not settings:
        return []
    roles = _roles_of_endpoint(assembly, stack, {"Ref": config_id})
    output = settings.get("OutputConfig") or {}
    needs = _async_input_needs(assembly, stack, config_id, config, roles)
    for path_key in ("S3OutputPath", "S3FailurePath"):
        found = S3_URI.match(assembly.resolve(stack, output.get(path_key)) or "")
        if found is None:
            continue
        arn = f"arn:aws:s3:::{found['bucket']}/{found['key'].rstrip('/')}/result.out"
        bucket = assembly.find_resource(stack, f"arn:aws:s3:::{found['bucket']}")
        why = f"SageMaker writes asynchronous results of {config_id} under {found.group(0)}"
        needs += [Need(stack, role, "s3:PutObject", arn, why, "async", dict(HTTPS), bucket) for role in roles]
        # OutputConfig.KmsKeyId: "The ... KMS key that SageMaker uses to encrypt the asynchronous inference output in
        # Amazon S3" (botocore 1.44.5 sagemaker, AsyncInferenceOutputConfig); without it the bucket's default key.
        key = (stack, output["KmsKeyId"]) if output.get("KmsKeyId") else bucket_key(assembly, bucket)
        needs += _s3_key_needs(assembly, stack, roles, key, "kms:GenerateDataKey", f"{why}, encrypted with a KMS key")
    needs += _topic_needs(assembly, stack, config_id, output.get("NotificationConfig") or {}, roles)
    return needs


def _async_input_needs(
    assembly: Assembly, stack: AssemblyStack, config_id: str, config: Mapping[str, Any], roles: list[Any]
) -> list[Need]:
    """s3:GetObject (and kms:Decrypt with the bucket's key) on the input location the config records. Each request
    names its own InputLocation, so without that record the template says nothing about where inputs are."""
    recorded = assembly.resolve(stack, (config.get("Metadata") or {}).get(ASYNC_INPUT_METADATA_KEY))
    found = S3_URI.match(recorded or "")
    if found is None:
        return []
    arn = f"arn:aws:s3:::{found['bucket']}/{found['key']}{ASYNC_INPUT_OBJECT}"
    bucket = assembly.find_resource(stack, f"arn:aws:s3:::{found['bucket']}")
    why = f"SageMaker reads {config_id}'s asynchronous request payloads from {recorded} (InvokeEndpointAsync)"
    needs = [Need(stack, role, "s3:GetObject", arn, why, "async-input", dict(HTTPS), bucket) for role in roles]
    return needs + _s3_key_needs(
        assembly, stack, roles, bucket_key(assembly, bucket), "kms:Decrypt", f"{why}, encrypted with a KMS key"
    )


def _s3_key_needs(
    assembly: Assembly,
    stack: AssemblyStack,
    roles: list[Any],
    key: tuple[AssemblyStack, Any] | None,
    action: str,
    why: str,
) -> list[Need]:
    """``action`` on a KMS key S3 uses for the role's objects (its key policy must allow)."""
    if key is None:
        return []
    key_stack, key_value = key
    arn = assembly.resolve(key_stack, key_value) or "${?unresolved}"
    where = assembly.find_resource(key_stack, key_value)
    context = {"kms:ViaService": in_stack(stack, S3_VIA)}
    return [Need(stack, role, action, arn, why, "async-key", context, where, key_policy=True) for role in roles]


def _topic_needs(
    assembly: Assembly, stack: AssemblyStack, config_id: str, topics: dict, roles: list[Any]
) -> list[Need]:
    """sns:Publish to each notification topic, and kms:GenerateDataKey + kms:Decrypt on an encrypted topic's key
    (AWS::SNS::Topic KmsMasterKeyId). No kms:ViaService is put in these requests' context: the SNS pages read here
    do not say which value SNS sets, and a guess would decide key policies that test it."""
    needs = []
    for topic_key in ("SuccessTopic", "ErrorTopic"):
        if topic_key not in topics:
            continue
        arn = assembly.resolve(stack, topics[topic_key]) or "${?unresolved}"
        topic = assembly.find_resource(stack, topics[topic_key])
        why = f"SageMaker publishes {config_id}'s asynchronous {topic_key} notifications"
        needs += [Need(stack, role, "sns:Publish", arn, why, "async", resource_in=topic) for role in roles]
        if topic is None:
            continue  # a topic outside the app: peagle.access.check says its policy and key are not checked
        topic_stack, topic_id = topic
        master_key = topic_stack.template["Resources"][topic_id].get("Properties", {}).get("KmsMasterKeyId")
        if not master_key:
            continue
        key_arn = assembly.resolve(topic_stack, master_key) or "${?unresolved}"
        where = assembly.find_resource(topic_stack, master_key)
        key_why = f"{why} to a topic encrypted with a KMS key"
        needs += [
            Need(stack, role, action, key_arn, key_why, "topic-key", resource_in=where, key_policy=True)
            for role in roles
            for action in ("kms:GenerateDataKey", "kms:Decrypt")
        ]
    return needs


# --- Data Capture -----------------------------------------------------------------------------------------------


def _capture_needs(assembly: Assembly, stack: AssemblyStack, config_id: str, config: Mapping[str, Any]) -> list[Need]:
    """SageMaker Data Capture writes with the endpoint's execution role: the capture guide's "make sure the role ...
    has s3:PutObject permissions. This is the bucket into which the data is captured" (SageMaker Developer Guide,
    "Capture data"), and, with a KmsKeyId, kms:GenerateDataKey to put an SSE-KMS object (S3 User Guide, module
    docstring). Files go under {DestinationS3Uri}/{endpoint-name}/{variant-name}/yyyy/mm/dd/hh/ ("Capture data from
    real-time endpoint")."""
    settings = config.get("Properties", {}).get("DataCaptureConfig")
    if not settings or settings.get("EnableCapture") is False:
        return []
    roles = _roles_of_endpoint(assembly, stack, {"Ref": config_id})
    destination = assembly.resolve(stack, settings.get("DestinationS3Uri")) or ""
    found = S3_URI.match(destination)
    if found is None:
        return []
    arn = f"arn:aws:s3:::{found['bucket']}/{found['key'].rstrip('/')}/endpoint/AllTraffic/2026/01/01/00/capture.jsonl"
    bucket = assembly.find_resource(stack, f"arn:aws:s3:::{found['bucket']}")
    why = f"SageMaker Data Capture writes {config_id}'s captured requests under {destination}"
    needs = [Need(stack, role, "s3:PutObject", arn, why, "capture", dict(HTTPS), bucket) for role in roles]
    key_value = settings.get("KmsKeyId")
    if key_value is None:
        return needs
    key_arn = assembly.resolve(stack, key_value) or "${?unresolved}"
    context = {"kms:ViaService": in_stack(stack, S3_VIA)}
    where = assembly.find_resource(stack, key_value)
    return needs + [
        Need(
            stack,
            role,
            "kms:GenerateDataKey",
            key_arn,
            f"{why}, encrypted with its KmsKeyId",
            "capture",
            context,
            where,
            key_policy=True,
        )
        for role in roles
    ]


# --- the ML storage volume's key --------------------------------------------------------------------------------


def _volume_key_needs(
    assembly: Assembly, stack: AssemblyStack, config_id: str, config: Mapping[str, Any]
) -> list[Need]:
    """The endpoint config's KmsKeyId encrypts "the storage volume attached to the ML compute instance that hosts the
    endpoint", and "The KMS key policy must grant permission to the IAM role that you specify in your CreateEndpoint,
    UpdateEndpoint requests" (botocore 1.44.5 sagemaker, CreateEndpointConfig KmsKeyId). CreateEndpoint takes no role:
    the one it means is its caller, whose required permissions are "sagemaker:CreateEndpoint kms:CreateGrant (required
    only if the associated EndPointConfig has a KmsKeyId specified)" (SageMaker Developer Guide, "Amazon SageMaker API
    Permissions: Actions, Permissions, and Resources Reference", https://docs.aws.amazon.com/sagemaker/latest/dg/
    api-permissions-reference.html). Here the caller is CloudFormation: "If you specify a service role,
    CloudFormation uses that role's credentials" for stack operations, else "a temporary session that it generates
    from your user credentials" (CloudFormation User Guide, "AWS CloudFormation service role",
    https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/using-iam-servicerole.html). Nothing in the
    execution role's page asks anything of the execution role for this key, so it is given nothing."""
    properties = config.get("Properties", {})
    key_value = properties.get("KmsKeyId")
    if key_value is None:
        return []
    endpoints = [
        assembly.resolve(stack, endpoint.get("Properties", {}).get("EndpointName")) or logical_id
        for logical_id, endpoint in stack.resources("AWS::SageMaker::Endpoint").items()
        if assembly.find_resource(stack, endpoint.get("Properties", {}).get("EndpointConfigName")) == (stack, config_id)
    ]
    key_arn = assembly.resolve(stack, key_value) or "${?unresolved}"
    why = (
        f"CloudFormation creates and updates endpoint {', '.join(endpoints) or '(none in this stack)'} with "
        f"{config_id}, whose KmsKeyId encrypts the instances' ML storage volumes: CreateEndpoint and UpdateEndpoint "
        "need kms:CreateGrant on that key for their caller"
    )
    where = assembly.find_resource(stack, key_value)
    return [
        Need(
            stack,
            DEPLOYER,
            "kms:CreateGrant",
            key_arn,
            why,
            "volume-key",
            resource_in=where,
            key_policy=True,
            deployer=True,
        )
    ]
