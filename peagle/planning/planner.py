"""The planner: (model pair x instance type x profile x K) -> vLLM settings that fit.

It works per GPU, the way vLLM allocates: with tensor parallelism over all of an
instance's GPUs, each GPU holds 1/TP of the weights, a fixed runtime reserve and a
slice of the KV cache. Whatever memory is left at gpu_memory_utilization after
weights and reserve becomes KV cache; the plan checks that it holds at least one
max_model_len sequence (vLLM refuses to start otherwise) and sizes max_num_seqs so
the profile's typical request, plus its K speculative slots, fits.

Estimates err on the safe side (gpt-oss sliding-window layers are counted as full
layers); a plan that fits here leaves headroom on the GPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Annotated

from pydantic import ConfigDict, Field

from peagle.catalog import InstanceType, ModelPair, Profile, ProfileName, Slo, load_catalog
from peagle.planning import engine_budget, pool_plans, prefix_caching, speculation_choice
from peagle.planning.instance_price import instance_price
from peagle.planning.queue_target import queue_target_line
from peagle.planning.speculation_choice import Engine, KChoice
from peagle.planning.unit_plan import ComponentPool, UnitPlan, VariantUnits, plan_pool
from peagle.settings import (
    AlarmSettings,
    AutoscalingSettings,
    DeploymentConfig,
    MeasuredCapacity,
    ObservabilitySettings,
    RolloutSettings,
    RoutingSettings,
)
from peagle.settings.errors import InstanceFitError, PlanError
from peagle.settings.refs import setting
from peagle_serve.contract import (
    SELF_CHECK_TIMEOUT_SECONDS,
    STARTUP_MARGIN_SECONDS,
    ScheduleBand,
)

GIB = 1024**3
MIN_COMPUTE_CAPABILITY = 7.5  # current vLLM: no V100 (7.0)
GPU_MEMORY_UTILIZATION = 0.90
# CUDA context, activations, sampler and CUDA graphs: measured vLLM deployments keep
# 1.5-3 GiB per GPU outside weights and KV cache.
RUNTIME_RESERVE_GIB = 2.5
# Container start-up budgets (SageMaker allows 60-3600 s): conservative S3 download and
# load rates so a cold instance in a busy region still makes it.
DOWNLOAD_BYTES_PER_SECOND = 100e6
LOAD_BYTES_PER_SECOND = 150e6
MIN_TIMEOUT_SECONDS = 600
MAX_TIMEOUT_SECONDS = 3600
MODEL_LEN_STEP = 1024
# The scaling target when nothing was measured: requests in flight per instance (or copy) as a share of
# the engine's max_num_seqs, so scale-out starts before vLLM queues. A guess; `peagle capacity` measures
# the concurrency an instance carries within the SLO, and its snippet replaces this.
GUESSED_CONCURRENCY_SHARE = 0.75
# A new instance's launch before its model or first copy starts. The developer guide ("Scale an endpoint
# to zero instances") says only that "the provisioning process takes several minutes": our allowance,
# not an AWS figure.
INSTANCE_LAUNCH_ALLOWANCE_S = 600
# A request refused "no capacity" shows in the wake-up alarm's one-minute datapoint, evaluated once that
# minute is over; the alarm's action then asks for the copy. A client waiting for a cold start waits this
# long on top of the copy's start budget: our allowance (`peagle simulate --startup budget` showed a client
# giving up a minute before a copy that took its whole budget served).
WAKE_UP_ALLOWANCE_S = 120
# Inference components scaling to zero: one copy goes while two or more serve and the copies left would
# still carry the load under this share of the per-copy target, for this many minutes (target tracking's
# own scale-in is off; see peagle_cdk/endpoint_scaling.py, ScalableCopyCount). Both mirror target
# tracking's own scale-in: 90 % of the target, and 15 minutes, the delay AWS describes for the
# high-resolution metric ("90 10-second data points", scale-to-zero launch post). A fixed 30 % of the
# target kept a falling daily curve on 3-4 times the copies it needed (`peagle simulate --traffic daily`).
LIGHT_LOAD_SHARE = 0.9  # and LIGHT_LOAD_MINUTES (peagle/planning/unit_plan.py, where the pool carries it)
# The idle window must outlast a copy's start: the wake-up alarm's minute and its action come first (see
# shortest_idle_window_minutes; peagle/planning/deployment_rules.py refuses a shorter one).
IDLE_WINDOW_MARGIN_MINUTES = 2
# Where nothing was measured, a request holds a vLLM slot for this share of the profile's p90 latency SLA:
# our estimate. It sizes the scale-to-zero wake-up (requests a copy answers a minute) and is
# `peagle simulate`'s default request time.
REQUEST_SECONDS_SHARE_OF_SLA = 0.5
# A typical start, as opposed to the timeouts' budget: an instance's launch, "several minutes" ("Scale an
# endpoint to zero instances"), then the weights at the transfer rates above without the timeouts' fixed
# allowances, then vLLM's start (engine, CUDA graphs, the speculation self-check). Both figures are our
# estimates, not AWS's: a qwen3-8b copy then starts in ~7 min, an instance with it in ~12, slower than the
# 5-6 minutes AWS measured from zero for an 8B and a 70B model ("Unlock cost savings with the new scale
# down to zero feature in SageMaker Inference", AWS Machine Learning Blog, 2024-12-03).
TYPICAL_INSTANCE_LAUNCH_SECONDS = 300
TYPICAL_ENGINE_START_SECONDS = 120


@dataclass(frozen=True)
class MemoryFit:
    """Per-GPU memory breakdown in GiB."""

    gpu_memory_gib: float
    usable_gib: float  # at gpu_memory_utilization
    target_weights_gib: float
    drafter_weights_gib: float
    runtime_reserve_gib: float
    kv_cache_gib: float
    kv_bytes_per_token: int  # per GPU, target + drafter layers
    kv_cache_tokens: int  # whole replica

    @property
    def headroom_gib(self) -> float:
        return self.gpu_memory_gib - self.usable_gib


@dataclass(frozen=True)
class ScalingTarget:
    """What target tracking aims at, per instance (variants) or per copy (components), and why."""

    concurrency: float  # requests in flight per unit
    unit: str  # "instance" | "copy"
    source: str  # measured, set in the deployment file, or the guess
    measured: MeasuredCapacity | None = None

    @property
    def is_guess(self) -> bool:
        return self.source.startswith("a guess")

    def fleet_for(self, peak_rps: float) -> int | None:
        """Units that carry ``peak_rps`` at the measured rate x headroom; None when nothing was measured."""
        if self.measured is None:
            return None
        return max(1, math.ceil(round(peak_rps / (self.measured.requests_per_second * self.measured.headroom), 9)))

    @property
    def light_load_below(self) -> float:
        """Scale-to-zero copies: remove one while the copies but one would carry the load under this many
        requests each (LIGHT_LOAD_SHARE of the target)."""
        return self.concurrency * LIGHT_LOAD_SHARE

    def describe(self) -> str:
        return f"{self.concurrency:g} requests in flight per {self.unit} ({self.source})"


def scaling_target(config: DeploymentConfig, max_num_seqs: int) -> ScalingTarget:
    """The concurrency target tracking aims at (with ``autoscaling.target: invocations`` the variant
    tracks invocations instead, from max_requests_per_second; this is then the copies' or unused)."""
    unit = "copy" if config.uses_inference_components else "instance"
    given = config.autoscaling.target_concurrency
    measured = config.autoscaling.measured_capacity
    if given is None and measured is not None:
        # What `peagle capacity` measured at the SLO, with its headroom: the target its snippet would write.
        given = round(measured.concurrency * measured.headroom, 2)
    if given is None:
        guess = max(1.0, max_num_seqs * GUESSED_CONCURRENCY_SHARE)
        return ScalingTarget(
            guess,
            unit,
            f"a guess: {GUESSED_CONCURRENCY_SHARE:.0%} of max_num_seqs {max_num_seqs}; `peagle capacity` measures it",
            measured,
        )
    # The snippet writes the target to 2 decimals: a small target differs from the product by up to 0.005.
    if measured is not None and math.isclose(
        given, measured.concurrency * measured.headroom, rel_tol=0.01, abs_tol=0.006
    ):
        return ScalingTarget(
            given,
            unit,
            f"measured: {measured.requests_per_second:g} req/s with {measured.concurrency:g} in flight at the SLO "
            f"({measured.slo}) x headroom {measured.headroom:g}; {measured.source}",
            measured,
        )
    return ScalingTarget(given, unit, "set, not measured", measured)


@dataclass(frozen=True)
class Plan:
    # ``units`` is recorded as ``components`` (peagle/planning/plan_record.py reads and writes it by that name).
    __pydantic_config__ = ConfigDict(serialize_by_alias=True, validate_by_name=True, validate_by_alias=True)

    pair_id: str
    pair: ModelPair
    instance_type: str
    instance: InstanceType
    instance_count: int
    profile_name: ProfileName
    profile: Profile
    tensor_parallel_size: int
    speculative_tokens: int  # with a schedule: its largest K, which memory and the K reserve are sized for
    max_model_len: int
    max_num_seqs: int
    gpu_memory_utilization: float
    kv_cache_dtype: str
    memory: MemoryFit
    container_startup_timeout_seconds: int
    model_download_timeout_seconds: int
    inference_ami_version: str  # the GPU host image; peagle/planning/deployment_rules.py checks its driver
    # USD per instance-hour, on demand: instance.price_per_hour_usd if given, else the instance's catalog (or
    # custom_instances) row; price_source says which, for `peagle plan`, the dashboard and the simulator.
    price_per_hour_usd: float
    price_source: str
    # K by batch size, (min_batch, max_batch, K) bands; empty: K at every batch size. Coverage of
    # max_num_seqs is peagle/planning/deployment_rules.py's rule speculation-schedule.
    speculative_schedule: tuple[ScheduleBand, ...] = field(default=())
    # The serving units, tagged by kind: production variants, or an inference-component pool with its settings
    # (peagle/planning/unit_plan.py). Recorded under its old name, ``components`` (null for variants), so records still read.
    units: Annotated[UnitPlan, Field(alias="components")] = field(default_factory=VariantUnits)
    scaling: ScalingTarget | None = None  # None only for plans built by hand
    # The validated autoscaling settings the policies are built from (cooldowns, bounds, GPU target, schedules;
    # the target itself is ``scaling``, copy bounds ``units``); None: autoscaling off, fixed capacity.
    autoscaling: AutoscalingSettings | None = None
    notes: tuple[str, ...] = field(default=())
    # The endpoint-wide settings the unit is built with, carried whole so the constructs read the plan and not the
    # settings model, and the tools read them from the template's recorded plan (peagle/planning/plan_record.py). The rollout
    # is resolved: its strategy for the mode, its blue/green traffic for the instance count.
    rollout: RolloutSettings = field(default_factory=RolloutSettings)
    observability: ObservabilitySettings = field(default_factory=ObservabilitySettings)
    alarms: AlarmSettings = field(default_factory=AlarmSettings)
    network_isolation: bool = True
    # How SageMaker routes the real-time endpoint's requests, resolved: a prefix-aware concurrency threshold the
    # settings left unset is what one instance's engines run at once (``routing_threshold``).
    routing: RoutingSettings = field(default_factory=RoutingSettings)
    # Whether vLLM caches prompt prefixes (peagle/planning/prefix_caching.py decides, and says why).
    prefix_caching: bool = False
    prefix_caching_why: str = ""
    # Production variants: the share of the endpoint's requests this variant gets (the A/B split), in percent.
    # Inference components have no split (each request names its component): 100.
    traffic_percent: float = 100.0
    # The container's own settings beyond the plan's engine flags: vllm_args (vLLM flags the deployment adds,
    # applied last) and the Hub token's Secrets Manager ARN (an ARN, never the token).
    vllm_args: dict[str, bool | int | float | str] = field(default_factory=dict)
    hf_token_secret_arn: str | None = None
    weights_from_hub: bool = False  # artifacts.source hub: the container downloads the weights at start-up
    # Environment variables the target needs on this instance's GPUs only (the pair's target.gpu_environment rules
    # that apply to its compute capability); peagle/planning/container_env.py writes them into the container.
    gpu_environment: dict[str, str] = field(default_factory=dict)
    # Where K (or the schedule) came from, for `peagle plan` (peagle/planning/speculation_choice.py); None for plans
    # built by hand. Left out of the template's record, whose readers need K, not why (so templates stay as they were).
    k_choice: Annotated[KChoice | None, Field(exclude=True)] = field(default=None, compare=False)
    # An instance pool (peagle/planning/pool_plans.py): each fallback type's own plan, priority 2 on; the provision
    # timeout and the ML capacity reservation the variant states. Left out of the template's record when unset.
    fallbacks: Annotated[tuple[Plan, ...], Field(exclude_if=lambda value: not value)] = field(default=())
    provision_timeout_seconds: Annotated[int | None, Field(exclude_if=lambda value: value is None)] = None
    ml_reservation_arn: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None

    @property
    def speculation_enabled(self) -> bool:
        return self.speculative_tokens > 0

    scales_on_concurrency: bool = True  # autoscaling on, tracking requests in flight

    @property
    def max_num_batched_tokens(self) -> int:
        """The engine's token budget per step: a full batch of decodes with their drafts and P-EAGLE slots, plus a
        prefill chunk of vLLM's default size for the GPU (peagle/planning/engine_budget.py cites the scheduler)."""
        return engine_budget.max_num_batched_tokens(**self._budget_inputs())

    def _budget_inputs(self) -> dict[str, int]:
        return {
            "max_num_seqs": self.max_num_seqs,
            "speculative_tokens": self.speculative_tokens,  # a schedule's largest K, the most a step drafts
            "prefill_chunk": engine_budget.default_batched_tokens(self.instance.gpu, self.instance.gpu_memory_gib),
        }

    @property
    def latency_sla_p90_seconds(self) -> float:
        """The p90 ModelLatency over which the latency alarm fires and the latency step adds capacity: the
        deployment's alarms.latency_sla_p90_seconds, else the profile's SLA (held once, in the plan's profile)."""
        return self.profile.latency_sla_p90_seconds

    @property
    def gpus_per_metric(self) -> int:
        """The GPUs a unit's GPU metrics sum: a variant's GPUUtilization is 0-100 x the instance's GPUs
        ("Amazon SageMaker AI metrics in Amazon CloudWatch"); a component's ...Normalized metrics are
        already per GPU of its copy."""
        return self.units.gpus_per_metric(self.instance)

    @property
    def request_seconds_estimate(self) -> float:
        """How long a request holds a vLLM slot where nothing was measured (REQUEST_SECONDS_SHARE_OF_SLA)."""
        return self.profile.latency_sla_p90_seconds * REQUEST_SECONDS_SHARE_OF_SLA

    @property
    def unit_requests_per_minute(self) -> float:
        """Requests a minute one copy or instance answers with every slot busy, at that estimate."""
        return self.max_num_seqs * 60 / self.request_seconds_estimate

    @property
    def typical_model_start_seconds(self) -> float:
        """A typical download + start-up of one copy or instance's model (TYPICAL_ENGINE_START_SECONDS)."""
        weights = self.pair.target.weight_bytes + self.pair.drafter.weight_bytes
        return weights / DOWNLOAD_BYTES_PER_SECOND + weights / LOAD_BYTES_PER_SECOND + TYPICAL_ENGINE_START_SECONDS

    @property
    def typical_unit_start_seconds(self) -> float:
        """A typical start of a new unit with its instance: the launch, then the model."""
        return TYPICAL_INSTANCE_LAUNCH_SECONDS + self.typical_model_start_seconds

    @property
    def unit_start_budget_seconds(self) -> int:
        """The longest a new copy or instance may take before it serves: an instance's launch (our
        allowance), then the model download and the container start-up (their timeouts). Scaling
        policies wait this long for the capacity they added before they add more."""
        launch = self.provision_timeout_seconds or INSTANCE_LAUNCH_ALLOWANCE_S  # SageMaker's own bound, where stated
        return launch + self.model_download_timeout_seconds + self.container_startup_timeout_seconds

    @property
    def cold_start_wait_seconds(self) -> int:
        """How long a client waits for a copy woken from zero: the start budget and the wake-up's own delay."""
        return self.unit_start_budget_seconds + WAKE_UP_ALLOWANCE_S

    @property
    def cost_per_hour_usd(self) -> float:
        """The instances the deploy starts, at ``price_per_hour_usd``."""
        return self.price_per_hour_usd * self.instance_count

    def summary_lines(self) -> list[str]:
        catalog = load_catalog()
        mem = self.memory
        spec = speculation_choice.speculation_line(
            self.speculative_tokens, self.speculative_schedule, self.pair.drafter.trained_k
        )
        lines = [
            f"model pair      {self.pair_id}: {self.pair.target.hf_id} + {self.pair.drafter.hf_id}",
            f"instance        {self.instance_count} x {self.instance_type} ({self.instance.describe()}, CC {self.instance.cc})",
            f"profile         {self.profile_name.value}: {self.profile.description}",
            f"speculation     {spec}",
            f"vLLM            tensor_parallel_size={self.tensor_parallel_size} max_model_len={self.max_model_len} "
            f"max_num_seqs={self.max_num_seqs} gpu_memory_utilization={self.gpu_memory_utilization} "
            f"kv_cache_dtype={self.kv_cache_dtype}",
            f"token budget    {engine_budget.describe(**self._budget_inputs())}",
            f"prefix caching  {self.prefix_caching_why}",
            f"routing         {self._routing_text()}",
            f"sampling        temperature={self.profile.sampling.temperature} top_p={self.profile.sampling.top_p} "
            f"max_tokens={self.profile.sampling.max_tokens}",
            f"SLO             {describe_slo(self.profile.slo)}",
            *([f"scaling target  {self.scaling.describe()}"] if self.scaling and self.scales_on_concurrency else []),
            *queue_target_line(self),
            f"memory per GPU  {mem.gpu_memory_gib:.1f} GiB = target {mem.target_weights_gib:.1f} + drafter "
            f"{mem.drafter_weights_gib:.1f} + runtime {mem.runtime_reserve_gib:.1f} + KV cache {mem.kv_cache_gib:.1f} "
            f"+ headroom {mem.headroom_gib:.1f}",
            f"KV cache        {mem.kv_cache_tokens:,} tokens per replica "
            f"(~{mem.kv_cache_tokens // (self.profile.typical_context_tokens + self.speculative_tokens):,} "
            f"requests of {self.profile.typical_context_tokens:,} tokens)",
            f"GPU host        {self.inference_ami_version} (driver {self._driver_text()}), image "
            f"{catalog.runtime.serving_image.base} (CUDA {catalog.runtime.serving_image.cuda})",
            f"timeouts        model download {self.model_download_timeout_seconds} s, "
            f"container start-up {self.container_startup_timeout_seconds} s"
            + (
                f", instances provisioned within {self.provision_timeout_seconds} s"
                if self.provision_timeout_seconds
                else ""
            ),
            f"cost            ${self.cost_per_hour_usd:,.2f}/hour on demand ({self.price_source})"
            + self.units.cost_note(self.price_per_hour_usd),
            *pool_plans.reservation_lines(self.ml_reservation_arn),
        ]
        lines[-1:-1] = self.units.summary_lines(self)
        lines += [f"note            {note}" for note in self.notes]
        return lines

    def _routing_text(self) -> str:
        routing = self.routing
        if routing.strategy != prefix_caching.PREFIX_AWARE:
            return routing.strategy
        return (
            f"PREFIX_AWARE: the first {routing.prefix_length:,} bytes of a request body pick its instance; past "
            f"{routing.concurrency_threshold} requests in flight there, the next goes elsewhere"
        )

    def _driver_text(self) -> str:
        host = load_catalog().runtime.inference_amis.get(self.inference_ami_version)
        return f"{host.driver}, CUDA {host.cuda}" if host else "unknown"


def describe_slo(slo: Slo) -> str:
    """'95% of requests: TTFT <= 1 s, TPOT <= 100 ms' (the bounds vllm bench serve's --goodput takes)."""
    bounds = [
        f"{name} <= {seconds * 1000:g} ms" if seconds < 1 else f"{name} <= {seconds:g} s"
        for name, seconds in (("TTFT", slo.ttft_seconds), ("TPOT", slo.tpot_seconds), ("E2EL", slo.e2e_seconds))
        if seconds is not None
    ]
    return f"{slo.attainment * 100:g}% of requests: {', '.join(bounds)}"


def launcher_startup_overhead_seconds(*, speculation: bool) -> float:
    """What the launcher keeps out of the start-up budget: its margin, and the self-check's time."""
    return STARTUP_MARGIN_SECONDS + (SELF_CHECK_TIMEOUT_SECONDS if speculation else 0.0)


def shortest_idle_window_minutes(start_budget_seconds: float) -> int:
    """The shortest idle window that never removes a copy before it serves: a request refused at minute t
    starts a copy from t + 1 (the wake-up alarm's minute and its action), which serves within the start
    budget; the idle alarm may act at t + window. Two minutes' margin."""
    return math.ceil(start_budget_seconds / 60) + IDLE_WINDOW_MARGIN_MINUTES


def _clamp_timeout(seconds: float) -> int:
    return int(min(MAX_TIMEOUT_SECONDS, max(MIN_TIMEOUT_SECONDS, math.ceil(seconds))))


def _kv_bytes_per_token_per_gpu(pair: ModelPair, tp: int, kv_dtype_bytes: int) -> int:
    # KV heads are split across TP ranks; with TP > kv_heads vLLM replicates them.
    heads_per_gpu = max(1, math.ceil(pair.target.kv_heads / tp))
    layers = pair.target.kv_layers + pair.drafter.layers
    return 2 * layers * heads_per_gpu * pair.target.head_dim * kv_dtype_bytes


def _resolve_profile(config: DeploymentConfig) -> Profile:
    base = load_catalog().profiles[config.profile]
    overrides = config.profile_overrides.model_dump(exclude_none=True)
    sampling_keys = {"temperature", "top_p", "max_tokens"}
    sampling = base.sampling.model_copy(update={k: v for k, v in overrides.items() if k in sampling_keys})
    slo_changes = config.slo.model_dump(exclude_none=True)
    if "ttft_target_seconds" in overrides:
        slo_changes.setdefault("ttft_seconds", overrides.pop("ttft_target_seconds"))
    # Validated again as a whole (at least one bound).
    slo = Slo.model_validate({**base.slo.model_dump(), **slo_changes})
    if config.alarms.latency_sla_p90_seconds is not None:  # the one key for the latency SLA, in both doors
        overrides["latency_sla_p90_seconds"] = config.alarms.latency_sla_p90_seconds
    profile = base.model_copy(
        update={
            "sampling": sampling,
            "slo": slo,
            **{k: v for k, v in overrides.items() if k not in sampling_keys},
        }
    )
    if profile.min_model_len > profile.max_model_len:
        raise PlanError(
            f"profile {config.profile.value}: min_model_len {profile.min_model_len} exceeds max_model_len "
            f"{profile.max_model_len}; lower {setting('profile_overrides.min_model_len')} or raise "
            f"{setting('profile_overrides.max_model_len')}"
        )
    return profile


def _check_instance_support(config: DeploymentConfig, pair: ModelPair, instance: InstanceType, tp: int) -> None:
    if instance.cc < MIN_COMPUTE_CAPABILITY:
        raise InstanceFitError(
            f"{config.instance.type} has {instance.gpu} GPUs (compute capability {instance.cc}); current vLLM "
            f"needs compute capability >= {MIN_COMPUTE_CAPABILITY}, so {instance.gpu} instances cannot serve this model"
        )
    image = load_catalog().runtime.serving_image
    if image.runs_on(instance.cc)[1] is None:
        # No kernel of the image runs there (runtime.yaml, serving_image.compiled_for): vLLM's first CUDA kernel
        # would fail with "no kernel image is available for execution on the device".
        raise InstanceFitError(
            f"{config.instance.type} has {instance.gpu} GPUs (compute capability {instance.cc}), but the serving image "
            f"{image.base} is compiled for compute capabilities {', '.join(f'{c:g}' for c in image.compiled_for)} "
            f"only, none of which runs on {instance.cc}; pick an instance type with one of those GPUs"
        )
    if instance.cc < pair.min_compute_capability:
        raise InstanceFitError(
            f"{config.model} ({pair.target.quantization} weights) needs compute capability >= "
            f"{pair.min_compute_capability} (bf16/MXFP4 kernels); {config.instance.type} has {instance.gpu} "
            f"GPUs with {instance.cc}"
        )
    if pair.target.attention_heads % tp:
        raise InstanceFitError(
            f"{config.model} has {pair.target.attention_heads} attention heads, which do not split over "
            f"{tp} GPUs of {config.instance.type} (tensor parallel size must divide them)"
        )


def _architecture_notes(instance_type: str, instance: InstanceType) -> list[str]:
    """A warning where the image has no kernels compiled for the GPU's exact compute capability but binaries of a
    lower minor revision run on it (B300, 10.3, runs the image's 10.0 kernels)."""
    image = load_catalog().runtime.serving_image
    exact, runs = image.runs_on(instance.cc)
    if exact or runs is None:
        return []
    return [
        f"{instance_type}: {image.base} has no kernels compiled for compute capability {instance.cc} ({instance.gpu}); "
        f"it runs the {runs:.1f} binaries (same major revision), but arch-specific kernels (sm_{int(runs * 10)}a, e.g. "
        "FlashInfer's and CUTLASS's) are not portable and vLLM may fall back to slower ones: run `peagle bench` "
        "before relying on its speed"
    ]


def _plan_memory(
    config: DeploymentConfig, pair: ModelPair, instance: InstanceType, profile: Profile, k: int, tp: int
) -> tuple[MemoryFit, int, int, list[str]]:
    kv_dtype_bytes = 1 if instance.supports_fp8 else 2
    usable = instance.gpu_memory_gib * GPU_MEMORY_UTILIZATION
    target = pair.target.weight_bytes / GIB / tp
    drafter = (pair.drafter.weight_bytes / GIB / tp) if k > 0 else 0.0
    kv_gib = usable - target - drafter - RUNTIME_RESERVE_GIB
    needed_total = (pair.target.weight_bytes + (pair.drafter.weight_bytes if k else 0)) / GIB
    if kv_gib <= 0:
        raise InstanceFitError(
            f"{config.model} needs ~{needed_total:.0f} GiB of weights (target {pair.target.weight_bytes / GIB:.1f}"
            + (f" + drafter {pair.drafter.weight_bytes / GIB:.1f}" if k else "")
            + f") plus {RUNTIME_RESERVE_GIB} GiB runtime per GPU; "
            + (
                f"{config.instance.type} has {instance.describe()}"
                if tp == instance.gpu_count
                else f"a copy on {tp} of the {instance.gpu_count} {instance.gpu} GPUs of {config.instance.type} has"
                f" {instance.gpu_memory_gib * tp:g} GiB"
            )
            + f" ({usable * tp:.1f} GiB usable at gpu_memory_utilization {GPU_MEMORY_UTILIZATION})"
        )
    kv_bytes = _kv_bytes_per_token_per_gpu(pair, tp, kv_dtype_bytes)
    kv_tokens = int(kv_gib * GIB // kv_bytes)
    notes: list[str] = []
    max_model_len = min(profile.max_model_len, pair.target.max_position_embeddings)
    if kv_tokens < max_model_len + k:
        fitted = ((kv_tokens - k) // MODEL_LEN_STEP) * MODEL_LEN_STEP
        if fitted < profile.min_model_len:
            raise InstanceFitError(
                f"{config.model} on {config.instance.type} leaves KV cache for {kv_tokens:,} tokens, less than one "
                f"request at the profile's min_model_len {profile.min_model_len:,}"
            )
        notes.append(
            f"max_model_len lowered from {max_model_len} to {fitted} so one full-length request fits the KV cache"
        )
        max_model_len = fitted
    per_request = profile.typical_context_tokens + k
    max_num_seqs = min(profile.max_num_seqs, max(1, kv_tokens // per_request))
    if max_num_seqs < profile.max_num_seqs:
        notes.append(
            f"max_num_seqs lowered from {profile.max_num_seqs} to {max_num_seqs}: the KV cache holds that many "
            f"requests of {profile.typical_context_tokens} tokens; a larger instance serves more at once"
        )
    memory = MemoryFit(
        gpu_memory_gib=instance.gpu_memory_gib,
        usable_gib=usable,
        target_weights_gib=target,
        drafter_weights_gib=drafter,
        runtime_reserve_gib=RUNTIME_RESERVE_GIB,
        kv_cache_gib=kv_gib,
        kv_bytes_per_token=kv_bytes,
        kv_cache_tokens=kv_tokens,
    )
    return memory, max_model_len, max_num_seqs, notes


def _plan_exactly(config: DeploymentConfig) -> Plan:
    catalog = load_catalog()
    pair = config.pair()
    instance = config.instance_facts()
    profile = _resolve_profile(config)
    speculation = speculation_choice.given_or_catalog(config, pair)
    k = speculation.speculative_tokens
    tp, units, (memory, max_model_len, max_num_seqs, notes) = _fit(config, pair, instance, profile, k)
    if speculation.choice.kind == "catalog":  # nothing set: K by load where the model can tell
        engine = Engine(instance.gpu, tp, memory.kv_bytes_per_token, max_num_seqs)
        speculation = speculation_choice.by_load(speculation, config.model, pair, (config.profile, profile), engine)
        if speculation.speculative_tokens != k:  # memory is sized for the largest K
            k = speculation.speculative_tokens
            tp, units, (memory, max_model_len, max_num_seqs, notes) = _fit(config, pair, instance, profile, k)
            speculation = speculation_choice.fitted(speculation, max_num_seqs)
    download, startup = _timeouts(config, pair, k)
    if isinstance(units, ComponentPool):
        given = config.endpoint.inference_components.scale_to_zero_after_idle_minutes
        units = units.with_idle_window(
            given or shortest_idle_window_minutes(INSTANCE_LAUNCH_ALLOWANCE_S + download + startup)
        )
    notes = [*notes, *_plan_notes(config, pair, instance, k, units.notes(config.instance.type, instance))]
    gpu_environment = pair.target.environment_for(instance.cc)
    price, price_source = instance_price(config)
    caching = prefix_caching.decide(
        pair_id=config.model, pair=pair, routing_strategy=config.endpoint.routing.strategy, vllm_args=config.vllm_args
    )
    return Plan(
        pair_id=config.model,
        pair=pair,
        instance_type=config.instance.type,
        instance=instance,
        instance_count=config.instance.count,
        profile_name=config.profile,
        profile=profile,
        tensor_parallel_size=tp,
        speculative_tokens=k,
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
        gpu_memory_utilization=GPU_MEMORY_UTILIZATION,
        kv_cache_dtype="fp8" if instance.supports_fp8 else "auto",
        memory=memory,
        container_startup_timeout_seconds=startup,
        model_download_timeout_seconds=download,
        inference_ami_version=config.instance.ami_version or catalog.runtime.serving_image.inference_ami_version,
        price_per_hour_usd=price,
        price_source=price_source,
        speculative_schedule=speculation.schedule,
        k_choice=speculation.choice,
        units=units,
        scaling=scaling_target(config, max_num_seqs),
        autoscaling=_resolved_scaling(config, units),
        scales_on_concurrency=config.autoscaling.enabled
        and (config.endpoint.mode == "inference_components" or config.autoscaling.target == "concurrency"),
        notes=tuple(notes),
        rollout=_resolved_rollout(config),
        routing=_resolved_routing(config, max_num_seqs, units),
        prefix_caching=caching.enabled,
        prefix_caching_why=caching.why,
        observability=config.observability,
        alarms=config.alarms,
        network_isolation=config.network.isolation,
        traffic_percent=units.traffic_percent(
            100.0 - config.ab_test.baseline_traffic_percent if config.ab_test.enabled else 100.0
        ),
        vllm_args=dict(config.vllm_args),
        hf_token_secret_arn=config.artifacts.hf_token_secret_arn,
        gpu_environment=gpu_environment,
        weights_from_hub=config.artifacts.source == "hub",
    )


def _timeouts(config: DeploymentConfig, pair: ModelPair, k: int) -> tuple[int, int]:
    """The model download's and the container start-up's timeouts: the deployment's, else estimated from the weights."""
    weight_bytes = pair.target.weight_bytes + pair.drafter.weight_bytes
    download = config.timeouts.model_download_seconds or _clamp_timeout(300 + weight_bytes / DOWNLOAD_BYTES_PER_SECOND)
    startup_seconds = 600 + weight_bytes / LOAD_BYTES_PER_SECOND
    if config.artifacts.source == "hub":
        startup_seconds += weight_bytes / DOWNLOAD_BYTES_PER_SECOND  # the container downloads during start-up
    # SageMaker's health-check timeout is the launcher's whole budget (PEAGLE_STARTUP_TIMEOUT_SECONDS):
    # engine start, then the speculation self-check, then a margin so the launcher fails first.
    startup_seconds += launcher_startup_overhead_seconds(speculation=k > 0)
    return download, config.timeouts.container_startup_seconds or _clamp_timeout(startup_seconds)


def _plan_notes(
    config: DeploymentConfig, pair: ModelPair, instance: InstanceType, k: int, unit_notes: list[str]
) -> list[str]:
    """The pair's notes, the GPU's architecture, the units', the container environment, a K above the recommended."""
    notes = [*pair.notes, *_architecture_notes(config.instance.type, instance), *unit_notes]
    gpu_environment = pair.target.environment_for(instance.cc)
    if gpu_environment:
        sources = "; ".join(rule.source for rule in pair.target.gpu_environment if rule.applies_to(instance.cc))
        notes.append(
            f"container environment {' '.join(f'{k}={v}' for k, v in gpu_environment.items())} on {instance.gpu} "
            f"(compute capability {instance.cc}): {sources}"
        )
    given = config.speculation.speculative_tokens is not None or config.speculation.schedule
    if given and k > 0 and k > pair.recommended_k.get(config.profile, k):
        notes.append(
            f"K={k} is above the recommended {pair.recommended_k[config.profile]} for {config.profile.value}: "
            "measure with `peagle bench` before keeping it"
        )
    return notes


def _resolved_rollout(config: DeploymentConfig) -> RolloutSettings:
    """The rollout settings with the blue/green traffic shifting resolved against the instance count."""
    green = config.rollout.blue_green.model_copy(update={"traffic": config.blue_green_traffic()})
    return config.rollout.model_copy(update={"blue_green": green})


def _tensor_parallel_options(instance: InstanceType) -> list[int]:
    """GPUs per copy that split an instance evenly: 1, 2, 4, 8 (those that divide its GPU count)."""
    return [tp for tp in (1, 2, 4, 8) if tp <= instance.gpu_count and instance.gpu_count % tp == 0]


def _fit(
    config: DeploymentConfig, pair: ModelPair, instance: InstanceType, profile: Profile, k: int
) -> tuple[int, VariantUnits | ComponentPool, tuple[MemoryFit, int, int, list[str]]]:
    """The kind of serving unit, decided here once (peagle/planning/unit_plan.py; everything after asks the unit
    plan), its GPUs and the memory plan on them."""
    if config.uses_inference_components:
        tp, fit = _component_fit(config, pair, instance, profile, k)
        return tp, plan_pool(config, instance, tp), fit
    _check_instance_support(config, pair, instance, instance.gpu_count)
    return instance.gpu_count, VariantUnits(), _plan_memory(config, pair, instance, profile, k, instance.gpu_count)


def _component_fit(
    config: DeploymentConfig, pair: ModelPair, instance: InstanceType, profile: Profile, k: int
) -> tuple[int, tuple[MemoryFit, int, int, list[str]]]:
    """GPUs per copy and the memory plan on them: the given accelerators_per_copy, else the fewest
    GPUs on which the profile's full max_model_len fits (more copies per instance), else the fewest
    on which the model fits at all."""
    wanted = config.endpoint.inference_components.accelerators_per_copy
    options = _tensor_parallel_options(instance)
    if wanted is not None:
        if wanted not in options:
            raise PlanError(
                f"{setting('endpoint.inference_components.accelerators_per_copy')} {wanted} does not split "
                f"{config.instance.type} ({instance.gpu_count} GPUs) evenly; use one of {options}, or leave it "
                "unset for the fewest GPUs a copy fits on"
            )
        _check_instance_support(config, pair, instance, wanted)
        return wanted, _plan_memory(config, pair, instance, profile, k, wanted)
    fits: list[tuple[int, tuple[MemoryFit, int, int, list[str]]]] = []
    last_error: InstanceFitError | None = None
    for tp in options:
        try:
            _check_instance_support(config, pair, instance, tp)
            fits.append((tp, _plan_memory(config, pair, instance, profile, k, tp)))
        except InstanceFitError as error:
            last_error = error
            continue
        if not any(note.startswith("max_model_len lowered") for note in fits[-1][1][3]):
            return fits[-1]
    if fits:
        return fits[0]
    assert last_error is not None
    raise last_error


def routing_threshold(max_num_seqs: int, units: VariantUnits | ComponentPool) -> int:
    """The requests one instance's engines run at once (max_num_seqs per replica, one replica per instance, or a
    component's copies per instance), within ConcurrencyThreshold's 1-1024: past it a request would queue in vLLM, so
    prefix-aware routing sends it to another instance instead."""
    per_instance = max_num_seqs * units.replicas_per_instance
    return max(1, min(per_instance, 1024))


def _resolved_routing(
    config: DeploymentConfig, max_num_seqs: int, units: VariantUnits | ComponentPool
) -> RoutingSettings:
    routing = config.endpoint.routing
    if routing.strategy != prefix_caching.PREFIX_AWARE or routing.concurrency_threshold is not None:
        return routing
    return routing.model_copy(update={"concurrency_threshold": routing_threshold(max_num_seqs, units)})


def smallest_fitting_instance(config: DeploymentConfig, *, estimated_prices: bool = False) -> str | None:
    """The cheapest catalog instance type on which the same pair, profile and K plan. Types whose price is an
    unverified estimate (price_verified: false, the Blackwell rows) count only with ``estimated_prices``: a guessed
    price must not pick the suggestion by itself."""
    catalog = load_catalog().instances
    candidates = {name: inst for name, inst in catalog.items() if estimated_prices or inst.price_verified}
    for name, _instance in sorted(candidates.items(), key=lambda item: item[1].price_per_hour_usd):
        candidate = config.model_copy(update={"instance": config.instance.model_copy(update={"type": name})})
        try:
            _plan_exactly(candidate)
        except PlanError:  # does not fit, or the deployment's copy counts do not suit that type
            continue
        return name
    return None


def _resolved_scaling(config: DeploymentConfig, units: VariantUnits | ComponentPool) -> AutoscalingSettings | None:
    """The scaling settings with their bounds resolved for the mode (the policies read only the plan); None:
    autoscaling off, fixed capacity."""
    if not config.autoscaling.enabled:
        return None
    top = units.scaling_ceiling(config.max_capacity)
    return config.autoscaling.model_copy(update={"min_capacity": config.min_capacity, "max_capacity": top})


def plan_deployment(config: DeploymentConfig) -> Plan:
    """Plan the deployment, or raise PlanError naming the cheapest instance type that works; each instance pool
    type is planned as its own (peagle/planning/pool_plans.py)."""
    return pool_plans.with_pool(config, plan_type(config), plan_type)


def plan_type(config: DeploymentConfig, *, fix: Callable[[str], str] | None = None) -> Plan:
    """One instance type's plan, or PlanError naming the cheapest type that works; ``fix``: what to set to it
    (default: instance.type)."""
    try:
        return _plan_exactly(config)
    except InstanceFitError as error:  # other PlanErrors (K, profile) no instance type would fix
        message = str(error)
        instances = load_catalog().instances
        suggestion = smallest_fitting_instance(config)
        cheaper_estimate = smallest_fitting_instance(config, estimated_prices=True)
        if suggestion is None:
            suggestion, cheaper_estimate = cheaper_estimate, None
        if suggestion is None:
            hint = (
                f"No instance type in the catalog fits; use a smaller or quantized pair ({setting('custom_pairs')}), "
                f"or lower {setting('profile_overrides.max_model_len')}"
            )
        else:
            instance = instances[suggestion]
            estimated = "" if instance.price_verified else ", an estimated price: see instances.yaml"
            # The fix comes last, so the message ends with what to set; an estimated-price alternative goes before it.
            also = ""
            if cheaper_estimate not in (None, suggestion):
                other = instances[cheaper_estimate]
                also = (
                    f"; {cheaper_estimate} ({other.describe()}) also fits, at an estimated "
                    f"${other.price_per_hour_usd:g}/hour (unverified, see instances.yaml)"
                )
            hint = (
                f"Smallest that fits: {suggestion} ({instance.describe()}, ${instance.price_per_hour_usd:g}/hour"
                f"{estimated}){also}; " + (fix or _set_instance_type)(suggestion)
            )
        raise PlanError(f"{message}. {hint}") from None


def _set_instance_type(name: str) -> str:
    return f"set {setting('instance.type', name)}"


def plan_ab_baseline(config: DeploymentConfig) -> Plan | None:
    """The A/B baseline variant's plan: same pair, instance and profile, the baseline K (static: the
    schedule, if any, is the primary variant's)."""
    if not config.ab_test.enabled:
        return None
    speculation = config.speculation.model_copy(
        update={"speculative_tokens": config.ab_test.baseline_speculative_tokens, "schedule": None}
    )
    instance = config.instance.model_copy(update={"count": config.ab_test.baseline_instance_count})
    plan = plan_deployment(config.model_copy(update={"speculation": speculation, "instance": instance}))
    return replace(plan, traffic_percent=plan.units.traffic_percent(config.ab_test.baseline_traffic_percent))
