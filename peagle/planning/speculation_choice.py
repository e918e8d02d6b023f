"""How the planner decides K, and what it says about where K came from.

In order: what the deployment sets (``speculation.speculative_tokens`` or ``speculation.schedule``); else, where the
K-by-load model (peagle/planning/k_by_load.py) has every figure it needs and was checked on the GPU, its static K or
schedule; else the pair's recommended K for the profile (peagle/catalog/pairs.yaml), the source naming the figure
the model lacks. `peagle plan` prints the source; `peagle local` has its own table of measured defaults
(peagle/local/measured_k.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from peagle.catalog import ModelPair, Profile, ProfileName
from peagle.catalog.roofline import load_roofline_figures
from peagle.planning import k_by_load
from peagle.planning.roofline_step import decode_model, mean_decode_context
from peagle.settings import DeploymentConfig
from peagle.settings.errors import PlanError
from peagle.settings.refs import setting
from peagle_serve.contract import ScheduleBand, describe_schedule

KSource = Literal["setting", "model", "catalog", "measured"]


@dataclass(frozen=True)
class KChoice:
    """Where a K or schedule came from: ``kind``, and in words what it is and why."""

    kind: KSource
    text: str

    def describe(self) -> str:
        return f"{self.kind}: {self.text}"


@dataclass(frozen=True)
class SpeculationChoice:
    speculative_tokens: int  # with a schedule, its largest K
    choice: KChoice
    schedule: tuple[ScheduleBand, ...] = field(default=())


@dataclass(frozen=True)
class Engine:
    """What the K-by-load model needs of a planned engine."""

    gpu: str
    tensor_parallel: int
    kv_bytes_per_token_per_gpu: int
    max_num_seqs: int


def given_or_catalog(config: DeploymentConfig, pair: ModelPair) -> SpeculationChoice:
    """The deployment's K or schedule, else the pair's recommended K (which ``by_load`` may replace)."""
    schedule = config.speculation.schedule
    if schedule:
        # The config checked every band against the trained K and speculative_tokens against the largest.
        bands = tuple(band.as_tuple() for band in schedule)
        return SpeculationChoice(
            max(band[2] for band in bands),
            KChoice("setting", f"{describe_schedule(bands)} (speculation.schedule)"),
            bands,
        )
    k = config.speculation.speculative_tokens
    recommended = min(pair.recommended_k.get(config.profile, min(pair.drafter.trained_k, 3)), pair.drafter.trained_k)
    if k is None:
        return SpeculationChoice(recommended, _catalog(recommended, config.profile, ""))
    if k > pair.drafter.trained_k:
        raise PlanError(
            f"{setting('speculation.speculative_tokens', k)} exceeds what the {config.model} drafter "
            f"({pair.drafter.hf_id}) was trained for (K <= {pair.drafter.trained_k}); drafts past that "
            f"position are rarely accepted and only cost compute. Use K 1..{pair.drafter.trained_k} "
            f"(recommended for {config.profile.value}: {setting('speculation.speculative_tokens', recommended)}) or "
            f"{setting('speculation.speculative_tokens', 0)} to turn speculation off"
        )
    return SpeculationChoice(k, KChoice("setting", f"K={k} (speculation.speculative_tokens)"))


def _catalog(k: int, profile: ProfileName, why_not_modelled: str) -> KChoice:
    return KChoice(
        "catalog",
        f"K={k}, the pair's recommended K for {profile.value} (peagle/catalog/pairs.yaml)"
        + (f"; no K by load: {why_not_modelled}" if why_not_modelled else ""),
    )


def missing_figures(pair_id: str, pair: ModelPair, gpu: str) -> list[str]:
    """What the K-by-load model lacks for this pair on this GPU, each naming the file to add it to; empty: none."""
    figures = load_roofline_figures()
    missing = []
    if gpu not in figures.gpus:
        missing.append(f"peagle/catalog/gpus.yaml has no bandwidth and FLOPs for {gpu}")
    elif gpu not in k_by_load.CHECKED_GPUS:
        missing.append(
            f"the model is checked against published figures on {', '.join(k_by_load.CHECKED_GPUS)} only "
            f"(vLLM PR #32887), not on {gpu}"
        )
    if pair.target.hf_id not in figures.targets:
        missing.append(f"peagle/catalog/model_figures.yaml has no parameters for target {pair.target.hf_id}")
    if pair_id not in figures.acceptance:
        missing.append(f"peagle/catalog/model_figures.yaml has no acceptance length for {pair_id}")
    return missing


def by_load(
    catalog: SpeculationChoice, pair_id: str, pair: ModelPair, profile: tuple[ProfileName, Profile], engine: Engine
) -> SpeculationChoice:
    """The model's static K or schedule for this engine, or ``catalog`` (the recommended K) with the missing figure
    named in its source."""
    missing = missing_figures(pair_id, pair, engine.gpu)
    model = decode_model(
        pair_id,
        pair,
        engine.gpu,
        tensor_parallel=engine.tensor_parallel,
        kv_bytes_per_token_per_gpu=engine.kv_bytes_per_token_per_gpu,
    )
    if missing or model is None or model.acceptance is None:
        return SpeculationChoice(
            catalog.speculative_tokens, _catalog(catalog.speculative_tokens, profile[0], "; ".join(missing))
        )
    context = mean_decode_context(profile[1])
    chosen = k_by_load.choose(
        model, trained_k=pair.drafter.trained_k, max_num_seqs=engine.max_num_seqs, context_tokens=context
    )
    gpu = model.gpu
    basis = (
        f"roofline of {engine.tensor_parallel} x {engine.gpu} ({gpu.memory_bandwidth_gb_per_s:g} GB/s, "
        f"{gpu.dense_tflops['bf16']:g} dense BF16 TFLOPS each), target {pair.target.hf_id}, drafter "
        f"{pair.drafter.layers} layers ({pair.drafter.weight_bytes / 1e9:g} GB), acceptance length "
        f"{model.acceptance.acceptance_length:g} at K={model.acceptance.k} from the drafter card "
        f"({model.acceptance.benchmark}), {context:g}-token mean context ({profile[0].value})"
    )
    return SpeculationChoice(
        chosen.speculative_tokens, KChoice("model", f"{chosen.describe(engine.max_num_seqs)}; {basis}"), chosen.schedule
    )


def fitted(choice: SpeculationChoice, max_num_seqs: int) -> SpeculationChoice:
    """A modelled schedule ended at the plan's final max_num_seqs (k_by_load.fitted)."""
    if not choice.schedule:
        return choice
    schedule = k_by_load.fitted(choice.schedule, max_num_seqs)
    text = choice.choice.text.replace(describe_schedule(choice.schedule), describe_schedule(schedule), 1)
    return SpeculationChoice(max(band[2] for band in schedule), KChoice(choice.choice.kind, text), schedule)


def speculation_line(k: int, schedule: tuple[ScheduleBand, ...], trained_k: int) -> str:
    """`peagle plan`'s "speculation" line."""
    if k == 0:
        return "off (K=0)"
    if schedule:
        return (
            f"P-EAGLE parallel drafting, K by batch size {describe_schedule(schedule)} "
            f"(largest K={k} sizes memory; drafter trained for {trained_k})"
        )
    return f"P-EAGLE parallel drafting, K={k} (drafter trained for {trained_k})"
