"""An instance pool in `peagle simulate`: the primary type is the main reading (the template's plan), and each
fallback type, with every unit on it, is a named reading of its own where its units would serve or cost otherwise than
on every type before it (another max_num_seqs, KV cache, GPU count or price). SageMaker falls back type by type on an insufficient capacity error and
releases the last types first on scale-in ("Deploy to multiple instance types with instance pools", SageMaker developer
guide, https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-heterogeneous.html): a fleet is all on the
first type while capacity lasts, and a region short of it may leave every unit on the next, or the one after; the
mixes between are bounded by the readings."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from peagle.planning.planner import Plan


def fallback_plans(plan: Plan) -> list[Plan]:
    """The plans of the pool's fallback types, by priority, each where running every unit on it differs from ``plan``
    and from the fallbacks before it (none: no pool, or types whose units serve and cost alike)."""
    readings: list[Plan] = []
    for after in plan.fallbacks:
        if not any(_alike(after, before) for before in (plan, *readings)):
            readings.append(after)
    return readings


def _alike(one: Plan, other: Plan) -> bool:
    return (
        one.price_per_hour_usd == other.price_per_hour_usd
        and one.max_num_seqs == other.max_num_seqs
        and one.memory.kv_cache_tokens == other.memory.kv_cache_tokens
        and one.instance.gpu_count == other.instance.gpu_count
    )


def reading_name(plan: Plan) -> str:
    """What a fallback reading's targets are called after their endpoint and variant."""
    return f" on {plan.instance_type} (pool fallback, every unit)"


def with_fallbacks(planned: list[tuple[Plan, str, str | None]]) -> list[tuple[Plan, str, str | None, str]]:
    """Each (plan, door, endpoint) with its name suffix "", then its fallback readings after it."""
    runs: list[tuple[Plan, str, str | None, str]] = []
    for plan, door, endpoint in planned:
        runs.append((plan, door, endpoint, ""))
        runs += [(after, door, endpoint, reading_name(after)) for after in fallback_plans(plan)]
    return runs
