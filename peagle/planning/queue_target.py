"""The queue policy's target (autoscaling.scale_on_queue): requests waiting per unit, what `peagle plan` prints and
peagle_cdk/planned_scaling.py writes into the target-tracking policy."""

from __future__ import annotations

from typing import Any, Protocol


class Plan(Protocol):
    """What this module reads of peagle.planning.planner.Plan (which imports this module, so it is not imported
    here)."""

    @property
    def autoscaling(self) -> Any: ...  # AutoscalingSettings | None
    @property
    def profile(self) -> Any: ...  # peagle.catalog.Profile
    @property
    def max_num_seqs(self) -> int: ...
    @property
    def fallbacks(self) -> tuple[Any, ...]: ...  # the pool's other types' plans
    @property
    def request_seconds_estimate(self) -> float: ...
    @property
    def scaling(self) -> Any: ...  # ScalingTarget | None


def queue_target(plan: Plan) -> float | None:
    """Requests waiting per unit the queue policy aims at (None: the policy is off): ``autoscaling.target_requests_
    waiting``, else the queue one unit admits within the profile's TTFT bound (our estimate, not an AWS or vLLM rule).
    vLLM admits a waiting request when a running one finishes; with max_num_seqs running, each for the plan's request
    time T (half the p90 latency SLA, Plan.request_seconds_estimate), slots free at max_num_seqs / T a second, so W
    waiting requests are all admitted within W x T / max_num_seqs seconds, and W = max_num_seqs x TTFT / T keeps that
    within the TTFT bound. At least 1: below it the Average says the unit was full only part of the minute. Where the
    KV cache holds fewer than max_num_seqs requests (long prompts) slots free more slowly and the wait is longer: set a
    measured target then. Without a TTFT bound in the SLO: 1. An instance pool's one policy serves every type: the
    type with the fewest slots sets it (peagle/planning/pool_plans.py does the same for the concurrency target)."""
    scaling = plan.autoscaling
    if scaling is None or not scaling.scale_on_queue:
        return None
    if scaling.target_requests_waiting is not None:
        return scaling.target_requests_waiting
    ttft = plan.profile.slo.ttft_seconds
    if ttft is None:
        return 1.0
    slots = min(each.max_num_seqs for each in (plan, *plan.fallbacks))
    return max(1.0, round(slots * ttft / plan.request_seconds_estimate, 2))


def queue_target_line(plan: Plan) -> list[str]:
    """`peagle plan`'s line for the queue policy (none when it is off)."""
    target = queue_target(plan)
    if target is None:
        return []
    given = plan.autoscaling is not None and plan.autoscaling.target_requests_waiting is not None
    source = "set" if given else "an estimate: the queue a unit admits within the TTFT bound"
    return [
        f"queue target    {target:g} requests waiting per {plan.scaling.unit if plan.scaling else 'unit'} ({source})"
    ]
