"""The deployment config: one validated model, loaded once (by app.py or the CLI).

A deployment file (YAML) names a model pair, an instance type and a workload
profile, and may override anything the planner would pick. CDK context keys
(`-c model=... -c instanceType=...`) override the file; see CONTEXT_OVERRIDES.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, PositiveInt, ValidationError, field_validator, model_validator

from peagle.catalog import InstanceType, ModelPair, ProfileName, StrictModel, load_catalog
from peagle.errors import ConfigError
from peagle_serve.contract import ScheduleBand, schedule_problems

DEFAULT_DEPLOYMENT_FILE = "deployments/default.yaml"

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
    type: str = Field("ml.g6e.xlarge", description="SageMaker instance type (see `peagle catalog`)")
    count: PositiveInt = Field(1, le=100, description="initial instance count")
    ami_version: str | None = Field(
        None,
        description="ProductionVariant.InferenceAmiVersion (the GPU host's NVIDIA driver); unset: the one the "
        "serving image needs (peagle/catalog/runtime.yaml). A driver too old for the image fails synth",
    )


class SpeculationBand(StrictModel):
    """K for a range of batch sizes: how many requests the engine runs in one step (at most the
    plan's max_num_seqs), both ends inclusive."""

    min_batch: PositiveInt
    max_batch: PositiveInt
    speculative_tokens: int = Field(ge=0, le=64, description="K at these batch sizes; 0: no drafts")

    def as_tuple(self) -> ScheduleBand:
        return (self.min_batch, self.max_batch, self.speculative_tokens)


class SpeculationSettings(StrictModel):
    speculative_tokens: int | None = Field(
        None,
        ge=0,
        le=64,
        description="K, draft tokens per step; 0 turns speculation off; "
        "unset = the pair's recommended K for the profile (or, with a schedule, its largest K)",
    )
    schedule: list[SpeculationBand] | None = Field(
        None,
        description="K by batch size (vLLM's num_speculative_tokens_per_batch_size): bands covering "
        "1..max_num_seqs without gaps or overlap, K > 0 at batch size 1 (the start-up self-check). "
        "speculative_tokens is then the largest K (leave it unset or set it to that). "
        "Earn it by measurement: it can be slower than a static K",
    )


class ProfileOverrides(StrictModel):
    """Any profile field, overridden for this deployment only."""

    temperature: float | None = Field(None, ge=0.0, le=2.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    max_tokens: PositiveInt | None = None
    max_model_len: PositiveInt | None = None
    min_model_len: PositiveInt | None = None
    max_num_seqs: PositiveInt | None = Field(None, le=1024)
    typical_context_tokens: PositiveInt | None = None
    latency_sla_p90_seconds: float | None = Field(None, gt=0)
    ttft_target_seconds: float | None = Field(None, gt=0, description="the same as slo.ttft_seconds (older name)")


class SloSettings(StrictModel):
    """The profile's SLO, overridden bound by bound for this deployment (`peagle plan` prints the result).
    Bounds are per request, as `vllm bench serve` measures them; null leaves the profile's value."""

    ttft_seconds: float | None = Field(None, gt=0, description="time to first token")
    tpot_seconds: float | None = Field(None, gt=0, description="time per output token after the first")
    e2e_seconds: float | None = Field(None, gt=0, description="end-to-end latency of the request")
    attainment: float | None = Field(None, gt=0, le=1, description="share of requests that must meet every bound")


_S3_PREFIX = re.compile(r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/[^\s]*)?/$")


class ArtifactsSettings(StrictModel):
    source: Literal["s3", "hub"] = Field(
        "s3",
        description="s3: weights staged under one S3 prefix (the default, works with network isolation); "
        "hub: the container downloads target and drafter from the Hugging Face Hub at start-up "
        "(needs network.isolation: false)",
    )
    hf_token_secret_arn: str | None = Field(
        None,
        pattern=r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$",
        description="with source hub: Secrets Manager secret holding a Hugging Face token (plain text); "
        "the execution role may read it, the container reads it at start-up",
    )
    s3_uri: str | None = Field(
        None,
        description="s3://bucket/prefix/ holding target/ and drafter/ side by side. "
        "Unset: the project's artifacts bucket (stack <name>-artifacts), prefix models/<pair>/",
    )
    kms_key_arn: str | None = Field(None, description="KMS key the artifacts are encrypted with")

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

    create: bool = False
    max_azs: int = Field(2, ge=2, le=6, description="with create: availability zones to span")
    subnet_ids: list[str] = []
    security_group_ids: list[str] = []

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
    isolation: bool = Field(True, description="no network and no AWS credentials in the container")
    vpc: VpcSettings | None = None


class TimeoutSettings(StrictModel):
    container_startup_seconds: int | None = Field(None, ge=60, le=3600)
    model_download_seconds: int | None = Field(None, ge=60, le=3600)


class ScheduledScaling(StrictModel):
    """Capacity bounds from a schedule, e.g. fewer instances off-peak."""

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9]{0,63}$", description="PascalCase id, stable across deploys")
    schedule: str = Field(
        pattern=r"^(cron\(.+\)|rate\(.+\)|at\(.+\))$", description="e.g. 'cron(0 20 * * ? *)' (UTC unless time_zone)"
    )
    min_instances: PositiveInt
    max_instances: PositiveInt
    time_zone: str | None = Field(None, description="IANA name, e.g. Europe/Berlin")


class MeasuredCapacity(StrictModel):
    """What `peagle capacity` measured for one instance (or copy): the highest request rate at which the
    SLO still held, and the requests in flight there. Its snippet sets the scaling targets from it with
    ``headroom``; kept here so `peagle plan` can say where the targets came from and size a fleet."""

    requests_per_second: float = Field(gt=0, description="highest rate meeting the SLO, per instance")
    concurrency: float = Field(gt=0, description="requests in flight at that rate (the load's own mean)")
    headroom: float = Field(gt=0, le=1, description="share of the capacity the scaling targets aim at")
    slo: str = Field(description="the SLO it was measured at, as `peagle plan` prints it")
    source: str = Field(description="what was measured, where and when")


class AutoscalingSettings(StrictModel):
    """Scaling of the variant's DesiredInstanceCount (Application Auto Scaling's
    ``sagemaker:variant:DesiredInstanceCount``; SageMaker Developer Guide, "Automatic scaling of
    Amazon SageMaker AI models", https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling.html)."""

    enabled: bool = True
    min_instances: PositiveInt = 1
    max_instances: PositiveInt = Field(2, le=100)
    target: Literal["concurrency", "invocations"] = Field(
        "concurrency",
        description="concurrency: in-flight requests per instance (10 s metric, counts streaming requests); "
        "invocations: requests per minute per instance, needs max_rps_per_instance",
    )
    target_concurrency_per_instance: float | None = Field(
        None, gt=0, description="unset: 75% of the plan's max_num_seqs"
    )
    max_rps_per_instance: float | None = Field(None, gt=0, description="measured with `peagle capacity`")
    safety_factor: float = Field(0.5, gt=0, le=1)
    measured_capacity: MeasuredCapacity | None = Field(
        None, description="written by `peagle capacity`: where the targets above came from"
    )
    gpu_utilization_target_percent: float | None = Field(
        80, gt=0, le=100, description="per GPU (normalised by the GPU count); null: no GPU policy"
    )
    latency_step_scaling: bool = Field(True, description="add instances while p90 ModelLatency exceeds the SLA")
    scale_in_cooldown_seconds: int = Field(900, ge=0, le=3600, description="GPU instances are slow to replace")
    scale_out_cooldown_seconds: int = Field(120, ge=0, le=3600)
    schedules: list[ScheduledScaling] = []


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class AlarmSettings(StrictModel):
    """Alarm thresholds; unset ones come from the profile."""

    enabled: bool = True
    emails: list[str] = Field([], description="subscribed to the alarm topic (each must confirm)")
    latency_p90_seconds: float | None = Field(None, gt=0, description="unset: the profile's latency SLA")
    error_5xx_rate_percent: float = Field(1.0, gt=0, le=100)
    error_4xx_rate_percent: float = Field(10.0, gt=0, le=100)
    gpu_memory_percent: float = Field(95.0, gt=0, le=100, description="per GPU")
    min_acceptance_rate: float = Field(
        0.2, gt=0, lt=1, description="below it speculation costs more than it saves (drafter mismatch or off)"
    )
    kpi_missing_minutes: int = Field(10, ge=2, le=60, description="no KPI line for this long: container not reporting")

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
    log_retention_days: int = 365
    kpi_interval_seconds: int = Field(60, ge=10, le=300, description="how often the launcher logs a KPI line")
    metric_publish_frequency_seconds: Literal[10, 30, 60, 120, 180, 240, 300] = 60
    detailed_observability: bool = Field(True, description="SageMaker scrapes the container's /metrics (PromQL)")

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        if value not in LOG_RETENTION_DAYS:
            raise ValueError(
                f"{value} is not a CloudWatch Logs retention period; use one of {list(LOG_RETENTION_DAYS)}"
            )
        return value


class BlueGreenSettings(StrictModel):
    traffic: Literal["auto", "canary", "linear", "all_at_once"] = Field(
        "auto",
        description="auto: canary with two or more instances, all_at_once (with baking) with one, since a "
        "canary must be at most half the fleet",
    )
    canary_percent: int = Field(
        10, ge=1, le=50, description="share of the fleet taking traffic first (SageMaker: at most 50%)"
    )
    linear_step_percent: int = Field(25, ge=10, le=50, description="SageMaker allows 10-50% per step")
    wait_seconds: int = Field(600, ge=0, le=3600, description="baking time between traffic shifts")
    termination_wait_seconds: int = Field(600, ge=0, le=3600, description="keep the old fleet this long after 100%")
    max_execution_seconds: int = Field(7200, ge=600, le=28800)


class RollingSettings(StrictModel):
    batch_percent: int = Field(25, ge=5, le=50, description="share of instances replaced per step")
    wait_seconds: int = Field(600, ge=0, le=3600)
    rollback_batch_percent: int = Field(100, ge=1, le=100)
    max_execution_seconds: int = Field(7200, ge=600, le=28800)


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
    strategy: Literal["blue_green", "rolling", "none"] = "blue_green"
    blue_green: BlueGreenSettings = BlueGreenSettings()
    rolling: RollingSettings = RollingSettings()
    auto_rollback: bool = Field(True, description="roll back when the 5xx or latency alarm fires during the update")


class InferenceComponentSettings(StrictModel):
    """Inference-component mode: the endpoint keeps managed instance scaling and each model runs as
    a component with its own GPUs, CPU and memory; copies and instances may scale to zero.

    Copies per instance, GPUs, CPU and memory per copy come from the plan (`peagle plan`)."""

    min_instances: int = Field(0, ge=0, le=100, description="managed instance scaling floor; 0: scale to zero")
    max_instances: PositiveInt = Field(2, le=100, description="managed instance scaling ceiling")
    initial_copies: PositiveInt = Field(1, description="copies started by the deploy")
    min_copies: int = Field(0, ge=0, description="0: no copy runs while the component is idle (cold start)")
    max_copies: PositiveInt | None = Field(None, description="unset: as many as max_instances hold")
    accelerators_per_copy: PositiveInt | None = Field(
        None, description="GPUs per copy (vLLM tensor_parallel_size); unset: the fewest a copy fits on"
    )
    target_concurrency_per_copy: float | None = Field(
        None, gt=0, description="in-flight requests per copy to scale on; unset: 75% of the plan's max_num_seqs"
    )
    scale_to_zero_after_idle_minutes: int = Field(
        30, ge=5, le=1440, description="with min_copies 0: no invocation for this long removes the last copy"
    )


class EndpointSettings(StrictModel):
    mode: Literal["variants", "inference_components"] = Field(
        "variants",
        description="variants: production variants, one model replica per instance, at least one instance "
        "always running; inference_components: the model as a component, several copies per instance, "
        "copies and instances may scale to zero",
    )
    inference_components: InferenceComponentSettings = InferenceComponentSettings()


class AbTestSettings(StrictModel):
    """A second production variant serving the same target with another K (0 = no speculation)."""

    enabled: bool = False
    baseline_speculative_tokens: int = Field(0, ge=0, le=64)
    baseline_traffic_percent: float = Field(50.0, gt=0, lt=100)
    baseline_instance_count: PositiveInt = 1


class BatchSettings(StrictModel):
    """Batch Transform over JSONL in S3 (`peagle batch`); the Model's role may read input and write output.

    Off by default: no Batch Transform host runs the CUDA 13 serving image (see
    peagle/catalog/runtime.yaml); synth refuses ``enabled: true`` while that holds and says
    what works instead.
    """

    enabled: bool = False
    input_prefix: str = Field("batch/input/", pattern=r"^[A-Za-z0-9!_.*'()/-]+/$")
    output_prefix: str = Field("batch/output/", pattern=r"^[A-Za-z0-9!_.*'()/-]+/$")


class AsyncInferenceSettings(StrictModel):
    """A second, asynchronous endpoint on the same Model for long jobs (results to S3, SNS on done/failed)."""

    enabled: bool = False
    max_concurrent_invocations_per_instance: int = Field(4, ge=1, le=1000)
    min_instances: int = Field(0, ge=0, le=100, description="0: scale to zero when the queue is empty")
    max_instances: PositiveInt = Field(2, le=100)
    target_backlog_per_instance: float = Field(4.0, gt=0)


class DeploymentConfig(StrictModel):
    name: str = Field(
        "peagle",
        pattern=r"^[a-z][a-z0-9-]{0,23}$",
        description="lower-case prefix of stack and bucket names (<name>-endpoint, <name>-models-<account>-<region>)",
    )
    model: str = Field("gpt-oss-20b", description="a catalog pair id or a key of custom_pairs")
    custom_pairs: dict[str, ModelPair] = {}
    custom_instances: dict[str, InstanceType] = Field(
        {},
        description="instance types the catalog lacks, by SageMaker name, with their GPU facts (the fields of "
        "peagle/catalog/instances.yaml); instance.type may then name one",
    )
    instance: InstanceSettings = InstanceSettings()
    endpoint: EndpointSettings = EndpointSettings()
    profile: ProfileName = ProfileName.CHATBOT
    profile_overrides: ProfileOverrides = ProfileOverrides()
    slo: SloSettings = SloSettings()
    speculation: SpeculationSettings = SpeculationSettings()
    artifacts: ArtifactsSettings = ArtifactsSettings()
    network: NetworkSettings = NetworkSettings()
    timeouts: TimeoutSettings = TimeoutSettings()
    autoscaling: AutoscalingSettings = AutoscalingSettings()
    alarms: AlarmSettings = AlarmSettings()
    observability: ObservabilitySettings = ObservabilitySettings()
    rollout: RolloutSettings = RolloutSettings()
    ab_test: AbTestSettings = AbTestSettings()
    batch: BatchSettings = BatchSettings()
    async_inference: AsyncInferenceSettings = AsyncInferenceSettings()
    vllm_args: dict[str, bool | int | float | str] = Field(
        {}, description="extra vLLM flags (name without '--'), passed through as SM_VLLM_*"
    )

    @model_validator(mode="before")
    @classmethod
    def _components_roll_by_default(cls, data: object) -> object:
        # InferenceComponentDeploymentConfig has one policy, RollingUpdatePolicy (botocore 1.44.5 SageMaker
        # model; 'required': ['RollingUpdatePolicy']). So a components-mode file that names no
        # rollout.strategy gets 'rolling', where variants get 'blue_green'; naming blue_green is refused.
        if not isinstance(data, dict):
            return data
        endpoint, rollout = data.get("endpoint"), data.get("rollout", {})
        if (
            isinstance(endpoint, dict)
            and endpoint.get("mode") == "inference_components"
            and isinstance(rollout, dict)
            and "strategy" not in rollout
        ):
            return {**data, "rollout": {**rollout, "strategy": "rolling"}}
        return data

    @model_validator(mode="after")
    def _names_exist(self) -> DeploymentConfig:
        catalog = load_catalog()
        problems = []
        clashes = sorted(set(self.custom_pairs) & set(catalog.pairs))
        if clashes:
            problems.append(f"custom_pairs redefine catalog pairs {clashes}; pick new ids")
        pairs = sorted({*catalog.pairs, *self.custom_pairs})
        if self.model not in pairs:
            problems.append(
                f"model {self.model!r} is not a known pair; use one of {pairs} or declare it under custom_pairs"
            )
        clashes = sorted(set(self.custom_instances) & set(catalog.instances))
        if clashes:
            problems.append(f"custom_instances redefine catalog instance types {clashes}; leave them to the catalog")
        if self.instance.type not in catalog.instances and self.instance.type not in self.custom_instances:
            problems.append(
                f"instance.type {self.instance.type!r} is not in the instance catalog; "
                f"use one of {sorted(catalog.instances)}, or give its GPU facts under custom_instances"
            )
        for name in self.vllm_args:
            if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
                problems.append(f"vllm_args key {name!r} must be a vLLM flag name like 'max-num-batched-tokens'")
        if self.model in pairs:
            problems += self._speculation_problems()
        problems += self._scaling_problems()
        if self.ab_test.enabled and self.rollout.strategy == "rolling" and not self.uses_inference_components:
            problems.append(
                "rollout.strategy 'rolling' is not supported on multi-variant endpoints (ab_test.enabled); "
                "use 'blue_green' or turn the A/B test off"
            )
        problems += self._rollout_problems()
        problems += self._component_problems()
        if self.artifacts.source == "hub":
            if self.network.isolation:
                problems.append(
                    "artifacts.source 'hub' downloads weights inside the container, which network isolation "
                    "forbids; set network.isolation: false, or stage the weights to S3 with `peagle stage` "
                    "and use source 's3'"
                )
            if self.artifacts.s3_uri:
                problems.append("artifacts.s3_uri is only used with source 's3'; remove it or use source 's3'")
        elif self.artifacts.hf_token_secret_arn:
            problems.append(
                "artifacts.hf_token_secret_arn is only used with source 'hub' (for S3 weights, `peagle stage` "
                "reads the token on your machine)"
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
            f"speculation.schedule: {problem}"
            for problem in schedule_problems(bands, trained_k=self.pair().drafter.trained_k)
        ]
        k, largest = self.speculation.speculative_tokens, max((band[2] for band in bands), default=0)
        if k is not None and k != largest:
            problems.append(
                f"speculation.speculative_tokens {k} conflicts with speculation.schedule, whose largest K is "
                f"{largest}: with a schedule, speculative_tokens is that largest K (vLLM's num_speculative_tokens, "
                f"the most any band may draft); remove speculative_tokens or set it to {largest}"
                + (", or remove the schedule to turn speculation off" if k == 0 else "")
            )
        return problems

    def _scaling_problems(self) -> list[str]:
        scaling, count = self.autoscaling, self.instance.count
        if not scaling.enabled or self.uses_inference_components:
            return []
        problems = []
        if not scaling.min_instances <= count <= scaling.max_instances:
            problems.append(
                f"autoscaling needs min_instances <= instance.count <= max_instances; given "
                f"{scaling.min_instances} <= {count} <= {scaling.max_instances}; adjust autoscaling.min_instances/"
                "max_instances in the deployment file (or set autoscaling.enabled: false)"
            )
        if scaling.target == "invocations" and scaling.max_rps_per_instance is None:
            problems.append(
                "autoscaling.target 'invocations' needs autoscaling.max_rps_per_instance: measure it with "
                "`peagle bench` (the highest requests/s that still meets your latency SLA), or use target 'concurrency'"
            )
        for schedule in scaling.schedules:
            if schedule.min_instances > schedule.max_instances:
                problems.append(
                    f"autoscaling.schedules[{schedule.name}]: min_instances {schedule.min_instances} > "
                    f"max_instances {schedule.max_instances}"
                )
        if len({schedule.name for schedule in scaling.schedules}) != len(scaling.schedules):
            problems.append("autoscaling.schedules: names must be unique")
        return problems

    @property
    def uses_inference_components(self) -> bool:
        return self.endpoint.mode == "inference_components"

    def _component_problems(self) -> list[str]:
        """Settings that mean one mode given in the other, and component bounds that contradict each other.
        SageMaker's own rules for the mode are peagle/deployment_rules.py's (rule inference-components)."""
        components = self.endpoint.inference_components
        if not self.uses_inference_components:
            if "inference_components" in self.endpoint.model_fields_set:
                return [
                    "endpoint.inference_components is set but endpoint.mode is 'variants'; set endpoint.mode: "
                    "inference_components, or remove endpoint.inference_components"
                ]
            return []
        problems = []
        variant_only = sorted(
            {"min_instances", "max_instances", "target_concurrency_per_instance", "schedules"}
            & self.autoscaling.model_fields_set
        )
        if variant_only:
            problems.append(
                f"autoscaling.{', autoscaling.'.join(variant_only)} scale production variants; in "
                "inference_components mode instances and copies are bounded under endpoint.inference_components "
                "(min_instances, max_instances, min_copies, max_copies, target_concurrency_per_copy); move them there"
            )
        if components.min_instances > components.max_instances:
            problems.append(
                f"endpoint.inference_components: min_instances {components.min_instances} > max_instances "
                f"{components.max_instances}"
            )
        if not components.min_instances <= self.instance.count <= components.max_instances:
            problems.append(
                f"instance.count {self.instance.count} (the instances the deploy starts) must lie within "
                f"endpoint.inference_components min_instances {components.min_instances} .. max_instances "
                f"{components.max_instances}"
            )
        top = components.max_copies
        if top is not None and not components.min_copies <= components.initial_copies <= top:
            problems.append(
                f"endpoint.inference_components needs min_copies <= initial_copies <= max_copies; given "
                f"{components.min_copies} <= {components.initial_copies} <= {top}"
            )
        if components.min_copies > components.initial_copies:
            problems.append(
                f"endpoint.inference_components: min_copies {components.min_copies} > initial_copies "
                f"{components.initial_copies}; raise initial_copies"
            )
        # InferenceComponentDeploymentConfig has one policy, RollingUpdatePolicy (botocore 1.44.5 SageMaker
        # model; 'required': ['RollingUpdatePolicy']): a component has no blue/green update.
        if self.rollout.strategy == "blue_green":
            problems.append(
                "rollout.strategy 'blue_green' shifts traffic between production variants; an inference component "
                "updates copy by copy: use rollout.strategy 'rolling' (rollout.rolling sets the batch and waits) "
                "or 'none'"
            )
        # Our choice, not a quoted rule: no AWS document we found describes an asynchronous endpoint
        # beside inference components, and async_inference builds a second, variants-mode endpoint.
        if self.async_inference.enabled:
            problems.append(
                "async_inference runs a second endpoint with production variants; in inference_components mode "
                "turn it off (async_inference.enabled: false) or deploy it from a variants-mode deployment file"
            )
        return problems

    def blue_green_traffic(self) -> str:
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
                f"alarms.kpi_missing_minutes {self.alarms.kpi_missing_minutes} is shorter than two KPI intervals "
                f"({self.observability.kpi_interval_seconds} s each): the alarm would fire between lines; raise it "
                "or lower observability.kpi_interval_seconds"
            )
        if rollout.strategy == "none":
            return problems
        if rollout.strategy == "blue_green":
            green = rollout.blue_green
            traffic = self.blue_green_traffic()
            if traffic in ("canary", "linear") and self.instance.count < 2:
                problems.append(
                    f"rollout.blue_green.traffic '{traffic}' needs at least 2 instances (a canary or linear step is "
                    "at most half the fleet); with instance.count 1 use 'all_at_once' (baking still applies) or 'auto'"
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
                f"{label}: the waits add up to {needed} s, more than max_execution_seconds "
                f"{green.max_execution_seconds}; raise max_execution_seconds (<= 28800) or shorten the waits"
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


def _set_path(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = data
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[path[-1]] = value


def _format_validation_error(source: str, error: ValidationError) -> str:
    lines = [f"{source}: invalid deployment config ({error.error_count()} problem(s)):"]
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "(top level)"
        message = item["msg"].removeprefix("Value error, ")
        given = item.get("input")
        shown = "" if isinstance(given, dict) or item["type"] == "value_error" else f" (given: {given!r})"
        for line in message.splitlines():  # a model-level check may report several problems
            lines.append(f"  - {line}" if where == "(top level)" else f"  - {where}: {line}{shown}")
    return "\n".join(lines)


def parse_deployment_config(data: dict[str, Any], *, source: str = "deployment config") -> DeploymentConfig:
    try:
        return DeploymentConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_format_validation_error(source, error)) from None


def load_deployment_config(
    path: str | Path = DEFAULT_DEPLOYMENT_FILE, overrides: dict[str, Any] | None = None
) -> DeploymentConfig:
    """Read the deployment file and apply CDK-context-style overrides (CONTEXT_OVERRIDES keys).

    Overrides whose value is None are ignored, so callers can pass every key.
    """
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(
            f"deployment file {str(path)!r} not found; pass an existing file with "
            f"-c deployment=<path> (default {DEFAULT_DEPLOYMENT_FILE})"
        ) from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level, got {type(raw).__name__}")
    return config_from_overrides(overrides, base=raw, source=str(path))


def config_from_overrides(
    overrides: dict[str, Any] | None, *, base: dict[str, Any] | None = None, source: str = "command line"
) -> DeploymentConfig:
    """Apply CONTEXT_OVERRIDES-keyed values (None = not given) to ``base`` and validate."""
    raw = dict(base or {})
    for key, value in (overrides or {}).items():
        if key not in CONTEXT_OVERRIDES:
            raise ConfigError(f"unknown override {key!r}; allowed: {sorted(CONTEXT_OVERRIDES)}")
        if value is not None:
            _set_path(raw, CONTEXT_OVERRIDES[key], value)
    return parse_deployment_config(raw, source=source)
