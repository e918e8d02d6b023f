"""PeagleEndpoint: a SageMaker endpoint serving a target LLM with a P-EAGLE drafter on vLLM, planned
for its GPUs. One construct for both endpoint modes (production variants, inference components).

It plans itself: its props become the project's one validated deployment model
(peagle.settings.DeploymentConfig) and go through the same planner (peagle.planning.planner) and SageMaker rules
(peagle.planning.deployment_rules) as a deployment file, so what fails `cdk synth` of the YAML app fails a
construct with the same message. Config and planning errors raise while the construct is built; the
SageMaker rules run as the construct's validation (``node.add_validation``), when the app synthesizes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

import jsii
from aws_cdk import Annotations, Duration, Names, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct, IValidation

from peagle.catalog import InstanceType, ModelPair
from peagle.planning.container_env import BASELINE_VARIANT_NAME, DEFAULT_VARIANT_NAME, container_environment
from peagle.planning.deployment_rules import DeploymentPlans, DeploymentRuleError, check_deployment, volume_key_allowed
from peagle.planning.plan_record import METADATA_KEY as PLAN_METADATA_KEY
from peagle.planning.plan_record import plan_metadata
from peagle.planning.planner import Plan, plan_ab_baseline, plan_deployment
from peagle.settings.errors import PeagleError
from peagle.settings.refs import Door
from peagle.settings.words import in_words
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
from peagle_cdk.model_placement import place_model
from peagle_cdk.nag import acknowledge
from peagle_cdk.peagle_endpoint_props import check_prop_types, settings_props
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
from peagle_cdk.unit_strategy import strategy_for
from peagle_cdk.variant_endpoint import VariantEndpoint, VariantSpec

# The deployment file's defaults are the props' (one set of numbers, peagle_cdk/settings_model.py).
_FILE = DEFAULTS

# The props that become the settings model (peagle_cdk/endpoint_config.py): those a settings field spells.
SETTINGS_PROPS = settings_props()


@jsii.implements(IValidation)
class _SageMakerRules:
    """peagle.planning.deployment_rules on this construct's inputs, with the messages a deployment file gets."""

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
    PeagleEndpoint (the endpoint, its config, logs and scaling), KpiMetrics, AsyncModel, AsyncInference, and a
    Model's own per instance pool type, <Model>Pool<priority> (PeagleModelPool2). Give
    the construct the id "Default" to keep a stack's own logical ids: CDK leaves a path component named Default
    out of logical ids ("Resources with this ID are complete hidden from the
    logical ID calculation", aws/aws-cdk packages/aws-cdk-lib/core/lib/private/uniqueid.ts).

    Props (``_config`` is internal: use ``PeagleEndpoint.from_config``), one ``:param`` each, in the signature's
    order (peagle_cdk/peagle_endpoint_props.py declares them; docs/library.md's table is generated from it):

    :param weights: where target/ and drafter/ come from (``ModelWeights.from_bucket(bucket, prefix)``,
        or ``from_hub()``); the role may read that prefix only.
    :param model: a catalog pair id (`peagle catalog`), or the id of ``custom_pair``.
    :param custom_pair: a pair the catalog lacks (peagle.catalog.ModelPair: target, drafter, facts).
    :param instance_type: a SageMaker instance type; the catalog gives its GPU facts, or ``instance_facts``.
    :param instance_facts: the GPU and host facts of a type the catalog lacks.
    :param instance_count: initial instances.
    :param price_per_hour_usd: on-demand USD per instance-hour (a savings plan, another region) for the
        plan's cost and EndpointMonitoring's cost widgets and alarm; default: the catalog's price (or
        ``instance_facts``').
    :param inference_ami_version: the GPU host (NVIDIA driver); default: the one the image needs.
    :param fallback_instance_types: instance types SageMaker falls back to, in priority order, when
        ``instance_type`` has no capacity (an instance pool, at most 4 besides it; each planned as its own type).
    :param instance_provision_timeout: how long SageMaker tries to get capacity across the pool's types (5-60
        minutes); default: 10 minutes with ``fallback_instance_types``, else SageMaker's.
    :param ml_reservation_arn: an ML capacity reservation to launch into, and only into; default: none.
    :param profile: chatbot | codegen | batch (sampling, lengths, SLO).
    :param profile_overrides: single fields of the profile changed.
    :param slo: single fields of the profile's SLO changed.
    :param speculation: K (default ``Speculation.recommended()``: the pair's K for the profile).
    :param mode: ``EndpointMode.variants()`` (default) or ``EndpointMode.inference_components(...)``.
    :param autoscaling: the units' scaling, the same words in both modes; None: fixed capacity.
    :param rollout: how updates roll out; default blue/green for variants, rolling for components.
    :param ab_baseline: a second variant (or component) of the same target with another K, for A/B.
    :param capture: a sample of the endpoint's requests (``DataCapture(...)``): SageMaker Data Capture into a bucket
        this construct creates (variants mode only), or the container's request log; expired after
        ``DataCapture.expire_after``. Default None: nothing is captured.
    :param routing: how SageMaker spreads requests over the instances: ``Routing.least_outstanding_requests()``
        (the default), ``Routing.random()`` or ``Routing.prefix_aware(prefix_length=...)`` (needs prefix caching
        on, for a pair that allows it: docs/routing.md).
    :param image: the serving image; default ``ServingImage.build_in_account()`` (the deployment file's default),
        built in CodeBuild during `cdk deploy` with no Docker on your machine; ``ServingImage.from_asset()`` builds
        it with your Docker instead.
    :param name: lower-case prefix of the physical names (<name>-endpoint, <name>-primary); default: the
        stack's and this construct's ids with a hash of its path ("chatservice-coder-3f2a91bc"). Pass it
        to pin the names: changing it replaces the endpoint.
    :param endpoint_name: the endpoint's name (default <name>-endpoint). A physical name, so its log
        group and metric filters exist before it logs; changing it replaces the endpoint.
    :param role: your own execution role (trusting sagemaker.amazonaws.com); default: a new one.
    :param vpc: run the model in your VPC (default: SageMaker's managed network). Isolated subnets need an S3
        gateway endpoint (an error at synth without one) and the VPC endpoints in ``peagle_cdk.INTERFACE_ENDPOINTS``
        (a warning); ``PrivateNetwork`` makes such a VPC.
    :param vpc_subnets: default: ``vpc``'s private subnets with egress, else its isolated ones; never public ones.
    :param security_groups: default: a new one without ingress, HTTPS out only (``security_group``).
    :param network_isolation: no network or AWS credentials in the container (default: on).
    :param container_startup_timeout: the container's start-up budget; default: sized from the weights.
    :param model_download_timeout: the weights' download budget; default: sized from the weights.
    :param latency_sla: the p90 ModelLatency the latency alarm and step scaling act on (default: the
        profile's SLA).
    :param volume_key: KMS key for the ML storage volume; default: a new key, or none on instance types
        with local NVMe storage, where a key does not encrypt it.
    :param log_retention_days: how long the endpoint's logs are kept.
    :param kpi_interval: how often the launcher's KPIs are published.
    :param metric_publish_frequency: how often SageMaker publishes the endpoint's metrics: 10 s, 30 s or 1
        minute (the default). The alarms and scaling policies read them in one-minute periods, so the longer
        intervals SageMaker also takes (2-5 minutes) are refused (peagle.settings.ObservabilitySettings).
    :param detailed_observability: SageMaker's per-GPU, per-instance and container metrics (default: on).
    :param vllm_args: extra vLLM flags, passed through.
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
        fallback_instance_types: Sequence[str] | None = None,
        instance_provision_timeout: Duration | None = None,
        ml_reservation_arn: str | None = None,
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
        check_prop_types(owner, props)
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
            f"PeagleEndpoint.from_config {id}", "config", config, DeploymentConfig, "a peagle.settings.DeploymentConfig"
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
        self._strategy = strategy_for([p for p in (self.plans.plan, self.plans.baseline_plan) if p is not None])
        variants = [DEFAULT_VARIANT_NAME] + ([BASELINE_VARIANT_NAME] if self.plans.baseline_plan else [])
        # The serving units' names: production variants, or inference components (<name>-primary).
        self.unit_names = [self._strategy.unit_name(config, v) for v in variants]

        placement = place_model(self, vpc, vpc_subnets, security_groups, weights_in_s3=weights.location is not None)
        self._subnet_ids, self._security_group_ids = placement.subnet_ids, placement.security_group_ids
        self.security_group = placement.security_group  # the one made when vpc came without security_groups
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
        self.endpoint: ServingUnits = self._strategy.build(self)
        self._acknowledge_nvme(self.endpoint.endpoint_config)
        # The plan travels with the template (peagle/planning/plan_record.py): the tools read it, not a deployment file.
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
        units_class = self._strategy.endpoint_class
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
        return self._strategy.component_names(self.unit_names)

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

    def _unit_variant(self, unit: str) -> str:
        return dict(zip(self.unit_names, [DEFAULT_VARIANT_NAME, BASELINE_VARIANT_NAME], strict=False))[unit]

    def _model(
        self, construct_id: str, plan: Plan, unit: str, endpoint_name: str | None = None, *, log_requests: bool = True
    ) -> PeagleModel:
        # The KPI lines name the unit (their VariantName dimension): the variant, or the component.
        def environment(of: Plan) -> dict[str, str]:
            return container_environment(
                of,
                variant_name=unit,
                endpoint_name=endpoint_name or self.endpoint_name,
                request_log_sampling_percentage=self._config.capture.request_log_sampling_percentage
                if log_requests
                else 0,
            )

        model = self._peagle_model(construct_id, plan, environment(plan))
        # An instance pool's fallback type runs its own Model where its container differs (peagle/planning/pool_plans.py).
        model.pool_models = tuple(
            None
            if environment(each) == model.environment
            else self._peagle_model(f"{construct_id}Pool{n}", each, environment(each))
            for n, each in enumerate(plan.fallbacks, start=2)
        )
        return model

    def _peagle_model(self, construct_id: str, plan: Plan, environment: dict[str, str]) -> PeagleModel:
        return PeagleModel(
            self,
            construct_id,
            environment=environment,
            artifacts=self._weights.location,
            image=self._image,
            execution_role=self.execution_role,
            network_isolation=plan.network_isolation,
            subnet_ids=self._subnet_ids,
            security_group_ids=self._security_group_ids,
        )

    def _variant_spec(self, name: str, model: PeagleModel, plan: Plan, weight: float) -> VariantSpec:
        return VariantSpec(name=name, model=model, plan=plan, weight=round(weight, 4))

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

    def _unit_models_and_plans(self) -> tuple[list[PeagleModel], list[Plan]]:
        """The units' models and plans, the primary first (what the strategy builds each unit from)."""
        models = [model for model in (self.model, self.baseline_model) if model is not None]
        return models, [plan for plan in (self.plan, self.baseline_plan) if plan is not None]

    def _component_endpoint(self, specs: list[ComponentSpec]) -> ComponentEndpoint:
        """Inference components, each whole (its model, plan and pool: peagle_cdk/unit_strategy.py): copies packed
        per instance, copies and instances scaled to zero. The endpoint config carries the Models' network isolation
        and VPC placement (ComponentEndpoint says why)."""
        self._warn_of_forced_data_cache([spec.plan for spec in specs])
        return ComponentEndpoint(
            self,
            "PeagleEndpoint",
            endpoint_name=self.endpoint_name,
            execution_role=self.execution_role.role,  # pyright: ignore[reportArgumentType]
            execution_role_policy=self.execution_role.policy,
            components=specs,
            subnet_ids=self._subnet_ids,
            security_group_ids=self._security_group_ids,
            volume_key=self.volume_key,
        )

    def _warn_of_forced_data_cache(self, plans: list[Plan]) -> None:
        """`cdk synth` says, as `peagle plan` does, where data_cache false is not honoured (peagle/planning/forced_data_cache.py):
        a warning, not a refusal, since the template is deployable and only the cache differs from what it says."""
        warnings = {warning for plan in plans for warning in plan.units.notes(plan.instance_type, plan.instance)}
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


# The deployment file's name pattern (peagle.settings: ^[a-z][a-z0-9-]{0,23}$), which the physical names extend
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
