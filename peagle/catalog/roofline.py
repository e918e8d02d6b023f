"""The figures a roofline estimate of decode needs: per GPU (gpus.yaml) and per model (model_figures.yaml).

Kept apart from ``load_catalog()`` on purpose: these tables are optional (a GPU, target or pair missing here has
no estimate, which is not an error), while every catalog row must be complete. Read by
peagle/simulate/service_estimate.py.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from peagle.catalog.schema import StrictModel

_HERE = Path(__file__).parent

Precision = Literal["bf16", "fp8", "fp4"]


class GpuFigures(StrictModel):
    memory_bandwidth_gb_per_s: PositiveFloat = Field(description="peak memory bandwidth, GB/s (10^9 bytes)")
    dense_tflops: dict[Precision, PositiveFloat] = Field(description="dense tensor throughput by precision")

    @property
    def bytes_per_second(self) -> float:
        return self.memory_bandwidth_gb_per_s * 1e9

    @property
    def bf16_flops(self) -> float:
        return self.dense_tflops["bf16"] * 1e12


class TargetFigures(StrictModel):
    total_parameters: PositiveFloat
    active_parameters: PositiveFloat = Field(description="parameters one token passes through")
    experts_per_layer: PositiveInt | None = Field(None, description="experts per MoE block (None: dense)")
    experts_per_token: PositiveInt | None = Field(None, description="experts routed per token")
    expert_bits: PositiveFloat | None = Field(None, description="bits per expert parameter as served")

    @model_validator(mode="after")
    def _moe_complete(self) -> TargetFigures:
        moe = (self.experts_per_layer, self.experts_per_token, self.expert_bits)
        if any(value is None for value in moe) and any(value is not None for value in moe):
            raise ValueError("experts_per_layer, experts_per_token and expert_bits go together (a MoE) or not at all")
        if self.active_parameters > self.total_parameters:
            raise ValueError("active_parameters cannot exceed total_parameters")
        return self

    @property
    def active_weight_bytes(self) -> float:
        """Bytes of weights one token reads: the non-expert weights at BF16 plus the routed experts' (dense: all)."""
        if self.experts_per_layer is None or self.experts_per_token is None or self.expert_bits is None:
            return self.active_parameters * 2.0
        routed_share = self.experts_per_token / self.experts_per_layer
        experts_total = (self.total_parameters - self.active_parameters) / (1.0 - routed_share)
        rest = self.total_parameters - experts_total
        active_experts = self.active_parameters - rest
        return rest * 2.0 + active_experts * self.expert_bits / 8.0


class AcceptanceFigure(StrictModel):
    k: PositiveInt = Field(description="the K the figure was measured at")
    acceptance_length: float = Field(ge=1.0, description="mean tokens a step yields, the verified token included")
    benchmark: str


class RooflineFigures(StrictModel):
    gpus: dict[str, GpuFigures]
    targets: dict[str, TargetFigures]
    acceptance: dict[str, AcceptanceFigure]


def _read_yaml(name: str) -> dict:
    with (_HERE / name).open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@lru_cache(maxsize=1)
def load_roofline_figures() -> RooflineFigures:
    models = _read_yaml("model_figures.yaml")
    return RooflineFigures(
        gpus=_read_yaml("gpus.yaml")["gpus"], targets=models["targets"], acceptance=models["acceptance"]
    )
