"""The rules that look across sections of the deployment settings, and the old keys that moved between sections.

DeploymentConfig (peagle/settings/deployment.py) calls them: the moves and defaults on the raw settings before
they are validated, ``deployment_problems`` on the validated sections after. A section's own rules are in its
module; the rules that need the plan (SageMaker's, vLLM's) in peagle/planning/deployment_rules.py."""

from __future__ import annotations

import re
import warnings

from peagle.catalog import load_catalog
from peagle.settings.instance_pools import pool_problems
from peagle.settings.observability import LOG_RETENTION_DAYS
from peagle.settings.refs import setting
from peagle.settings.sections import DeploymentSections
from peagle_serve.contract import schedule_problems


def latency_sla_moved(data: object) -> object:
    """One key for the latency SLA: profile_overrides.latency_sla_p90_seconds still loads, as
    alarms.latency_sla_p90_seconds, with a FutureWarning."""
    if not isinstance(data, dict) or not isinstance(data.get("profile_overrides"), dict):
        return data
    overrides = dict(data["profile_overrides"])
    if "latency_sla_p90_seconds" not in overrides:
        return data
    alarms = data.get("alarms", {})
    if isinstance(alarms, dict) and "latency_sla_p90_seconds" in alarms:
        raise ValueError(
            "profile_overrides.latency_sla_p90_seconds is the old place of alarms.latency_sla_p90_seconds; give "
            "only alarms.latency_sla_p90_seconds"
        )
    warnings.warn(
        "profile_overrides.latency_sla_p90_seconds is deprecated: it is now alarms.latency_sla_p90_seconds (the "
        "same meaning); move it in the deployment file",
        FutureWarning,
        stacklevel=2,
    )
    value = overrides.pop("latency_sla_p90_seconds")
    alarms = {**alarms, "latency_sla_p90_seconds": value} if isinstance(alarms, dict) else alarms
    return {**data, "profile_overrides": overrides, "alarms": alarms}


def copy_bounds_moved(data: object) -> object:
    """The copy bounds and target of inference_components mode are the scaling settings of both modes now
    (autoscaling.min_capacity, max_capacity, target_concurrency); the old keys still load, with a FutureWarning."""
    if not isinstance(data, dict) or not isinstance(data.get("endpoint"), dict):
        return data
    components = data["endpoint"].get("inference_components")
    if not isinstance(components, dict):
        return data
    moves = {
        "min_copies": "min_capacity",
        "max_copies": "max_capacity",
        "target_concurrency_per_copy": "target_concurrency",
    }
    if not set(moves) & set(components):
        return data
    scaling = data.get("autoscaling", {})
    scaling = dict(scaling) if isinstance(scaling, dict) else scaling
    components = dict(components)
    for old, new in moves.items():
        if old not in components:
            continue
        if isinstance(scaling, dict) and new in scaling:
            raise ValueError(
                f"endpoint.inference_components.{old} is the old place of autoscaling.{new}; give only autoscaling.{new}"
            )
        warnings.warn(
            f"endpoint.inference_components.{old} is deprecated: it is now autoscaling.{new} (the same words in "
            "both modes: copies here); move it in the deployment file",
            FutureWarning,
            stacklevel=2,
        )
        value = components.pop(old)
        if isinstance(scaling, dict):
            scaling[new] = value
    return {**data, "endpoint": {**data["endpoint"], "inference_components": components}, "autoscaling": scaling}


def components_roll_by_default(data: object) -> object:
    # InferenceComponentDeploymentConfig has one policy, RollingUpdatePolicy (botocore 1.44.5 SageMaker
    # model; 'required': ['RollingUpdatePolicy']). So a components-mode file that names no
    # rollout.strategy gets 'rolling', where variants get 'blue_green'; naming blue_green is refused.
    if not isinstance(data, dict):
        return data
    endpoint, rollout = data.get("endpoint"), data.get("rollout", {})
    # The endpoint section as a file gives it (a mapping) or as the props build it (EndpointSettings).
    mode = endpoint.get("mode") if isinstance(endpoint, dict) else getattr(endpoint, "mode", None)
    if mode == "inference_components" and isinstance(rollout, dict) and "strategy" not in rollout:
        return {**data, "rollout": {**rollout, "strategy": "rolling"}}
    return data


def deployment_problems(config: DeploymentSections) -> list[str]:
    """Every problem across sections, all at once (one message lists them, so a user fixes them in one go)."""
    pairs = sorted({*load_catalog().pairs, *config.custom_pairs})
    problems = _catalog_problems(config, pairs)
    if config.model in pairs:
        problems += _speculation_problems(config)
    problems += _scaling_problems(config)
    problems += _queue_scaling_problems(config)
    if config.ab_test.enabled and config.rollout.strategy == "rolling" and not config.uses_inference_components:
        problems.append(
            f"{setting('rollout.strategy', 'rolling')} is not supported on multi-variant endpoints "
            f"({setting('ab_test.enabled', True)}); use {setting('rollout.strategy', 'blue_green')} or turn the "
            "A/B test off"
        )
    problems += _rollout_problems(config)
    problems += _component_problems(config)
    problems += _request_log_problems(config)
    problems += _artifacts_problems(config)
    problems += pool_problems(config)
    if config.async_inference.min_instances > config.async_inference.max_instances:
        problems.append(
            f"async_inference.min_instances {config.async_inference.min_instances} > max_instances "
            f"{config.async_inference.max_instances}"
        )
    return problems


def _catalog_problems(config: DeploymentSections, pairs: list[str]) -> list[str]:
    """The pair and instance type named, and the custom ones declared, against the catalog; the vLLM flag names."""
    catalog = load_catalog()
    problems = []
    clashes = sorted(set(config.custom_pairs) & set(catalog.pairs))
    if clashes:
        problems.append(f"{setting('custom_pairs')} redefine catalog pairs {clashes}; pick new ids")
    if config.model not in pairs:
        problems.append(
            f"{setting('model')} {config.model!r} is not a known pair; use one of {pairs} or declare it with "
            f"{setting('custom_pairs')}"
        )
    clashes = sorted(set(config.custom_instances) & set(catalog.instances))
    if clashes:
        problems.append(
            f"{setting('custom_instances')} redefine catalog instance types {clashes}; leave them to the catalog"
        )
    if config.instance.type in catalog.excluded_instances:
        problems.append(
            f"{setting('instance.type')} {config.instance.type!r} cannot serve: "
            f"{catalog.excluded_instances[config.instance.type]}"
        )
    elif config.instance.type not in catalog.instances and config.instance.type not in config.custom_instances:
        problems.append(
            f"{setting('instance.type')} {config.instance.type!r} is not in the instance catalog; "
            f"use one of {sorted(catalog.instances)}, or give its GPU facts with {setting('custom_instances')}"
        )
    for name in config.vllm_args:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
            problems.append(
                f"{setting('vllm_args')} key {name!r} must be a vLLM flag name like 'max-num-batched-tokens'"
            )
    return problems


def _artifacts_problems(config: DeploymentSections) -> list[str]:
    problems = []
    if config.artifacts.source == "hub":
        if config.network.isolation:
            problems.append(
                f"{setting('artifacts.source', 'hub')} downloads weights inside the container, which network "
                f"isolation forbids; set {setting('network.isolation', False)}, or stage the weights to S3 with "
                f"`peagle stage` and use {setting('artifacts.source', 's3')}"
            )
        if config.artifacts.s3_uri:
            problems.append("artifacts.s3_uri is only used with source 's3'; remove it or use source 's3'")
    elif config.artifacts.hf_token_secret_arn:
        problems.append(
            f"{setting('artifacts.hf_token_secret_arn')} is only used with {setting('artifacts.source', 'hub')} "
            "(for S3 weights, `peagle stage` reads the token on your machine)"
        )
    return problems


def _speculation_problems(config: DeploymentSections) -> list[str]:
    # The shape and trained-K rules are the container contract's, quoted there with vLLM's source;
    # coverage of max_num_seqs needs the plan (peagle/planning/deployment_rules.py, rule speculation-schedule).
    schedule = config.speculation.schedule
    if schedule is None:
        return []
    bands = [band.as_tuple() for band in schedule]
    problems = [
        f"{setting('speculation.schedule')}: {problem}"
        for problem in schedule_problems(bands, trained_k=config.pair().drafter.trained_k)
    ]
    k, largest = config.speculation.speculative_tokens, max((band[2] for band in bands), default=0)
    if k is not None and k != largest:
        problems.append(
            f"{setting('speculation.speculative_tokens', k)} conflicts with {setting('speculation.schedule')}, "
            f"whose largest K is {largest}: with a schedule, K is that largest K (vLLM's num_speculative_tokens, "
            f"the most any band may draft); give only the schedule, or K {largest}"
            + (", or remove the schedule to turn speculation off" if k == 0 else "")
        )
    return problems


def _scaling_problems(config: DeploymentSections) -> list[str]:
    scaling, count = config.autoscaling, config.instance.count
    if not scaling.enabled or config.uses_inference_components:
        return []
    problems = []
    low, high = config.min_capacity, config.max_capacity
    if low == 0:
        problems.append(
            f"{setting('autoscaling.min_capacity', 0)}: a production variant keeps at least one instance; to scale "
            f"to zero, use {setting('endpoint.mode', 'inference_components')}, whose copies may scale to 0"
        )
    elif high is not None and not low <= count <= high:
        problems.append(
            f"{setting('autoscaling.min_capacity')} ({low}) <= {setting('instance.count')} ({count}) <= "
            f"{setting('autoscaling.max_capacity')} ({high}) does not hold: the deploy starts that many instances "
            f"within the scaling bounds; adjust the bounds or the count (or {setting('autoscaling.enabled', False)})"
        )
    if scaling.target == "invocations" and scaling.max_requests_per_second is None:
        problems.append(
            f"{setting('autoscaling.target', 'invocations')} needs {setting('autoscaling.max_requests_per_second')}: "
            "measure it with `peagle capacity` (the highest requests/s that still meets your SLO), or scale on "
            "requests in flight (the default)"
        )
    for schedule in scaling.schedules:
        if schedule.min_capacity > schedule.max_capacity:
            problems.append(
                f"{setting('autoscaling.schedules')}[{schedule.name}]: min_capacity {schedule.min_capacity} > "
                f"max_capacity {schedule.max_capacity}"
            )
    if len({schedule.name for schedule in scaling.schedules}) != len(scaling.schedules):
        problems.append(f"{setting('autoscaling.schedules')}: names must be unique")
    return problems


# Our choice, not a quoted rule. SageMaker documents Data Capture for an endpoint that hosts models as production
# variants: "To capture data for your real-time endpoint ... create a SageMaker AI model, define an endpoint
# configuration, and create an HTTPS endpoint" ("Capture data from real-time endpoint",
# https://docs.aws.amazon.com/sagemaker/latest/dg/model-monitor-data-capture-endpoint.html), and its capture files are
# keyed "{endpoint-name}/{variant-name}/yyyy/mm/dd/hh" (same page), with no place for an inference component. No AWS
# document we found says whether an endpoint that hosts inference components captures, and AWS's own SDK drops the
# setting on that path: ModelBuilder.deploy reads data_capture_config but creates an INFERENCE_COMPONENT_BASED
# endpoint without it (aws/sagemaker-python-sdk a24812666d25, sagemaker-serve/src/sagemaker/serve/model_builder.py,
# the ``endpoint_type == EndpointType.INFERENCE_COMPONENT_BASED`` branch: ``endpoint_from_production_variants(...)``
# with no data_capture_config_dict). So a capture that might silently record nothing is refused, not synthesized.
_CAPTURE_NEEDS_VARIANTS = (
    f"{setting('capture.enabled', True)}: SageMaker documents Data Capture for endpoints whose models are production "
    'variants ("Capture data from real-time endpoint", SageMaker Developer Guide), keyed by endpoint and variant; no '
    "AWS document describes it for inference components, and AWS's SageMaker Python SDK does not pass it when it "
    f"deploys them. Use {setting('capture.method', 'request_log')} (the container logs the sampled requests, in "
    f"either mode), or {setting('endpoint.mode', 'variants')} to capture requests, or turn capture off "
    f"({setting('capture.enabled', False)}) in inference_components mode"
)


def _queue_scaling_problems(config: DeploymentSections) -> list[str]:
    """The queue policy (peagle_cdk/planned_scaling.py) tracks the KPI lines' RequestsWaiting in one-minute datapoints:
    a line less often than once a minute leaves minutes without one, and "If the metric is missing data points, this
    causes the CloudWatch alarm state to change to INSUFFICIENT_DATA. When this happens, Application Auto Scaling
    cannot scale your scalable target until new data points are found" (Application Auto Scaling User Guide, "How
    target tracking scaling for Application Auto Scaling works", Considerations,
    https://docs.aws.amazon.com/autoscaling/application/userguide/target-tracking-scaling-policy-overview.html)."""
    scaling, interval = config.autoscaling, config.observability.kpi_interval_seconds
    problems = []
    if scaling.enabled and scaling.scale_on_queue and interval > 60:
        problems.append(
            f"{setting('autoscaling.scale_on_queue', True)} tracks the KPI lines' requests waiting each minute, but "
            f"{setting('observability.kpi_interval_seconds', interval)} writes one every {interval} s: minutes "
            "without a datapoint stop target tracking; set the interval to 60 s or less, or turn the queue policy off"
        )
    if scaling.target_requests_waiting is not None and not scaling.scale_on_queue:
        problems.append(
            f"{setting('autoscaling.target_requests_waiting')} is the queue policy's target, which is off: set "
            f"{setting('autoscaling.scale_on_queue', True)} too, or remove the target"
        )
    return problems


def _component_problems(config: DeploymentSections) -> list[str]:
    """Settings that mean one mode given in the other, and component bounds that contradict each other.
    SageMaker's own rules for the mode are peagle/planning/deployment_rules.py's (rule inference-components)."""
    components = config.endpoint.inference_components
    if not config.uses_inference_components:
        if "inference_components" in config.endpoint.model_fields_set:
            return [
                f"{setting('endpoint.inference_components')} is set but endpoint.mode is 'variants'; set "
                f"{setting('endpoint.mode', 'inference_components')}, or remove it"
            ]
        return []
    problems = []
    if "schedules" in config.autoscaling.model_fields_set and config.autoscaling.schedules:
        problems.append(
            f"{setting('autoscaling.schedules')} scale production variants' instances; in inference_components "
            f"mode bound the copies with {setting('autoscaling.min_capacity')} and "
            f"{setting('autoscaling.max_capacity')}, and the instances with "
            f"{setting('endpoint.inference_components.max_instances')}"
        )
    if components.min_instances > components.max_instances:
        problems.append(
            f"{setting('endpoint.inference_components.min_instances')} {components.min_instances} > "
            f"{setting('endpoint.inference_components.max_instances')} {components.max_instances}"
        )
    if not components.min_instances <= config.instance.count <= components.max_instances:
        problems.append(
            f"{setting('instance.count')} {config.instance.count} (the instances the deploy starts) must lie within "
            f"{setting('endpoint.inference_components.min_instances')} {components.min_instances} .. "
            f"{setting('endpoint.inference_components.max_instances')} {components.max_instances}"
        )
    low, top, initial = config.min_capacity, config.max_capacity, components.initial_copies
    if top is not None and not low <= initial <= top:
        problems.append(
            f"copies need {setting('autoscaling.min_capacity')} <= "
            f"{setting('endpoint.inference_components.initial_copies')} <= {setting('autoscaling.max_capacity')}; "
            f"given {low} <= {initial} <= {top}"
        )
    elif low > initial:
        problems.append(
            f"{setting('autoscaling.min_capacity')} {low} copies > "
            f"{setting('endpoint.inference_components.initial_copies')} {initial}; raise initial_copies"
        )
    # InferenceComponentDeploymentConfig has one policy, RollingUpdatePolicy (botocore 1.44.5 SageMaker
    # model; 'required': ['RollingUpdatePolicy']): a component has no blue/green update.
    if config.rollout.strategy == "blue_green":
        problems.append(
            f"{setting('rollout.strategy', 'blue_green')} shifts traffic between production variants; an "
            f"inference component updates copy by copy: use {setting('rollout.strategy', 'rolling')} or "
            f"{setting('rollout.strategy', 'none')}"
        )
    # Our choice, not a quoted rule: no AWS document we found describes an asynchronous endpoint
    # beside inference components, and async_inference builds a second, variants-mode endpoint.
    if config.async_inference.enabled:
        problems.append(
            "async_inference runs a second endpoint with production variants; in inference_components mode "
            "turn it off (async_inference.enabled: false) or deploy it from a variants-mode deployment file"
        )
    if config.capture.uses_data_capture:
        problems.append(_CAPTURE_NEEDS_VARIANTS)
    return problems


def _request_log_problems(config: DeploymentSections) -> list[str]:
    """The request log lives in the endpoint's log group: it may not keep the prompts longer than capture promises."""
    retention, expiry = config.observability.log_retention_days, config.capture.expire_after_days
    if config.capture.request_log_sampling_percentage == 0 or retention <= expiry:
        return []
    fitting = max((days for days in LOG_RETENTION_DAYS if days <= expiry), default=LOG_RETENTION_DAYS[0])
    return [
        f"{setting('capture.method', 'request_log')} keeps the sampled prompts in the endpoint's log group, "
        f"which keeps its logs {retention} days ({setting('observability.log_retention_days')}), longer than "
        f"{setting('capture.expire_after_days', expiry)}: set {setting('observability.log_retention_days', fitting)} "
        f"(all of the endpoint's logs then expire after {fitting} days), or "
        f"{setting('capture.expire_after_days', retention)} to keep the prompts as long as the logs"
    ]


def _rollout_problems(config: DeploymentSections) -> list[str]:
    rollout = config.rollout
    problems = []
    if config.observability.kpi_interval_seconds * 2 > config.alarms.kpi_missing_minutes * 60:
        problems.append(
            f"{setting('alarms.kpi_missing_minutes')} {config.alarms.kpi_missing_minutes} is shorter than two KPI intervals "
            f"({config.observability.kpi_interval_seconds} s each): the alarm would fire between lines; raise it "
            f"or lower {setting('observability.kpi_interval_seconds')}"
        )
    if rollout.strategy == "none":
        return problems
    if rollout.strategy == "blue_green":
        green = rollout.blue_green
        traffic = config.blue_green_traffic()
        if traffic in ("canary", "linear") and config.instance.count < 2:
            problems.append(
                f"{setting('rollout.blue_green.traffic', traffic)} needs at least 2 instances (a canary or linear "
                f"step is at most half the fleet); with {setting('instance.count', 1)} use "
                f"{setting('rollout.blue_green.traffic', 'all_at_once')} (baking still applies) or 'auto'"
            )
        shifts = {"canary": 2, "linear": -(-100 // green.linear_step_percent), "all_at_once": 1}[traffic]
        needed = shifts * green.wait_seconds + green.termination_wait_seconds
        label = "rollout.blue_green"
    else:
        rolling = rollout.rolling
        green = rolling
        needed = -(-100 // rolling.batch_percent) * rolling.wait_seconds
        label = "rollout.rolling"
    if needed > green.max_execution_seconds:
        problems.append(
            f"{setting(label)}: the waits add up to {needed} s, more than "
            f"{setting(label + '.max_execution_seconds', green.max_execution_seconds)}; raise it (at most "
            f"{setting(label + '.max_execution_seconds', 28800)}) or shorten the waits"
        )
    return problems
