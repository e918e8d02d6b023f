"""An instance pool in `peagle simulate`: the primary type is the main reading (the template's plan), and the pool's
next type, with every unit on it, is a named reading of its own where its units would serve or cost otherwise (another
max_num_seqs, KV cache, GPU count or price). SageMaker falls back type by type on an insufficient capacity error and
releases the last types first on scale-in ("Deploy to multiple instance types with instance pools", SageMaker developer
guide, https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-heterogeneous.html): a fleet is all on the
first type while capacity lasts, and a region short of it may leave every unit on the next; the mixes between are
bounded by the two readings."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from peagle.planning.planner import Plan


def fallback_plan(plan: Plan) -> Plan | None:
    """The plan of the pool's type of priority 2 where running every unit on it differs from ``plan`` (None: no
    pool, or a next type whose units serve and cost alike)."""
    if not plan.fallbacks:
        return None
    after = plan.fallbacks[0]
    alike = (
        after.price_per_hour_usd == plan.price_per_hour_usd
        and after.max_num_seqs == plan.max_num_seqs
        and after.memory.kv_cache_tokens == plan.memory.kv_cache_tokens
        and after.instance.gpu_count == plan.instance.gpu_count
    )
    return None if alike else after


def reading_name(plan: Plan) -> str:
    """What a fallback reading's targets are called after their endpoint and variant."""
    return f" on {plan.instance_type} (pool fallback, every unit)"


def with_fallbacks(planned: list[tuple[Plan, str, str | None]]) -> list[tuple[Plan, str, str | None, str]]:
    """Each (plan, door, endpoint) with its name suffix "", then, where it differs, its fallback reading after it."""
    runs: list[tuple[Plan, str, str | None, str]] = []
    for plan, door, endpoint in planned:
        runs.append((plan, door, endpoint, ""))
        after = fallback_plan(plan)
        if after is not None:
            runs.append((after, door, endpoint, reading_name(after)))
    return runs
