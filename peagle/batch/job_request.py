"""The CreateTransformJob request for a P-EAGLE batch job on the endpoint stack's Model.

The job runs the very Model the endpoint serves (same image, same weights prefix,
same network isolation); only the engine settings change, to the ``batch``
profile's throughput-first plan for the transform instance type. They reach the
container as the job's ``Environment``, which SageMaker caps at 16 entries and
lays over the Model's own environment (*unverified*: merge-over-Model is how the
SageMaker Python SDK's ``Transformer(env=...)`` is used; the API reference only
states the cap). The Model already carries ~18 variables, so the job passes only
the batch settings that matter and differ from the Model's: BATCH_ENVIRONMENT_KEYS.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from peagle.batch.records import DEFAULT_MAX_PAYLOAD_MB, MAX_PAYLOAD_TIMES_CONCURRENCY_MB
from peagle.planning.deployment_rules import TRANSFORM_ENVIRONMENT
from peagle.planning.deployment_rules import environment_problems as _environment_problems
from peagle.settings.errors import PeagleError
from peagle_serve.contract import ENV_ENDPOINT_NAME, ENV_KPI_INTERVAL_SECONDS, sm_vllm_name

TRANSFORM_ENVIRONMENT_LIMIT = TRANSFORM_ENVIRONMENT.max_entries
JOB_NAME_MAX_CHARS = 63
_JOB_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")

# The batch plan's settings a transform job passes when they differ from the Model's,
# most important first. Everything else (served name, pair, drafter limits, drain,
# self-check, the pair's own vLLM flags) is the same for endpoint and job.
BATCH_ENVIRONMENT_KEYS: tuple[str, ...] = (
    sm_vllm_name("tensor-parallel-size"),  # must equal the transform instance's GPU count
    sm_vllm_name("max-model-len"),  # batch: long inputs (summarisation)
    sm_vllm_name("max-num-seqs"),  # batch: many sequences per step, the throughput lever
    sm_vllm_name("speculative-config"),  # batch K: drafting gains shrink as the batch grows
    sm_vllm_name("kv-cache-dtype"),  # fp8 only where the transform GPU has it
    sm_vllm_name("gpu-memory-utilization"),
    sm_vllm_name("override-generation-config"),  # the batch profile's sampling for records that omit it
    ENV_KPI_INTERVAL_SECONDS,  # KPI lines (tokens/s, acceptance) in the job's log
    ENV_ENDPOINT_NAME,  # KPI lines name the job, not the endpoint
)
# A Model variable the batch plan leaves unset cannot be removed by the job, only
# overridden: with these values vLLM behaves as if it were unset.
UNSET_EQUIVALENTS = {sm_vllm_name("kv-cache-dtype"): "auto"}


class TransformJobError(PeagleError):
    """The transform job request would be rejected; lists every problem."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("the transform job cannot be created:\n" + "\n".join(f"  - {problem}" for problem in problems))


@dataclass(frozen=True)
class EnvironmentChoice:
    environment: dict[str, str]
    kept_from_model: tuple[str, ...] = ()  # differing batch values not passed: the Model's stay

    def describe(self) -> list[str]:
        lines = [f"  {key}={value}" for key, value in self.environment.items()]
        if self.kept_from_model:
            lines.append(f"  (the Model's values kept for {', '.join(self.kept_from_model)})")
        return lines


def choose_batch_environment(
    model_environment: Mapping[str, str],
    batch_environment: Mapping[str, str],
    *,
    extra: Mapping[str, str] | None = None,
) -> EnvironmentChoice:
    """The job's Environment: BATCH_ENVIRONMENT_KEYS whose batch value differs from the Model's,
    then ``extra`` (the user's --env, which wins). Raises TransformJobError past 16 entries."""
    environment: dict[str, str] = {}
    for key in BATCH_ENVIRONMENT_KEYS:
        value = batch_environment.get(key, UNSET_EQUIVALENTS.get(key) if key in model_environment else None)
        if value is not None and model_environment.get(key) != value:
            environment[key] = value
    kept = tuple(
        sorted(
            key
            for key in set(batch_environment) | set(model_environment)
            if key not in BATCH_ENVIRONMENT_KEYS and batch_environment.get(key) != model_environment.get(key)
        )
    )
    environment.update(extra or {})
    problems = environment_problems(environment)
    if problems:
        raise TransformJobError(problems)
    return EnvironmentChoice(
        environment=environment, kept_from_model=tuple(key for key in kept if key not in (extra or {}))
    )


def environment_problems(environment: Mapping[str, str]) -> list[str]:
    return _environment_problems(environment, TRANSFORM_ENVIRONMENT)


def default_job_name(deployment_name: str, pair_id: str, now: datetime) -> str:
    """``<deployment>-<pair>-<UTC time>``: unique per second, valid, at most 63 characters."""
    stamp = now.strftime("%Y%m%d-%H%M%S")
    base = re.sub(r"[^a-zA-Z0-9]+", "-", f"{deployment_name}-{pair_id}").strip("-")
    base = base[: JOB_NAME_MAX_CHARS - len(stamp) - 1].rstrip("-")
    return f"{base}-{stamp}" if base else stamp


def job_name_problem(name: str) -> str | None:
    if len(name) > JOB_NAME_MAX_CHARS or not _JOB_NAME.match(name):
        return (
            f"job name {name!r} is invalid: 1-{JOB_NAME_MAX_CHARS} letters, digits and hyphens, starting and "
            "ending with a letter or digit (unique in the account and region)"
        )
    return None


def transform_instance_types() -> tuple[str, ...]:
    """The instance types CreateTransformJob accepts, from botocore's service model (no network)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return tuple(model.shape_for("TransformInstanceType").enum)


@dataclass(frozen=True)
class TransformJobSpec:
    job_name: str
    model_name: str
    input_s3_uri: str  # an object or a prefix: every object under it is read
    output_s3_uri: str
    instance_type: str
    instance_count: int = 1
    max_concurrent_transforms: int = 16
    max_payload_mb: int = DEFAULT_MAX_PAYLOAD_MB
    environment: Mapping[str, str] = field(default_factory=dict)
    invocation_timeout_seconds: int = 600
    invocation_max_retries: int = 1
    output_kms_key_id: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    # TransformResources.TransformAmiVersion: the GPU host whose driver runs the image
    # (peagle.planning.deployment_rules.transform_ami_version); None: the family's default host.
    ami_version: str | None = None

    def problems(self, *, allowed_instance_types: Sequence[str]) -> list[str]:
        problems = []
        problem = job_name_problem(self.job_name)
        if problem:
            problems.append(problem)
        if self.instance_type not in allowed_instance_types:
            problems.append(
                f"{self.instance_type} cannot run a Batch Transform job here; instance types that can and that the "
                f"catalog plans for: {', '.join(sorted(allowed_instance_types))}"
            )
        for what, uri in (("--input", self.input_s3_uri), ("--output", self.output_s3_uri)):
            if not uri.startswith("s3://"):
                problems.append(f"{what} {uri!r} must be an s3:// URI for a transform job")
        if self.instance_count < 1:
            problems.append(f"--instance-count must be >= 1, got {self.instance_count}")
        if not 1 <= self.max_payload_mb <= MAX_PAYLOAD_TIMES_CONCURRENCY_MB:
            problems.append(f"--max-payload-mb must be 1-{MAX_PAYLOAD_TIMES_CONCURRENCY_MB}, got {self.max_payload_mb}")
        elif (
            self.max_concurrent_transforms < 1
            or self.max_concurrent_transforms * self.max_payload_mb > MAX_PAYLOAD_TIMES_CONCURRENCY_MB
        ):
            most = MAX_PAYLOAD_TIMES_CONCURRENCY_MB // self.max_payload_mb
            problems.append(
                f"--max-concurrent-transforms {self.max_concurrent_transforms} x --max-payload-mb {self.max_payload_mb} "
                f"must be 1-{MAX_PAYLOAD_TIMES_CONCURRENCY_MB} MB; use at most {most} (or a smaller --max-payload-mb "
                "to have more requests in flight)"
            )
        if not 1 <= self.invocation_timeout_seconds <= 3600:
            problems.append(f"--invocation-timeout-seconds must be 1-3600, got {self.invocation_timeout_seconds}")
        if not 0 <= self.invocation_max_retries <= 3:
            problems.append(f"--invocation-max-retries must be 0-3, got {self.invocation_max_retries}")
        return problems + environment_problems(self.environment)


def build_transform_job_request(spec: TransformJobSpec) -> dict:
    """CreateTransformJob parameters: one JSON record per line -> one POST /invocations,
    answers joined to their records, one per line."""
    transform_output = {"S3OutputPath": spec.output_s3_uri, "Accept": "application/json", "AssembleWith": "Line"}
    if spec.output_kms_key_id:
        transform_output["KmsKeyId"] = spec.output_kms_key_id
    request = {
        "TransformJobName": spec.job_name,
        "ModelName": spec.model_name,
        # SingleRecord: MultiRecord would concatenate lines into one body vLLM cannot parse.
        "BatchStrategy": "SingleRecord",
        "MaxConcurrentTransforms": spec.max_concurrent_transforms,
        "MaxPayloadInMB": spec.max_payload_mb,
        "ModelClientConfig": {
            "InvocationsTimeoutInSeconds": spec.invocation_timeout_seconds,
            "InvocationsMaxRetries": spec.invocation_max_retries,
        },
        "TransformInput": {
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": spec.input_s3_uri}},
            "ContentType": "application/json",
            "CompressionType": "None",
            "SplitType": "Line",
        },
        "TransformOutput": transform_output,
        "TransformResources": {
            "InstanceType": spec.instance_type,
            "InstanceCount": spec.instance_count,
            **({"TransformAmiVersion": spec.ami_version} if spec.ami_version else {}),
        },
        # Each output line = its input record + "SageMakerOutput": the answer.
        "DataProcessing": {"JoinSource": "Input", "InputFilter": "$", "OutputFilter": "$"},
        "Tags": [{"Key": key, "Value": value} for key, value in spec.tags.items()],
    }
    if spec.environment:
        request["Environment"] = dict(spec.environment)
    return request
