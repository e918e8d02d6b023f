"""`peagle catalog` and `peagle plan`: what can be deployed, and what a choice resolves to."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from peagle.catalog import ProfileName, load_catalog
from peagle.cli_errors import ExitCode, run_reporting_errors
from peagle.cli_options import add_command, option
from peagle.cli_table import table_lines
from peagle.planning.container_env import container_environment
from peagle.planning.deployment_rules import plan_checked_deployment
from peagle.planning.planner import describe_slo, plan_type
from peagle.planning.pool_plans import PoolTypePlan, pool_type_plans
from peagle.settings import CONTEXT_OVERRIDES, DeploymentConfig, config_from_overrides, load_deployment_config
from peagle.settings.errors import PeagleError
from peagle.settings.refs import Door

if TYPE_CHECKING:
    from peagle.catalog import Catalog
    from peagle.planning.planner import Plan


_CATALOG_OPTIONS = (option("--json", action="store_true", help="machine-readable output"),)

_PLAN_OPTIONS = (
    option("--deployment", help="a deployment YAML file (the CDK app's -c deployment=...)"),
    option("--model", help="model pair id (see `peagle catalog`)"),
    option("--instance", help="SageMaker instance type, e.g. ml.g6e.xlarge"),
    option("--instance-count", type=int),
    option("--profile", choices=[profile.value for profile in ProfileName], help="workload profile"),
    option("--speculative-tokens", type=int, metavar="K", help="draft tokens per step; 0 = off"),
    option(
        "--peak-rps",
        type=float,
        metavar="R",
        help="also print the fleet that carries R requests/s at peak, from autoscaling.measured_capacity",
    ),
    option("--env", action="store_true", help="also print the container environment"),
    option("--json", action="store_true", help="machine-readable output"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers, "catalog", run_catalog, _CATALOG_OPTIONS, help="list model pairs, instance types and profiles"
    )
    add_command(
        subparsers,
        "plan",
        run_plan,
        _PLAN_OPTIONS,
        help="resolve model pair x instance x profile into vLLM settings (exit 2 if it does not fit)",
        description="Plan a deployment. Without --deployment, --model and --instance are required.",
    )


def run_catalog(args: argparse.Namespace) -> int:
    catalog = load_catalog()
    if args.json:
        print(json.dumps(catalog.model_dump(mode="json"), indent=2))
        return ExitCode.OK
    print("Model pairs (target + P-EAGLE drafter):")
    print("\n".join(_pair_lines(catalog)))
    print(f"\nInstance types (on-demand, {catalog.price_region}, prices of {catalog.price_date}):")
    print("\n".join(_instance_lines(catalog)))
    print("\nProfiles:")
    for name, profile in catalog.profiles.items():
        print(f"  {name.value:8} {profile.description}")
        print(
            f"  {'':8} max_model_len {profile.max_model_len}, max_num_seqs {profile.max_num_seqs}, "
            f"temperature {profile.sampling.temperature}, max_tokens {profile.sampling.max_tokens}, "
            f"p90 latency SLA {profile.latency_sla_p90_seconds:g} s"
        )
        print(f"  {'':8} SLO {describe_slo(profile.slo)}")
    return ExitCode.OK


def _pair_lines(catalog: Catalog) -> list[str]:
    """Columns as wide as their longest entry: ids and Hugging Face names vary a lot in length."""
    rows = [
        (
            pair_id,
            pair.target.hf_id,
            pair.drafter.hf_id,
            pair.drafter.trained_k,
            ", ".join(f"{name.value} {k}" for name, k in pair.recommended_k.items()),
        )
        for pair_id, pair in catalog.pairs.items()
    ]
    return table_lines(("id", "target", "drafter", "trained K", "recommended K"), rows, right={3}, indent="  ", gap=" ")


def _instance_lines(catalog: Catalog) -> list[str]:
    """Cheapest first; columns as wide as their widest cell (the Blackwell GPU names are long)."""
    rows = [
        (
            name,
            inst.gpu_count,
            inst.gpu,
            f"{inst.gpu_memory_gib:g}",
            inst.cc,
            inst.vcpus,
            f"{inst.memory_gib:g}",
            f"{inst.price_per_hour_usd:.3f}",
        )
        for name, inst in sorted(catalog.instances.items(), key=lambda item: item[1].price_per_hour_usd)
    ]
    header = ("type", "GPUs", "GPU", "GiB/GPU", "CC", "vCPUs", "host GiB", "$/hour")
    return table_lines(header, rows, right={1, 3, 4, 5, 6, 7}, indent="  ", gap=" ")


def run_plan(args: argparse.Namespace) -> int:
    # A setting this command has a flag for is named by the flag (--instance), any other by its key in the
    # deployment file (peagle/settings/words.py).
    return run_reporting_errors(_plan, args, [(PeagleError, ExitCode.BAD_INPUT)], describe=_in_cli_words)


def _in_cli_words(error: Exception) -> str:
    return error.in_words(Door.CLI) if isinstance(error, PeagleError) else str(error)


def _plan(args: argparse.Namespace) -> int:
    config = _config(args)
    # An instance pool: every type's plan, the refused ones too, before the first refusal stops the command.
    pool = pool_type_plans(config, plan_type) if config.instance.fallback_types else []
    if any(each.refused for each in pool) and not args.json:
        print("\n".join(_pool_lines(pool)) + "\n")
    plans = plan_checked_deployment(config)
    plan = plans.plan
    fleet = _peak_fleet(plan, args.peak_rps)
    endpoint_name, unit, _ = plans.variant_plans()[0]  # the primary variant, or component
    environment = container_environment(plan, variant_name=unit, endpoint_name=endpoint_name)
    if args.json:
        document = _plan_document(plan, config, args.peak_rps, fleet, environment)
        print(json.dumps({**document, "instance_pool": _pool_document(pool) or None}, indent=2))
        return ExitCode.OK
    print("\n".join(_summary_with_k_source(plan)))
    print(f"serving image   {image_path(config.image)}")
    if pool:
        print("\n".join(["", *_pool_lines(pool)]))
    if fleet is not None:
        print(_peak_fleet_line(plan, args.peak_rps, fleet))
    if args.env:
        print("\ncontainer environment:")
        for key, value in environment.items():
            print(f"  {key}={value}")
    return ExitCode.OK


def _pool_lines(pool: list[PoolTypePlan]) -> list[str]:
    """One line per pool type, by priority: the plan the variant runs on that type, or why the type is refused."""
    rows = []
    for each in pool:
        plan = each.plan
        if plan is None:
            rows.append((each.priority, each.instance_type, "-", "-", "-", "-", "-", "refused"))
            continue
        rows.append((
            each.priority,
            each.instance_type,
            plan.tensor_parallel_size,
            plan.max_num_seqs,
            f"{plan.max_num_batched_tokens:,}",
            plan.speculative_tokens,
            f"{plan.price_per_hour_usd:,.2f}",
            "fits",
        ))  # fmt: skip
    header = ("priority", "type", "TP", "max_num_seqs", "token budget", "K", "$/hour", "")
    lines = ["instance pool (SageMaker tries the types by priority, 1 first, and releases the last first):"]
    lines += table_lines(header, rows, right={0, 2, 3, 4, 5, 6}, indent="  ")
    lines += [f"  priority {each.priority} refused: {each.refused}" for each in pool if each.refused]
    return lines


def _pool_document(pool: list[PoolTypePlan]) -> list[dict[str, Any]]:
    """`peagle plan --json`'s instance pool: each type's priority and plan figures, or why it is refused."""
    return [
        {
            "priority": each.priority,
            "instance_type": each.instance_type,
            "tensor_parallel_size": each.plan.tensor_parallel_size if each.plan else None,
            "max_num_seqs": each.plan.max_num_seqs if each.plan else None,
            "max_num_batched_tokens": each.plan.max_num_batched_tokens if each.plan else None,
            "speculative_tokens": each.plan.speculative_tokens if each.plan else None,
            "price_per_hour_usd": each.plan.price_per_hour_usd if each.plan else None,
            "refused": each.refused,
        }
        for each in pool
    ]


def _summary_with_k_source(plan: Plan) -> list[str]:
    """The plan's summary with where K came from after its speculation line. Only here: the dashboard's copy of the
    summary (peagle_cdk/endpoint_monitoring.py) and the template's recorded plan leave the source out, so a template
    changes only when K does."""
    lines = plan.summary_lines()
    if plan.k_choice is None:
        return lines
    at = next(i for i, line in enumerate(lines) if line.startswith("speculation ")) + 1
    return [*lines[:at], f"K source        {plan.k_choice.describe()}", *lines[at:]]


def _config(args: argparse.Namespace) -> DeploymentConfig:
    """--deployment with the flags over it, else the flags alone (--model and --instance at least)."""
    overrides = {
        "model": args.model,
        "instanceType": args.instance,
        "instanceCount": args.instance_count,
        "profile": args.profile,
        "speculativeTokens": args.speculative_tokens,
    }
    assert set(overrides) == set(CONTEXT_OVERRIDES)
    if args.deployment:
        return load_deployment_config(args.deployment, overrides, passed_as="--deployment", door=Door.CLI)
    if not args.model or not args.instance:
        raise PeagleError("give --model and --instance, or --deployment FILE")
    return config_from_overrides(overrides, door=Door.CLI)


def _peak_fleet(plan: Plan, peak_rps: float | None) -> int | None:
    """The units that carry --peak-rps, from the measured capacity; None without --peak-rps."""
    if peak_rps is None:
        return None
    if not peak_rps > 0:
        raise PeagleError(f"--peak-rps must be above 0 requests/s, not {peak_rps:g}")
    fleet = plan.scaling.fleet_for(peak_rps) if plan.scaling else None
    if fleet is None:
        raise PeagleError(
            "--peak-rps needs a measured capacity: run `peagle capacity` against this pair and instance "
            "type and add its capacity-snippet.yaml (autoscaling.measured_capacity) to the deployment file"
        )
    return fleet


def _peak_fleet_line(plan: Plan, peak_rps: float, fleet: int) -> str:
    scaling = plan.scaling
    assert scaling is not None and scaling.measured is not None  # _peak_fleet found a fleet from them
    measured = scaling.measured
    per_unit = measured.requests_per_second * measured.headroom
    units = f"{scaling.unit}{'' if fleet == 1 else 's'}"
    if scaling.unit != "instance":
        return f"peak fleet      {peak_rps:g} req/s at peak: {fleet} {units} ({per_unit:g} req/s each)"
    cost = f", ${fleet * plan.price_per_hour_usd:,.2f}/hour at peak (on demand)"
    return (
        f"peak fleet      {peak_rps:g} req/s at peak: {fleet} {units} ({per_unit:g} req/s each: "
        f"{measured.requests_per_second:g} measured x headroom {measured.headroom:g}){cost}; "
        f"set autoscaling.max_capacity to at least {fleet}"
    )


def _plan_document(
    plan: Plan, config: DeploymentConfig, peak_rps: float | None, fleet: int | None, environment: dict[str, str]
) -> dict[str, Any]:
    """`peagle plan --json`."""
    return {
        "pair": plan.pair_id,
        "instance_type": plan.instance_type,
        "instance_count": plan.instance_count,
        "profile": plan.profile_name.value,
        "speculative_tokens": plan.speculative_tokens,
        "speculative_schedule": [list(band) for band in plan.speculative_schedule] or None,
        # Where K came from: setting, model (K by load) or catalog (peagle/planning/speculation_choice.py).
        "k_source": {"kind": plan.k_choice.kind, "text": plan.k_choice.text} if plan.k_choice else None,
        "tensor_parallel_size": plan.tensor_parallel_size,
        "max_model_len": plan.max_model_len,
        "max_num_seqs": plan.max_num_seqs,
        "gpu_memory_utilization": plan.gpu_memory_utilization,
        "kv_cache_dtype": plan.kv_cache_dtype,
        "inference_ami_version": plan.inference_ami_version,
        "cost_per_hour_usd": plan.cost_per_hour_usd,
        "price_per_hour_usd": plan.price_per_hour_usd,
        "price_source": plan.price_source,
        "memory_per_gpu_gib": {
            "target": plan.memory.target_weights_gib,
            "drafter": plan.memory.drafter_weights_gib,
            "runtime": plan.memory.runtime_reserve_gib,
            "kv_cache": plan.memory.kv_cache_gib,
        },
        "kv_cache_tokens": plan.memory.kv_cache_tokens,
        "prefix_caching": {"enabled": plan.prefix_caching, "why": plan.prefix_caching_why},
        "routing": plan.routing.model_dump(mode="json"),
        "notes": list(plan.notes),
        "inference_components": plan.units.as_json(),  # the pool's fields, or None for production variants
        "scaling_target": (
            {"concurrency": plan.scaling.concurrency, "per": plan.scaling.unit, "source": plan.scaling.source}
            if plan.scaling and plan.scales_on_concurrency
            else None
        ),
        "peak": {"requests_per_second": peak_rps, plan.scaling.unit + "s": fleet} if fleet and plan.scaling else None,
        "environment": environment,
        "serving_image": {"build": config.image.build, "path": image_path(config.image)},
    }


def image_path(image) -> str:
    """How `cdk deploy` gets the serving image, for the plan (docs/deployment.md, "The serving image, built in
    your account", says where the time and cost estimates come from)."""
    if image.build == "local_docker":
        return (
            "built by your Docker during `cdk deploy` and pushed from this machine (several GB; needs Docker; "
            "image.build: in_account builds it in the account instead)"
        )
    base = (
        "the vLLM base through an ECR pull-through cache of Docker Hub"
        if image.pull_through_cache_secret_arn
        else "the vLLM base from your mirror"
        if image.base_mirror
        else "the vLLM base anonymously from Docker Hub (its pull limits apply)"
    )
    return (
        "built in your account by CodeBuild during `cdk deploy` (no Docker needed; first build ~15-30 min and "
        f"~$0.20, estimated), pulling {base}"
    )
