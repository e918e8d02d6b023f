"""An instance pool, planned type by type: the variant's fallback types (instance.fallback_types, after
instance.type) each get the plan the planner makes for that type alone (same pair, profile, speculation setting,
timeouts and scaling; its own tensor parallelism, max_num_seqs, token budget, K where the load model picks another,
and price), and a type that cannot hold the pair is refused naming the smallest that fits.

SageMaker provisions the pool by priority: "SageMaker AI tries to provision instances from the highest-priority pool
(priority 1). If SageMaker AI encounters an insufficient capacity error (ICE) for the current instance type, it
automatically falls back to the next pool in priority order"; on scale-in "SageMaker AI releases instances starting
with the lowest-priority pool" ("Deploy to multiple instance types with instance pools", SageMaker developer guide,
https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-heterogeneous.html). The variant has one
InferenceAmiVersion for all its types, so the GPU-driver rule (peagle/planning/deployment_rules.py, gpu-driver) runs
on every type's plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

from peagle.settings import DeploymentConfig
from peagle.settings.errors import PlanError
from peagle.settings.refs import setting


class PoolPlan(Protocol):
    """What this module reads of peagle.planning.planner.Plan (which imports this module, so it is not imported
    here): a dataclass (``replace`` adds the pool), its type, its price and its pool."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def instance_type(self) -> str: ...
    @property
    def price_per_hour_usd(self) -> float: ...
    @property
    def fallbacks(self) -> tuple[Self, ...]: ...
    @property
    def gpus_per_metric(self) -> int: ...
    @property
    def scaling(self) -> Any: ...  # planner.ScalingTarget | None


Plan = TypeVar("Plan", bound=PoolPlan)
Planned = TypeVar("Planned", bound=PoolPlan, covariant=True)

# The provision timeout a pool gets where none is given: the instance launch the planner's start budget already
# allows (peagle/planning/planner.py, INSTANCE_LAUNCH_ALLOWANCE_S), so the scaling policies, which wait that budget
# for capacity they added, never give up on a fallback SageMaker is still provisioning. Within the API's "Valid
# values: 300 to 3600" (botocore 1.44.5, ProductionVariant.VariantInstanceProvisionTimeoutInSeconds).
DEFAULT_POOL_PROVISION_TIMEOUT_SECONDS = 600


class PlanType(Protocol[Planned]):
    def __call__(self, config: DeploymentConfig, *, fix: Callable[[str], str] | None = None) -> Planned: ...


@dataclass(frozen=True)
class PoolTypePlan(Generic[Plan]):
    """One pool type as `peagle plan` shows it: its priority (1 = instance.type), and its plan or why it is refused."""

    priority: int
    instance_type: str
    plan: Plan | None
    refused: str | None = None


def with_pool(config: DeploymentConfig, primary: Plan, plan_type: PlanType[Plan]) -> Plan:
    """``primary`` with its pool: every fallback type's plan, the provision timeout and the reservation (unchanged
    without them); PlanError for the first fallback type that cannot hold the pair."""
    instance = config.instance
    if not instance.fallback_types and instance.provision_timeout_seconds is None and not instance.ml_reservation_arn:
        return primary
    fallbacks = tuple(
        _fallback_plan(config, name, priority, plan_type)
        for priority, name in enumerate(instance.fallback_types, start=2)
    )
    timeout = instance.provision_timeout_seconds
    if timeout is None and fallbacks:
        timeout = DEFAULT_POOL_PROVISION_TIMEOUT_SECONDS
    # The timeout is the variant's, whichever type it provisions: each type's start budget counts it.
    fallbacks = tuple(replace(each, provision_timeout_seconds=timeout) for each in fallbacks)
    _one_gpu_target(config, primary, fallbacks)
    return replace(
        primary,
        fallbacks=fallbacks,
        provision_timeout_seconds=timeout,
        ml_reservation_arn=instance.ml_reservation_arn,
        scaling=_pool_scaling_target(primary, fallbacks),
    )


def _one_gpu_target(config: DeploymentConfig, primary: Plan, fallbacks: tuple[Plan, ...]) -> None:
    """A variant's scaling policies are one per variant, whichever types run: the GPU-utilization target is a percent
    per GPU times the GPUs GPUUtilization sums ("multiplied by the number of GPUs", peagle_cdk/endpoint_scaling.py), so
    it fits a pool only when every type sums as many GPUs. PlanError naming the type otherwise."""
    autoscaling = config.autoscaling
    if not autoscaling.enabled or autoscaling.gpu_utilization_target_percent is None:
        return
    for each in fallbacks:
        if each.gpus_per_metric != primary.gpus_per_metric:
            raise PlanError(
                f"{setting('instance.fallback_types')} {each.instance_type!r} has {each.gpus_per_metric} GPU(s) per "
                f"instance and {setting('instance.type')} {primary.instance_type!r} {primary.gpus_per_metric}: the "
                "variant's one GPU-utilization scaling target (a percent per GPU x the GPUs the metric sums) cannot "
                f"fit both. Use fallback types with {primary.gpus_per_metric} GPU(s), or scale without it "
                f"({setting('autoscaling.gpu_utilization_target_percent', None)})"
            )


def _pool_scaling_target(primary: Plan, fallbacks: tuple[Plan, ...]) -> Any:
    """The concurrency target of the variant, one for every type it may run on. A guessed target (a share of
    max_num_seqs) is each type's own; the pool takes the lowest, so a unit on the type holding fewest requests is not
    past its slots before the fleet scales out (the larger types then scale out early: more cost, not missed SLOs).
    A target that was set or measured stays as given: it is the user's, for whichever type they measured on."""
    target = primary.scaling
    if target is None or not target.is_guess:
        return target
    lowest = min((primary, *fallbacks), key=lambda each: each.scaling.concurrency if each.scaling else float("inf"))
    if lowest is primary or lowest.scaling is None:
        return target
    return replace(
        lowest.scaling,
        source=f"{lowest.scaling.source}; the pool's lowest, on {lowest.instance_type}, so every type scales before "
        "its slots are full",
    )


def pool_type_plans(config: DeploymentConfig, plan_type: PlanType[Plan]) -> list[PoolTypePlan[Plan]]:
    """Every pool type's plan, in priority order, the refused ones with their reason (for `peagle plan`, which
    shows them all rather than stop at the first)."""
    plans: list[PoolTypePlan[Plan]] = []
    for priority, name in enumerate(config.instance.pool, start=1):
        try:
            if priority == 1:
                plans.append(PoolTypePlan(priority, name, plan_type(type_config(config, name))))
            else:
                plans.append(PoolTypePlan(priority, name, _fallback_plan(config, name, priority, plan_type)))
        except PlanError as error:
            plans.append(PoolTypePlan(priority, name, None, str(error)))
    return plans


def _fallback_plan(config: DeploymentConfig, name: str, priority: int, plan_type: PlanType[Plan]) -> Plan:
    try:
        return plan_type(type_config(config, name), fix=_replace_fallback(name))
    except PlanError as error:
        raise PlanError(f"{setting('instance.fallback_types')} {name!r} (pool priority {priority}): {error}") from None


def type_config(config: DeploymentConfig, name: str) -> DeploymentConfig:
    """The deployment as if ``name`` were its only instance type. instance.price_per_hour_usd prices instance.type
    only: a fallback type's price is its catalog (or custom_instances) row."""
    if name == config.instance.type:
        instance = config.instance.model_copy(update={"fallback_types": []})
    else:
        instance = config.instance.model_copy(update={"type": name, "fallback_types": [], "price_per_hour_usd": None})
    return config.model_copy(update={"instance": instance})


def most_expensive(plan: Plan) -> Plan:
    """The pool type whose instance-hour costs most (``plan`` itself without a pool): what a cost bound uses where
    CloudWatch cannot tell which types run."""
    return max((plan, *plan.fallbacks), key=lambda each: each.price_per_hour_usd)


def _replace_fallback(name: str) -> Callable[[str], str]:
    def fix(suggestion: str) -> str:
        return f"replace {name!r} in {setting('instance.fallback_types')} with {suggestion!r}, or remove it"

    return fix


def pool_pricing_note(plan: PoolPlan) -> str:
    """What a cost figure priced at ``most_expensive(plan)`` must say ('' without a pool). "CloudWatch publishes
    these metrics with an InstanceType dimension" names invocation and host metrics (Invocations, ModelLatency,
    CPUUtilization), none a count of instances, and the launcher's KPI lines do not name their type; the count per
    type is DescribeEndpoint's ("The ProductionVariants in the response include an InstancePools list with the current
    count for each instance type", "Deploy to multiple instance types with instance pools", "Monitor instance pools")."""
    if not plan.fallbacks:
        return ""
    top = most_expensive(plan)
    return (
        f"; the instance pool ({', '.join(each.instance_type for each in (plan, *plan.fallbacks))}) is priced at its "
        f"most expensive type, {top.instance_type} at ${top.price_per_hour_usd:g}/instance-hour, an upper bound: "
        "CloudWatch counts no instances per type (DescribeEndpoint's InstancePools does)"
    )


def reservation_lines(ml_reservation_arn: str | None) -> list[str]:
    """What running on reserved capacity changes for the bill and for serving (none without a reservation).

    Billing: a training plan is paid for upfront, "The payment for the total amount is automatically collected as part
    of the fulfillment process" ("Reserve the best training plan", SageMaker developer guide,
    https://docs.aws.amazon.com/sagemaker/latest/dg/choose-best-training-plan-using-api-cli-sdk.html); whether an
    endpoint's instance-hours on it are billed again is documented on no page read here, so the on-demand figure is
    kept and said not to be the reservation's cost. Serving: "The endpoint only functions during the reservation
    window", and when the reservation expires with capacity-reservations-only (the one preference the API takes) "the
    endpoint stops serving traffic and invocations fail with a capacity error" ("Using training plans for SageMaker
    inference endpoints", https://docs.aws.amazon.com/sagemaker/latest/dg/training-plan-utilization-for-inference-endpoints.html).
    """
    if ml_reservation_arn is None:
        return []
    return [
        f"reservation     {ml_reservation_arn}: instances launch only into it (capacity-reservations-only); the "
        "endpoint serves only within its window and invocations fail with a capacity error once it expires",
        "                billing: the training plan was paid upfront; the on-demand cost above is not what it costs, "
        "and whether its instance-hours are billed again is not documented (not checked)",
    ]
