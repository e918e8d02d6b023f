"""Typed rows of the catalogs. The YAML tables in this folder are the data;
these models are the one place their shape is checked."""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveFloat, PositiveInt, model_validator


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo in a catalog or deployment file must not be ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ProfileName(str, Enum):
    CHATBOT = "chatbot"
    CODEGEN = "codegen"
    BATCH = "batch"


class GpuEnvironment(StrictModel):
    """Container environment variables the target needs on some GPUs only (e.g. a kernel switch vLLM honours
    on one architecture and refuses elsewhere). The planner sets them on instances whose compute capability is in
    [min_compute_capability, below_compute_capability); peagle/planning/container_env.py writes them."""

    variables: dict[str, str] = Field(description="name -> value, set as they are in the container environment")
    min_compute_capability: float = Field(description="the lowest compute capability they are set on")
    below_compute_capability: float | None = Field(
        None, description="set only below this compute capability (None: no upper bound)"
    )
    source: str = Field(description="where the rule comes from, for `peagle plan`")

    @model_validator(mode="after")
    def _plain_names(self) -> GpuEnvironment:
        # SM_VLLM_* and PEAGLE_* belong to the container contract (peagle_serve/contract.py); a pair sets neither.
        reserved = [name for name in self.variables if name.startswith(("SM_VLLM_", "PEAGLE_"))]
        if reserved:
            raise ValueError(f"{reserved}: SM_VLLM_* and PEAGLE_* are the container contract's; use vllm_flags")
        return self

    def applies_to(self, cc: float) -> bool:
        return cc >= self.min_compute_capability and (
            self.below_compute_capability is None or cc < self.below_compute_capability
        )


class TargetModel(StrictModel):
    hf_id: str = Field(description="Hugging Face repository id of the target model")
    weight_bytes: PositiveFloat = Field(description="size of the weights as served (sums memory and download time)")
    quantization: Literal["bf16", "fp16", "fp8", "mxfp4", "awq", "gptq"] = Field(
        description="the weights' format; mxfp4 and fp8 need newer GPUs (min_compute_capability)"
    )
    kv_layers: PositiveInt = Field(description="layers holding KV cache")
    kv_heads: PositiveInt = Field(description="key/value heads per layer (GQA), for the KV bytes per token")
    head_dim: PositiveInt = Field(description="dimension of one attention head")
    attention_heads: PositiveInt = Field(description="query heads; tensor parallel size must divide them")
    max_position_embeddings: PositiveInt = Field(description="the longest context the model supports")
    gpu_environment: list[GpuEnvironment] = Field(
        [], description="environment variables set only on GPUs of some compute capabilities"
    )

    def environment_for(self, cc: float) -> dict[str, str]:
        """The variables of every gpu_environment rule that applies to a GPU of compute capability ``cc``."""
        return {
            name: value
            for rule in self.gpu_environment
            if rule.applies_to(cc)
            for name, value in rule.variables.items()
        }


class DrafterModel(StrictModel):
    hf_id: str = Field(description="Hugging Face repository id of the P-EAGLE drafter")
    format: Literal["eagle3", "speculators"] = Field(
        description="eagle3: an Eagle3 head with P-EAGLE weights; speculators: a "
        "speculators-format checkpoint that vLLM maps to eagle3 + parallel drafting"
    )
    weight_bytes: PositiveFloat = Field(description="size of the drafter's weights")
    layers: PositiveInt = Field(description="decoder layers of the drafter")
    trained_k: PositiveInt = Field(description="draft positions the drafter was trained for")


class PrefixCaching(StrictModel):
    """Whether vLLM's prefix cache may be on with this pair's drafter (peagle/planning/prefix_caching.py reads it)."""

    allowed: bool = Field(description="may prefix caching (and prefix-aware routing) be turned on with the drafter")
    evidence: str = Field(description="why: the measurement or vLLM issue that decides it, for `peagle plan`")


class ModelPair(StrictModel):
    description: str = Field("", description="one line for `peagle catalog`")
    target: TargetModel = Field(description="the model whose output the endpoint serves")
    drafter: DrafterModel = Field(description="the P-EAGLE drafter proposing its tokens")
    recommended_k: dict[ProfileName, PositiveInt] = Field(
        description="K (draft tokens per step) by profile, when the deployment sets none"
    )
    min_compute_capability: float = Field(
        8.0, ge=7.5, description="the lowest CUDA compute capability the weights run on"
    )
    min_vllm_version: str = Field("0.16.0", description="the first vLLM release that serves the pair")
    known_fixes: list[str] = Field([], description="upstream vLLM fixes the pair needs, and what fails without them")
    vllm_flags: dict[str, bool | int | float | str] = Field(
        {}, description="vLLM flags the pair always needs (name without '--'); deployment vllm_args win"
    )
    notes: list[str] = Field([], description="printed by `peagle plan` under the plan")
    prefix_caching: PrefixCaching = Field(
        PrefixCaching(
            allowed=True,
            evidence="not assessed for a custom pair: measure it as docs/baselines/prefix-caching/ does before relying "
            "on it",
        ),
        description="whether vLLM's prefix cache may be on with the drafter, and the evidence",
    )


class InstanceType(StrictModel):
    gpu: str = Field(description="GPU model, e.g. L40S")
    gpu_count: PositiveInt = Field(description="GPUs per instance")
    gpu_memory_gib: PositiveFloat = Field(description="memory per GPU as the driver reports it, not the marketed GB")
    cc: float = Field(description="CUDA compute capability")
    local_nvme: bool = Field(description="local NVMe instance storage (then no KMS key on the ML volume)")
    local_nvme_gb: NonNegativeInt | None = Field(
        None,
        description="the NVMe instance storage's total size as EC2 reports it (TotalSizeInGB); unset: not known, and "
        "whether SageMaker caches an inference component's data whatever data_cache says is not checked",
    )
    vcpus: PositiveInt = Field(description="host vCPUs")
    memory_gib: PositiveFloat = Field(description="host memory")
    price_per_hour_usd: PositiveFloat = Field(description="on-demand price, for `peagle plan` and the reports")
    price_verified: bool = Field(
        True, description="false: price_per_hour_usd is an estimate (instances.yaml says how it was derived)"
    )

    @property
    def total_gpu_memory_gib(self) -> float:
        return self.gpu_count * self.gpu_memory_gib

    @property
    def supports_fp8(self) -> bool:
        # FP8 tensor cores arrive with Ada (8.9) and Hopper (9.0).
        return self.cc >= 8.9

    def describe(self) -> str:
        return f"{self.gpu_count} x {self.gpu_memory_gib:g} GiB {self.gpu}"


class Sampling(StrictModel):
    temperature: float = Field(ge=0.0, le=2.0)
    top_p: float = Field(gt=0.0, le=1.0)
    max_tokens: PositiveInt


class Slo(StrictModel):
    """A service-level objective: bounds on the per-request metrics of ``vllm bench serve`` (TTFT; TPOT,
    the time per output token after the first; E2EL, the whole request) and the share of requests
    that must meet every set bound. A request meeting them all counts in goodput."""

    ttft_seconds: PositiveFloat | None = Field(None, description="time to first token")
    tpot_seconds: PositiveFloat | None = Field(None, description="time per output token, the first excluded")
    e2e_seconds: PositiveFloat | None = Field(None, description="end-to-end latency of the whole request")
    attainment: float = Field(gt=0.0, le=1.0, description="share of requests that must meet every bound")

    @model_validator(mode="after")
    def _bounded(self) -> Slo:
        if self.ttft_seconds is None and self.tpot_seconds is None and self.e2e_seconds is None:
            raise ValueError("an SLO needs at least one of ttft_seconds, tpot_seconds, e2e_seconds")
        return self


class Profile(StrictModel):
    description: str
    sampling: Sampling
    max_model_len: PositiveInt
    min_model_len: PositiveInt
    max_num_seqs: PositiveInt
    typical_context_tokens: PositiveInt
    latency_sla_p90_seconds: PositiveFloat = Field(description="p90 ModelLatency the alarms and latency step use")
    slo: Slo


class InstanceCatalog(StrictModel):
    price_region: str
    price_date: str
    price_source: str
    instances: dict[str, InstanceType]
    excluded: dict[str, str] = Field({}, description="SageMaker instance types the image cannot run on -> why")


class HostDriver(StrictModel):
    """An NVIDIA driver branch and the newest CUDA it runs."""

    driver: PositiveInt
    cuda: str = Field(pattern=r"^\d+\.\d+$")

    @property
    def cuda_version(self) -> tuple[int, int]:
        return cuda_version(self.cuda)


def cuda_version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


class ServingImage(StrictModel):
    base: str = Field(description="the vLLM image inference_image/Dockerfile builds FROM")
    cuda: str = Field(pattern=r"^\d+\.\d+$", description="CUDA the image is built for")
    inference_ami_version: str = Field(description="the InferenceAmiVersion every variant gets")
    compiled_for: list[float] = Field(
        description="compute capabilities the image's vLLM kernels are compiled for (TORCH_CUDA_ARCH_LIST)"
    )

    def runs_on(self, cc: float) -> tuple[bool, float | None]:
        """(compiled for exactly ``cc``, else the compiled capability whose binaries run on it). A cubin runs on
        the same major compute capability at the same or a higher minor one (Blackwell compatibility guide,
        quoted in runtime.yaml); None: nothing compiled runs there."""
        if cc in self.compiled_for:
            return True, cc
        same_major = [c for c in self.compiled_for if int(c) == int(cc) and c < cc]
        return False, (max(same_major) if same_major else None)


class ArchitectureDriver(StrictModel):
    """The oldest NVIDIA driver branch that runs a GPU generation at all."""

    min_compute_capability: float = Field(description="GPUs of this compute capability and above")
    driver: PositiveInt = Field(description="need at least this driver branch")
    cuda: str = Field(pattern=r"^\d+\.\d+$", description="the first CUDA toolkit that compiles for them")
    generation: str = Field(description="e.g. Blackwell, for messages")


class Runtime(StrictModel):
    serving_image: ServingImage
    inference_amis: dict[str, HostDriver]
    default_host_drivers: dict[str, HostDriver] = Field(description="instance family -> driver without an AMI override")
    transform_amis: dict[str, HostDriver]
    transform_instance_families: list[str]
    architecture_drivers: list[ArchitectureDriver] = Field(
        description="the oldest driver each GPU generation needs, whatever the image's CUDA"
    )

    def driver_needed_for(self, cc: float) -> ArchitectureDriver | None:
        """The architecture_drivers row of the newest generation at or below ``cc`` (None: no minimum recorded)."""
        rows = [row for row in self.architecture_drivers if cc >= row.min_compute_capability]
        return max(rows, key=lambda row: row.min_compute_capability) if rows else None


def instance_family(instance_type: str) -> str:
    """'ml.g6e.12xlarge' -> 'ml.g6e'."""
    return instance_type.rsplit(".", 1)[0]


class Catalog(StrictModel):
    pairs: dict[str, ModelPair]
    instances: dict[str, InstanceType]
    profiles: dict[ProfileName, Profile]
    runtime: Runtime
    price_region: str
    price_date: str
    price_source: str
    excluded_instances: dict[str, str] = Field({}, description="instance types left out on purpose -> why")
