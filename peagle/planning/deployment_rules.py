"""SageMaker's deployment rules that cfn-lint and cdk-nag do not know, checked before anything
is synthesized or deployed.

A template can be schema-valid and still fail on AWS: an endpoint whose GPU driver cannot
run the image fails after the instances started (CannotStartContainerError), a rolling
update whose batch is less than one instance is refused at update time, a container
environment past SageMaker's limits is refused by CreateModel. Each rule below quotes its
primary source, looks at the deployment config and its plans, and reports what was given,
what is allowed and what to do. ``check_deployment`` runs them all; ``app.py`` (every
``cdk synth``) and ``peagle plan`` call it through ``plan_checked_deployment``, and fail
with every violation at once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from peagle.catalog import HostDriver, InstanceType, cuda_version, instance_family, load_catalog
from peagle.planning.container_env import BASELINE_VARIANT_NAME, DEFAULT_VARIANT_NAME, container_environment
from peagle.planning.planner import (
    INSTANCE_LAUNCH_ALLOWANCE_S,
    Plan,
    plan_ab_baseline,
    plan_deployment,
    shortest_idle_window_minutes,
)
from peagle.planning.unit_plan import pool_of
from peagle.settings import DeploymentConfig
from peagle.settings.errors import PlanError
from peagle.settings.refs import setting
from peagle_serve.contract import schedule_coverage_problems


class DeploymentRuleError(PlanError):
    """The deployment would be refused by SageMaker, or would fail once on the GPU."""

    def __init__(self, violations: list[Violation]):
        self.violations = violations
        lines = [f"{len(violations)} SageMaker rule(s) broken:"]
        lines += [f"  - [{violation.rule}] {violation.message}" for violation in violations]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class Violation:
    rule: str  # stable id, e.g. "gpu-driver"
    message: str  # what was given, what is allowed, what to do


@dataclass(frozen=True)
class DeploymentPlans:
    """Everything the rules look at: the config and each variant's plan."""

    config: DeploymentConfig
    plan: Plan
    baseline_plan: Plan | None = None

    def variant_plans(self) -> list[tuple[str, str, Plan]]:
        """(endpoint, variant, plan) for every production variant the stack creates; in inference-component
        mode (endpoint, component, plan) for every inference component."""
        config = self.config
        if config.uses_inference_components:
            units = [(config.endpoint_name, config.inference_component_name(DEFAULT_VARIANT_NAME), self.plan)]
            if self.baseline_plan is not None:
                name = config.inference_component_name(BASELINE_VARIANT_NAME)
                units.append((config.endpoint_name, name, self.baseline_plan))
            return units
        variants = [(config.endpoint_name, DEFAULT_VARIANT_NAME, self.plan)]
        if self.baseline_plan is not None:
            variants.append((config.endpoint_name, BASELINE_VARIANT_NAME, self.baseline_plan))
        if config.async_inference.enabled:
            variants.append((config.async_endpoint_name, DEFAULT_VARIANT_NAME, self.plan))
        return variants

    def type_plans(self) -> list[tuple[str, str, Plan]]:
        """``variant_plans`` and, after each, the plan of each of its instance pool's fallback types (the same
        variant on another instance type: peagle/planning/pool_plans.py)."""
        return [(e, v, each) for e, v, plan in self.variant_plans() for each in (plan, *plan.fallbacks)]


# --- GPU host: NVIDIA driver vs the image's CUDA ---------------------------------------------


def host_driver(instance_type: str, ami_version: str | None) -> HostDriver | None:
    """The driver a real-time/async variant boots: its InferenceAmiVersion's, else the family default."""
    runtime = load_catalog().runtime
    if ami_version:
        return runtime.inference_amis.get(ami_version)
    return runtime.default_host_drivers.get(instance_family(instance_type))


def architecture_driver_problem(instance_type: str, instance: InstanceType, ami: str, host: HostDriver) -> str | None:
    """Why ``ami``'s driver cannot drive the instance's GPUs at all (None: it can). A driver older than the first CUDA
    toolkit for the GPU's architecture does not know the GPU, whatever the image's CUDA; the oldest driver per
    generation is data (runtime.yaml, architecture_drivers, with its sources)."""
    runtime = load_catalog().runtime
    needed = runtime.driver_needed_for(instance.cc)
    if needed is None or host.driver >= needed.driver:
        return None
    working = [name for name, h in runtime.inference_amis.items() if h.driver >= needed.driver]
    return (
        f"{instance_type} has {needed.generation} GPUs ({instance.gpu}, compute capability {instance.cc}), which need "
        f"NVIDIA driver >= {needed.driver} (CUDA {needed.cuda} is the first toolkit for them); {ami} has driver "
        f"{host.driver}. Use {' or '.join(setting('instance.ami_version', name) for name in working) or 'a newer AMI'}, "
        f"or leave {setting('instance.ami_version')} unset to get {runtime.serving_image.inference_ami_version}"
    )


def _gpu_driver(plans: DeploymentPlans) -> list[Violation]:
    # A CUDA image needs a driver that supports its CUDA version; otherwise "deploying the endpoint
    # will fail with ... Failure reason CannotStartContainerError" ("Best practices to minimize
    # interruptions during GPU driver upgrades", https://docs.aws.amazon.com/sagemaker/latest/dg/
    # inference-gpu-drivers.html). Which AMI has which driver: peagle/catalog/runtime.yaml.
    runtime = load_catalog().runtime
    image = runtime.serving_image
    working = [name for name, host in runtime.inference_amis.items() if host.cuda_version >= cuda_version(image.cuda)]
    violations = []
    for endpoint, variant, plan in plans.type_plans():
        ami = plan.inference_ami_version
        if ami not in runtime.inference_amis:
            violations.append(
                Violation(
                    "gpu-driver",
                    f"{endpoint}/{variant}: {setting('instance.ami_version')} {ami!r} is not a GPU InferenceAmiVersion SageMaker "
                    f"offers; use one of {sorted(runtime.inference_amis)} ({' or '.join(working)} runs the image)",
                )
            )
            continue
        host = runtime.inference_amis[ami]
        problem = architecture_driver_problem(plan.instance_type, plan.instance, ami, host)
        if problem:
            violations.append(Violation("gpu-driver", f"{endpoint}/{variant}: {problem}"))
        if host.cuda_version < cuda_version(image.cuda):
            violations.append(
                Violation(
                    "gpu-driver",
                    f"{endpoint}/{variant}: {ami} has NVIDIA driver {host.driver} (CUDA {host.cuda}), but the serving "
                    f"image {image.base} is built for CUDA {image.cuda}; the container would fail to start on "
                    f"{plan.instance_type} (CannotStartContainerError). Use "
                    f"{' or '.join(setting('instance.ami_version', name) for name in working)}, or leave "
                    f"{setting('instance.ami_version')} unset to get {image.inference_ami_version}",
                )
            )
    return violations


# --- Rolling updates ---------------------------------------------------------------------------


def _rolling_batch(plans: DeploymentPlans) -> list[Violation]:
    # RollingUpdatePolicy.MaximumBatchSize: "Value must be between 5% to 50% of the variant's total
    # instance count." (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_RollingUpdatePolicy.html)
    # A step provisions whole instances ("Specifies the type and size of the endpoint capacity to
    # activate for ... a rolling deployment ... You can specify your batches as either instance count
    # or the overall percentage or your fleet", CapacitySize, Value "Minimum value of 1":
    # https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CapacitySize.html). That a
    # percentage below one instance is refused is our reading, not a quoted rule: we require
    # batch_percent x fleet >= 100 at the smallest the fleet can be when the update starts.
    config = plans.config
    if config.rollout.strategy != "rolling" or config.uses_inference_components:
        # A component's batch is a percentage of its copies (CAPACITY_PERCENT), which meets "between 5%
        # to 50% of the copy count" at any count (peagle_cdk/component_endpoint.py).
        return []
    percent = config.rollout.rolling.batch_percent
    smallest = config.instance.count
    if config.autoscaling.enabled:
        smallest = min(smallest, config.min_capacity)
    if percent * smallest >= 100:
        return []
    needed = math.ceil(100 / percent)
    return [
        Violation(
            "rolling-batch",
            f"{setting('rollout.strategy', 'rolling')} replaces {percent}% of the fleet per step, but the fleet can "
            f"be as small as {smallest} instance(s): a step of {percent * smallest / 100:g} instances; SageMaker needs "
            f"5-50% of the variant's instances and at least one per step. Use "
            f"{setting('rollout.strategy', 'blue_green')} (with one instance it shifts all at once after baking), or "
            f"keep at least {needed} instances ({setting('instance.count')} and {setting('autoscaling.min_capacity')})",
        )
    ]


# --- Timeouts ---------------------------------------------------------------------------------

# ProductionVariant: ContainerStartupHealthCheckTimeoutInSeconds and
# ModelDataDownloadTimeoutInSeconds "Valid Range: Minimum value of 60. Maximum value of 3600."
# (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html)
VARIANT_TIMEOUT_RANGE_SECONDS = (60, 3600)


def _timeouts(plans: DeploymentPlans) -> list[Violation]:
    low, high = VARIANT_TIMEOUT_RANGE_SECONDS
    violations = []
    for endpoint, variant, plan in plans.type_plans():
        for what, value in (
            ("ContainerStartupHealthCheckTimeoutInSeconds", plan.container_startup_timeout_seconds),
            ("ModelDataDownloadTimeoutInSeconds", plan.model_download_timeout_seconds),
        ):
            if not low <= value <= high:
                violations.append(
                    Violation(
                        "variant-timeouts",
                        f"{endpoint}/{variant}: {what} {value} s is outside SageMaker's {low}-{high} s; set "
                        f"{setting('timeouts.container_startup_seconds')} / {setting('timeouts.model_download_seconds')} "
                        "within it",
                    )
                )
    return violations


# --- Container environment -----------------------------------------------------------------


@dataclass(frozen=True)
class EnvironmentLimits:
    """What one SageMaker API accepts as a container ``Environment``."""

    api: str
    max_entries: int
    max_value_chars: int
    fewer_entries_hint: str


# ContainerDefinition.Environment (botocore shape EnvironmentMap; API reference
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html):
# "Maximum number of 100 items", key "Maximum length of 1024. Pattern: [a-zA-Z_][a-zA-Z0-9_]*",
# value "Maximum length of 1024".
MODEL_ENVIRONMENT = EnvironmentLimits("CreateModel", 100, 1024, "drop vllm_args entries")
# CreateTransformJob.Environment (botocore shape TransformEnvironmentMap; API reference
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateTransformJob.html):
# "Maximum number of 16 items", key "Maximum length of 1024", value "Maximum length of 10240".
TRANSFORM_ENVIRONMENT = EnvironmentLimits("CreateTransformJob", 16, 10240, "drop some --env values")
_ENVIRONMENT_KEY = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,1023}$")


def environment_problems(environment: Mapping[str, str], limits: EnvironmentLimits = MODEL_ENVIRONMENT) -> list[str]:
    """Why ``limits.api`` would refuse this container environment (empty when it would not)."""
    problems = []
    if len(environment) > limits.max_entries:
        problems.append(
            f"{len(environment)} environment variables ({', '.join(environment)}); {limits.api} takes at most "
            f"{limits.max_entries}: {limits.fewer_entries_hint}"
        )
    for key, value in environment.items():
        if not _ENVIRONMENT_KEY.match(key):
            problems.append(f"variable name {key!r} must match [a-zA-Z_][a-zA-Z0-9_]* (at most 1024 characters)")
        if len(value) > limits.max_value_chars:
            problems.append(
                f"{key} is {len(value)} characters; {limits.api} allows {limits.max_value_chars} per value: "
                "shorten it (for a vllm_args entry, move the setting into a file under the weights prefix)"
            )
    return problems


def _container_environment(plans: DeploymentPlans) -> list[Violation]:
    violations = []
    for endpoint, variant, plan in plans.type_plans():
        environment = container_environment(plan, variant_name=variant, endpoint_name=endpoint)
        violations += [
            Violation("model-environment", f"{endpoint}/{variant}: {p}") for p in environment_problems(environment)
        ]
    return violations


def _launcher_settings(plans: DeploymentPlans) -> list[Violation]:
    # The launcher checks its PEAGLE_* settings before it starts the engine and exits 2 on a bad
    # one (inference_image/peagle_serve/settings.py), e.g. a start-up budget that leaves the engine
    # no time after the self-check. Run the same check here, before a GPU instance is paid for.
    from peagle_serve.errors import ConfigError as LauncherConfigError
    from peagle_serve.settings import load_settings

    violations = []
    for endpoint, variant, plan in plans.type_plans():
        environment = container_environment(plan, variant_name=variant, endpoint_name=endpoint)
        try:
            load_settings(environment)
        except LauncherConfigError as error:
            for problem in error.problems:
                if "PEAGLE_STARTUP_TIMEOUT_SECONDS" in problem:
                    problem += f" Set {setting('timeouts.container_startup_seconds')} (or leave it unset)."
                violations.append(Violation("launcher-settings", f"{endpoint}/{variant}: {problem}"))
    return violations


# --- Speculation schedule -------------------------------------------------------------------


def _speculation_schedule(plans: DeploymentPlans) -> list[Violation]:
    # vLLM runs a K-by-batch-size schedule up to --max-num-seqs and quietly completes it: "Fill the
    # tail after the final configured range by carrying forward the last K through
    # vllm_max_batch_size", while bands past max_num_seqs are never looked up
    # (vllm/v1/spec_decode/dynamic/utils.py, build_dynamic_sd_schedule_lookup; the rest of vLLM's
    # rules are quoted in peagle_serve/contract.py and checked with the deployment file). The bands
    # must say what runs, against the plan's max_num_seqs, which the planner may lower to what the KV
    # cache holds. Only the primary plan has a schedule (the A/B baseline is static, the asynchronous
    # endpoint serves the same Model), so it is checked once.
    plan = plans.plan
    if not plan.speculative_schedule:
        return []
    lowered = plan.max_num_seqs < plan.profile.max_num_seqs
    where = (
        f"{plans.config.endpoint_name}/{DEFAULT_VARIANT_NAME}: {setting('speculation.schedule')} against the plan's "
        f"max_num_seqs {plan.max_num_seqs}"
        + (" (lowered to what the KV cache holds; see `peagle plan`)" if lowered else "")
    )
    return [
        Violation("speculation-schedule", f"{where}: {problem}")
        for problem in schedule_coverage_problems(plan.speculative_schedule, plan.max_num_seqs)
    ]


# --- Batch Transform ------------------------------------------------------------------------


def transform_ami_version() -> str | None:
    """The TransformAmiVersion whose driver runs the serving image (the newest such), or None."""
    runtime = load_catalog().runtime
    runnable = [
        (host.driver, name)
        for name, host in runtime.transform_amis.items()
        if host.cuda_version >= cuda_version(runtime.serving_image.cuda)
    ]
    return max(runnable)[1] if runnable else None


def transform_problems(instance_type: str) -> list[str]:
    """Why a Batch Transform job of the serving image on ``instance_type`` cannot work (empty if it can)."""
    runtime = load_catalog().runtime
    image = runtime.serving_image
    problems = []
    if transform_ami_version() is None:
        newest = max(runtime.transform_amis.items(), key=lambda item: item[1].driver)
        problems.append(
            f"Batch Transform cannot run the serving image: {image.base} is built for CUDA {image.cuda}, and transform "
            f"jobs offer only {', '.join(runtime.transform_amis)} (newest: NVIDIA driver {newest[1].driver}, "
            f"CUDA {newest[1].cuda}), so the container would fail to start. What works instead: an asynchronous "
            "endpoint (async_inference.enabled: true: requests and results in S3, scales to zero when idle), or "
            "`peagle batch --endpoint <name>` to send the records through the real-time endpoint"
        )
    if instance_family(instance_type) not in runtime.transform_instance_families:
        allowed = sorted(
            name for name in load_catalog().instances if instance_family(name) in runtime.transform_instance_families
        )
        problems.append(
            f"{instance_type} is not a Batch Transform instance type (CreateTransformJob's TransformInstanceType "
            f"has no {instance_family(instance_type)}.*); catalog types it accepts: {', '.join(allowed)}"
        )
    return problems


def _batch_transform(plans: DeploymentPlans) -> list[Violation]:
    config = plans.config
    if not config.batch.enabled:
        return []
    return [
        Violation("batch-transform", f"batch.enabled: true, but {problem}; or set batch.enabled: false")
        for problem in transform_problems(config.instance.type)
    ]


# --- Inference components ---------------------------------------------------------------

# InferenceComponentName (CloudFormation schema of AWS::SageMaker::InferenceComponent, as shipped
# with cfn-lint 1.58.0): "maxLength": 63, "pattern": "^[a-zA-Z0-9](-*[a-zA-Z0-9])*$".
_COMPONENT_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*$")


def _inference_components(plans: DeploymentPlans) -> list[Violation]:
    config = plans.config
    if not config.uses_inference_components:
        return []
    components = pool_of(plans.plan.units)
    violations = []
    for _, name, _plan in plans.variant_plans():
        if len(name) > 63 or not _COMPONENT_NAME.match(name):
            violations.append(
                Violation("inference-components", f"component name {name!r} is not a valid InferenceComponentName")
            )
    if components.scales_to_zero and not config.autoscaling.enabled:
        # "Scale an endpoint to zero instances" (https://docs.aws.amazon.com/sagemaker/latest/dg/
        # endpoint-auto-scaling-zero-instances.html): the copy count reaches zero through Application Auto
        # Scaling ("register the inference component ... --min-capacity 0") and returns through a step
        # policy on NoCapacityInvocationFailures. Without autoscaling the copies stay at initial_copies.
        violations.append(
            Violation(
                "inference-components",
                f"{setting('autoscaling.min_capacity', 0)} copies (scale to zero) needs autoscaling on: Application "
                "Auto Scaling removes the last copy when idle and adds one when a request finds none; turn "
                f"autoscaling on ({setting('autoscaling.enabled', True)}), or leave the floor unset for a fixed count "
                "of initial_copies",
            )
        )
    units = plans.variant_plans()
    pools = [(name, pool_of(p.units)) for _, name, p in units]
    gpus_at_start = sum(pool.initial_copies * pool.accelerators_per_copy for _, pool in pools)
    gpus_at_most = plans.plan.instance.gpu_count * components.max_instances
    if len(units) > 1 and gpus_at_start > gpus_at_most:
        # Components share the endpoint's instances: "ComputeResourceRequirements" reserve GPUs on them
        # (NumberOfAcceleratorDevicesRequired), and managed instance scaling stops at MaxInstanceCount.
        violations.append(
            Violation(
                "inference-components",
                "the components' initial copies need "
                + " + ".join(
                    f"{pool.initial_copies} x {pool.accelerators_per_copy} GPU(s) ({name})" for name, pool in pools
                )
                + f" = {gpus_at_start} GPUs, but {setting('endpoint.inference_components.max_instances')} "
                f"{components.max_instances} x {plans.plan.instance_type} have {gpus_at_most}; lower "
                f"{setting('endpoint.inference_components.initial_copies')} or raise the instances",
            )
        )
    if config.ab_test.enabled and "baseline_traffic_percent" in config.ab_test.model_fields_set:
        # InvokeEndpoint's InferenceComponentName: "If the endpoint hosts one or more inference components,
        # this parameter specifies the name of inference component to invoke." (botocore 1.44.5,
        # sagemaker-runtime). There is no weight between components: the caller picks one.
        violations.append(
            Violation(
                "inference-components",
                f"{setting('ab_test.baseline_traffic_percent')} splits traffic between production variants; with inference "
                "components each request names its component (--inference-component), so remove it and send the "
                f"share you want to {config.inference_component_name(BASELINE_VARIANT_NAME)}",
            )
        )
    return violations


def _idle_window(plans: DeploymentPlans) -> list[Violation]:
    """A copy woken from zero must serve before the idle policy can remove it.

    The idle policy sets the copy count to 0 once its alarm has seen no request for the window, and "For
    Auto Scaling actions, the alarm continues to invoke the action once per minute that the alarm remains
    in the new state" (Amazon CloudWatch User Guide, "Alarm actions",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-actions.html); the copy a refused
    request woke starts a minute later and may take its whole start budget (an instance, the model download
    and the container start-up, the plan's timeouts). A window shorter than that start removes the copy
    before it serves when the request was sent once, and SageMaker gives no sign of it: the next request
    waits for a whole new cold start (`peagle simulate --clients once` shows it, docs/simulate.md).
    """
    config = plans.config
    if not plans.plan.units.scales_to_zero:
        return []
    given = config.endpoint.inference_components.scale_to_zero_after_idle_minutes
    shortest = shortest_idle_window_minutes(plans.plan.unit_start_budget_seconds)
    if given is None or given >= shortest:
        return []
    return [
        Violation(
            "scale-to-zero-idle-window",
            f"{setting('endpoint.inference_components.scale_to_zero_after_idle_minutes', given)} is shorter than a woken "
            f"copy's start: an instance (allowance {INSTANCE_LAUNCH_ALLOWANCE_S} s), the model download (up to "
            f"{plans.plan.model_download_timeout_seconds} s) and the container start-up (up to "
            f"{plans.plan.container_startup_timeout_seconds} s), {plans.plan.unit_start_budget_seconds / 60:.0f} min "
            f"in all, so the idle policy could remove the copy before it serves; set "
            f"{setting('endpoint.inference_components.scale_to_zero_after_idle_minutes', shortest)} or more (or "
            f"leave it unset for that), or lower {setting('timeouts.model_download_seconds')} / "
            f"{setting('timeouts.container_startup_seconds')}",
        )
    ]


# --- Volume encryption ----------------------------------------------------------------------


def volume_key_allowed(instance: InstanceType) -> bool:
    """Whether the stack sets EndpointConfig.KmsKeyId for this instance type: not on types with
    local NVMe instance storage.

    CreateEndpointConfig, KmsKeyId, as botocore 1.43.27 and later have it (boto/botocore commit
    29b0ded26, botocore/data/sagemaker/2017-07-24/service-2.json; API reference:
    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateEndpointConfig.html):
    "Certain Nitro-based instances include local storage, dependent on the instance type. Local
    storage volumes are encrypted using a hardware module on the instance. If any of the models that
    you specify in the ProductionVariants parameter use nitro-based instances with local storage,
    the KmsKeyId parameter does not encrypt instance local storage."

    Up to botocore 1.43.26 (since 1.12.236, 2019) the same note said the call is refused:
    "You can't request a KmsKeyId when using an instance type with local storage. ... If you specify
    a value for KmsKeyId when using any nitro-based instances with local storage, the call to
    CreateEndpointConfig fails.", as users met it (aws/sagemaker-python-sdk issue #3677, closed
    "won't fix"); AWS's SDK still leaves its configured default key off these types
    (sagemaker-core/src/sagemaker/core/common_utils.py, instance_supports_kms).

    The rule stands under either text: where a key is accepted it does not encrypt the storage these
    instances have, which the hardware already encrypts, and where the older behaviour holds it fails
    the deploy. So no key is made there, and the stack acknowledges cdk-nag's KMS finding with that
    reason. Nothing is refused: the deployment file has no volume-key setting to check.
    """
    return not instance.local_nvme


RULES: tuple[Callable[[DeploymentPlans], list[Violation]], ...] = (
    _gpu_driver,
    _rolling_batch,
    _timeouts,
    _container_environment,
    _launcher_settings,
    _speculation_schedule,
    _batch_transform,
    _inference_components,
    _idle_window,
)


def check_deployment(plans: DeploymentPlans) -> list[Violation]:
    """Every rule's violations, in rule order."""
    return [violation for rule in RULES for violation in rule(plans)]


def plan_checked_deployment(config: DeploymentConfig) -> DeploymentPlans:
    """Plan the deployment (and its A/B baseline) and check SageMaker's rules; raise with every violation."""
    plans = DeploymentPlans(config=config, plan=plan_deployment(config), baseline_plan=plan_ab_baseline(config))
    violations = check_deployment(plans)
    if violations:
        raise DeploymentRuleError(violations)
    return plans
