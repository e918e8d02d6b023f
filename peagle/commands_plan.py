"""`peagle catalog` and `peagle plan`: what can be deployed, and what a choice resolves to."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from peagle.catalog import ProfileName, load_catalog
from peagle.config import CONTEXT_OVERRIDES, config_from_overrides, load_deployment_config
from peagle.container_env import container_environment
from peagle.deployment_rules import plan_checked_deployment
from peagle.errors import PeagleError
from peagle.planner import describe_slo
from peagle.setting_refs import Door


def register(subparsers: argparse._SubParsersAction) -> None:
    catalog = subparsers.add_parser("catalog", help="list model pairs, instance types and profiles")
    catalog.add_argument("--json", action="store_true", help="machine-readable output")
    catalog.set_defaults(handler=run_catalog)

    plan = subparsers.add_parser(
        "plan",
        help="resolve model pair x instance x profile into vLLM settings (exit 2 if it does not fit)",
        description="Plan a deployment. Without --deployment, --model and --instance are required.",
    )
    plan.add_argument("--deployment", help="a deployment YAML file (the CDK app's -c deployment=...)")
    plan.add_argument("--model", help="model pair id (see `peagle catalog`)")
    plan.add_argument("--instance", help="SageMaker instance type, e.g. ml.g6e.xlarge")
    plan.add_argument("--instance-count", type=int)
    plan.add_argument("--profile", choices=[profile.value for profile in ProfileName], help="workload profile")
    plan.add_argument("--speculative-tokens", type=int, metavar="K", help="draft tokens per step; 0 = off")
    plan.add_argument(
        "--peak-rps",
        type=float,
        metavar="R",
        help="also print the fleet that carries R requests/s at peak, from autoscaling.measured_capacity",
    )
    plan.add_argument("--env", action="store_true", help="also print the container environment")
    plan.add_argument("--json", action="store_true", help="machine-readable output")
    plan.set_defaults(handler=run_plan)


def _fail(error: Exception) -> int:
    """The error in this command's words: a setting it has a flag for is named by the flag (--instance), any
    other by its key in the deployment file (peagle/setting_refs.py)."""
    message = error.in_words(Door.CLI) if isinstance(error, PeagleError) else str(error)
    print(f"error: {message}", file=sys.stderr)
    return 2


def run_catalog(args: argparse.Namespace) -> int:
    catalog = load_catalog()
    if args.json:
        print(json.dumps(catalog.model_dump(mode="json"), indent=2))
        return 0
    print("Model pairs (target + P-EAGLE drafter):")
    pairs = catalog.pairs.items()
    # columns as wide as their longest entry: ids and Hugging Face names vary a lot in length
    w_id, w_target, w_drafter = (
        max(len(header), *(len(value(pair_id, pair)) for pair_id, pair in pairs))
        for header, value in (
            ("id", lambda pair_id, _: pair_id),
            ("target", lambda _, pair: pair.target.hf_id),
            ("drafter", lambda _, pair: pair.drafter.hf_id),
        )
    )
    print(f"  {'id':{w_id}} {'target':{w_target}} {'drafter':{w_drafter}} {'trained K':>9}  recommended K")
    for pair_id, pair in pairs:
        recommended = ", ".join(f"{name.value} {k}" for name, k in pair.recommended_k.items())
        print(
            f"  {pair_id:{w_id}} {pair.target.hf_id:{w_target}} {pair.drafter.hf_id:{w_drafter}} "
            f"{pair.drafter.trained_k:>9}  {recommended}"
        )
    print(f"\nInstance types (on-demand, {catalog.price_region}, prices of {catalog.price_date}):")
    print(f"  {'type':18} {'GPUs':>4} {'GPU':5} {'GiB/GPU':>7} {'CC':>4} {'vCPUs':>5} {'host GiB':>8} {'$/hour':>9}")
    for name, inst in sorted(catalog.instances.items(), key=lambda item: item[1].price_per_hour_usd):
        print(
            f"  {name:18} {inst.gpu_count:>4} {inst.gpu:5} {inst.gpu_memory_gib:>7g} {inst.cc:>4} {inst.vcpus:>5} "
            f"{inst.memory_gib:>8g} {inst.price_per_hour_usd:>9.3f}"
        )
    print("\nProfiles:")
    for name, profile in catalog.profiles.items():
        print(f"  {name.value:8} {profile.description}")
        print(
            f"  {'':8} max_model_len {profile.max_model_len}, max_num_seqs {profile.max_num_seqs}, "
            f"temperature {profile.sampling.temperature}, max_tokens {profile.sampling.max_tokens}, "
            f"p90 latency SLA {profile.latency_sla_p90_seconds:g} s"
        )
        print(f"  {'':8} SLO {describe_slo(profile.slo)}")
    return 0


def run_plan(args: argparse.Namespace) -> int:
    overrides = {
        "model": args.model,
        "instanceType": args.instance,
        "instanceCount": args.instance_count,
        "profile": args.profile,
        "speculativeTokens": args.speculative_tokens,
    }
    assert set(overrides) == set(CONTEXT_OVERRIDES)
    try:
        if args.deployment:
            config = load_deployment_config(args.deployment, overrides, passed_as="--deployment", door=Door.CLI)
        else:
            if not args.model or not args.instance:
                return _fail(ValueError("give --model and --instance, or --deployment FILE"))
            config = config_from_overrides(overrides, door=Door.CLI)
        plans = plan_checked_deployment(config)
    except PeagleError as error:
        return _fail(error)
    plan = plans.plan
    fleet = None
    if args.peak_rps is not None:
        if not args.peak_rps > 0:
            return _fail(ValueError(f"--peak-rps must be above 0 requests/s, not {args.peak_rps:g}"))
        fleet = plan.scaling.fleet_for(args.peak_rps) if plan.scaling else None
        if fleet is None:
            return _fail(
                ValueError(
                    "--peak-rps needs a measured capacity: run `peagle capacity` against this pair and instance "
                    "type and add its capacity-snippet.yaml (autoscaling.measured_capacity) to the deployment file"
                )
            )
    endpoint_name, unit, _ = plans.variant_plans()[0]  # the primary variant, or component
    environment = container_environment(plan, variant_name=unit, endpoint_name=endpoint_name)
    if args.json:
        document = {
            "pair": plan.pair_id,
            "instance_type": plan.instance_type,
            "instance_count": plan.instance_count,
            "profile": plan.profile_name.value,
            "speculative_tokens": plan.speculative_tokens,
            "speculative_schedule": [list(band) for band in plan.speculative_schedule] or None,
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
            # The component settings are a pydantic model, which asdict leaves as it is: dumped as JSON here.
            "inference_components": (
                dataclasses.asdict(plan.components) | {"settings": plan.components.settings.model_dump(mode="json")}
                if plan.components
                else None
            ),
            "scaling_target": (
                {"concurrency": plan.scaling.concurrency, "per": plan.scaling.unit, "source": plan.scaling.source}
                if plan.scaling and plan.scales_on_concurrency
                else None
            ),
            "peak": {"requests_per_second": args.peak_rps, plan.scaling.unit + "s": fleet} if fleet else None,
            "environment": environment,
            "serving_image": {"build": config.image.build, "path": image_path(config.image)},
        }
        print(json.dumps(document, indent=2))
        return 0
    print("\n".join(plan.summary_lines()))
    print(f"serving image   {image_path(config.image)}")
    if fleet is not None:
        measured = plan.scaling.measured
        per_unit = measured.requests_per_second * measured.headroom
        units = f"{plan.scaling.unit}{'' if fleet == 1 else 's'}"
        cost = (
            f", ${fleet * plan.price_per_hour_usd:,.2f}/hour at peak (on demand)"
            if plan.scaling.unit == "instance"
            else ""
        )
        print(
            f"peak fleet      {args.peak_rps:g} req/s at peak: {fleet} {units} ({per_unit:g} req/s each: "
            f"{measured.requests_per_second:g} measured x headroom {measured.headroom:g}){cost}; "
            f"set autoscaling.max_capacity to at least {fleet}"
            if plan.scaling.unit == "instance"
            else f"peak fleet      {args.peak_rps:g} req/s at peak: {fleet} {units} ({per_unit:g} req/s each)"
        )
    if args.env:
        print("\ncontainer environment:")
        for key, value in environment.items():
            print(f"  {key}={value}")
    return 0


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
