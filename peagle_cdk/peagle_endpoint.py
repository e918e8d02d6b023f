"""PeagleEndpoint: a SageMaker endpoint serving a target LLM with a P-EAGLE drafter on vLLM, planned
for its GPUs. One construct for both endpoint modes (production variants, inference components).

It plans itself: its props become the project's one validated deployment model
(peagle.config.DeploymentConfig) and go through the same planner (peagle.planner) and SageMaker rules
(peagle.deployment_rules) as a deployment file, so what fails `cdk synth` of the YAML app fails a
construct with the same message. Config and planning errors raise while the construct is built; the
SageMaker rules run as the construct's validation (``node.add_validation``), when the app synthesizes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

import jsii
from aws_cdk import Annotations, Duration, Names, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct, IValidation

from peagle.catalog import InstanceType, ModelPair
from peagle.container_env import BASELINE_VARIANT_NAME, DEFAULT_VARIANT_NAME, container_environment
from peagle.deployment_rules import DeploymentPlans, DeploymentRuleError, check_deployment, volume_key_allowed
from peagle.errors import PeagleError
from peagle.forced_data_cache import data_cache_warning
from peagle.plan_record import METADATA_KEY as PLAN_METADATA_KEY
from peagle.plan_record import plan_metadata
from peagle.planner import Plan, plan_ab_baseline, plan_deployment
from peagle.setting_refs import Door, in_words
from peagle_cdk import prop_types
from peagle_cdk.async_endpoint import AsyncInferenceEndpoint
from peagle_cdk.component_endpoint import ComponentEndpoint, ComponentSpec, id_suffix
from peagle_cdk.data_capture import DataCaptureDestination
from peagle_cdk.endpoint_config import endpoint_settings
from peagle_cdk.endpoint_props import (
    AbBaseline,
    Autoscaling,
    DataCapture,
    EndpointMode,
    ModelWeights,
    Rollout,
    Routing,
    ServingImage,
    Speculation,
)
from peagle_cdk.execution_role import SageMakerExecutionRole
from peagle_cdk.kpi_metrics import KpiMetrics
from peagle_cdk.nag import acknowledge
from peagle_cdk.peagle_model import PeagleModel
from peagle_cdk.planned_scaling import scale_unit
from peagle_cdk.rollout import RolloutPolicy
from peagle_cdk.serving_unit import ScalableUnitCapacity, ServingUnits
from peagle_cdk.settings_model import (
    DEFAULTS,
    DeploymentConfig,
    ProfileOverrides,
    SloSettings,
)
from peagle_cdk.variant_endpoint import VariantEndpoint, VariantSpec

# The deployment file's defaults are the props' (one set of numbers, peagle_cdk/settings_model.py).
_FILE = DEFAULTS

# The props that become the settings model (peagle_cdk/endpoint_config.py), besides mode, name and speculation,
# whose defaults are objects made per endpoint.
SETTINGS_PROPS = (
    "autoscaling",
    "model",
    "custom_pair",
    "instance_type",
    "instance_facts",
    "instance_count",
    "price_per_hour_usd",
    "inference_ami_version",
    "profile",
    "profile_overrides",
    "slo",
    "rollout",
    "ab_baseline",
    "capture",
    "routing",
    "weights",
    "network_isolation",
    "container_startup_timeout",
    "model_download_timeout",
    "latency_sla",
    "log_retention_days",
    "kpi_interval",
    "metric_publish_frequency",
    "detailed_observability",
    "vllm_args",
)

# CloudFormation VpcConfig (see PeagleEndpoint._placement): SecurityGroupIds "Maximum: 5", Subnets "Maximum: 16".
MAX_VPC_SECURITY_GROUPS, MAX_VPC_SUBNETS = 5, 16


@jsii.implements(IValidation)
class _SageMakerRules:
    """peagle.deployment_rules on this construct's inputs, with the messages a deployment file gets."""

    def __init__(self, endpoint: PeagleEndpoint) -> None:
        self._endpoint = endpoint

    def validate(self) -> list[str]:
        endpoint = self._endpoint
        door = Door.PROPS if endpoint._in_props_words else Door.FILE
        messages = [
            f"[{violation.rule}] {in_words(violation.message, door)}" for violation in check_deployment(endpoint.plans)
        ]
        return messages + endpoint._prop_problems()


class PeagleEndpoint(Construct):
    """The model(s), the execution role, the endpoint (variants or inference components), its log groups,
    KPI metric filters, autoscaling and update policy. Add EndpointMonitoring for alarms and a dashboard.

    Child ids are a contract (a rename replaces the resource): ExecutionRole, PeagleModel, BaselineModel,
    VolumeKey, DataCapture (the capture bucket, with capture on; DataCaptureKey, a key given by ARN),
    PeagleEndpoint (the endpoint, its config, logs and scaling), KpiMetrics, AsyncModel, AsyncInference. Give
    the construct the id "Default" to keep a stack's own logical ids: CDK leaves a path component named Default
    out of logical ids ("Resources with this ID are complete hidden from the
    logical ID calculation", aws/aws-cdk packages/aws-cdk-lib/core/lib/private/uniqueid.ts).

    Props (``_config`` is internal: use ``PeagleEndpoint.from_config``):

    :param weights: where target/ and drafter/ come from (``ModelWeights.from_bucket(bucket, prefix)``,
        or ``from_hub()``); the role may read that prefix only.
    :param model: a catalog pair id (`peagle catalog`), or the id of ``custom_pair``.
    :param custom_pair: a pair the catalog lacks (peagle.catalog.ModelPair: target, drafter, facts).
    :param instance_type: a SageMaker instance type; the catalog gives its GPU facts, or ``instance_facts``.
    :param price_per_hour_usd: on-demand USD per instance-hour (a savings plan, another region) for the
        plan's cost and EndpointMonitoring's cost widgets and alarm; default: the catalog's price (or
        ``instance_facts``').
    :param profile: chatbot | codegen | batch (sampling, lengths, SLO); ``profile_overrides`` and ``slo``
        change single fields.
    :param speculation: K (default ``Speculation.recommended()``: the pair's K for the profile).
    :param mode: ``EndpointMode.variants()`` (default) or ``EndpointMode.inference_components(...)``.
    :param autoscaling: the units' scaling, the same words in both modes; None: fixed capacity.
    :param rollout: how updates roll out; default blue/green for variants, rolling for components.
    :param ab_baseline: a second variant (or component) of the same target with another K, for A/B.
    :param capture: SageMaker Data Capture of the endpoint's requests (``DataCapture(...)``; variants mode only): a
        sample of them, into a bucket this construct creates, expired after ``DataCapture.expire_after``. Default
        None: nothing is captured.
    :param routing: how SageMaker spreads requests over the instances: ``Routing.least_outstanding_requests()``
        (the default), ``Routing.random()`` or ``Routing.prefix_aware(prefix_length=...)`` (needs prefix caching
        on, for a pair that allows it: docs/routing.md).
    :param image: the serving image; default: the deployment file's default (``image.build: in_account``), i.e.
        ``ServingImage.build_in_account()``, built in CodeBuild during `cdk deploy` with no Docker on your machine.
        ``ServingImage.from_asset()`` builds it with your Docker instead (the earlier default).
    :param name: lower-case prefix of the physical names (<name>-endpoint, <name>-primary); default: the
        stack's and this construct's ids with a hash of its path ("chatservice-coder-3f2a91bc"). Pass it
        to pin the names: changing it replaces the endpoint.
    :param endpoint_name: the endpoint's name (default <name>-endpoint). A physical name, so its log
        group and metric filters exist before it logs; changing it replaces the endpoint.
    :param role: your own execution role (trusting sagemaker.amazonaws.com); default: a new one.
    :param vpc: run the model in your VPC (default: SageMaker's managed network); ``vpc_subnets`` default:
        its private subnets with egress, else its isolated ones (an isolated model needs the VPC endpoints
        in ``peagle_cdk.INTERFACE_ENDPOINTS`` and an S3 gateway endpoint; ``PrivateNetwork`` makes such a
        VPC); ``security_groups`` default: a new one without ingress, HTTPS out only
        (``security_group``).
    :param network_isolation: no network or AWS credentials in the container (default: on).
    :param latency_sla: the p90 ModelLatency the latency alarm and step scaling act on (default: the
        profile's SLA).
    :param metric_publish_frequency: how often SageMaker publishes the endpoint's metrics: 10 s, 30 s or 1
        minute (the default). The alarms and scaling policies read them in one-minute periods, so the longer
        intervals SageMaker also takes (2-5 minutes) are refused (peagle.config.ObservabilitySettings).
    :param volume_key: KMS key for the ML storage volume; default: a new key, or none on instance types
        with local NVMe storage, where a key does not encrypt it.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        weights: ModelWeights,
        model: str = _FILE.model,
        custom_pair: ModelPair | None = None,
        instance_type: str = _FILE.instance.type,
        instance_facts: InstanceType | None = None,
        instance_count: int = _FILE.instance.count,
        price_per_hour_usd: float | None = None,
        inference_ami_version: str | None = None,
        profile: str = _FILE.profile.value,
        profile_overrides: ProfileOverrides | None = None,
        slo: SloSettings | None = None,
        speculation: Speculation | None = None,
        mode: EndpointMode | None = None,
        autoscaling: Autoscaling | None = Autoscaling(),
        rollout: Rollout | None = None,
        ab_baseline: AbBaseline | None = None,
        capture: DataCapture | None = None,
        routing: Routing | None = None,
        image: ServingImage | None = None,
        name: str | None = None,
        endpoint_name: str | None = None,
        role: iam.IRole | None = None,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        network_isolation: bool = _FILE.network.isolation,
        container_startup_timeout: Duration | None = None,
        model_download_timeout: Duration | None = None,
        latency_sla: Duration | None = None,
        volume_key: kms.IKey | None = None,
        log_retention_days: int = _FILE.observability.log_retention_days,
        kpi_interval: Duration = Duration.seconds(_FILE.observability.kpi_interval_seconds),
        metric_publish_frequency: Duration = Duration.seconds(_FILE.observability.metric_publish_frequency_seconds),
        detailed_observability: bool = _FILE.observability.detailed_observability,
        vllm_args: Mapping[str, bool | int | float | str] | None = None,
        _config: DeploymentConfig | None = None,
    ) -> None:
        super().__init__(scope, id)
        owner = f"PeagleEndpoint {self.node.path}"
        props = dict(locals())
        _check_prop_types(owner, props)
        self._vpc_given = vpc is not None or vpc_subnets is not None
        self._volume_key_given = volume_key
        self._capture_key = capture.key if capture is not None else None
        # from_config: validated already, and its messages are the file's. Else the props build the settings model.
        config = _config or endpoint_settings(
            owner=owner,
            **{name: props[name] for name in SETTINGS_PROPS},
            mode=mode or EndpointMode.variants(),
            name=name or _generated_name(self),
            speculation=speculation or Speculation.recommended(),
        )
        self._plan_and_build(
            config,
            weights=weights,
            image=image,
            endpoint_name=endpoint_name,
            role=role,
            vpc=vpc,
            vpc_subnets=vpc_subnets,
            security_groups=security_groups,
            volume_key=volume_key,
            in_props_words=_config is None,
        )

    @classmethod
    def from_config(
        cls,
        scope: Construct,
        id: str,
        *,
        config: DeploymentConfig,
        weights: ModelWeights,
        image: ServingImage | None = None,
        endpoint_name: str | None = None,
        role: iam.IRole | None = None,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        volume_key: kms.IKey | None = None,
    ) -> PeagleEndpoint:
        """The endpoint a validated deployment config describes (what the YAML app does), planned once from it,
        its messages in the file's words. The props that are CDK objects, which a file cannot hold, are given
        as to the constructor; everything else is the config's. ``image`` None: the config's ``image`` section
        (by default built in the account during `cdk deploy`, the constructor's default too)."""
        prop_types.check_instance(
            f"PeagleEndpoint.from_config {id}", "config", config, DeploymentConfig, "a peagle.config.DeploymentConfig"
        )
        return cls(
            scope,
            id,
            weights=weights,
            image=image or ServingImage.from_settings(config.image),
            endpoint_name=endpoint_name,
            role=role,
            vpc=vpc,
            vpc_subnets=vpc_subnets,
            security_groups=security_groups,
            volume_key=volume_key,
            _config=config,
        )

    def _plan_and_build(
        self,
        config: DeploymentConfig,
        *,
        weights: ModelWeights,
        image: ServingImage | None,
        endpoint_name: str | None,
        role: iam.IRole | None,
        vpc: ec2.IVpc | None,
        vpc_subnets: ec2.SubnetSelection | None,
        security_groups: Sequence[ec2.ISecurityGroup] | None,
        volume_key: kms.IKey | None,
        in_props_words: bool = False,
    ) -> None:
        self._plan(config, in_props_words)
        self._config = config
        self.endpoint_name = endpoint_name or config.endpoint_name
        # The endpoint mode, decided here once, from the plan: which kind of serving unit (peagle_cdk/serving_unit.py)
        # serves the models; everything after goes through the ServingUnits protocol.
        components = self.plan.components is not None
        self._units_class: type[ComponentEndpoint] | type[VariantEndpoint] = (
            ComponentEndpoint if components else VariantEndpoint
        )
        variants = [DEFAULT_VARIANT_NAME] + ([BASELINE_VARIANT_NAME] if self.plans.baseline_plan else [])
        # The serving units' names: production variants, or inference components (<name>-primary).
        self.unit_names = [config.inference_component_name(v) if components else v for v in variants]

        self.security_group: ec2.SecurityGroup | None = None  # the one made when vpc came without security_groups
        self._subnet_ids, self._security_group_ids = self._placement(vpc, vpc_subnets, security_groups)
        # One default for both doors, by construction: the settings model's (ImageSettings, docs/library.md says why).
        self._image = (image or ServingImage.from_settings(DEFAULTS.image)).bind(self)
        self.execution_role = self._execution_role(weights, role, variants)
        self._weights = weights

        plan, baseline_plan = self.plans.plan, self.plans.baseline_plan
        self.model = self._model("PeagleModel", plan, self.unit_names[0])
        self.baseline_model = (
            self._model("BaselineModel", baseline_plan, self.unit_names[1]) if baseline_plan is not None else None
        )
        self.volume_key: kms.IKey | None = volume_key
        if volume_key is None and volume_key_allowed(plan.instance):
            self.volume_key = kms.Key(  # pyright: ignore[reportAttributeAccessIssue]
                self, "VolumeKey", enable_key_rotation=True, description="P-EAGLE endpoint ML storage volume"
            )
        self.data_capture = self._data_capture(config)
        self.endpoint: ServingUnits = self._component_endpoint() if components else self._variant_endpoint()
        self._acknowledge_nvme(self.endpoint.endpoint_config)
        # The plan travels with the template (peagle/plan_record.py): the tools read it, not a deployment file.
        self._door: Literal["file", "props"] = "props" if in_props_words else "file"
        unit_plans = {name: unit for name, unit in zip(self.unit_names, [plan, baseline_plan], strict=False) if unit}
        self.endpoint.endpoint.add_metadata(
            PLAN_METADATA_KEY, plan_metadata(self._door, self.endpoint_name, unit_plans)
        )
        self.kpi = {
            unit: KpiMetrics(
                self,
                "KpiMetrics" + ("" if unit == self.primary_unit else id_suffix(unit)),
                log_group=self.endpoint.log_group_of(unit),
                endpoint_name=self.endpoint_name,
            )
            for unit in self.endpoint.managed_units  # one KPI filter set per log group
        }
        self._rollouts = self._rollout_policies()
        self._rollback_alarm_units: set[str] = set()
        self._apply_rollouts()
        self.scaling = self._scale() if self.plan.autoscaling is not None else None
        self.async_endpoint: AsyncInferenceEndpoint | None = None

    def _plan(self, config: DeploymentConfig, in_props_words: bool) -> None:
        """The plan, once, from the settings model; errors in the caller's words."""
        try:
            self.plans = DeploymentPlans(
                config=config, plan=plan_deployment(config), baseline_plan=plan_ab_baseline(config)
            )
        except PeagleError as error:
            if not in_props_words:
                raise
            raise type(error)(f"PeagleEndpoint {self.node.path}: {error.in_words(Door.PROPS)}") from None
        self._in_props_words = in_props_words
        if not in_props_words:
            # The file door (from_config) checks SageMaker's rules now, so a bad deployment file stops the app before
            # it synthesizes anything, with every violation (what `cdk synth` of the YAML app exits 2 with); the
            # construct's own validation below then finds nothing more. The one plan the app uses is this one.
            violations = check_deployment(self.plans)
            if violations:
                raise DeploymentRuleError(violations)
        self.node.add_validation(_SageMakerRules(self))

    def _execution_role(
        self, weights: ModelWeights, role: iam.IRole | None, variants: list[str]
    ) -> SageMakerExecutionRole:
        """The role the models run as: the weights, the image, the network, and each managed unit's log group."""
        execution_role = SageMakerExecutionRole(
            self,
            "ExecutionRole",
            artifacts=weights.location,
            image_repository=self._image.repository,
            in_vpc=bool(self._subnet_ids),
            role=role,
        )
        # The endpoint mode: which kind of serving unit (peagle_cdk/serving_unit.py) serves the models.
        units_class = self._units_class
        for index, unit in enumerate(units_class.managed_of(self.unit_names)):
            execution_role.grant_write_logs(
                units_class.log_group_name(self.endpoint_name, unit),
                sid=units_class.LOG_GRANT_SID + (variants[index] if index else ""),
            )
        if weights.hub_token_secret_arn:
            execution_role.grant_read_secret(weights.hub_token_secret_arn)
        return execution_role

    # --- read-only results ----------------------------------------------------------------------

    @property
    def plan(self) -> Plan:
        """The resolved plan of the primary unit (K, TP size, max_model_len, memory fit, timeouts, targets)."""
        return self.plans.plan

    @property
    def baseline_plan(self) -> Plan | None:
        return self.plans.baseline_plan

    @property
    def primary_unit(self) -> str:
        return self.unit_names[0]

    @property
    def baseline_unit(self) -> str | None:
        return self.unit_names[1] if len(self.unit_names) > 1 else None

    @property
    def managed_units(self) -> list[str]:
        """The units that roll out, scale and log on their own (peagle_cdk/serving_unit.py): every
        component, or the primary variant (the variants share the endpoint's update and log group)."""
        return list(self.endpoint.managed_units)

    @property
    def inference_component_names(self) -> list[str]:
        """The inference components' names (empty in variants mode)."""
        return list(self.unit_names) if self._units_class is ComponentEndpoint else []

    @property
    def rollout_strategy(self) -> str:
        """blue_green, rolling or none (the resolved default: blue_green for variants, rolling for components)."""
        return self.plan.rollout.strategy

    @property
    def kpi_interval_seconds(self) -> int:
        return self.plan.observability.kpi_interval_seconds

    @property
    def role(self) -> iam.IRole:
        return self.execution_role.role  # pyright: ignore[reportReturnType]

    @property
    def grant_principal(self) -> iam.IPrincipal:
        """The execution role: grant it what your container needs beyond the weights (iam.IGrantable)."""
        return self.execution_role.role

    # --- escape hatches ---------------------------------------------------------------------------

    @property
    def cfn_model(self) -> sagemaker.CfnModel:
        return self.model.model

    @property
    def cfn_endpoint_config(self) -> sagemaker.CfnEndpointConfig:
        return self.endpoint.endpoint_config

    @property
    def cfn_endpoint(self) -> sagemaker.CfnEndpoint:
        return self.endpoint.endpoint

    @property
    def cfn_inference_components(self) -> dict[str, sagemaker.CfnInferenceComponent]:
        """Inference components by name (empty in variants mode)."""
        return dict(getattr(self.endpoint, "inference_components", {}))

    # --- grants and metrics (the same words in both modes) -----------------------------------------

    @property
    def endpoint_arn(self) -> str:
        return self.endpoint.endpoint_arn

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Real-time and streaming invocation (and, in variants mode, async) of this endpoint only."""
        return self.endpoint.grant_invoke(grantee)

    def metric(self, metric_name: str, *, unit_name: str | None = None, **options: Any) -> cloudwatch.Metric:
        """A SageMaker metric of one serving unit (default the primary one), dimensions filled in;
        ``options`` are cloudwatch.Metric's (period, statistic, label, color, unit, account, region)."""
        return self.endpoint.metric(metric_name, unit_name=unit_name, **options)

    def metric_invocations(self, *, unit_name: str | None = None, **options: Any) -> cloudwatch.Metric:
        return self.endpoint.metric_invocations(unit_name=unit_name, **options)

    def metric_model_latency_microseconds(
        self, statistic: str = "p90", *, unit_name: str | None = None, **options: Any
    ) -> cloudwatch.Metric:
        return self.endpoint.metric_model_latency_microseconds(statistic, unit_name=unit_name, **options)

    def metric_invocation_5xx_errors(self, *, unit_name: str | None = None, **options: Any) -> cloudwatch.Metric:
        return self.endpoint.metric_invocation_5xx_errors(unit_name=unit_name, **options)

    def metric_invocation_4xx_errors(self, *, unit_name: str | None = None, **options: Any) -> cloudwatch.Metric:
        return self.endpoint.metric_invocation_4xx_errors(unit_name=unit_name, **options)

    def metric_gpu_utilization_percent(self, *, unit_name: str | None = None, **options: Any) -> cloudwatch.Metric:
        """0-100 x ``plan.gpus_per_metric`` (a variant's metric sums its instance's GPUs)."""
        return self.endpoint.metric_gpu_utilization_percent(unit_name=unit_name, **options)

    def metric_gpu_memory_utilization_percent(
        self, *, unit_name: str | None = None, **options: Any
    ) -> cloudwatch.Metric:
        return self.endpoint.metric_gpu_memory_utilization_percent(unit_name=unit_name, **options)

    def metric_kpi(self, kpi_name: str, *, unit_name: str | None = None, **options: Any) -> cloudwatch.Metric:
        """A launcher KPI (PEagle/Endpoints: TimePerOutputTokenSeconds, SpecAcceptanceRate, ...)."""
        unit = unit_name or self.primary_unit
        kpi = self.kpi.get(unit) or self.kpi[self.primary_unit]
        return kpi.metric(kpi_name, unit_name=unit, **options)

    def metric_units_serving(self, *, period: Duration) -> cloudwatch.IMetric | None:
        """Above zero while the primary unit serves; None where it always does (variants keep an instance)."""
        return self.endpoint.metric_units_serving(period=period)

    def auto_scale_capacity(self, *, unit_name: str | None = None) -> ScalableUnitCapacity:
        """The scalable capacity of a unit (default the primary one): a variant's instance count, or a
        component's copy count. Both offer the same policies with the same keywords (scale_on_concurrency,
        scale_on_gpu_utilization, scale_on_model_latency, scale_on_schedule); what you add goes beside the
        policies the ``autoscaling`` prop made. The bounds and targets themselves are that prop's: the
        planner and SageMaker's rules need them (a rolling batch against the minimum instance count, the
        copies a fleet holds)."""
        if self.scaling is None:
            raise ValueError("PeagleEndpoint was built with autoscaling=None; pass autoscaling=Autoscaling(...)")
        units = self.endpoint.managed_units
        unit = unit_name or self.primary_unit
        if unit not in units:
            raise ValueError(f"no scalable capacity for {unit!r}; units that scale: {units}")
        return self.scaling[units.index(unit)]

    # --- rollout ----------------------------------------------------------------------------------

    def add_rollback_alarms(self, alarms: Sequence[cloudwatch.IAlarm], *, unit_name: str | None = None) -> None:
        """An update of ``unit_name`` (default: the primary unit; in variants mode the endpoint's one
        update) rolls back when one of ``alarms`` fires (at most 10 count); the role may read them, as
        SageMaker requires. Once per unit."""
        unit = unit_name or self.primary_unit
        policy = self._rollouts.get(unit)
        if policy is None or policy.strategy == "none":
            return
        if unit in self._rollback_alarm_units:
            raise ValueError(f"rollback alarms of {unit} are already set; pass them all in one call")
        self._rollback_alarm_units.add(unit)
        policy.rollback_alarms.extend(alarms)
        if policy.auto_rollback:
            is_primary = unit == self.primary_unit
            self.execution_role.grant_describe_alarms(
                list(alarms), sid="ReadRollbackAlarms" + ("" if is_primary else self._unit_variant(unit))
            )
        self._apply_rollouts()

    # --- asynchronous endpoint ----------------------------------------------------------------

    def add_async_endpoint(
        self,
        *,
        bucket_name: str,
        bucket_key: kms.IKey | None = None,
        endpoint_name: str | None = None,
        max_concurrent_invocations_per_instance: int = _FILE.async_inference.max_concurrent_invocations_per_instance,
        min_instances: int = _FILE.async_inference.min_instances,
        max_instances: int = _FILE.async_inference.max_instances,
        target_backlog_per_instance: float = _FILE.async_inference.target_backlog_per_instance,
        scale_in_cooldown: Duration | None = None,
        scale_out_cooldown: Duration | None = None,
    ) -> AsyncInferenceEndpoint:
        """An asynchronous endpoint on its own Model (the same image, weights and plan) for long jobs:
        inputs and results under async/ in ``bucket_name``, SNS topics for success and failure, scaling on
        the queue (to zero when ``min_instances`` is 0). Cooldowns default to the autoscaling prop's."""
        if self.async_endpoint is not None:
            raise ValueError("PeagleEndpoint has an asynchronous endpoint already")
        name = endpoint_name or self._config.async_endpoint_name
        # Its own Model: its KPI lines must name the async endpoint (its log group's filters key on it).
        # No request log there: its requests are objects under async/ already (docs/production-loop.md).
        self.async_model = self._model(
            "AsyncModel", self.plan, DEFAULT_VARIANT_NAME, endpoint_name=name, log_requests=False
        )
        scaling = self._config.autoscaling  # the autoscaling prop's, or the defaults with autoscaling=None
        self.async_endpoint = AsyncInferenceEndpoint(
            self,
            "AsyncInference",
            endpoint_name=name,
            variant=self._variant_spec(DEFAULT_VARIANT_NAME, self.async_model, self.plan, 1.0),
            execution_role=self.execution_role,
            bucket_name=bucket_name,
            bucket_key=bucket_key,
            max_concurrent_invocations_per_instance=max_concurrent_invocations_per_instance,
            min_instances=min_instances,
            max_instances=max_instances,
            target_backlog_per_instance=target_backlog_per_instance,
            scale_in_cooldown=scale_in_cooldown or Duration.seconds(scaling.scale_in_cooldown_seconds),
            scale_out_cooldown=scale_out_cooldown or Duration.seconds(scaling.scale_out_cooldown_seconds),
            wake_cooldown=Duration.seconds(self.plan.unit_start_budget_seconds),
            volume_key=self.volume_key,
            log_retention_days=self.plan.observability.log_retention_days,
            detailed_observability=self.plan.observability.detailed_observability,
            metric_publish_frequency_seconds=self.plan.observability.metric_publish_frequency_seconds,
        )
        self._acknowledge_nvme(self.async_endpoint.endpoint.endpoint_config)
        self.async_endpoint.endpoint.endpoint.add_metadata(
            PLAN_METADATA_KEY, plan_metadata(self._door, name, {DEFAULT_VARIANT_NAME: self.plan})
        )
        return self.async_endpoint

    def _prop_problems(self) -> list[str]:
        """Rules on props the deployment file has no field for."""
        problems = []
        if self._volume_key_given is not None and not volume_key_allowed(self.plan.instance):
            problems.append(
                f"volume_key: {self.plan.instance_type} has local NVMe instance storage, which a KmsKeyId does not "
                "encrypt (the hardware does; older SageMaker API texts say CreateEndpointConfig fails); leave "
                "volume_key unset on this type"
            )
        if self.plan.weights_from_hub and self._vpc_given and self.plan.network_isolation:
            problems.append("vpc: a container with network isolation has no network; the VPC placement is unused")
        return problems

    # --- pieces ---------------------------------------------------------------------------------

    def _placement(
        self,
        vpc: ec2.IVpc | None,
        vpc_subnets: ec2.SubnetSelection | None,
        security_groups: Sequence[ec2.ISecurityGroup] | None,
    ) -> tuple[list[str] | None, list[str] | None]:
        """The model's subnets and security groups (None, None: SageMaker's managed network).

        CloudFormation's VpcConfig (AWS::SageMaker::Model and ::EndpointConfig, "VpcConfig",
        https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-sagemaker-model-vpcconfig.html)
        requires both lists: SecurityGroupIds "Required: Yes ... Minimum: 1 Maximum: 5", Subnets "Required: Yes
        ... Minimum: 1 Maximum: 16". Subnets default as CDK's own ``select_subnets()`` picks them (private with
        egress, else isolated; aws-cdk-lib aws-ec2 vpc.ts, ``reifySelectionDefaults``), and are never public
        ones, by default or chosen (_refuse_public_subnets says why). Without ``security_groups`` one is created,
        as @aws-cdk/aws-sagemaker-alpha's ``Model`` does (lib/model.ts, ``configureNetworking``: "new
        ec2.SecurityGroup(this, 'SecurityGroup', ...)"), here least-privilege: no ingress, HTTPS out only (to
        the VPC endpoints or a NAT: S3, ECR, CloudWatch, the Hub); groups given are refused when they are known
        to be of another VPC (_refuse_groups_of_other_vpcs)."""
        path = self.node.path
        if vpc is None and vpc_subnets is None:
            if security_groups:
                raise ValueError(f"PeagleEndpoint {path}: security_groups needs vpc=... (or vpc_subnets=...)")
            return None, None
        if vpc is not None:
            selection = vpc_subnets or _default_subnets(vpc, path)
            selected = vpc.select_subnets(**_selection_kwargs(selection))
            _refuse_public_subnets(vpc, selected.subnets, path)
            subnet_ids = list(selected.subnet_ids)
            _refuse_groups_of_other_vpcs(self, vpc, security_groups or [], path)
        elif vpc_subnets is not None and vpc_subnets.subnets:
            subnet_ids = [subnet.subnet_id for subnet in vpc_subnets.subnets]
        else:
            raise ValueError(
                f"PeagleEndpoint {path}: vpc_subnets without a vpc must list its subnets "
                "(ec2.SubnetSelection(subnets=[...])), or pass vpc=... with it"
            )
        if not security_groups:
            if vpc is None:
                raise ValueError(
                    f"PeagleEndpoint {path}: vpc_subnets without vpc needs security_groups=[...] (a VPC config "
                    "needs at least one); or pass vpc=... and a security group without ingress is created"
                )
            self.security_group = ec2.SecurityGroup(
                self,
                "SecurityGroup",
                vpc=vpc,
                description="P-EAGLE model instances: no ingress; HTTPS out (VPC endpoints or NAT)",
                allow_all_outbound=False,
            )
            self.security_group.add_egress_rule(
                ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS to S3, ECR, CloudWatch and STS"
            )
            security_groups = [self.security_group]
        if len(security_groups) > MAX_VPC_SECURITY_GROUPS or len(subnet_ids) > MAX_VPC_SUBNETS:
            raise ValueError(
                f"PeagleEndpoint {path}: {len(security_groups)} security group(s) and {len(subnet_ids)} subnet(s); "
                f"a SageMaker VPC config takes at most {MAX_VPC_SECURITY_GROUPS} and {MAX_VPC_SUBNETS} (narrow "
                "vpc_subnets, e.g. one_per_az=True)"
            )
        return subnet_ids, [group.security_group_id for group in security_groups]

    def _unit_variant(self, unit: str) -> str:
        return dict(zip(self.unit_names, [DEFAULT_VARIANT_NAME, BASELINE_VARIANT_NAME], strict=False))[unit]

    def _model(
        self, construct_id: str, plan: Plan, unit: str, endpoint_name: str | None = None, *, log_requests: bool = True
    ) -> PeagleModel:
        # The KPI lines name the unit (their VariantName dimension): the variant, or the component.
        return PeagleModel(
            self,
            construct_id,
            environment=container_environment(
                plan,
                variant_name=unit,
                endpoint_name=endpoint_name or self.endpoint_name,
                request_log_sampling_percentage=self._config.capture.request_log_sampling_percentage
                if log_requests
                else 0,
            ),
            artifacts=self._weights.location,
            image=self._image,
            execution_role=self.execution_role,
            network_isolation=plan.network_isolation,
            subnet_ids=self._subnet_ids,
            security_group_ids=self._security_group_ids,
        )

    def _variant_spec(self, name: str, model: PeagleModel, plan: Plan, weight: float) -> VariantSpec:
        return VariantSpec(
            name=name,
            model=model,
            instance_type=plan.instance_type,
            instance_count=plan.instance_count,
            weight=round(weight, 4),
            container_startup_timeout_seconds=plan.container_startup_timeout_seconds,
            model_download_timeout_seconds=plan.model_download_timeout_seconds,
            inference_ami_version=plan.inference_ami_version,
            routing=plan.routing,
        )

    def _variant_endpoint(self) -> VariantEndpoint:
        """Production variants: one model replica per instance, instances scaled by Application Auto Scaling."""
        plan, baseline_plan = self.plan, self.baseline_plan
        variants = [self._variant_spec(DEFAULT_VARIANT_NAME, self.model, plan, plan.traffic_percent / 100)]
        if baseline_plan is not None and self.baseline_model is not None:
            variants.append(
                self._variant_spec(
                    BASELINE_VARIANT_NAME, self.baseline_model, baseline_plan, baseline_plan.traffic_percent / 100
                )
            )
        observability, capture = plan.observability, self._config.capture
        return VariantEndpoint(
            self,
            "PeagleEndpoint",
            endpoint_name=self.endpoint_name,
            variants=variants,
            volume_key=self.volume_key,
            log_retention_days=observability.log_retention_days,
            detailed_observability=observability.detailed_observability,
            metric_publish_frequency_seconds=observability.metric_publish_frequency_seconds,
            data_capture=(
                self.data_capture.data_capture_config(
                    sampling_percentage=capture.sampling_percentage, mode=capture.mode
                )
                if self.data_capture is not None
                else None
            ),
        )

    def _data_capture(self, config: DeploymentConfig) -> DataCaptureDestination | None:
        """The capture bucket, with capture on (the settings model refuses it in inference_components mode), and the
        role's writes into it. Its key: the prop's, else the deployment file's kms_key_arn, else a new one."""
        settings = config.capture
        if not settings.uses_data_capture:  # off, or the container's request log instead (its models' environment)
            return None
        key = self._capture_key or (
            kms.Key.from_key_arn(self, "DataCaptureKey", settings.kms_key_arn) if settings.kms_key_arn else None
        )
        destination = DataCaptureDestination(self, "DataCapture", expire_after_days=settings.expire_after_days, key=key)
        destination.grant_write(self.execution_role)
        return destination

    def _component_endpoint(self) -> ComponentEndpoint:
        """Inference components: copies packed per instance, copies and instances scaled to zero. The endpoint
        config carries the Models' network isolation and VPC placement (ComponentEndpoint says why)."""
        plan = self.plan
        if plan.components is None:  # the planner plans components for this mode (peagle/planner.py)
            raise ValueError("an inference-components endpoint needs a plan with components")
        models = [self.model, self.baseline_model]
        plans = [plan, self.baseline_plan]
        specs = [
            ComponentSpec(
                name=unit,
                model=models[index],
                accelerators=plans[index].components.accelerators_per_copy,
                cpu_cores=plans[index].components.cpu_cores_per_copy,
                memory_mb=plans[index].components.memory_mb_per_copy,
                initial_copies=plans[index].components.initial_copies,
                container_startup_timeout_seconds=plans[index].container_startup_timeout_seconds,
                model_download_timeout_seconds=plans[index].model_download_timeout_seconds,
                settings=plans[index].components.settings,
            )
            for index, unit in enumerate(self.unit_names)
        ]
        observability = plan.observability
        self._warn_of_forced_data_cache([unit_plan for unit_plan in plans if unit_plan is not None])
        return ComponentEndpoint(
            self,
            "PeagleEndpoint",
            endpoint_name=self.endpoint_name,
            instance_type=plan.instance_type,
            initial_instance_count=plan.instance_count,
            min_instances=plan.components.min_instances,
            max_instances=plan.components.max_instances,
            inference_ami_version=plan.inference_ami_version,
            routing=plan.routing,
            execution_role=self.execution_role.role,  # pyright: ignore[reportArgumentType]
            execution_role_policy=self.execution_role.policy,
            components=specs,
            network_isolation=plan.network_isolation,
            subnet_ids=self._subnet_ids,
            security_group_ids=self._security_group_ids,
            volume_key=self.volume_key,
            log_retention_days=observability.log_retention_days,
            detailed_observability=observability.detailed_observability,
            metric_publish_frequency_seconds=observability.metric_publish_frequency_seconds,
        )

    def _warn_of_forced_data_cache(self, plans: list[Plan]) -> None:
        """`cdk synth` says, as `peagle plan` does, where data_cache false is not honoured (peagle/forced_data_cache.py):
        a warning, not a refusal, since the template is deployable and only the cache differs from what it says."""
        warnings = {
            warning
            for plan in plans
            if plan.components is not None
            and (
                warning := data_cache_warning(
                    plan.instance_type, plan.instance, data_cache=plan.components.settings.data_cache
                )
            )
        }
        for warning in sorted(warnings):
            Annotations.of(self).add_warning_v2("peagle:data-cache-not-honoured", warning)

    def _acknowledge_nvme(self, endpoint_config: sagemaker.CfnEndpointConfig) -> None:
        if self.volume_key is None:
            acknowledge(
                endpoint_config,
                "NIST.800.53.R5-SageMakerEndpointConfigurationKMSKeyConfigured",
                f"{self.plan.instance_type} has local NVMe instance storage, encrypted at rest by a hardware "
                "module on the instance; a KmsKeyId does not encrypt it (SageMaker API reference; its "
                "texts before botocore 1.43.27 said the call fails). See deployment_rules.volume_key_allowed.",
            )

    def _rollout_policies(self) -> dict[str, RolloutPolicy]:
        settings = self.plan.rollout
        rolling, green = settings.rolling, settings.blue_green
        common = RolloutPolicy(
            strategy=settings.strategy,
            auto_rollback=settings.auto_rollback,
            batch_percent=rolling.batch_percent,
            rollback_batch_percent=rolling.rollback_batch_percent,
            wait_seconds=rolling.wait_seconds,
            max_execution_seconds=rolling.max_execution_seconds,
        )
        if settings.strategy == "blue_green":
            common = replace(
                common,
                traffic=green.traffic,
                canary_percent=green.canary_percent,
                linear_step_percent=green.linear_step_percent,
                wait_seconds=green.wait_seconds,
                termination_wait_seconds=green.termination_wait_seconds,
                max_execution_seconds=green.max_execution_seconds,
            )
        # One update per managed unit: each component, or the variants' endpoint as its primary unit.
        return {unit: replace(common, rollback_alarms=[]) for unit in self.endpoint.managed_units}

    def _apply_rollouts(self) -> None:
        for unit, policy in self._rollouts.items():
            self.endpoint.configure_rollout(unit, policy)

    def _scale(self) -> list[ScalableUnitCapacity]:
        """Each managed unit's scaling: each component's copies, or the primary variant's instances."""
        plans = [self.plan, self.baseline_plan]
        return [scale_unit(self.endpoint, unit, plans[index]) for index, unit in enumerate(self.endpoint.managed_units)]

    @property
    def config(self) -> DeploymentConfig:
        """The validated deployment model these props amount to (what `peagle plan` would print)."""
        return self._config


# The deployment file's name pattern (peagle.config: ^[a-z][a-z0-9-]{0,23}$), which the physical names extend
# (<name>-endpoint, <name>-primary, <name>-async, all within SageMaker's 63 characters).
NAME_LENGTH = 24


def _generated_name(construct: Construct) -> str:
    """A readable default ``name``: the stack's and the construct's ids, lower-case, cut to fit, and 8 hex
    digits of the construct path's hash so two endpoints never share one ("consumer-chat-3f2a91bc").
    (Names.unique_resource_name, used before, removed letters from the middle of long ids to fit:
    "llmservig-coder-0ec20bdf".)"""
    path_hash = Names.unique_id(construct)[-8:].lower()
    words = "-".join([Stack.of(construct).stack_name, construct.node.id]).lower()
    words = re.sub(r"[^a-z0-9]+", "-", words).strip("-")
    head = words[: NAME_LENGTH - len(path_hash) - 1].rstrip("-") or "peagle"
    if not head[0].isalpha():
        head = "p" + head[: NAME_LENGTH - len(path_hash) - 2]
    return f"{head}-{path_hash}"


def _check_prop_types(owner: str, props: dict[str, Any]) -> None:
    """Each prop's type, named in the TypeError (peagle_cdk/prop_types.py)."""
    if not isinstance(props["weights"], ModelWeights):
        raise TypeError(
            f"{owner}: weights must be ModelWeights.from_bucket(bucket, prefix) or ModelWeights.from_hub(), "
            f"not {type(props['weights']).__name__}"
        )
    for name in ("model", "instance_type", "profile", "inference_ami_version", "name", "endpoint_name"):
        prop_types.check_instance(owner, name, props[name], str, "a string")
    for name in ("network_isolation", "detailed_observability"):
        prop_types.check_instance(owner, name, props[name], bool, "True or False")
    for name in ("instance_count", "log_retention_days"):
        prop_types.check_number(owner, name, props[name], whole=True)
    prop_types.check_number(owner, "price_per_hour_usd", props["price_per_hour_usd"])
    typed = {
        "custom_pair": (ModelPair, "a peagle_cdk.ModelPair"),
        "instance_facts": (InstanceType, "a peagle_cdk.InstanceType"),
        "profile_overrides": (ProfileOverrides, "a peagle_cdk.ProfileOverrides"),
        "slo": (SloSettings, "a peagle_cdk.SloSettings"),
        "speculation": (Speculation, "Speculation.fixed(k), Speculation.off() or Speculation.recommended()"),
        "mode": (EndpointMode, "EndpointMode.variants() or EndpointMode.inference_components(...)"),
        "autoscaling": (Autoscaling, "Autoscaling(...) or None (fixed capacity)"),
        "rollout": (Rollout, "Rollout.blue_green(...), Rollout.rolling(...) or Rollout.none()"),
        "ab_baseline": (AbBaseline, "AbBaseline(...)"),
        "capture": (DataCapture, "DataCapture(...) or None (no capture)"),
        "routing": (
            Routing,
            "Routing.least_outstanding_requests(), Routing.random(), Routing.prefix_aware(...) or None",
        ),
        "image": (
            ServingImage,
            "ServingImage.build_in_account(...), ServingImage.from_asset() or "
            "ServingImage.from_ecr_repository(repository, tag)",
        ),
        "vpc_subnets": (ec2.SubnetSelection, "an ec2.SubnetSelection"),
        "vllm_args": (Mapping, "a mapping of vLLM option names to values"),
    }
    for name, (expected, described) in typed.items():
        prop_types.check_instance(owner, name, props[name], expected, described)
    for name, example in (
        ("container_startup_timeout", "Duration.minutes(20)"),
        ("model_download_timeout", "Duration.minutes(20)"),
        ("latency_sla", "Duration.seconds(10)"),
        ("kpi_interval", "Duration.minutes(1)"),
        ("metric_publish_frequency", "Duration.minutes(1)"),
    ):
        prop_types.check_duration(owner, name, props[name], example)
    prop_types.check_interface(owner, "role", props["role"], "IRole")
    prop_types.check_interface(owner, "vpc", props["vpc"], "IVpc")
    prop_types.check_interface(owner, "volume_key", props["volume_key"], "IKey")
    prop_types.check_interfaces(owner, "security_groups", props["security_groups"], "ISecurityGroup")


# Why a model never runs in public subnets. SageMaker: "The ENIs provide your model containers with a network
# connection within your VPC that is not connected to the internet" (SageMaker Developer Guide, "Give SageMaker
# Hosted Endpoints Access to Resources in Your Amazon VPC", https://docs.aws.amazon.com/sagemaker/latest/dg/host-vpc.html),
# and "If your model needs access to ... a resource outside of AWS, create a NAT gateway" (same page). A public
# subnet's internet gateway does not help them: it "enables resources in your public subnets (such as EC2 instances)
# to connect to the internet if the resource has a public IPv4 address or an IPv6 address" (Amazon VPC User Guide,
# "Connect to the internet using an internet gateway", https://docs.aws.amazon.com/vpc/latest/userguide/VPC_Internet_Gateway.html).
_PUBLIC_SUBNETS_REACH_NOTHING = "where the model's instances get no public address to reach anything"


def _default_subnets(vpc: ec2.IVpc, path: str) -> ec2.SubnetSelection:
    """Private subnets with egress, else isolated ones (CDK's default order, public ones left out)."""
    if vpc.private_subnets:
        return ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
    if vpc.isolated_subnets:
        return ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
    raise ValueError(
        f"PeagleEndpoint {path}: the VPC has no private subnets (with egress or isolated), only public ones, "
        f"{_PUBLIC_SUBNETS_REACH_NOTHING}; add private subnets, or pass a vpc that has them (PrivateNetwork(scope, "
        "id) makes one); vpc_subnets=... cannot choose its public ones either"
    )


def _refuse_public_subnets(vpc: ec2.IVpc, subnets: Sequence[ec2.ISubnet], path: str) -> None:
    """``vpc_subnets`` may not choose what the default never does: the VPC's public subnets (by type, group name
    or as subnet objects), for the reason above."""
    public_ids = {subnet.subnet_id for subnet in vpc.public_subnets}
    public = [s for s in subnets if s.subnet_id in public_ids or isinstance(s, ec2.PublicSubnet)]
    if public:
        raise ValueError(
            f"PeagleEndpoint {path}: vpc_subnets selects public subnets of vpc ({len(public)} of the "
            f"{len(subnets)} selected), {_PUBLIC_SUBNETS_REACH_NOTHING}; choose private ones, e.g. "
            "vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS) (or PRIVATE_ISOLATED "
            "with the VPC endpoints in peagle_cdk.INTERFACE_ENDPOINTS), or leave vpc_subnets out (vpc's private "
            "subnets are chosen)"
        )


def _refuse_groups_of_other_vpcs(
    scope: Construct, vpc: ec2.IVpc, security_groups: Sequence[ec2.ISecurityGroup], path: str
) -> None:
    """A security group known at synth to be of another VPC than ``vpc``. SageMaker's VpcConfig: SecurityGroupIds
    "Specify the security groups for the VPC that is specified in the Subnets field" (SageMaker API Reference,
    VpcConfig, https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_VpcConfig.html; botocore 1.44.5). EC2
    lets a group serve another VPC only once associated with it: AssociateSecurityGroupVpc "Associates a security
    group with another VPC in the same Region. This enables you to use the same security group with network
    interfaces and instances in the specified VPC" (Amazon EC2 API Reference,
    https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_AssociateSecurityGroupVpc.html), so a group this app
    associates with ``vpc`` (ec2.CfnSecurityGroupVpcAssociation) is taken (whether SageMaker accepts such a group
    is not verified). Known means: both VPC ids are given as text (vpc-...), or both are VPCs (ec2.Vpc) of this app;
    a group imported by id, or a VPC of unknown id, is not checked."""
    constructs = scope.node.root.node.find_all()
    app_vpcs = {found.vpc_id: found.node.path for found in constructs if isinstance(found, ec2.Vpc)}
    associated = {
        (found.group_id, found.vpc_id) for found in constructs if isinstance(found, ec2.CfnSecurityGroupVpcAssociation)
    }

    def known(vpc_id: str) -> tuple[str, str] | None:
        if not Token.is_unresolved(vpc_id):
            return "id", vpc_id
        return ("app", app_vpcs[vpc_id]) if vpc_id in app_vpcs else None

    ours = known(vpc.vpc_id)
    for index, group in enumerate(security_groups):
        resource = group.node.default_child if isinstance(group, ec2.SecurityGroup) else None
        group_vpc_id = getattr(resource, "vpc_id", None)
        if ours is None or group_vpc_id is None or group_vpc_id == vpc.vpc_id:
            continue
        theirs = known(group_vpc_id)
        if theirs is None or theirs[0] != ours[0] or (group.security_group_id, vpc.vpc_id) in associated:
            continue
        raise ValueError(
            f"PeagleEndpoint {path}: security_groups[{index}] ({group.node.path}) is in another VPC ({theirs[1]}) "
            f"than vpc ({ours[1]}), and a SageMaker VPC config takes security groups of its subnets' VPC; pass "
            "security groups of vpc, or leave security_groups out and one without ingress is made in vpc (a group "
            "you associated with vpc through AssociateSecurityGroupVpc: declare its ec2.CfnSecurityGroupVpcAssociation "
            "in this app, or pass the group by id, ec2.SecurityGroup.from_security_group_id)"
        )


def _selection_kwargs(selection: ec2.SubnetSelection) -> dict[str, Any]:
    """A SubnetSelection as select_subnets' keywords (jsii's Python binding takes them flattened)."""
    fields = ("availability_zones", "one_per_az", "subnet_filters", "subnet_group_name", "subnets", "subnet_type")
    return {name: getattr(selection, name) for name in fields if getattr(selection, name) is not None}
