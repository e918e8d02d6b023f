"""What each principal of a synthesized app must be able to do at runtime, read from the templates.

The requests AWS will make once the stacks are deployed, each derived from a resource that causes it:

- A SageMaker Model's execution role (``ExecutionRoleArn``), which SageMaker uses to serve it: pull its image,
  list and read its weights and decrypt them with the bucket's key, create and write the container's log group and
  streams, put metrics, read a Hub token secret, attach to a VPC. The list and its scoping come from "CreateModel
  API: Execution Role Permissions" (SageMaker Developer Guide,
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-roles.html#sagemaker-roles-createmodel-perms; its
  source, awsdocs/amazon-sagemaker-developer-guide doc_source/sagemaker-roles.md at 7a4c2e79, the last the index
  holds): the policy's actions "cloudwatch:PutMetricData", "logs:CreateLogStream", "logs:PutLogEvents",
  "logs:CreateLogGroup", "logs:DescribeLogStreams", "s3:GetObject", "s3:ListBucket", "ecr:GetAuthorizationToken",
  "ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"; "Scope S3 permissions to
  objects that you specify in the PrimaryContainer.ModelDataUrl"; "Scope Amazon ECR permissions to a specific
  registry path that you specify as the PrimaryContainer.Image"; "If you plan to use the SageMaker deployment
  guardrails feature ... ensure that your execution role has permission to perform the cloudwatch:DescribeAlarms
  action on your auto-rollback alarms"; "If you specify a private VPC for your model, add the following
  permissions: ec2:CreateNetworkInterface, ..."; and for SSE-KMS inputs "kms:Decrypt" (same page, CreateTrainingJob:
  "If your input is encrypted using server-side encryption with an AWS KMS-managed key (SSE-KMS), add the following
  permissions"). What the endpoints add (rollback alarms, asynchronous inference, Data Capture, the ML storage
  volume's key) is in peagle/access/endpoint_needs.py.
- The in-account image build (peagle_cdk/serving_image_build.py): its CodeBuild role reads the build context
  and pushes the image ("IAM permissions for pushing an image to an Amazon ECR private repository",
  https://docs.aws.amazon.com/AmazonECR/latest/userguide/image-push-iam.html: "ecr:CompleteLayerUpload,
  ecr:UploadLayerPart, ecr:InitiateLayerUpload, ecr:BatchCheckLayerAvailability, ecr:PutImage, ecr:BatchGetImage"
  on the repository, "ecr:GetAuthorizationToken" on "*"), pulls the base (through a pull-through cache: "ecr:
  BatchImportUpstreamImage" and "ecr:CreateRepository", ECR User Guide, pull-through-cache-iam.html) and writes its
  logs; its handler asks ECR for the tag, finds, starts and polls the build and hands its watch on to itself
  (peagle/access/build_needs.py quotes what each of those needs).

Each need carries what it is for and the prop or deployment-file key that grants it, so a missing grant can be
fixed in the caller's terms. Requests to S3 carry ``aws:SecureTransport: true`` (SageMaker and CodeBuild call S3
over HTTPS), which is what a bucket's enforce-SSL deny tests.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from peagle.access.build_needs import build_needs
from peagle.access.endpoint_needs import endpoint_needs
from peagle.access.need import ECR_IMAGE, ECR_PULL, HTTPS, S3_URI, Need, bucket_key, in_stack
from peagle.cloud_assembly import Assembly, AssemblyStack

# What `peagle stage` writes under a weights prefix (peagle/stage), and what the launcher reads first.
STAGED_OBJECTS = ("target/config.json", "drafter/config.json")
# The container's Hugging Face token secret (inference_image/peagle_serve/contract.py ENV_HF_TOKEN_SECRET_ARN).
HF_TOKEN_VARIABLE = "PEAGLE_HF_TOKEN_SECRET_ARN"
# The needs are written here from their sources, not imported from the constructs that grant them
# (peagle_cdk/execution_role.py has the same lists): a need shared with its grant could never find the grant wrong.
EC2_NETWORK_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
)
# The prop or deployment-file key that grants each kind of need, in the caller's words.
FIXES = {
    "image": "PeagleEndpoint grants its execution role pulls from the serving image's repository (ServingImage); "
    "with a role of your own (role=...), grant them: repository.grant_pull(role)",
    "weights": "ModelWeights.from_bucket(bucket, prefix) grants read on the prefix (deployment file: "
    "artifacts.s3_uri); with a role of your own, grant s3:GetObject on <prefix>* and s3:ListBucket on the bucket",
    "weights-key": "ModelWeights.from_bucket(bucket, prefix) takes the bucket's encryption_key (or key=...); "
    "deployment file: artifacts.kms_key_arn; the key's policy must allow the role or its account",
    "logs": "PeagleEndpoint grants its log groups; with a role of your own, grant logs:CreateLogGroup, "
    "logs:DescribeLogStreams, logs:CreateLogStream and logs:PutLogEvents on arn:aws:logs:<region>:<account>:log-group:"
    "<the endpoint's or component's log group>:*",
    "metrics": "PeagleEndpoint grants cloudwatch:PutMetricData; with a role of your own, grant it on '*'",
    "hub-token": "ModelWeights.from_hub(token_secret_arn=...) grants it (deployment file: artifacts.hf_token_secret_arn)",
    "vpc": "PeagleEndpoint grants them when it gets vpc= or vpc_subnets= (deployment file: network.vpc)",
    "rollback-alarms": "PeagleEndpoint.add_rollback_alarms(alarms) grants them (EndpointMonitoring calls it); "
    "for alarms set on cfn_endpoint directly, grant cloudwatch:DescribeAlarms on each",
    "async": "PeagleEndpoint.add_async_endpoint(bucket_name=..., bucket_key=...) grants them",
    "async-input": "PeagleEndpoint.add_async_endpoint(bucket_name=...) grants read on the bucket's async/input/ prefix: "
    "put InvokeEndpointAsync inputs there; with a role of your own, grant s3:GetObject on the input prefix",
    "async-key": "PeagleEndpoint.add_async_endpoint(bucket_key=...) takes the async bucket's KMS key (default: the "
    "weights' key) and grants it; the key's policy must allow the role or its account",
    "topic-key": "PeagleEndpoint.add_async_endpoint grants kms:GenerateDataKey and kms:Decrypt on each notification "
    "topic's key; with a role of your own, grant them on the topic's KmsMasterKeyId",
    "volume-key": "PeagleEndpoint's VolumeKey (or volume_key=...) must let the identity that deploys the stack "
    "kms:CreateGrant: the key policy allows it directly, or allows the account and that identity's IAM policy "
    "allows it (with `cdk deploy`, the bootstrap's CloudFormation execution role)",
    "capture": "PeagleEndpoint(capture=DataCapture(...)) grants them (deployment file: capture.enabled); a key of "
    "your own (DataCapture(key=...), capture.kms_key_arn) must allow the role in its key policy",
    "build": "peagle_cdk/serving_image_build.py grants it to the stack's image builder: a missing grant here is a "
    "fault of the library, please report it",
}


def runtime_needs(assembly: Assembly) -> list[Need]:
    """Every request the assembly's resources will make at runtime, in template order."""
    needs: list[Need] = []
    for stack in assembly.stacks:
        for logical_id, model in stack.resources("AWS::SageMaker::Model").items():
            needs += _model_needs(assembly, stack, logical_id, model)
        needs += endpoint_needs(assembly, stack)
        needs += build_needs(assembly, stack)
    return needs


# --- SageMaker models ----------------------------------------------------------------------------------------


def _model_needs(assembly: Assembly, stack: AssemblyStack, logical_id: str, model: Mapping[str, Any]) -> list[Need]:
    properties = model.get("Properties", {})
    role = properties.get("ExecutionRoleArn")
    if role is None:
        return []
    needs = []
    containers = (
        [properties["PrimaryContainer"]] if "PrimaryContainer" in properties else properties.get("Containers", [])
    )
    for container in containers:
        needs += _image_needs(assembly, stack, role, logical_id, container)
        needs += _weights_needs(assembly, stack, role, logical_id, container)
        secret = (container.get("Environment") or {}).get(HF_TOKEN_VARIABLE)
        if secret is not None:
            arn = assembly.resolve(stack, secret)
            if arn is not None:
                needs.append(
                    Need(
                        stack,
                        role,
                        "secretsmanager:GetSecretValue",
                        arn,
                        f"the container of Model {logical_id} reads the Hugging Face token at start-up",
                        "hub-token",
                        resource_in=assembly.find_resource(stack, secret),
                    )
                )
    metrics_why = f"SageMaker's execution role permissions for Model {logical_id} (cloudwatch:PutMetricData)"
    needs.append(Need(stack, role, "cloudwatch:PutMetricData", "*", metrics_why, "metrics"))
    if properties.get("VpcConfig"):
        why = f"SageMaker attaches Model {logical_id}'s instances to its VPC subnets"
        needs += [Need(stack, role, action, "*", why, "vpc") for action in EC2_NETWORK_ACTIONS]
    for group in _log_groups_of(assembly, stack, logical_id):
        needs += _log_needs(stack, role, logical_id, group)
    return needs


def _log_needs(stack: AssemblyStack, role: Any, model_id: str, group: str) -> list[Need]:
    """The page's four logs actions on one log group. The group-level two are asked of the group's ARN with its
    trailing ":*": "This version of the ARN includes a trailing :* after the log group name. Use this version to
    refer to the ARN in IAM policies when specifying permissions for most API actions. The exception is ...
    TagResource, UntagResource, and ListTagsForResource" (botocore 1.44.5 logs, LogGroup.arn); the stream-level two
    of a stream in it (SageMaker names one per instance at run time)."""
    why = f"Model {model_id}'s container writes its logs (and KPI lines) to {group.split(':log-group:')[-1]}"
    return [
        Need(stack, role, action, f"{group}:*", why, "logs")
        for action in ("logs:CreateLogGroup", "logs:DescribeLogStreams")
    ] + [
        Need(stack, role, action, f"{group}:log-stream:instance", why, "logs")
        for action in ("logs:CreateLogStream", "logs:PutLogEvents")
    ]


def _image_needs(assembly: Assembly, stack: AssemblyStack, role: Any, model_id: str, container: dict) -> list[Need]:
    image = assembly.resolve(stack, container.get("Image"))
    found = ECR_IMAGE.match(image or "")
    if found is None:
        return []
    arn = f"arn:aws:ecr:{found['region']}:{found['account']}:repository/{found['repository']}"
    why = f"SageMaker pulls Model {model_id}'s image {image}"
    repository = assembly.find_resource(stack, arn)
    return [Need(stack, role, "ecr:GetAuthorizationToken", "*", why, "image")] + [
        Need(stack, role, action, arn, why, "image", resource_in=repository) for action in ECR_PULL
    ]


def _weights_needs(assembly: Assembly, stack: AssemblyStack, role: Any, model_id: str, container: dict) -> list[Need]:
    source = (container.get("ModelDataSource") or {}).get("S3DataSource") or {}
    uri = assembly.resolve(stack, source.get("S3Uri") or container.get("ModelDataUrl"))
    found = S3_URI.match(uri or "")
    if found is None:
        return []
    bucket_name, prefix = found["bucket"], found["key"]
    bucket_arn = f"arn:aws:s3:::{bucket_name}"
    bucket = assembly.find_resource(stack, bucket_arn)
    why = f"SageMaker lists and reads Model {model_id}'s weights under {uri}"
    objects = [prefix + name for name in STAGED_OBJECTS] if source.get("S3DataType") == "S3Prefix" else [prefix]
    needs = [Need(stack, role, "s3:ListBucket", bucket_arn, why, "weights", {**HTTPS, "s3:prefix": prefix}, bucket)] + [
        Need(stack, role, "s3:GetObject", f"{bucket_arn}/{key}", why, "weights", dict(HTTPS), bucket) for key in objects
    ]
    key = bucket_key(assembly, bucket)
    if key is not None:
        key_stack, key_value = key
        key_arn = assembly.resolve(key_stack, key_value)
        needs.append(
            Need(
                stack,
                role,
                "kms:Decrypt",
                key_arn or "${?unresolved}",
                f"{uri} is in a bucket encrypted with a KMS key: reading it needs kms:Decrypt on that key",
                "weights-key",
                {"kms:ViaService": in_stack(stack, "s3.${AWS::Region}.amazonaws.com")},
                assembly.find_resource(key_stack, key_value),
                key_policy=True,
            )
        )
    return needs


def _log_groups_of(assembly: Assembly, stack: AssemblyStack, model_id: str) -> Iterator[str]:
    """The log groups SageMaker writes a Model's container logs to: /aws/sagemaker/Endpoints/<endpoint> for each
    endpoint whose config serves it, /aws/sagemaker/InferenceComponents/<component> for each component that runs it
    (peagle_cdk/endpoint_logs.py says where each comes from)."""
    prefix = "arn:aws:logs:${AWS::Region}:${AWS::AccountId}:log-group:"
    for config_id, config in stack.resources("AWS::SageMaker::EndpointConfig").items():
        variants = config.get("Properties", {}).get("ProductionVariants", [])
        if any(_points_at(assembly, stack, variant.get("ModelName"), model_id) for variant in variants):
            for name in _endpoints_of(assembly, stack, config_id):
                yield in_stack(stack, prefix) + f"/aws/sagemaker/Endpoints/{name}"
    for component in stack.resources("AWS::SageMaker::InferenceComponent").values():
        properties = component.get("Properties", {})
        if _points_at(assembly, stack, (properties.get("Specification") or {}).get("ModelName"), model_id):
            name = assembly.resolve(stack, properties.get("InferenceComponentName"))
            if name is not None:
                yield in_stack(stack, prefix) + f"/aws/sagemaker/InferenceComponents/{name}"


def _endpoints_of(assembly: Assembly, stack: AssemblyStack, config_id: str) -> Iterator[str]:
    for endpoint in stack.resources("AWS::SageMaker::Endpoint").values():
        properties = endpoint.get("Properties", {})
        if _points_at(assembly, stack, properties.get("EndpointConfigName"), config_id):
            name = assembly.resolve(stack, properties.get("EndpointName"))
            if name is not None:
                yield name


def _points_at(assembly: Assembly, stack: AssemblyStack, value: Any, logical_id: str) -> bool:
    found = assembly.find_resource(stack, value) if value is not None else None
    return found is not None and found[0] is stack and found[1] == logical_id
