"""The deployment config: one validated model, loaded once (by app.py or the CLI).

A deployment file (YAML) names a model pair, an instance type and a workload
profile, and may override anything the planner would pick. CDK context keys
(`-c model=... -c instanceType=...`) override the file; see CONTEXT_OVERRIDES.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import Field, PositiveInt, ValidationError, field_validator, model_validator

from peagle.catalog import InstanceType, ModelPair, ProfileName, StrictModel, load_catalog
from peagle.errors import ConfigError
from peagle.setting_refs import Door, duration, field_words, in_words, setting, spelled
from peagle_serve.contract import ScheduleBand, schedule_problems

DEFAULT_DEPLOYMENT_FILE = "deployments/default.yaml"
# The share of a measured capacity the scaling targets aim at: one default for the scaling settings (both doors)
# and `peagle capacity --headroom`, which writes it into its snippet.
DEFAULT_HEADROOM = 0.8

# CDK context key -> path in the deployment file. Keep these names stable:
# users' scripts and CI pass them with `cdk synth -c key=value`.
CONTEXT_OVERRIDES: dict[str, tuple[str, ...]] = {
    "model": ("model",),
    "instanceType": ("instance", "type"),
    "instanceCount": ("instance", "count"),
    "speculativeTokens": ("speculation", "speculative_tokens"),
    "profile": ("profile",),
}


class InstanceSettings(StrictModel):
    type: str = Field(
        default="ml.g6e.xlarge",
        description="SageMaker instance type (see `peagle catalog`)",
        json_schema_extra=spelled("instance_type", flag="--instance"),
    )
    count: PositiveInt = Field(
        default=1,
        le=100,
        description="initial instances (within autoscaling.min_capacity..max_capacity; in inference_components "
        "mode within endpoint.inference_components.min_instances..max_instances)",
        json_schema_extra=spelled("instance_count", flag="--instance-count"),
    )
    ami_version: str | None = Field(
        default=None,
        json_schema_extra=spelled("inference_ami_version"),
        description="ProductionVariant.InferenceAmiVersion (the GPU host's NVIDIA driver); unset: the one the "
        "serving image needs (peagle/catalog/runtime.yaml). A driver too old for the image fails synth",
    )
    price_per_hour_usd: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        json_schema_extra=spelled("price_per_hour_usd"),
        description="on-demand price per instance-hour in USD, overriding the catalog's (e.g. for a savings plan "
        "or another region); `peagle plan`, the dashboard's cost widgets and the cost alarm use it. Null: the "
        "price in peagle/catalog/instances.yaml (or in custom_instances)",
    )


class SpeculationBand(StrictModel):
    """K for a range of batch sizes: how many requests the engine runs in one step (at most the
    plan's max_num_seqs), both ends inclusive."""

    min_batch: PositiveInt = Field(description="smallest batch size of the band")
    max_batch: PositiveInt = Field(description="largest batch size of the band (inclusive)")
    speculative_tokens: int = Field(ge=0, le=64, description="K at these batch sizes; 0: no drafts")

    def as_tuple(self) -> ScheduleBand:
        return (self.min_batch, self.max_batch, self.speculative_tokens)


class SpeculationSettings(StrictModel):
    speculative_tokens: int | None = Field(
        default=None,
        ge=0,
        le=64,
        json_schema_extra=spelled("Speculation.fixed(...)", flag="--speculative-tokens", **{"0": "Speculation.off()"}),
        description="K, draft tokens per step; 0 turns speculation off; "
        "unset = the pair's recommended K for the profile (or, with a schedule, its largest K)",
    )
    schedule: list[SpeculationBand] | None = Field(
        default=None,
        json_schema_extra=spelled("Speculation.by_batch_size(bands)"),
        description="K by batch size (vLLM's num_speculative_tokens_per_batch_size): bands covering "
        "1..max_num_seqs without gaps or overlap (vLLM would silently fill a gap with the previous band's K), "
        "each K at most the drafter's trained K, K > 0 at batch size 1 (the start-up self-check's warm-up "
        "request runs alone). speculative_tokens is then the largest K (leave it unset or set it to that; vLLM "
        "caps every band at it); a schedule whose bands are all 0 is refused (set speculative_tokens: 0). "
        "The A/B baseline variant stays at its static K. Earn it by measurement: it can be slower than a static K",
    )


class ProfileOverrides(StrictModel):
    """Any profile field, overridden for this deployment only."""

    PROP_TYPE: ClassVar[str] = "ProfileOverrides"  # a construct user passes it whole (peagle/setting_refs.py)

    temperature: float | None = Field(
        default=None,
        ge=0.0,
        le=2.0,
        description="the server's default for requests that omit it (vLLM --override-generation-config)",
    )
    top_p: float | None = Field(
        default=None,
        gt=0.0,
        le=1.0,
        description="the server's default for requests that omit it (vLLM --override-generation-config)",
    )
    max_tokens: PositiveInt | None = Field(
        default=None,
        description="applied by `peagle invoke`, `bench` and `batch` (--profile), not by the server: vLLM 0.32 "
        "would turn a server-side default into a cap on every request",
    )
    max_model_len: PositiveInt | None = Field(
        default=None,
        description="prompt + answer, per request; the planner lowers it in 1024-token steps, not below "
        "min_model_len, if one full-length request would not fit the KV cache",
    )
    min_model_len: PositiveInt | None = Field(
        default=None, description="the floor the planner may lower max_model_len to"
    )
    max_num_seqs: PositiveInt | None = Field(
        default=None,
        le=1024,
        description="concurrent sequences per replica; the planner lowers it to what the KV cache holds at "
        "typical_context_tokens plus K speculative slots",
    )
    typical_context_tokens: PositiveInt | None = Field(
        default=None, description="the request length max_num_seqs is sized for"
    )
    latency_sla_p90_seconds: float | None = Field(
        default=None,
        gt=0,
        description="deprecated: the same as alarms.latency_sla_p90_seconds, the one key for the latency SLA",
    )
    ttft_target_seconds: float | None = Field(
        default=None, gt=0, description="the same as slo.ttft_seconds (older name)"
    )


class SloSettings(StrictModel):
    """The profile's SLO, overridden bound by bound for this deployment (`peagle plan` prints the result).
    Bounds are per request, as `vllm bench serve` measures them; null leaves the profile's value."""

    PROP_TYPE: ClassVar[str] = "SloSettings"

    ttft_seconds: float | None = Field(default=None, gt=0, description="time to first token")
    tpot_seconds: float | None = Field(default=None, gt=0, description="time per output token after the first")
    e2e_seconds: float | None = Field(default=None, gt=0, description="end-to-end latency of the request")
    attainment: float | None = Field(
        default=None, gt=0, le=1, description="share of requests that must meet every bound"
    )


_S3_PREFIX = re.compile(r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/[^\s]*)?/$")


class ArtifactsSettings(StrictModel):
    source: Literal["s3", "hub"] = Field(
        default="s3",
        json_schema_extra=spelled(
            "weights", **{'"hub"': "weights=ModelWeights.from_hub()", '"s3"': "weights=ModelWeights.from_bucket(...)"}
        ),
        description="s3: weights staged under one S3 prefix (the default, works with network isolation); "
        "hub: the container downloads target and drafter from the Hugging Face Hub at start-up "
        "(needs network.isolation: false)",
    )
    hf_token_secret_arn: str | None = Field(
        default=None,
        json_schema_extra=spelled("ModelWeights.from_hub(token_secret_arn=...)"),
        pattern=r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$",
        description="with source hub: Secrets Manager secret holding a Hugging Face token (plain text); "
        "the execution role may read it, the container reads it at start-up",
    )
    s3_uri: str | None = Field(
        default=None,
        description="s3://bucket/prefix/ holding target/ and drafter/ side by side; then no artifacts stack is "
        "created. One prefix because CloudFormation's AWS::SageMaker::Model has no AdditionalModelDataSources "
        "(the channel JumpStart uses for its drafter). "
        "Unset: the project's artifacts bucket (stack <name>-artifacts), prefix models/<pair>/",
    )
    kms_key_arn: str | None = Field(
        default=None,
        description="KMS key the artifacts under s3_uri are encrypted with, if they are; the role may use it",
    )

    @field_validator("s3_uri")
    @classmethod
    def _s3_prefix(cls, value: str | None) -> str | None:
        if value is not None and not _S3_PREFIX.match(value):
            raise ValueError(
                f"{value!r} is not an S3 prefix; use s3://<bucket>/<prefix>/ (ending in '/') "
                "with target/ and drafter/ under it"
            )
        return value


class VpcSettings(StrictModel):
    """Run the model in private subnets: your own (subnet_ids + security_group_ids), or a new VPC
    (create: true) with isolated subnets, no NAT, a security group without ingress and the VPC
    endpoints SageMaker needs to pull the image, read weights and write logs and metrics."""

    create: bool = Field(default=False, description="a new VPC for the model instead of your own subnets")
    max_azs: int = Field(default=2, ge=2, le=6, description="with create: availability zones to span")
    subnet_ids: list[str] = Field(default=[], description="your private subnets for the model")
    security_group_ids: list[str] = Field(default=[], description="your security groups for the model")

    @model_validator(mode="after")
    def _one_source(self) -> VpcSettings:
        own = bool(self.subnet_ids) or bool(self.security_group_ids)
        if self.create and own:
            raise ValueError("network.vpc: give either create: true or subnet_ids + security_group_ids, not both")
        if not self.create and not (self.subnet_ids and self.security_group_ids):
            raise ValueError(
                "network.vpc: give subnet_ids and security_group_ids of your private subnets, or create: true "
                "for a new VPC"
            )
        return self


class NetworkSettings(StrictModel):
    isolation: bool = Field(
        default=True,
        description="no network and no AWS credentials in the container",
        json_schema_extra=spelled("network_isolation"),
    )
    vpc: VpcSettings | None = Field(
        default=None,
        description="private subnets for the model; the execution role then gets the ENI permissions SageMaker needs",
    )


_PULL_THROUGH_SECRET = re.compile(
    r"^arn:aws[a-z-]*:secretsmanager:[a-zA-Z0-9-:]+:secret:ecr\-pullthroughcache\/[a-zA-Z0-9\/_+=.@-]+$"
)
_CACHE_PREFIX = re.compile(r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$")
# An ECR image reference (peagle_cdk's BaseImage.mirror_uri parses it too, through peagle_cdk/settings_model.py).
ECR_IMAGE = re.compile(
    r"^(?P<account>[0-9]{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?/(?P<repository>[a-z0-9._/-]+)"
    r"(:(?P<tag>[\w.-]+)|@(?P<digest>sha256:[0-9a-f]{64}))$"
)


class ImageSettings(StrictModel):
    """How `cdk deploy` gets the serving image (inference_image/: the launcher over the pinned vLLM base)."""

    build: Literal["in_account", "local_docker"] = Field(
        default="in_account",
        description="in_account: built in CodeBuild during the deploy, in the endpoint's account and region, from "
        "the build context uploaded as a small S3 asset (no Docker on your machine); local_docker: built by the "
        "CDK CLI with your Docker and pushed from your machine (several GB; the 0.1.0 behaviour)",
    )
    pull_through_cache_secret_arn: str | None = Field(
        default=None,
        json_schema_extra=spelled("ServingImage.build_in_account(base=BaseImage.pull_through_cache(...))"),
        description="in_account: pull the vLLM base through an ECR pull-through cache of Docker Hub (created with "
        "the stack) with these Docker Hub credentials, a Secrets Manager secret named ecr-pullthroughcache/..., "
        "instead of anonymously (Docker Hub's limits apply to CodeBuild's shared addresses)",
    )
    pull_through_cache_prefix: str | None = Field(
        default=None,
        json_schema_extra=spelled("BaseImage.pull_through_cache(repository_prefix=...)"),
        description="in_account: the pull-through cache rule's ECR repository prefix. With "
        "pull_through_cache_secret_arn: the prefix of the rule the stack creates (default: derived from the stack "
        "and the secret, so a new secret makes a new rule beside the old one; a rule's prefix is its identity and "
        "cannot change). Alone: a Docker Hub pull-through cache rule you already have, used as it is",
    )
    base_mirror: str | None = Field(
        default=None,
        json_schema_extra=spelled("ServingImage.build_in_account(base=BaseImage.mirror(...))"),
        description="in_account: pull the vLLM base from your ECR copy of it instead, "
        "<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag> (or @sha256:<digest>), in the endpoint's region",
    )

    @field_validator("pull_through_cache_secret_arn")
    @classmethod
    def _cache_secret(cls, value: str | None) -> str | None:
        # AWS::ECR::PullThroughCacheRule CredentialArn, "Pattern:
        # ^arn:aws:secretsmanager:[a-zA-Z0-9-:]+:secret:ecr\-pullthroughcache\/[a-zA-Z0-9\/_+=.@-]+$" (CloudFormation
        # User Guide, AWS::ECR::PullThroughCacheRule); partitions other than aws allowed as their ARNs spell them.
        if value is not None and not _PULL_THROUGH_SECRET.match(value):
            raise ValueError(
                f"{value!r} is not the ARN of a Secrets Manager secret named ecr-pullthroughcache/...; ECR takes a "
                "pull-through cache's credentials only from a secret with that name prefix, in the same account and "
                "region (create one holding your Docker Hub username and access token)"
            )
        return value

    @field_validator("pull_through_cache_prefix")
    @classmethod
    def _cache_prefix(cls, value: str | None) -> str | None:
        # AWS::ECR::PullThroughCacheRule EcrRepositoryPrefix: "Minimum: 2 Maximum: 30", lower-case path parts
        # (CloudFormation User Guide, AWS::ECR::PullThroughCacheRule).
        if value is not None and not (2 <= len(value) <= 30 and _CACHE_PREFIX.match(value)):
            raise ValueError(
                f"{value!r} is not an ECR pull-through cache prefix: 2-30 characters of lower-case letters, digits, "
                "'.', '_', '-' in '/'-separated parts, e.g. docker-hub"
            )
        return value

    @field_validator("base_mirror")
    @classmethod
    def _mirror(cls, value: str | None) -> str | None:
        if value is not None and not ECR_IMAGE.match(value):
            raise ValueError(
                f"{value!r} is not an ECR image reference; give <account>.dkr.ecr.<region>.amazonaws.com/<repository>:"
                "<tag> (or @sha256:<digest>) of your copy of the vLLM base"
            )
        return value

    @model_validator(mode="after")
    def _one_base(self) -> ImageSettings:
        if (self.pull_through_cache_secret_arn or self.pull_through_cache_prefix) and self.base_mirror:
            raise ValueError(
                "image.pull_through_cache_secret_arn (or _prefix) and image.base_mirror are two sources of the vLLM "
                "base; give one"
            )
        if self.build == "local_docker" and (
            self.pull_through_cache_secret_arn or self.pull_through_cache_prefix or self.base_mirror
        ):
            raise ValueError(
                "image.pull_through_cache_secret_arn, _prefix and image.base_mirror apply to image.build: in_account (your "
                "local Docker pulls the base itself); remove them or set build: in_account"
            )
        return self


class TimeoutSettings(StrictModel):
    container_startup_seconds: int | None = Field(
        default=None,
        json_schema_extra=spelled("container_startup_timeout"),
        ge=60,
        le=3600,
        description="the launcher's whole start-up budget: engine load, then the speculation self-check (300 s), "
        "then a 30 s margin so the launcher's own error comes before SageMaker stops the container; unset: "
        "sized from the weights (600-3600 s)",
    )
    model_download_seconds: int | None = Field(
        default=None,
        json_schema_extra=spelled("model_download_timeout"),
        ge=60,
        le=3600,
        description="unset: sized from the weights (600-3600 s, SageMaker's range)",
    )


class ScheduledScaling(StrictModel):
    """Capacity bounds from a schedule, e.g. fewer instances off-peak."""

    PROP_TYPE: ClassVar[str] = "ScheduledCapacity"

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9]{0,63}$", description="PascalCase id, stable across deploys")
    # The three forms Application Auto Scaling takes (botocore data/application-autoscaling/2016-02-06/service-2.json,
    # PutScheduledActionRequest.Schedule: "At expressions - "at(yyyy-mm-ddThh:mm:ss)"; Rate expressions -
    # "rate(value unit)"; Cron expressions - "cron(fields)""); each form's fields are checked by _expression below.
    schedule: str = Field(
        pattern=r"^(cron\(.+\)|rate\(.+\)|at\(.+\))$", description="e.g. 'cron(0 20 * * ? *)' (UTC unless time_zone)"
    )
    min_capacity: PositiveInt = Field(description="the scaling floor while the schedule holds (formerly min_instances)")
    max_capacity: PositiveInt = Field(
        description="the scaling ceiling while the schedule holds (formerly max_instances)"
    )
    time_zone: str | None = Field(default=None, description="IANA name, e.g. Europe/Berlin")

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return _renamed(
            data, "autoscaling.schedules[]", {"min_instances": "min_capacity", "max_instances": "max_capacity"}
        )

    @model_validator(mode="after")
    def _expression(self) -> ScheduledScaling:
        """What Application Auto Scaling would refuse at deploy time (six cron fields, one day field `?`, values
        in range, an IANA time zone), refused at synth: the rules and their sources are in
        peagle/simulate/schedules.py, which `peagle simulate` runs the schedule with."""
        from peagle.simulate.schedules import ScheduledAction, ScheduleError

        action = ScheduledAction(
            self.name, self.schedule, self.min_capacity, self.max_capacity, self.time_zone or "UTC"
        )
        try:
            action.check(simulated=False)
        except ScheduleError as error:
            raise ValueError(str(error)) from None
        return self


class MeasuredCapacity(StrictModel):
    """What `peagle capacity` measured for one instance (or copy): the highest request rate at which the
    SLO still held, and the requests in flight there. Its snippet sets the scaling targets from it with
    ``headroom``; kept here so `peagle plan` can say where the targets came from and size a fleet."""

    requests_per_second: float = Field(gt=0, description="highest rate meeting the SLO, per instance")
    concurrency: float = Field(gt=0, description="requests in flight at that rate (the load's own mean)")
    headroom: float = Field(gt=0, le=1, description="share of the capacity the scaling targets aim at")
    slo: str = Field(description="the SLO it was measured at, as `peagle plan` prints it")
    source: str = Field(description="what was measured, where and when")


def _renamed(data: Any, section: str, renames: dict[str, str]) -> Any:
    """Keys renamed so that one concept has one name in the file, the props, the plan and the docs (the
    headroom, the latency SLA). An old key still loads, with a FutureWarning (shown to users by default)
    naming the new one; both at once are refused."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    for old, new in renames.items():
        if old not in data:
            continue
        if new in data:
            raise ValueError(f"{section}.{old} is the old name of {section}.{new}; give only {new}")
        warnings.warn(
            f"{section}.{old} is deprecated: it is now {section}.{new} (same meaning and value); rename it in the "
            "deployment file",
            FutureWarning,
            stacklevel=2,
        )
        data[new] = data.pop(old)
    return data


class AutoscalingSettings(StrictModel):
    """Scaling of the variant's DesiredInstanceCount (Application Auto Scaling's
    ``sagemaker:variant:DesiredInstanceCount``; SageMaker Developer Guide, "Automatic scaling of
    Amazon SageMaker AI models", https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling.html)."""

    enabled: bool = Field(
        default=True,
        description="false: fixed capacity (instance.count instances, or initial_copies copies), not scaled",
        json_schema_extra=spelled("autoscaling", false="autoscaling=None", true="autoscaling=Autoscaling(...)"),
    )
    min_capacity: int | None = Field(
        default=None,
        ge=0,
        description="the scaling floor in serving units: instances (variants, at least 1) or copies "
        "(inference_components, 0 scales the component to zero); unset: 1 instance, or 0 copies (with autoscaling "
        "off: the units the deploy starts). Formerly autoscaling.min_instances and "
        "endpoint.inference_components.min_copies",
        json_schema_extra=spelled("Autoscaling(min_capacity=...)"),
    )
    max_capacity: PositiveInt | None = Field(
        default=None,
        le=100,
        description="the scaling ceiling in serving units; unset: 2 instances, or as many copies as "
        "endpoint.inference_components.max_instances hold. Formerly autoscaling.max_instances and "
        "endpoint.inference_components.max_copies",
        json_schema_extra=spelled("Autoscaling(max_capacity=...)"),
    )
    target: Literal["concurrency", "invocations"] = Field(
        default="concurrency",
        description="concurrency: target tracking on SageMakerVariantConcurrentRequestsPerModelHighResolution, "
        "in-flight requests per unit (10 s metric, counts queued and streaming requests); "
        "invocations (variants): requests per minute per instance, target max_requests_per_second x headroom x 60, "
        "needs max_requests_per_second",
        json_schema_extra=spelled(
            "Autoscaling(max_requests_per_second=...)",
            **{
                '"concurrency"': "Autoscaling(target_concurrency=...)",
                '"invocations"': "Autoscaling(max_requests_per_second=...)",
            },
        ),
    )
    target_concurrency: float | None = Field(
        default=None,
        gt=0,
        description="requests in flight per unit (instance or copy) to scale on; `peagle capacity`'s snippet sets it "
        "to the concurrency measured within the SLO x headroom; unset: 75% of the plan's max_num_seqs (a guess). "
        "Formerly target_concurrency_per_instance and endpoint.inference_components.target_concurrency_per_copy",
        json_schema_extra=spelled("Autoscaling(target_concurrency=...)"),
    )
    max_requests_per_second: float | None = Field(
        default=None,
        gt=0,
        description="the highest requests/s per instance that meets the SLO, measured with `peagle capacity` "
        "(formerly max_rps_per_instance)",
        json_schema_extra=spelled("Autoscaling(max_requests_per_second=...)"),
    )
    headroom: float = Field(
        default=DEFAULT_HEADROOM,
        gt=0,
        le=1,
        description="share of max_requests_per_second the invocations target aims at (formerly safety_factor)",
        json_schema_extra=spelled("Autoscaling(headroom=...)"),
    )
    measured_capacity: MeasuredCapacity | None = Field(
        default=None,
        description="written by `peagle capacity`: where the targets above came from; with no concurrency target "
        "set, the target is its concurrency x headroom",
        json_schema_extra=spelled("Autoscaling(measured_capacity=...)"),
    )
    gpu_utilization_target_percent: float | None = Field(
        default=80,
        gt=0,
        le=100,
        description="GPU utilization target tracking, per GPU (multiplied by the GPU count, because the metric "
        "sums GPUs); null: no GPU policy",
        json_schema_extra=spelled("Autoscaling(gpu_utilization_percent=...)"),
    )
    latency_step_scaling: bool = Field(
        default=True,
        description="step scaling while p90 ModelLatency exceeds the SLA: +1 instance, +2 at twice the SLA; never "
        "scales in (target tracking does); waits an instance's whole start budget (the plan's timeouts + 600 s) "
        "between steps, because its alarm acts every minute it is in ALARM",
        json_schema_extra=spelled("Autoscaling(latency_step_scaling=...)"),
    )
    scale_in_cooldown_seconds: int = Field(
        default=900,
        ge=0,
        le=3600,
        description="target tracking's scale-in cooldown; GPU instances are slow to replace",
        json_schema_extra=spelled("Autoscaling(scale_in_cooldown=...)"),
    )
    scale_out_cooldown_seconds: int = Field(
        default=120,
        ge=0,
        le=3600,
        description="target tracking's scale-out cooldown",
        json_schema_extra=spelled("Autoscaling(scale_out_cooldown=...)"),
    )
    schedules: list[ScheduledScaling] = Field(
        default=[],
        description="cron-based capacity (min/max capacity by schedule), e.g. fewer instances at night",
        json_schema_extra=spelled("Autoscaling(schedules=...)"),
    )

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return _renamed(
            data,
            "autoscaling",
            {
                "safety_factor": "headroom",
                "min_instances": "min_capacity",
                "max_instances": "max_capacity",
                "target_concurrency_per_instance": "target_concurrency",
                "max_rps_per_instance": "max_requests_per_second",
            },
        )


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class AlarmSettings(StrictModel):
    """Alarm thresholds; unset ones come from the profile."""

    PROP_TYPE: ClassVar[str] = "AlarmThresholds"  # EndpointMonitoring's thresholds (peagle_cdk/endpoint_monitoring.py)

    enabled: bool = Field(default=True, description="the alarms and their SNS topic")
    emails: list[str] = Field(
        default=[],
        description="subscribed to the alarm topic (one KMS-encrypted, SSL-only SNS topic; each must confirm)",
    )
    latency_sla_p90_seconds: float | None = Field(
        default=None,
        gt=0,
        json_schema_extra=spelled("latency_sla"),
        description="the p90 ModelLatency the latency alarm and step scaling act on (formerly latency_p90_seconds); "
        "unset: the profile's latency SLA",
    )
    error_5xx_rate_percent: float = Field(
        default=1.0, gt=0, le=100, description="5xx share of invocations that alarms (and rolls a deploy back)"
    )
    error_4xx_rate_percent: float = Field(
        default=10.0, gt=0, le=100, description="4xx share that alarms (client errors, e.g. prompts over max_model_len)"
    )
    gpu_memory_percent: float = Field(
        default=95.0,
        gt=0,
        le=100,
        description="per GPU",
        json_schema_extra=spelled("AlarmThresholds(gpu_memory_percent_per_gpu=...)"),
    )
    min_acceptance_rate: float = Field(
        default=0.2, gt=0, lt=1, description="below it speculation costs more than it saves (drafter mismatch or off)"
    )
    kpi_missing_minutes: int = Field(
        default=10, ge=2, le=60, description="no KPI line for this long: container not reporting"
    )
    max_cost_per_million_output_tokens_usd: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="a budget: the cost alarm fires when the fleet's cost per 1M generated tokens (on-demand "
        "instance price, see instance.price_per_hour_usd) stays above it for 3 hours in a row (idle hours do not "
        "count); null: no cost alarm. The dashboard shows the figure either way",
    )

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return _renamed(data, "alarms", {"latency_p90_seconds": "latency_sla_p90_seconds"})

    @field_validator("emails")
    @classmethod
    def _emails(cls, value: list[str]) -> list[str]:
        bad = [address for address in value if not _EMAIL.match(address)]
        if bad:
            raise ValueError(f"not e-mail addresses: {bad}")
        return value


# CloudWatch Logs accepts only these retention periods.
LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)


class ObservabilitySettings(StrictModel):
    log_retention_days: int = Field(
        default=365,
        json_schema_extra=spelled("log_retention_days"),
        description="retention of the endpoint's log group (created by the stack, KMS-encrypted)",
    )
    kpi_interval_seconds: int = Field(
        default=60,
        ge=10,
        le=300,
        description="how often the launcher logs a KPI line",
        json_schema_extra=spelled("kpi_interval"),
    )
    metric_publish_frequency_seconds: Literal[10, 30, 60] = Field(
        default=60,
        json_schema_extra=spelled("metric_publish_frequency"),
        description="EndpointConfig.MetricsConfig.MetricPublishFrequencyInSeconds: how often SageMaker publishes the "
        "endpoint's invocation and utilization metrics. At most 60: the alarms and scaling policies read them in "
        "one-minute periods (SageMaker also takes 120-300, which they could not read)",
    )
    detailed_observability: bool = Field(
        default=True,
        json_schema_extra=spelled("detailed_observability"),
        description="SageMaker's detailed observability (EndpointConfig.MetricsConfig.EnableDetailedObservability, "
        "stated on every endpoint config: real-time, inference components and asynchronous): the container's /metrics, "
        "per-GPU and per-instance host metrics, published to CloudWatch as OpenTelemetry metrics (PromQL) and billed "
        "as such (docs/observability.md). A config that does not state it gets it on: false is the way to turn it off",
    )

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        if value not in LOG_RETENTION_DAYS:
            raise ValueError(
                f"{value} is not a CloudWatch Logs retention period; use one of {list(LOG_RETENTION_DAYS)}"
            )
        return value

    @field_validator("metric_publish_frequency_seconds", mode="before")
    @classmethod
    def _publish_frequency(cls, value: Any) -> Any:
        """SageMaker takes "Valid values: 10, 30, 60, 120, 180, 240, 300", and with EnableEnhancedMetrics True (set
        on every real-time endpoint config here) "this interval applies to both utilization and invocation
        metrics" (SageMaker API Reference, MetricsConfig,
        https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_MetricsConfig.html). The alarms and step
        scaling (peagle_cdk/endpoint_monitoring.py, peagle_cdk/endpoint_alarms.py, peagle_cdk/endpoint_scaling.py)
        evaluate those metrics in 60-second periods: "Period is the length of time to evaluate the metric ... If
        you choose one minute as the period, there is one datapoint every minute" (CloudWatch User Guide, "Using
        Amazon CloudWatch alarms", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html),
        and a period shorter than the data's interval "does not receive data for the attempts that do not
        correspond" to it (CloudWatch API Reference, PutMetricAlarm, Period). 10 and 30 s fill each minute; 120 s
        or more leave minutes empty, so "3 of 5 minutes" over the SLA cannot happen and the wake-up from zero
        copies waits. Refused here rather than followed: those periods are tuned and simulated in minutes."""
        if isinstance(value, int) and not isinstance(value, bool) and value in (120, 180, 240, 300):
            raise ValueError(
                f"{value} s is longer than the one-minute period of the alarms and scaling policies that read "
                "SageMaker's endpoint metrics (latency and error alarms, latency step scaling, the wake-up from and "
                f"the scale-in to zero copies): they would get a datapoint in one minute of every {value // 60} and "
                "fire late or not at all; set "
                + ", ".join(setting("observability.metric_publish_frequency_seconds", every) for every in (10, 30))
                + f" or {setting('observability.metric_publish_frequency_seconds', 60)} (the default)"
            )
        return value


class BlueGreenSettings(StrictModel):
    PROP_TYPE: ClassVar[str] = "Rollout.blue_green"

    traffic: Literal["auto", "canary", "linear", "all_at_once"] = Field(
        default="auto",
        description="auto: canary with two or more instances, all_at_once (with baking) with one, since a "
        "canary must be at most half the fleet",
    )
    canary_percent: int = Field(
        default=10, ge=1, le=50, description="share of the fleet taking traffic first (SageMaker: at most 50%)"
    )
    linear_step_percent: int = Field(default=25, ge=10, le=50, description="SageMaker allows 10-50% per step")
    wait_seconds: int = Field(
        default=600,
        ge=0,
        le=3600,
        description="baking time between traffic shifts",
        json_schema_extra=spelled("Rollout.blue_green(wait=...)"),
    )
    termination_wait_seconds: int = Field(
        default=600,
        ge=0,
        le=3600,
        description="keep the old fleet this long after 100%",
        json_schema_extra=spelled("Rollout.blue_green(termination_wait=...)"),
    )
    max_execution_seconds: int = Field(
        default=7200,
        ge=600,
        le=28800,
        description="the update's time limit; its waits must fit in it",
        json_schema_extra=spelled("Rollout.blue_green(max_execution=...)"),
    )


class RollingSettings(StrictModel):
    PROP_TYPE: ClassVar[str] = "Rollout.rolling"

    batch_percent: int = Field(
        default=25,
        ge=5,
        le=50,
        description="share of instances (or copies) replaced per step; SageMaker needs each batch to be at least "
        "one instance, so rolling is refused on a fleet that can shrink below 100 / batch_percent instances",
    )
    wait_seconds: int = Field(
        default=600,
        ge=0,
        le=3600,
        description="baking time after each batch",
        json_schema_extra=spelled("Rollout.rolling(wait=...)"),
    )
    rollback_batch_percent: int = Field(
        default=100, ge=1, le=100, description="share of instances rolled back per step"
    )
    max_execution_seconds: int = Field(
        default=7200,
        ge=600,
        le=28800,
        description="the update's time limit; its waits must fit in it",
        json_schema_extra=spelled("Rollout.rolling(max_execution=...)"),
    )


class RolloutSettings(StrictModel):
    """How endpoint updates roll out. Blue/green needs a second GPU fleet while it runs.

    ``none`` deploys without a DeploymentConfig: SageMaker's plain update (new fleet, then
    switch; no canary, no baking, no auto-rollback). It exists for the one change deployment
    guardrails refuse: adding or removing a variant (the A/B test on or off), since "your new
    endpoint configuration must have the same variant name as the old endpoint configuration"
    (https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-exclusions.html).
    `peagle preflight` says when it is needed.
    """

    # Default blue_green for variants; in endpoint.mode inference_components the default is rolling
    # (DeploymentConfig._components_roll_by_default).
    strategy: Literal["blue_green", "rolling", "none"] = Field(
        default="blue_green",
        json_schema_extra=spelled(
            "rollout",
            **{
                '"blue_green"': "rollout=Rollout.blue_green(...)",
                '"rolling"': "rollout=Rollout.rolling(...)",
                '"none"': "rollout=Rollout.none()",
            },
        ),
        description="blue_green: a second fleet takes the traffic under guardrails (the default with variants); "
        "rolling: batches of rolling.batch_percent, no second full GPU fleet (the default with inference "
        "components; not on multi-variant endpoints); none: SageMaker's plain update (above)",
    )
    blue_green: BlueGreenSettings = Field(
        default=BlueGreenSettings(), json_schema_extra=spelled("Rollout.blue_green(...)")
    )
    rolling: RollingSettings = Field(default=RollingSettings(), json_schema_extra=spelled("Rollout.rolling(...)"))
    auto_rollback: bool = Field(
        default=True,
        description="roll back when the 5xx or latency alarm fires during the update",
        json_schema_extra=spelled("Rollout...(auto_rollback=...)"),
    )


class InferenceComponentSettings(StrictModel):
    """Inference-component mode: the endpoint keeps managed instance scaling and each model runs as
    a component with its own GPUs, CPU and memory; copies and instances may scale to zero.

    Copies per instance, GPUs, CPU and memory per copy come from the plan (`peagle plan`)."""

    min_instances: int = Field(
        default=0,
        ge=0,
        le=100,
        description="managed instance scaling floor; 0: scale to zero",
        json_schema_extra=spelled("EndpointMode.inference_components(min_instances=...)"),
    )
    max_instances: PositiveInt = Field(
        default=2,
        le=100,
        description="managed instance scaling ceiling",
        json_schema_extra=spelled("EndpointMode.inference_components(max_instances=...)"),
    )
    initial_copies: PositiveInt = Field(
        default=1,
        description="copies started by the deploy",
        json_schema_extra=spelled("EndpointMode.inference_components(initial_copies=...)"),
    )
    accelerators_per_copy: PositiveInt | None = Field(
        default=None,
        json_schema_extra=spelled("EndpointMode.inference_components(accelerators_per_copy=...)"),
        description="GPUs per copy (vLLM tensor_parallel_size); unset: the fewest on which the profile's full "
        "context fits, else the fewest on which the model fits at all",
    )
    # On by default: nothing AWS publishes argues against it, and a scale-out copy may start sooner.
    # - What it does: EnableCaching "Sets whether the endpoint that hosts the inference component caches the model
    #   artifacts and container image. With caching enabled, the endpoint caches this data in each instance that it
    #   provisions for the inference component. That way, the inference component deploys faster during the auto
    #   scaling process. If caching isn't enabled, the inference component takes longer to deploy because of the
    #   time it spends downloading the data" (SageMaker API Reference, InferenceComponentDataCacheConfig,
    #   https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentDataCacheConfig.html).
    #   DescribeInferenceComponent reports it back: "Indicates whether the inference component caches model
    #   artifacts as part of the auto scaling process" (InferenceComponentDataCacheConfigSummary).
    # - Where it helps: "This approach reduced the cold start latency for scaling inference component operations
    #   that reuse existing instances"; a new instance is "the scenario where our previous instance-store-based
    #   caching couldn't help" ("Introducing container caching in Amazon SageMaker AI for faster model scaling",
    #   AWS Machine Learning Blog, 2026-06-16, https://aws.amazon.com/blogs/machine-learning/introducing-container-
    #   caching-in-amazon-sagemaker-ai-for-faster-model-scaling/; read in copies of the post, not on the AWS page).
    #   So a wake from zero, whose instances managed instance scaling released, gains nothing; `peagle simulate`
    #   runs the saving both ways (its data_cache reading): AWS gives no figure.
    # - What it costs: no charge, storage requirement (volume size, instance storage) or restriction (ModelName
    #   or container specification, scale to zero, managed instance scaling) is stated in the API reference pages
    #   above, InferenceComponentSpecification, or the CloudFormation reference; not verified against a pricing
    #   page, which this search did not reach. The cache is the instance's own storage, already paid for.
    # - Changing it: "Update requires: No interruption" (CloudFormation Template Reference, AWS::SageMaker::
    #   InferenceComponent InferenceComponentDataCacheConfig, https://docs.aws.amazon.com/AWSCloudFormation/latest/
    #   TemplateReference/aws-properties-sagemaker-inferencecomponent-inferencecomponentdatacacheconfig.html).
    data_cache: bool = Field(
        default=True,
        description="cache the model artifacts and the container image on each instance SageMaker provisions for "
        "the component, so a copy added on an instance that already hosts one starts without downloading them "
        "again (InferenceComponentDataCacheConfig.EnableCaching; changing it updates the component without "
        "interruption). On by default: AWS documents no charge or restriction for it. It does not help a copy "
        "that needs a new instance, such as a wake from zero after the instances were released",
        json_schema_extra=spelled("EndpointMode.inference_components(data_cache=...)"),
    )
    # Stated in every component's template (peagle_cdk/component_endpoint.py): AWS documents no default.
    # - The choice: InferenceComponentSchedulingConfig.PlacementStrategy "SPREAD Distributes copies evenly across
    #   available instances for better resilience. BINPACK Packs copies onto fewer instances to optimize resource
    #   utilization"; it decides "how inference component copies are placed across available instances when copies
    #   are added or removed" (botocore 1.44.5, SageMaker service-2.json; SageMaker API Reference,
    #   https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentSchedulingConfig.html). No
    #   default is stated there, in the CloudFormation schema or in the CDK's CfnInferenceComponent.
    # - Why BINPACK: the endpoint's managed instance scaling releases instances with IDLE_RELEASE, "Releases instances
    #   that have no hosted inference component copies" (API_ProductionVariantManagedInstanceScalingScaleInPolicy):
    #   only an emptied instance stops being billed, and BINPACK is the strategy that empties them. SPREAD can leave one
    #   copy on each instance after a scale-in, and every such instance billed (docs/inference-components.md).
    # - Changing it: AWS::SageMaker::InferenceComponent has no createOnlyProperties (CloudFormation resource schema),
    #   so the component is updated in place (UpdateInferenceComponent).
    placement: Literal["BINPACK", "SPREAD"] = Field(
        default="BINPACK",
        description="how SageMaker places the component's copies on the instances (SchedulingConfig.PlacementStrategy"
        "). BINPACK (the default): as few instances as hold them, so a scale-in empties instances and managed instance "
        "scaling (IDLE_RELEASE) releases them. SPREAD: evenly over the instances, for resilience; after a scale-in an "
        "instance that still holds one copy is kept and billed whole (`peagle simulate` and the cost alarm count it)",
        json_schema_extra=spelled("EndpointMode.inference_components(placement=...)"),
    )
    scale_to_zero_after_idle_minutes: int | None = Field(
        default=None,
        ge=5,
        le=1440,
        json_schema_extra=spelled("EndpointMode.inference_components(scale_to_zero_after=...)"),
        description="with autoscaling.min_capacity 0 (copies): no request (served or refused) for this long removes the last copy; unset: "
        "the copy's start budget + 2 min (`peagle plan` prints it), the shortest window that never removes a copy "
        "before it serves; longer keeps a copy warm longer (cost) and saves cold starts (waits)",
    )


# SageMaker's routing strategies (SageMaker API Reference, ProductionVariantRoutingConfig,
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantRoutingConfig.html): "Valid Values:
# LEAST_OUTSTANDING_REQUESTS | RANDOM | PREFIX_AWARE"; "PREFIX_AWARE: The endpoint routes requests that share the same
# prompt prefix to the same instance. When the number of in-flight requests on the selected instance reaches the
# configured threshold, the endpoint routes the request to an instance with more available capacity." botocore
# 1.44.5's RoutingStrategy enum also lists KV_AWARE, which no AWS document describes: not offered.
ROUTING_STRATEGIES = ("LEAST_OUTSTANDING_REQUESTS", "RANDOM", "PREFIX_AWARE")
# PrefixAwareRoutingConfig (API_PrefixAwareRoutingConfig.html): PrefixLength "Valid Range: Minimum value of 1024.
# Maximum value of 65536", ConcurrencyThreshold "Valid Range: Minimum value of 1. Maximum value of 1024"; both
# "Required when RoutingStrategy is PREFIX_AWARE", and the config is given "only when you set RoutingStrategy to
# PREFIX_AWARE" (API_ProductionVariantRoutingConfig.html).
PREFIX_LENGTH_RANGE = (1024, 65536)
CONCURRENCY_THRESHOLD_RANGE = (1, 1024)


class RoutingSettings(StrictModel):
    """How SageMaker spreads a real-time endpoint's requests over its instances (each production variant's
    RoutingConfig; with inference components, the instance pool's). Changing any of it replaces the endpoint config:
    `peagle preflight` says what that update does (docs/preflight.md, rule routing)."""

    PROP_TYPE: ClassVar[str] = "Routing"  # PeagleEndpoint's routing prop (peagle_cdk/endpoint_props.py)

    strategy: Literal["LEAST_OUTSTANDING_REQUESTS", "RANDOM", "PREFIX_AWARE"] = Field(
        default="LEAST_OUTSTANDING_REQUESTS",
        json_schema_extra=spelled(
            "routing",
            **{
                '"LEAST_OUTSTANDING_REQUESTS"': "routing=Routing.least_outstanding_requests()",
                '"RANDOM"': "routing=Routing.random()",
                '"PREFIX_AWARE"': "routing=Routing.prefix_aware(prefix_length=...)",
            },
        ),
        description="LEAST_OUTSTANDING_REQUESTS: to the instance with the fewest requests in flight (LLM requests "
        "vary 100x in length); RANDOM; PREFIX_AWARE: requests whose first prefix_length bytes match go to the same "
        "instance, whose vLLM prefix cache then serves the shared part (needs prefix caching on, which the pair "
        "must allow: docs/routing.md)",
    )
    prefix_length: int | None = Field(
        default=None,
        json_schema_extra=spelled("Routing.prefix_aware(prefix_length=...)"),
        description="PREFIX_AWARE only, required: how much of each request decides its instance, 1024-65536 (bytes "
        "of the InvokeEndpoint body; characters of the messages for the OpenAI-compatible API). Cover the shared "
        "part (the JSON up to and including the system prompt) plus some of what differs, or every request lands "
        "on one instance",
    )
    concurrency_threshold: int | None = Field(
        default=None,
        json_schema_extra=spelled("Routing.prefix_aware(concurrency_threshold=...)"),
        description="PREFIX_AWARE only: requests in flight on the prefix's instance before SageMaker sends the next "
        "one elsewhere, 1-1024; unset: the requests one instance's engines run at once (max_num_seqs x replicas "
        "per instance, `peagle plan` prints it), so a request spills over rather than queue inside vLLM",
    )

    @field_validator("strategy", mode="before")
    @classmethod
    def _strategy(cls, value: Any) -> Any:
        if value not in ROUTING_STRATEGIES:
            why = (
                " (botocore lists KV_AWARE, but no AWS document says what it does: not offered)"
                if value == "KV_AWARE"
                else ""
            )
            raise ValueError(
                f"{value!r} is not a routing strategy SageMaker documents{why}; use one of "
                f"{', '.join(ROUTING_STRATEGIES)} (SageMaker API Reference, ProductionVariantRoutingConfig)"
            )
        return value

    @field_validator("prefix_length", "concurrency_threshold", mode="before")
    @classmethod
    def _in_range(cls, value: Any, info) -> Any:
        if value is None:
            return value
        low, high = PREFIX_LENGTH_RANGE if info.field_name == "prefix_length" else CONCURRENCY_THRESHOLD_RANGE
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            aws = "PrefixLength" if info.field_name == "prefix_length" else "ConcurrencyThreshold"
            raise ValueError(
                f"{value!r} is outside SageMaker's range for {aws}: a whole number {low}-{high} "
                "(SageMaker API Reference, PrefixAwareRoutingConfig)"
            )
        return value

    @model_validator(mode="after")
    def _prefix_aware_fields(self) -> RoutingSettings:
        given = [name for name in ("prefix_length", "concurrency_threshold") if getattr(self, name) is not None]
        if self.strategy != "PREFIX_AWARE" and given:
            raise ValueError(
                f"{' and '.join(setting('endpoint.routing.' + name) for name in given)} apply to prefix-aware routing "
                f'only (SageMaker takes PrefixAwareRoutingConfig "only when you set RoutingStrategy to PREFIX_AWARE"); '
                f"set {setting('endpoint.routing.strategy', 'PREFIX_AWARE')} or remove them"
            )
        if self.strategy == "PREFIX_AWARE" and self.prefix_length is None:
            raise ValueError(
                f"prefix-aware routing needs {setting('endpoint.routing.prefix_length')} (SageMaker: PrefixLength is "
                '"Required when RoutingStrategy is PREFIX_AWARE"): how many bytes of each request body decide its '
                f"instance, 1024-65536; e.g. {setting('endpoint.routing.prefix_length', 4096)} when the system prompt "
                "is under ~4000 characters"
            )
        return self


class EndpointSettings(StrictModel):
    mode: Literal["variants", "inference_components"] = Field(
        default="variants",
        json_schema_extra=spelled(
            "mode",
            **{
                '"variants"': "mode=EndpointMode.variants()",
                '"inference_components"': "mode=EndpointMode.inference_components(...)",
            },
        ),
        description="variants: production variants, one model replica per instance, at least one instance "
        "always running; inference_components: the model as a component, several copies per instance, "
        "copies and instances may scale to zero",
    )
    inference_components: InferenceComponentSettings = Field(
        default=InferenceComponentSettings(), json_schema_extra=spelled("mode=EndpointMode.inference_components(...)")
    )
    routing: RoutingSettings = Field(
        default=RoutingSettings(),
        json_schema_extra=spelled("routing=Routing...(...)"),
        description="how SageMaker spreads requests over the instances (real-time endpoints)",
    )


class AbTestSettings(StrictModel):
    """A second production variant serving the same target with another K (0 = no speculation)."""

    enabled: bool = Field(
        default=False,
        json_schema_extra=spelled("ab_baseline", true="ab_baseline=AbBaseline(...)", false="ab_baseline=None"),
        description="adds a Baseline production variant and an A/B dashboard row (the measured speedup, Baseline "
        "TPOT / Primary TPOT); turning it on or off adds or removes a variant: deploy that change with "
        "rollout.strategy none",
    )
    baseline_speculative_tokens: int = Field(
        default=0,
        ge=0,
        le=64,
        description="the Baseline variant's K; 0: no speculation",
        json_schema_extra=spelled("AbBaseline(speculative_tokens=...)"),
    )
    baseline_traffic_percent: float = Field(
        default=50.0,
        gt=0,
        lt=100,
        description="share of traffic the Baseline gets",
        json_schema_extra=spelled("AbBaseline(traffic_percent=...)"),
    )
    baseline_instance_count: PositiveInt = Field(
        default=1,
        json_schema_extra=spelled("AbBaseline(instance_count=...)"),
        description="the Baseline's fixed instance count; autoscaling and alarms follow the Primary variant",
    )


class BatchSettings(StrictModel):
    """Batch Transform over JSONL in S3 (`peagle batch`); the Model's role may read input and write output.

    Off by default: no Batch Transform host runs the CUDA 13 serving image (see
    peagle/catalog/runtime.yaml); synth refuses ``enabled: true`` while that holds and says
    what works instead.
    """

    enabled: bool = Field(
        default=False, description="refused while no Batch Transform host runs the image (today: none does)"
    )
    input_prefix: str = Field(
        default="batch/input/",
        pattern=r"^[A-Za-z0-9!_.*'()/-]+/$",
        description="key prefix the role may read (stack output BatchInputS3Uri)",
    )
    output_prefix: str = Field(
        default="batch/output/", pattern=r"^[A-Za-z0-9!_.*'()/-]+/$", description="key prefix the role may write"
    )


class AsyncInferenceSettings(StrictModel):
    """A second, asynchronous endpoint on the same Model for long jobs (results to S3, SNS on done/failed)."""

    enabled: bool = Field(
        default=False,
        json_schema_extra=spelled(
            "PeagleEndpoint.add_async_endpoint(...)",
            true="a PeagleEndpoint.add_async_endpoint(...) call",
            false="no PeagleEndpoint.add_async_endpoint() call",
        ),
        description="a second endpoint (<name>-async) on the same Model, e.g. for long summarisation: requests "
        "queue, results land under async/output/, SNS topics report success and failure",
    )
    # A construct user sets these as PeagleEndpoint.add_async_endpoint's keyword arguments.
    max_concurrent_invocations_per_instance: int = Field(
        default=4,
        ge=1,
        le=1000,
        description="requests each instance works on at once",
        json_schema_extra=spelled("add_async_endpoint(max_concurrent_invocations_per_instance=...)"),
    )
    min_instances: int = Field(
        default=0,
        ge=0,
        le=100,
        description="0: scale to zero when the queue is empty",
        json_schema_extra=spelled("add_async_endpoint(min_instances=...)"),
    )
    max_instances: PositiveInt = Field(
        default=2,
        le=100,
        description="scaling ceiling of the async endpoint",
        json_schema_extra=spelled("add_async_endpoint(max_instances=...)"),
    )
    target_backlog_per_instance: float = Field(
        default=4.0,
        gt=0,
        description="queued requests per instance the backlog target tracking aims at",
        json_schema_extra=spelled("add_async_endpoint(target_backlog_per_instance=...)"),
    )


class CaptureSettings(StrictModel):
    """A sample of the endpoint's requests, what `peagle prompts` turns into a prompts file (docs/production-loop.md,
    "Capture"). ``method`` data_capture: SageMaker Data Capture on the real-time endpoint (variants mode), the requests
    (and, on request, the responses) written as JSON lines under a prefix of a bucket the stack creates, expired after
    ``expire_after_days``. ``method`` request_log: the container prints the sampled requests to the endpoint's log
    group (peagle_serve/request_log.py), for an account that may not be able to use Data Capture."""

    # Who may use Data Capture: AWS closed Model Monitor to new customers ("After careful consideration, we have made
    # the decision to close new customer access to Amazon Sagemaker Model Monitor, effective 7/30/26. Existing
    # customers can continue to use the service as normal", SageMaker Developer Guide, Model Monitor pages), and the
    # "Data capture" page carries the same notice ("Amazon SageMaker Model Monitor is no longer open to new
    # customers", model-monitor-data-capture.md). Neither that notice, the availability-change page
    # (model-monitor-availability-change.md) nor the API reference (DataCaptureConfig, CreateEndpointConfig; botocore
    # 1.44.5) says whether an account new to Model Monitor may set DataCaptureConfig on an endpoint: not stated by
    # AWS. Hence method request_log, which needs nothing of SageMaker's but the endpoint's log group.

    # SageMaker's rules (SageMaker API Reference, DataCaptureConfig,
    # https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DataCaptureConfig.html; botocore 1.44.5):
    # InitialSamplingPercentage "The percentage of requests SageMaker AI will capture", "Valid Range: Minimum value of
    # 0. Maximum value of 100"; CaptureOptions: CaptureMode "Valid Values: Input | Output | InputAndOutput"
    # (API_CaptureOption.html); KmsKeyId: "The Amazon Resource Name (ARN) of an AWS Key Management Service key that
    # SageMaker AI uses to encrypt the captured data at rest using Amazon S3 server-side encryption". What the
    # construct builds from these settings, and why: peagle_cdk/data_capture.py.

    PROP_TYPE: ClassVar[str] = "DataCapture"  # PeagleEndpoint's capture prop (peagle_cdk/endpoint_props.py)

    enabled: bool = Field(
        default=False,
        json_schema_extra=spelled(
            "capture",
            true="capture=DataCapture(...)",
            false="capture=None",
        ),
        description="off by default: captured requests are your users' prompts. On: the endpoint config gets a "
        "DataCaptureConfig (method data_capture), or the container its request log (method request_log); either "
        "replaces the endpoint config or the model and rolls the endpoint out (docs/production-loop.md)",
    )
    method: Literal["data_capture", "request_log"] = Field(
        default="data_capture",
        json_schema_extra=spelled("DataCapture(method=...)"),
        description="data_capture: SageMaker Data Capture into a bucket of the stack's (AWS does not say whether an "
        "account new to Model Monitor may use it, docs/production-loop.md). request_log: the container prints the "
        "sampled requests (prompt or messages and sampling parameters only, other keys by name) to the endpoint's "
        "CloudWatch Logs group, kept observability.log_retention_days and encrypted with the log group's key; no "
        "SageMaker feature needed, works under network isolation and in inference_components mode; `peagle prompts "
        "--from-logs` reads it. request_log takes mode request only and no kms_key_arn",
    )
    sampling_percentage: int = Field(
        default=10,
        description="share of requests captured, 1-100 (SageMaker's InitialSamplingPercentage; with request_log the "
        "container's PEAGLE_REQUEST_LOG_SAMPLING_PERCENT); it bounds the S3 objects, PUT requests and storage, or the "
        "log lines ingested and stored, capture costs",
    )
    mode: Literal["request", "request_and_response"] = Field(
        default="request",
        description="request: the request bodies only (CaptureMode Input; all `peagle prompts` needs); "
        "request_and_response: the responses too (Input and Output; output token counts, and the answers your "
        "users got, stored as well)",
    )
    # At least 1: S3's LifecycleExpiration Days "The value must be a non-zero positive integer" (Amazon S3 API
    # Reference; botocore 1.44.5). At most 3650: our bound, not S3's; ten years is no longer a sample kept to size an
    # endpoint.
    expire_after_days: int = Field(
        default=30,
        ge=1,
        le=3650,
        json_schema_extra=spelled("DataCapture(expire_after=Duration.days(...))"),
        description="the capture bucket's lifecycle rule deletes captured objects this many days after they were "
        "written (their noncurrent versions one day later). With request_log the lines stay as long as the endpoint's "
        "log group keeps its logs, which must not be longer: observability.log_retention_days <= this",
    )
    kms_key_arn: str | None = Field(
        default=None,
        json_schema_extra=spelled("DataCapture(key=...)"),
        description="a KMS key ARN (not an alias: the role's grant names the key) that encrypts the capture bucket "
        "and the captured objects; its key policy must let the endpoint's role use it. Null: a new KMS key "
        "of the stack's, with rotation",
    )

    @field_validator("sampling_percentage", mode="before")
    @classmethod
    def _sampling(cls, value: Any) -> Any:
        # SageMaker takes 0-100 (above); 0 captures nothing, which turning capture off says better.
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100:
            why = (
                "0 would capture nothing"
                if value == 0 and not isinstance(value, bool)
                else "SageMaker's InitialSamplingPercentage is a whole number of percent, 0-100 (SageMaker API "
                "Reference, DataCaptureConfig)"
            )
            raise ValueError(
                f"{value!r} is not a share of requests to capture: {why}; set a whole number 1-100 (e.g. "
                f"{setting('capture.sampling_percentage', 10)}), or {setting('capture.enabled', False)} to capture nothing"
            )
        return value

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, value: Any) -> Any:
        # CaptureMode "Valid Values: Input | Output | InputAndOutput" (SageMaker API Reference, CaptureOption); the
        # responses alone (Output) hold no prompt, so they are not offered.
        if value not in ("request", "request_and_response"):
            raise ValueError(
                f"{value!r} is not a capture mode; use 'request' (SageMaker's CaptureMode Input: the prompts and "
                "their sampling settings) or 'request_and_response' (Input and Output: the answers too). Capturing "
                "responses alone (Output) is not offered: they hold no prompt to replay"
            )
        return value

    @field_validator("kms_key_arn", mode="before")
    @classmethod
    def _key_arn(cls, value: Any) -> Any:
        if value is not None and not (isinstance(value, str) and _KMS_KEY_ARN.match(value)):
            raise ValueError(
                f"{value!r} is not a KMS key ARN; give arn:aws:kms:<region>:<account>:key/<key-id> (SageMaker also "
                "takes a key id or an alias, but the endpoint role's kms:GenerateDataKey grant must name the key "
                "itself), or leave it unset for a new key"
            )
        return value

    @model_validator(mode="after")
    def _request_log_takes(self) -> CaptureSettings:
        """What the request log cannot do: it logs requests only, into the endpoint's log group and its key."""
        if not self.enabled or self.method != "request_log":
            return self
        problems = []
        if self.mode != "request":
            problems.append(
                f"{setting('capture.mode', self.mode)} needs Data Capture; the container's request log holds the "
                f"requests only: use {setting('capture.mode', 'request')}, or {setting('capture.method', 'data_capture')}"
            )
        if self.kms_key_arn is not None:
            problems.append(
                f"{setting('capture.kms_key_arn')} encrypts the Data Capture bucket; the request log is in the "
                "endpoint's CloudWatch Logs group, encrypted with that group's own key (created by the stack, with "
                f"rotation): leave it unset, or use {setting('capture.method', 'data_capture')}"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def uses_data_capture(self) -> bool:
        """The endpoint config gets a DataCaptureConfig (and the stack a capture bucket)."""
        return self.enabled and self.method == "data_capture"

    @property
    def request_log_sampling_percentage(self) -> int:
        """The container's request log share, in percent; 0: off."""
        return self.sampling_percentage if self.enabled and self.method == "request_log" else 0


_KMS_KEY_ARN = re.compile(r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+$")


class DeploymentConfig(StrictModel):
    name: str = Field(
        default="peagle",
        json_schema_extra=spelled("name"),
        pattern=r"^[a-z][a-z0-9-]{0,23}$",
        description="lower-case prefix of stack, endpoint and bucket names (<name>-endpoint, "
        "<name>-models-<account>-<region>), so several deployments can live in one account",
    )
    model: str = Field(
        default="gpt-oss-20b",
        description="a catalog pair id or a key of custom_pairs",
        json_schema_extra=spelled("model", flag="--model"),
    )
    custom_pairs: dict[str, ModelPair] = Field(
        default={},
        json_schema_extra=spelled("custom_pair"),
        description="model pairs only this deployment needs, by id, with the fields of peagle/catalog/pairs.yaml "
        "and the same validation; model may then name one",
    )
    custom_instances: dict[str, InstanceType] = Field(
        default={},
        json_schema_extra=spelled("instance_facts"),
        description="instance types the catalog lacks, by SageMaker name, with their GPU facts (the fields of "
        "peagle/catalog/instances.yaml); instance.type may then name one",
    )
    instance: InstanceSettings = InstanceSettings()
    endpoint: EndpointSettings = EndpointSettings()
    profile: ProfileName = Field(
        default=ProfileName.CHATBOT,
        json_schema_extra=spelled("profile", flag="--profile"),
        description="the workload profile (peagle/catalog/profiles.yaml): sampling, context, concurrency, "
        "latency SLA and SLO the planner sizes for",
    )
    profile_overrides: ProfileOverrides = Field(
        default=ProfileOverrides(),
        json_schema_extra=spelled("profile_overrides"),
        description="sampling, context, concurrency and SLA of the profile, overridden",
    )
    slo: SloSettings = Field(default=SloSettings(), json_schema_extra=spelled("slo"))
    speculation: SpeculationSettings = Field(default=SpeculationSettings(), json_schema_extra=spelled("speculation"))
    artifacts: ArtifactsSettings = Field(default=ArtifactsSettings(), json_schema_extra=spelled("weights"))
    network: NetworkSettings = NetworkSettings()
    image: ImageSettings = ImageSettings()
    timeouts: TimeoutSettings = Field(
        default=TimeoutSettings(), description="model download and container start-up; unset: sized from the weights"
    )
    autoscaling: AutoscalingSettings = Field(default=AutoscalingSettings(), json_schema_extra=spelled("autoscaling"))
    alarms: AlarmSettings = AlarmSettings()
    observability: ObservabilitySettings = ObservabilitySettings()
    rollout: RolloutSettings = Field(default=RolloutSettings(), json_schema_extra=spelled("rollout"))
    ab_test: AbTestSettings = Field(default=AbTestSettings(), json_schema_extra=spelled("ab_baseline"))
    batch: BatchSettings = BatchSettings()
    async_inference: AsyncInferenceSettings = AsyncInferenceSettings()
    capture: CaptureSettings = Field(default=CaptureSettings(), json_schema_extra=spelled("capture"))
    vllm_args: dict[str, bool | int | float | str] = Field(
        default={},
        json_schema_extra=spelled("vllm_args"),
        description="extra vLLM flags (name without '--'), passed through as SM_VLLM_*",
    )

    @model_validator(mode="before")
    @classmethod
    def _latency_sla_moved(cls, data: object) -> object:
        """One key for the latency SLA: profile_overrides.latency_sla_p90_seconds still loads, as
        alarms.latency_sla_p90_seconds, with a FutureWarning."""
        if not isinstance(data, dict) or not isinstance(data.get("profile_overrides"), dict):
            return data
        overrides = dict(data["profile_overrides"])
        if "latency_sla_p90_seconds" not in overrides:
            return data
        alarms = data.get("alarms", {})
        if isinstance(alarms, dict) and "latency_sla_p90_seconds" in alarms:
            raise ValueError(
                "profile_overrides.latency_sla_p90_seconds is the old place of alarms.latency_sla_p90_seconds; give "
                "only alarms.latency_sla_p90_seconds"
            )
        warnings.warn(
            "profile_overrides.latency_sla_p90_seconds is deprecated: it is now alarms.latency_sla_p90_seconds (the "
            "same meaning); move it in the deployment file",
            FutureWarning,
            stacklevel=2,
        )
        value = overrides.pop("latency_sla_p90_seconds")
        alarms = {**alarms, "latency_sla_p90_seconds": value} if isinstance(alarms, dict) else alarms
        return {**data, "profile_overrides": overrides, "alarms": alarms}

    @model_validator(mode="before")
    @classmethod
    def _copy_bounds_moved(cls, data: object) -> object:
        """The copy bounds and target of inference_components mode are the scaling settings of both modes now
        (autoscaling.min_capacity, max_capacity, target_concurrency); the old keys still load, with a FutureWarning."""
        if not isinstance(data, dict) or not isinstance(data.get("endpoint"), dict):
            return data
        components = data["endpoint"].get("inference_components")
        if not isinstance(components, dict):
            return data
        moves = {
            "min_copies": "min_capacity",
            "max_copies": "max_capacity",
            "target_concurrency_per_copy": "target_concurrency",
        }
        if not set(moves) & set(components):
            return data
        scaling = data.get("autoscaling", {})
        scaling = dict(scaling) if isinstance(scaling, dict) else scaling
        components = dict(components)
        for old, new in moves.items():
            if old not in components:
                continue
            if isinstance(scaling, dict) and new in scaling:
                raise ValueError(
                    f"endpoint.inference_components.{old} is the old place of autoscaling.{new}; give only autoscaling.{new}"
                )
            warnings.warn(
                f"endpoint.inference_components.{old} is deprecated: it is now autoscaling.{new} (the same words in "
                "both modes: copies here); move it in the deployment file",
                FutureWarning,
                stacklevel=2,
            )
            value = components.pop(old)
            if isinstance(scaling, dict):
                scaling[new] = value
        return {**data, "endpoint": {**data["endpoint"], "inference_components": components}, "autoscaling": scaling}

    @model_validator(mode="before")
    @classmethod
    def _components_roll_by_default(cls, data: object) -> object:
        # InferenceComponentDeploymentConfig has one policy, RollingUpdatePolicy (botocore 1.44.5 SageMaker
        # model; 'required': ['RollingUpdatePolicy']). So a components-mode file that names no
        # rollout.strategy gets 'rolling', where variants get 'blue_green'; naming blue_green is refused.
        if not isinstance(data, dict):
            return data
        endpoint, rollout = data.get("endpoint"), data.get("rollout", {})
        # The endpoint section as a file gives it (a mapping) or as the props build it (EndpointSettings).
        mode = endpoint.get("mode") if isinstance(endpoint, dict) else getattr(endpoint, "mode", None)
        if mode == "inference_components" and isinstance(rollout, dict) and "strategy" not in rollout:
            return {**data, "rollout": {**rollout, "strategy": "rolling"}}
        return data

    @model_validator(mode="after")
    def _names_exist(self) -> DeploymentConfig:
        catalog = load_catalog()
        problems = []
        clashes = sorted(set(self.custom_pairs) & set(catalog.pairs))
        if clashes:
            problems.append(f"{setting('custom_pairs')} redefine catalog pairs {clashes}; pick new ids")
        pairs = sorted({*catalog.pairs, *self.custom_pairs})
        if self.model not in pairs:
            problems.append(
                f"{setting('model')} {self.model!r} is not a known pair; use one of {pairs} or declare it with "
                f"{setting('custom_pairs')}"
            )
        clashes = sorted(set(self.custom_instances) & set(catalog.instances))
        if clashes:
            problems.append(
                f"{setting('custom_instances')} redefine catalog instance types {clashes}; leave them to the catalog"
            )
        if self.instance.type in catalog.excluded_instances:
            problems.append(
                f"{setting('instance.type')} {self.instance.type!r} cannot serve: "
                f"{catalog.excluded_instances[self.instance.type]}"
            )
        elif self.instance.type not in catalog.instances and self.instance.type not in self.custom_instances:
            problems.append(
                f"{setting('instance.type')} {self.instance.type!r} is not in the instance catalog; "
                f"use one of {sorted(catalog.instances)}, or give its GPU facts with {setting('custom_instances')}"
            )
        for name in self.vllm_args:
            if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
                problems.append(
                    f"{setting('vllm_args')} key {name!r} must be a vLLM flag name like 'max-num-batched-tokens'"
                )
        if self.model in pairs:
            problems += self._speculation_problems()
        problems += self._scaling_problems()
        if self.ab_test.enabled and self.rollout.strategy == "rolling" and not self.uses_inference_components:
            problems.append(
                f"{setting('rollout.strategy', 'rolling')} is not supported on multi-variant endpoints "
                f"({setting('ab_test.enabled', True)}); use {setting('rollout.strategy', 'blue_green')} or turn the "
                "A/B test off"
            )
        problems += self._rollout_problems()
        problems += self._component_problems()
        problems += self._request_log_problems()
        if self.artifacts.source == "hub":
            if self.network.isolation:
                problems.append(
                    f"{setting('artifacts.source', 'hub')} downloads weights inside the container, which network "
                    f"isolation forbids; set {setting('network.isolation', False)}, or stage the weights to S3 with "
                    f"`peagle stage` and use {setting('artifacts.source', 's3')}"
                )
            if self.artifacts.s3_uri:
                problems.append("artifacts.s3_uri is only used with source 's3'; remove it or use source 's3'")
        elif self.artifacts.hf_token_secret_arn:
            problems.append(
                f"{setting('artifacts.hf_token_secret_arn')} is only used with {setting('artifacts.source', 'hub')} "
                "(for S3 weights, `peagle stage` reads the token on your machine)"
            )
        if self.async_inference.min_instances > self.async_inference.max_instances:
            problems.append(
                f"async_inference.min_instances {self.async_inference.min_instances} > max_instances "
                f"{self.async_inference.max_instances}"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def _speculation_problems(self) -> list[str]:
        # The shape and trained-K rules are the container contract's, quoted there with vLLM's source;
        # coverage of max_num_seqs needs the plan (peagle/deployment_rules.py, rule speculation-schedule).
        schedule = self.speculation.schedule
        if schedule is None:
            return []
        bands = [band.as_tuple() for band in schedule]
        problems = [
            f"{setting('speculation.schedule')}: {problem}"
            for problem in schedule_problems(bands, trained_k=self.pair().drafter.trained_k)
        ]
        k, largest = self.speculation.speculative_tokens, max((band[2] for band in bands), default=0)
        if k is not None and k != largest:
            problems.append(
                f"{setting('speculation.speculative_tokens', k)} conflicts with {setting('speculation.schedule')}, "
                f"whose largest K is {largest}: with a schedule, K is that largest K (vLLM's num_speculative_tokens, "
                f"the most any band may draft); give only the schedule, or K {largest}"
                + (", or remove the schedule to turn speculation off" if k == 0 else "")
            )
        return problems

    def _scaling_problems(self) -> list[str]:
        scaling, count = self.autoscaling, self.instance.count
        if not scaling.enabled or self.uses_inference_components:
            return []
        problems = []
        low, high = self.min_capacity, self.max_capacity
        if low == 0:
            problems.append(
                f"{setting('autoscaling.min_capacity', 0)}: a production variant keeps at least one instance; to scale "
                f"to zero, use {setting('endpoint.mode', 'inference_components')}, whose copies may scale to 0"
            )
        elif high is not None and not low <= count <= high:
            problems.append(
                f"{setting('autoscaling.min_capacity')} ({low}) <= {setting('instance.count')} ({count}) <= "
                f"{setting('autoscaling.max_capacity')} ({high}) does not hold: the deploy starts that many instances "
                f"within the scaling bounds; adjust the bounds or the count (or {setting('autoscaling.enabled', False)})"
            )
        if scaling.target == "invocations" and scaling.max_requests_per_second is None:
            problems.append(
                f"{setting('autoscaling.target', 'invocations')} needs {setting('autoscaling.max_requests_per_second')}: "
                "measure it with `peagle capacity` (the highest requests/s that still meets your SLO), or scale on "
                "requests in flight (the default)"
            )
        for schedule in scaling.schedules:
            if schedule.min_capacity > schedule.max_capacity:
                problems.append(
                    f"{setting('autoscaling.schedules')}[{schedule.name}]: min_capacity {schedule.min_capacity} > "
                    f"max_capacity {schedule.max_capacity}"
                )
        if len({schedule.name for schedule in scaling.schedules}) != len(scaling.schedules):
            problems.append(f"{setting('autoscaling.schedules')}: names must be unique")
        return problems

    @property
    def uses_inference_components(self) -> bool:
        return self.endpoint.mode == "inference_components"

    @property
    def min_capacity(self) -> int:
        """The scaling floor in serving units (instances, or copies in inference_components mode): the one given,
        else 1 instance or 0 copies; with autoscaling off, the units the deploy starts (nothing scales them)."""
        given = self.autoscaling.min_capacity
        if given is not None:
            return given
        if not self.autoscaling.enabled:
            return (
                self.endpoint.inference_components.initial_copies
                if self.uses_inference_components
                else self.instance.count
            )
        return 0 if self.uses_inference_components else 1

    @property
    def max_capacity(self) -> int | None:
        """The scaling ceiling in serving units: the one given, else 2 instances; copies: None, as many as
        endpoint.inference_components.max_instances hold (the plan knows how many that is)."""
        given = self.autoscaling.max_capacity
        if given is not None or self.uses_inference_components:
            return given
        return 2 if self.autoscaling.enabled else self.instance.count

    def _component_problems(self) -> list[str]:
        """Settings that mean one mode given in the other, and component bounds that contradict each other.
        SageMaker's own rules for the mode are peagle/deployment_rules.py's (rule inference-components)."""
        components = self.endpoint.inference_components
        if not self.uses_inference_components:
            if "inference_components" in self.endpoint.model_fields_set:
                return [
                    f"{setting('endpoint.inference_components')} is set but endpoint.mode is 'variants'; set "
                    f"{setting('endpoint.mode', 'inference_components')}, or remove it"
                ]
            return []
        problems = []
        if "schedules" in self.autoscaling.model_fields_set and self.autoscaling.schedules:
            problems.append(
                f"{setting('autoscaling.schedules')} scale production variants' instances; in inference_components "
                f"mode bound the copies with {setting('autoscaling.min_capacity')} and "
                f"{setting('autoscaling.max_capacity')}, and the instances with "
                f"{setting('endpoint.inference_components.max_instances')}"
            )
        if components.min_instances > components.max_instances:
            problems.append(
                f"{setting('endpoint.inference_components.min_instances')} {components.min_instances} > "
                f"{setting('endpoint.inference_components.max_instances')} {components.max_instances}"
            )
        if not components.min_instances <= self.instance.count <= components.max_instances:
            problems.append(
                f"{setting('instance.count')} {self.instance.count} (the instances the deploy starts) must lie within "
                f"{setting('endpoint.inference_components.min_instances')} {components.min_instances} .. "
                f"{setting('endpoint.inference_components.max_instances')} {components.max_instances}"
            )
        low, top, initial = self.min_capacity, self.max_capacity, components.initial_copies
        if top is not None and not low <= initial <= top:
            problems.append(
                f"copies need {setting('autoscaling.min_capacity')} <= "
                f"{setting('endpoint.inference_components.initial_copies')} <= {setting('autoscaling.max_capacity')}; "
                f"given {low} <= {initial} <= {top}"
            )
        elif low > initial:
            problems.append(
                f"{setting('autoscaling.min_capacity')} {low} copies > "
                f"{setting('endpoint.inference_components.initial_copies')} {initial}; raise initial_copies"
            )
        # InferenceComponentDeploymentConfig has one policy, RollingUpdatePolicy (botocore 1.44.5 SageMaker
        # model; 'required': ['RollingUpdatePolicy']): a component has no blue/green update.
        if self.rollout.strategy == "blue_green":
            problems.append(
                f"{setting('rollout.strategy', 'blue_green')} shifts traffic between production variants; an "
                f"inference component updates copy by copy: use {setting('rollout.strategy', 'rolling')} or "
                f"{setting('rollout.strategy', 'none')}"
            )
        # Our choice, not a quoted rule: no AWS document we found describes an asynchronous endpoint
        # beside inference components, and async_inference builds a second, variants-mode endpoint.
        if self.async_inference.enabled:
            problems.append(
                "async_inference runs a second endpoint with production variants; in inference_components mode "
                "turn it off (async_inference.enabled: false) or deploy it from a variants-mode deployment file"
            )
        if self.capture.uses_data_capture:
            problems.append(_CAPTURE_NEEDS_VARIANTS)
        return problems

    def _request_log_problems(self) -> list[str]:
        """The request log lives in the endpoint's log group: it may not keep the prompts longer than capture promises."""
        retention, expiry = self.observability.log_retention_days, self.capture.expire_after_days
        if self.capture.request_log_sampling_percentage == 0 or retention <= expiry:
            return []
        fitting = max((days for days in LOG_RETENTION_DAYS if days <= expiry), default=LOG_RETENTION_DAYS[0])
        return [
            f"{setting('capture.method', 'request_log')} keeps the sampled prompts in the endpoint's log group, "
            f"which keeps its logs {retention} days ({setting('observability.log_retention_days')}), longer than "
            f"{setting('capture.expire_after_days', expiry)}: set {setting('observability.log_retention_days', fitting)} "
            f"(all of the endpoint's logs then expire after {fitting} days), or "
            f"{setting('capture.expire_after_days', retention)} to keep the prompts as long as the logs"
        ]

    def blue_green_traffic(self) -> Literal["canary", "linear", "all_at_once"]:
        """The traffic shifting a blue/green update uses: 'auto' resolved against the instance count."""
        traffic = self.rollout.blue_green.traffic
        if traffic == "auto":
            return "canary" if self.instance.count >= 2 else "all_at_once"
        return traffic

    def _rollout_problems(self) -> list[str]:
        rollout = self.rollout
        problems = []
        if self.observability.kpi_interval_seconds * 2 > self.alarms.kpi_missing_minutes * 60:
            problems.append(
                f"{setting('alarms.kpi_missing_minutes')} {self.alarms.kpi_missing_minutes} is shorter than two KPI intervals "
                f"({self.observability.kpi_interval_seconds} s each): the alarm would fire between lines; raise it "
                f"or lower {setting('observability.kpi_interval_seconds')}"
            )
        if rollout.strategy == "none":
            return problems
        if rollout.strategy == "blue_green":
            green = rollout.blue_green
            traffic = self.blue_green_traffic()
            if traffic in ("canary", "linear") and self.instance.count < 2:
                problems.append(
                    f"{setting('rollout.blue_green.traffic', traffic)} needs at least 2 instances (a canary or linear "
                    f"step is at most half the fleet); with {setting('instance.count', 1)} use "
                    f"{setting('rollout.blue_green.traffic', 'all_at_once')} (baking still applies) or 'auto'"
                )
            shifts = {"canary": 2, "linear": -(-100 // green.linear_step_percent), "all_at_once": 1}[traffic]
            needed = shifts * green.wait_seconds + green.termination_wait_seconds
            label = "rollout.blue_green"
        else:
            rolling = rollout.rolling
            green = rolling
            needed = -(-100 // rolling.batch_percent) * rolling.wait_seconds
            label = "rollout.rolling"
        if needed > green.max_execution_seconds:
            problems.append(
                f"{setting(label)}: the waits add up to {needed} s, more than "
                f"{setting(label + '.max_execution_seconds', green.max_execution_seconds)}; raise it (at most "
                f"{setting(label + '.max_execution_seconds', 28800)}) or shorten the waits"
            )
        return problems

    @property
    def endpoint_name(self) -> str:
        """Known before deploy, so the log group, metric filters and alarms can be created with it."""
        return f"{self.name}-endpoint"

    @property
    def async_endpoint_name(self) -> str:
        return f"{self.name}-async"

    def inference_component_name(self, variant: str) -> str:
        """Inference-component mode: the component serving ``variant`` ("Primary", "Baseline"), a physical
        name so its log group, scaling target and alarms can be created with it (peagle-primary)."""
        return f"{self.name}-{variant.lower()}"

    def pair(self) -> ModelPair:
        return self.custom_pairs.get(self.model) or load_catalog().pairs[self.model]

    def instance_facts(self) -> InstanceType:
        """The GPU and host facts of instance.type: its catalog row, or its custom_instances entry."""
        return self.custom_instances.get(self.instance.type) or load_catalog().instances[self.instance.type]


# Our choice, not a quoted rule. SageMaker documents Data Capture for an endpoint that hosts models as production
# variants: "To capture data for your real-time endpoint ... create a SageMaker AI model, define an endpoint
# configuration, and create an HTTPS endpoint" ("Capture data from real-time endpoint",
# https://docs.aws.amazon.com/sagemaker/latest/dg/model-monitor-data-capture-endpoint.html), and its capture files are
# keyed "{endpoint-name}/{variant-name}/yyyy/mm/dd/hh" (same page), with no place for an inference component. No AWS
# document we found says whether an endpoint that hosts inference components captures, and AWS's own SDK drops the
# setting on that path: ModelBuilder.deploy reads data_capture_config but creates an INFERENCE_COMPONENT_BASED
# endpoint without it (aws/sagemaker-python-sdk a24812666d25, sagemaker-serve/src/sagemaker/serve/model_builder.py,
# the ``endpoint_type == EndpointType.INFERENCE_COMPONENT_BASED`` branch: ``endpoint_from_production_variants(...)``
# with no data_capture_config_dict). So a capture that might silently record nothing is refused, not synthesized.
_CAPTURE_NEEDS_VARIANTS = (
    f"{setting('capture.enabled', True)}: SageMaker documents Data Capture for endpoints whose models are production "
    'variants ("Capture data from real-time endpoint", SageMaker Developer Guide), keyed by endpoint and variant; no '
    "AWS document describes it for inference components, and AWS's SageMaker Python SDK does not pass it when it "
    f"deploys them. Use {setting('capture.method', 'request_log')} (the container logs the sampled requests, in "
    f"either mode), or {setting('endpoint.mode', 'variants')} to capture requests, or turn capture off "
    f"({setting('capture.enabled', False)}) in inference_components mode"
)


def _set_path(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = data
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[path[-1]] = value


# pydantic's bound errors, reworded so a bound carries the field's unit ("at least Duration.minutes(5)").
_BOUNDS = {
    "greater_than_equal": ("ge", "at least"),
    "greater_than": ("gt", "more than"),
    "less_than_equal": ("le", "at most"),
    "less_than": ("lt", "less than"),
}


def format_validation_error(
    source: str, error: ValidationError, *, door: Door | str = Door.FILE, prefix: str = ""
) -> str:
    """A validation error in the caller's words: each field named as ``door`` spells it (the file's key path,
    the construct's prop, the CLI's flag), each bound and given value with the field's unit. ``prefix``: the
    path of the section ``error`` came from when it was built alone (a construct's value type)."""
    door = Door(door)
    subject = "invalid props" if door is Door.PROPS else "invalid deployment config"
    lines = [f"{source}: {subject} ({error.error_count()} problem(s)):"]
    for item in error.errors():
        path = ".".join(part for part in [prefix, *(str(p) for p in item["loc"])] if part)
        words = field_words(path) if path else {}
        message = item["msg"].removeprefix("Value error, ")
        given = item.get("input")
        bound = _BOUNDS.get(item["type"])
        if bound and words.get("unit"):
            limit = (item.get("ctx") or {}).get(bound[0])
            message = f"should be {bound[1]} {_with_unit(limit, words['unit'], door, bound=True)}"
        shown = (
            ""
            if isinstance(given, dict) or item["type"] == "value_error"
            else f" (given: {_with_unit(given, words.get('unit'), door)})"
        )
        where = in_words(setting(path), door) if path else ""
        for line in in_words(message, door).splitlines():  # a model-level check may report several problems
            lines.append(f"  - {where}: {line}{shown}" if where else f"  - {line}")
    return "\n".join(lines)


def _with_unit(value: Any, unit: str | None, door: Door, *, bound: bool = False) -> str:
    """A number of a field in seconds or minutes: a Duration for a construct user; for the file and the CLI the
    key names the unit, so only a bound spells it."""
    if unit is None or not isinstance(value, int | float) or isinstance(value, bool):
        return repr(value)
    if door is Door.PROPS:
        return duration(value, unit)
    return f"{value:g} {unit}" if bound else repr(value)


def parse_deployment_config(
    data: dict[str, Any], *, source: str = "deployment config", door: Door | str = Door.FILE
) -> DeploymentConfig:
    try:
        return DeploymentConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(format_validation_error(source, error, door=door)) from None


def load_deployment_config(
    path: str | Path = DEFAULT_DEPLOYMENT_FILE,
    overrides: dict[str, Any] | None = None,
    *,
    passed_as: str = "-c deployment=<path>",
    door: Door | str = Door.FILE,
) -> DeploymentConfig:
    """Read the deployment file and apply CDK-context-style overrides (CONTEXT_OVERRIDES keys).

    Overrides whose value is None are ignored, so callers can pass every key. ``passed_as`` is how the
    caller names the file in a "not found" error: the CDK app's context key, or a CLI's option; ``door``
    how errors name settings (peagle/setting_refs.py).
    """
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(
            f"deployment file {str(path)!r} not found; pass an existing file with "
            f"{passed_as} (default {DEFAULT_DEPLOYMENT_FILE})"
        ) from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level, got {type(raw).__name__}")
    return config_from_overrides(overrides, base=raw, source=str(path), door=door)


def config_from_overrides(
    overrides: dict[str, Any] | None,
    *,
    base: dict[str, Any] | None = None,
    source: str = "command line",
    door: Door | str = Door.FILE,
) -> DeploymentConfig:
    """Apply CONTEXT_OVERRIDES-keyed values (None = not given) to ``base`` and validate."""
    raw = dict(base or {})
    for key, value in (overrides or {}).items():
        if key not in CONTEXT_OVERRIDES:
            raise ConfigError(f"unknown override {key!r}; allowed: {sorted(CONTEXT_OVERRIDES)}")
        if value is not None:
            _set_path(raw, CONTEXT_OVERRIDES[key], value)
    return parse_deployment_config(raw, source=source, door=door)
