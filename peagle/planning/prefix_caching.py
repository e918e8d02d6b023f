"""Whether the engine caches prompt prefixes, and the routing that relies on it: one rule, read by the planner.

vLLM's automatic prefix caching keeps the KV cache of a prompt's full blocks and serves a later prompt that starts
with the same blocks from it. It is on by default in vLLM 0.32 (vllm/engine/arg_utils.py, EngineArgs:
``if self.enable_prefix_caching is None: self.enable_prefix_caching = default_prefix_caching``, where
``default_prefix_caching = model_config.is_prefix_caching_supported``, true for a decoder-only generative model); the
P-EAGLE model cards serve with it off (``--no-enable-prefix-caching``). Prefix-aware routing ("routes requests that share the same prompt prefix to the same instance", SageMaker
API Reference, ProductionVariantRoutingConfig) only pays when the instance it picks has the prefix cached, so it is
tied to caching here: choosing it turns caching on, where the pair allows caching with its drafter.

Whether a pair allows it is data (``ModelPair.prefix_caching`` in peagle/catalog/pairs.yaml, with its evidence:
the measurement in docs/baselines/prefix-caching/ and the vLLM issues it cites).

How the plan decides, first match wins:
1. ``vllm_args`` names ``enable-prefix-caching``: that value (a pair that refuses caching refuses ``true``);
2. prefix-aware routing: on (refused for a pair that refuses caching, and with ``enable-prefix-caching: false``);
3. the pair's own ``vllm_flags`` (its card's flag);
4. vLLM's default, on, where the pair allows caching; off where it does not.
"""

from __future__ import annotations

from dataclasses import dataclass

from peagle.catalog import ModelPair
from peagle.settings.errors import PlanError
from peagle.settings.refs import setting

FLAG = "enable-prefix-caching"
PREFIX_AWARE = "PREFIX_AWARE"


@dataclass(frozen=True)
class PrefixCachingChoice:
    enabled: bool
    why: str  # one line for `peagle plan`


def decide(
    *, pair_id: str, pair: ModelPair, routing_strategy: str, vllm_args: dict[str, bool | int | float | str]
) -> PrefixCachingChoice:
    """Whether the plan's engine caches prefixes, or PlanError when the settings ask for what the pair refuses."""
    verdict = pair.prefix_caching
    asked = vllm_args.get(FLAG)
    prefix_aware = routing_strategy == PREFIX_AWARE
    if asked is not None and not isinstance(asked, bool):
        raise PlanError(f"{setting('vllm_args')} {FLAG} is {asked!r}; vLLM takes true or false")
    if asked is False and prefix_aware:
        raise PlanError(
            f"prefix-aware routing ({setting('endpoint.routing.strategy', PREFIX_AWARE)}) sends requests that share "
            "a prompt prefix to the same instance so that its prefix cache serves them, but "
            f"{setting('vllm_args')} sets {FLAG}: false. Remove that flag, or route by load "
            f"({setting('endpoint.routing.strategy', 'LEAST_OUTSTANDING_REQUESTS')})"
        )
    if (asked or prefix_aware) and not verdict.allowed:
        what = (
            f"prefix-aware routing ({setting('endpoint.routing.strategy', PREFIX_AWARE)}) needs vLLM's prefix cache"
            if prefix_aware
            else f"{setting('vllm_args')} turns on vLLM's prefix cache ({FLAG}: true)"
        )
        raise PlanError(
            f"{what}, which pair {pair_id} does not allow with its drafter: {verdict.evidence}. "
            + (
                f"Route by load ({setting('endpoint.routing.strategy', 'LEAST_OUTSTANDING_REQUESTS')})"
                if prefix_aware
                else f"Remove {FLAG} from {setting('vllm_args')}"
            )
        )
    if asked is not None:
        return PrefixCachingChoice(asked, f"{'on' if asked else 'off'} (vllm_args {FLAG}: {str(asked).lower()})")
    if prefix_aware:
        card = pair.vllm_flags.get(FLAG)
        overrides = " (over the drafter card's off)" if card is False else ""
        return PrefixCachingChoice(True, f"on for prefix-aware routing{overrides}: {verdict.evidence}")
    card = pair.vllm_flags.get(FLAG)
    if isinstance(card, bool):
        return PrefixCachingChoice(card, f"{'on' if card else 'off'} (the pair's flag, as its drafter's card serves)")
    if verdict.allowed:
        return PrefixCachingChoice(True, "on (vLLM's default; the pair allows it with its drafter)")
    return PrefixCachingChoice(False, f"off (the pair does not allow it with its drafter: {verdict.evidence})")
