"""One CloudFormation template (JSON, or YAML with the short-form intrinsic tags) and the questions preflight,
simulate and smoke ask of it, by resource *type*, never by logical id: which endpoints, with which variants and
rollout settings; which variants, and which inference components' copy counts, are registered with Application
Auto Scaling; which log groups have explicit names; where each Model reads its weights.

Values in a template may be intrinsic functions: ``resolve`` turns them into the text the template fixes, through
the one resolver in its concrete mode (peagle/cloud_assembly/modes.py); anything else stays unresolved.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from peagle.cloud_assembly.intrinsics import Resolver
from peagle.cloud_assembly.manifest import AssemblyStack
from peagle.cloud_assembly.modes import ConcreteMode
from peagle.settings.errors import PeagleError

ENDPOINT = "AWS::SageMaker::Endpoint"
ENDPOINT_CONFIG = "AWS::SageMaker::EndpointConfig"
MODEL = "AWS::SageMaker::Model"
# A production variant's capacity settings (instance pools, the provision timeout, an ML capacity reservation).
CAPACITY_KEYS = ("InstancePools", "VariantInstanceProvisionTimeoutInSeconds", "CapacityReservationConfig")
# The in-account image build's custom resource (peagle_cdk/serving_image_build.py), and the one of cdklabs'
# deploy-time-build that earlier releases used (still in templates deployed by them).
IMAGE_BUILDS = ("Custom::PeagleServingImageBuild", "Custom::CDKContainerImageBuild")
INFERENCE_COMPONENT = "AWS::SageMaker::InferenceComponent"
SCALABLE_TARGET = "AWS::ApplicationAutoScaling::ScalableTarget"
LOG_GROUP = "AWS::Logs::LogGroup"

# ScalableTarget.ResourceId of a SageMaker variant, and its only scalable dimension
# (Application Auto Scaling API reference, RegisterScalableTarget: "SageMaker endpoint
# variant - The resource type is variant and the unique identifier is the resource ID.
# Example: endpoint/my-end-point/variant/KMeansClustering.")
_VARIANT_RESOURCE_ID = re.compile(r"^endpoint/(?P<endpoint>[^/]+)/variant/(?P<variant>[^/]+)$")
VARIANT_INSTANCE_COUNT = "sagemaker:variant:DesiredInstanceCount"
# The same operation for inference components (botocore 1.44.5, application-autoscaling
# RegisterScalableTarget ResourceId: "SageMaker inference component - The resource type is
# inference-component and the unique identifier is the resource ID. Example:
# inference-component/my-inference-component."; ScalableDimension:
# "sagemaker:inference-component:DesiredCopyCount - The number of copies across an endpoint for a
# SageMaker inference component.").
_COMPONENT_RESOURCE_ID = re.compile(r"^inference-component/(?P<component>[^/]+)$")
COMPONENT_COPY_COUNT = "sagemaker:inference-component:DesiredCopyCount"

# Pseudo parameters whose value one stack keeps across updates: its account, partition, region, URL suffix, name
# and id (AWS::NoValue and AWS::NotificationARNs are not names).
STACK_CONSTANTS = frozenset(
    {"AWS::AccountId", "AWS::Partition", "AWS::Region", "AWS::URLSuffix", "AWS::StackName", "AWS::StackId"}
)


class TemplateError(PeagleError):
    """A template that cannot be read, or is not an endpoint stack's."""


@dataclass(frozen=True)
class Variant:
    name: str
    instance_type: Any  # the template value: a string, or an intrinsic function; None for serverless
    model_id: str | None  # logical id of the AWS::SageMaker::Model it serves, if referenced
    routing: Any = None  # its RoutingConfig as written; None when absent
    managed_scaling: Any = None  # its ManagedInstanceScaling as written (inference components' pool); None when absent
    # Its capacity settings as written, those present of InstancePools, VariantInstanceProvisionTimeoutInSeconds and
    # CapacityReservationConfig (peagle/preflight/rules.py, rule instance-capacity); empty when none is.
    capacity: Mapping[str, Any] = field(default_factory=dict)

    @property
    def first_instance_type(self) -> Any:
        """InstanceType, or with an instance pool (which replaces it) the type of priority 1."""
        pools = self.capacity.get("InstancePools")
        if self.instance_type is not None or not isinstance(pools, list):
            return self.instance_type
        first = min((p for p in pools if isinstance(p, Mapping)), key=_priority, default={})
        return first.get("InstanceType")


def _priority(pool: Mapping[str, Any]) -> int:
    priority = pool.get("Priority")
    return priority if isinstance(priority, int) else 99


@dataclass(frozen=True)
class Endpoint:
    logical_id: str
    name: str | None  # the EndpointName; None when generated or not resolvable
    variants: tuple[Variant, ...]
    deployment_config: Mapping[str, Any] | None
    retain_deployment_config: bool
    asynchronous: bool
    metrics_config: Any = None  # the endpoint config's MetricsConfig as written; None when absent

    @property
    def hosts_components(self) -> bool:
        """An inference-component endpoint: its variants name no model (the components do)."""
        return bool(self.variants) and all(variant.model_id is None for variant in self.variants)

    @property
    def variant_names(self) -> tuple[str, ...]:
        return tuple(variant.name for variant in self.variants)

    def variant(self, name: str) -> Variant | None:
        return next((variant for variant in self.variants if variant.name == name), None)

    @property
    def guardrail(self) -> str | None:
        """'blue/green' or 'rolling' when the update runs under deployment guardrails."""
        config = self.deployment_config or {}
        if "RollingUpdatePolicy" in config:
            return "rolling"
        if "BlueGreenUpdatePolicy" in config:
            return "blue/green"
        return None


@dataclass(frozen=True)
class Component:
    """An AWS::SageMaker::InferenceComponent: one model placed on an endpoint's variant."""

    logical_id: str
    name: str | None  # InferenceComponentName; None when generated or not resolvable
    endpoint_name: str | None
    variant: str | None
    model_id: str | None  # logical id of the AWS::SageMaker::Model in its Specification, if referenced
    copy_count: Any  # RuntimeConfig.CopyCount as written (a number, or an intrinsic function); None if absent
    deployment_config: Mapping[str, Any] | None
    properties: Mapping[str, Any]  # all of them, to tell whether CloudFormation updates the component

    @property
    def rolling_update_policy(self) -> Mapping[str, Any] | None:
        return (self.deployment_config or {}).get("RollingUpdatePolicy") or None

    @property
    def placement_strategy(self) -> Any:
        """Specification.SchedulingConfig.PlacementStrategy as written; None when the template states none."""
        specification = self.properties.get("Specification")
        scheduling = specification.get("SchedulingConfig") if isinstance(specification, Mapping) else None
        return scheduling.get("PlacementStrategy") if isinstance(scheduling, Mapping) else None


@dataclass(frozen=True)
class CopyCountTarget:
    """A component's copy count registered with Application Auto Scaling."""

    logical_id: str
    component: str  # the InferenceComponentName in its ResourceId
    min_capacity: Any  # as written
    max_capacity: Any


@dataclass(frozen=True)
class LogGroup:
    logical_id: str
    name: str
    retained: bool  # DeletionPolicy Retain: the group outlives its resource


class StackTemplate:
    """One parsed template; ``source`` names where it came from, for messages."""

    def __init__(self, body: Mapping[str, Any], *, source: str) -> None:
        resources = body.get("Resources")
        if not isinstance(resources, Mapping):
            raise TemplateError(f"{source} is not a CloudFormation template: it has no Resources section")
        self.source = source
        self.body = body
        self.resources: dict[str, Mapping[str, Any]] = {
            logical_id: resource for logical_id, resource in resources.items() if isinstance(resource, Mapping)
        }
        self._stack = AssemblyStack(source, source, Path(source), body)

    @classmethod
    def empty(cls, *, source: str) -> StackTemplate:
        """What a stack that does not exist yet holds."""
        return cls({"Resources": {}}, source=source)

    def of_type(self, resource_type: str) -> dict[str, Mapping[str, Any]]:
        return {lid: res for lid, res in self.resources.items() if res.get("Type") == resource_type}

    def properties(self, logical_id: str) -> Mapping[str, Any]:
        return self.resources.get(logical_id, {}).get("Properties") or {}

    # --- intrinsic functions: the one resolver, in its concrete mode (peagle/cloud_assembly/modes.py) -------------

    def resolve(
        self,
        value: Any,
        pseudo: Mapping[str, str] | None = None,
        *,
        unresolved: Callable[[str], str | None] = lambda name: None,
    ) -> str | None:
        """The string ``value`` stands for, or None. ``pseudo`` gives AWS::* values;
        ``unresolved(name)`` may stand in for anything else (``render`` uses placeholders)."""
        resolver = Resolver([self._stack], ConcreteMode(pseudo or {}, unresolved))
        return resolver.resolve(self._stack, value)

    def fixed(self, value: Any) -> str | None:
        """The string ``value`` stands for when the template itself fixes it, or None when CloudFormation or another
        resource decides it (a generated name, an attribute, a parameter). Pseudo parameters that are the same on
        every update of one stack stay as placeholders (``${AWS::Region}``), so two templates of the same stack
        compare equal where the deployed values would."""
        return self.resolve(value, unresolved=lambda name: "${" + name + "}" if name in STACK_CONSTANTS else None)

    def render(self, value: Any) -> str:
        """``value`` for a message: what cannot be resolved here shows as ${Name}."""
        rendered = self.resolve(value, unresolved=lambda name: "${" + name + "}")
        return rendered if rendered is not None else json.dumps(value, sort_keys=True)

    # --- what the rules ask ----------------------------------------------------------

    def endpoints(self) -> list[Endpoint]:
        endpoints = []
        for logical_id, resource in self.of_type(ENDPOINT).items():
            props = resource.get("Properties") or {}
            config = self.properties(self._referenced(props.get("EndpointConfigName"), ENDPOINT_CONFIG) or "")
            variants = tuple(
                Variant(
                    name=str(variant.get("VariantName")),
                    instance_type=variant.get("InstanceType"),
                    model_id=self._referenced(variant.get("ModelName"), MODEL),
                    routing=variant.get("RoutingConfig"),
                    managed_scaling=variant.get("ManagedInstanceScaling"),
                    capacity={key: variant[key] for key in CAPACITY_KEYS if key in variant},
                )
                for variant in config.get("ProductionVariants") or []
                if isinstance(variant, Mapping)
            )
            endpoints.append(
                Endpoint(
                    logical_id=logical_id,
                    name=self.resolve(props.get("EndpointName")) if "EndpointName" in props else None,
                    variants=variants,
                    deployment_config=props.get("DeploymentConfig") or None,
                    retain_deployment_config=props.get("RetainDeploymentConfig") in (True, "true", "True"),
                    asynchronous=bool(config.get("AsyncInferenceConfig")),
                    metrics_config=config.get("MetricsConfig"),
                )
            )
        return endpoints

    def unit_titles(self) -> dict[str, str]:
        """The title of each serving unit the template's endpoints record, by its name in the template
        (peagle.cloud_assembly.endpoint_stacks.unit_titles); {} when none records a plan (peagle/planning/plan_record.py)."""
        from peagle.cloud_assembly.endpoint_stacks import unit_titles
        from peagle.planning.plan_record import read_records

        return unit_titles(read_records(self.body, source=self.source))

    def autoscaled_variants(self) -> set[tuple[str, str]]:
        """(endpoint name, variant name) of every variant registered as a scalable target."""
        registered = set()
        for resource in self.of_type(SCALABLE_TARGET).values():
            props = resource.get("Properties") or {}
            if props.get("ServiceNamespace") != "sagemaker" or props.get("ScalableDimension") != VARIANT_INSTANCE_COUNT:
                continue
            match = _VARIANT_RESOURCE_ID.match(self.resolve(props.get("ResourceId")) or "")
            if match:
                registered.add((match["endpoint"], match["variant"]))
        return registered

    def components(self) -> list[Component]:
        components = []
        for logical_id, resource in self.of_type(INFERENCE_COMPONENT).items():
            props = resource.get("Properties") or {}
            specification = props.get("Specification") or {}
            components.append(
                Component(
                    logical_id=logical_id,
                    name=self.resolve(props.get("InferenceComponentName"))
                    if "InferenceComponentName" in props
                    else None,
                    endpoint_name=self.resolve(props.get("EndpointName")),
                    variant=self.resolve(props.get("VariantName")),
                    model_id=self._referenced(specification.get("ModelName"), MODEL),
                    copy_count=(props.get("RuntimeConfig") or {}).get("CopyCount"),
                    deployment_config=props.get("DeploymentConfig") or None,
                    properties=props,
                )
            )
        return components

    def copy_count_targets(self) -> dict[str, CopyCountTarget]:
        """Component name -> its copy count's scalable target."""
        targets = {}
        for logical_id, resource in self.of_type(SCALABLE_TARGET).items():
            props = resource.get("Properties") or {}
            if props.get("ServiceNamespace") != "sagemaker" or props.get("ScalableDimension") != COMPONENT_COPY_COUNT:
                continue
            match = _COMPONENT_RESOURCE_ID.match(self.resolve(props.get("ResourceId")) or "")
            if match:
                targets[match["component"]] = CopyCountTarget(
                    logical_id, match["component"], props.get("MinCapacity"), props.get("MaxCapacity")
                )
        return targets

    def named_log_groups(self) -> dict[str, LogGroup]:
        """Log groups with an explicit name, by name."""
        groups = {}
        for logical_id, resource in self.of_type(LOG_GROUP).items():
            name = self.resolve((resource.get("Properties") or {}).get("LogGroupName"))
            if name:
                groups[name] = LogGroup(logical_id, name, retained=resource.get("DeletionPolicy") == "Retain")
        return groups

    def image_sources(self) -> dict[str, str]:
        """Model logical id -> where its image comes from: in_account (tagged by an in-account build, one of
        IMAGE_BUILDS), local_docker (the CDK bootstrap's container-assets repository, built and
        pushed by the CLI's Docker) or repository (an image named otherwise)."""
        builds = {logical_id for kind in IMAGE_BUILDS for logical_id in self.of_type(kind)}
        sources = {}
        for logical_id, resource in self.of_type(MODEL).items():
            image = ((resource.get("Properties") or {}).get("PrimaryContainer") or {}).get("Image")
            text = json.dumps(image, sort_keys=True)
            if any(f'"{build}"' in text for build in builds):
                sources[logical_id] = "in_account"
            elif "container-assets" in text:
                sources[logical_id] = "local_docker"
            elif image is not None:
                sources[logical_id] = "repository"
        return sources

    def weights_uris(self) -> dict[str, Any]:
        """Model logical id -> its ModelDataSource S3Uri (template value), for Models reading S3 prefixes."""
        uris = {}
        for logical_id, resource in self.of_type(MODEL).items():
            container = (resource.get("Properties") or {}).get("PrimaryContainer") or {}
            uri = ((container.get("ModelDataSource") or {}).get("S3DataSource") or {}).get("S3Uri")
            if uri is not None:
                uris[logical_id] = uri
        return uris

    def _referenced(self, value: Any, resource_type: str) -> str | None:
        """The logical id of the ``resource_type`` resource ``value`` points at (GetAtt, Ref or its literal name)."""
        if isinstance(value, Mapping) and len(value) == 1:
            ((function, argument),) = value.items()
            logical_id = argument if function == "Ref" else _get_att(argument)[0] if function == "Fn::GetAtt" else None
            if logical_id in self.of_type(resource_type):
                return logical_id
            return None
        if isinstance(value, str):  # a literal physical name: the resource that sets it
            name_property = resource_type.rsplit("::", 1)[1] + "Name"
            for logical_id, resource in self.of_type(resource_type).items():
                if (resource.get("Properties") or {}).get(name_property) == value:
                    return logical_id
        return None


def at_pointer(properties: Mapping[str, Any], pointer: str) -> Any:
    """The value a resource schema's JSON pointer (``/properties/A/B``) selects in a resource's Properties; None
    when it is absent. Pointers into arrays (``/*/``) are not followed: the value is None."""
    parts = pointer.split("/")
    if parts[:2] != ["", "properties"] or len(parts) < 3:
        raise ValueError(f"{pointer!r} is not a /properties/... pointer")
    value: Any = properties
    for part in parts[2:]:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part.replace("~1", "/").replace("~0", "~"))
    return value


def canonical(value: Any) -> str:
    """A template value as comparable text (equal values, equal text)."""
    return json.dumps(value, sort_keys=True)


def _get_att(argument: Any) -> tuple[str | None, str | None]:
    if isinstance(argument, str) and "." in argument:
        logical_id, attribute = argument.split(".", 1)
        return logical_id, attribute
    if isinstance(argument, list) and len(argument) == 2 and all(isinstance(part, str) for part in argument):
        return argument[0], argument[1]
    return None, None


# --- loading ---------------------------------------------------------------------------


class _TemplateLoader(yaml.SafeLoader):
    """YAML templates may use CloudFormation's short forms (!Ref, !GetAtt, !Join, !Sub ...)."""


def _short_form(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node) -> dict:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    elif isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
    else:
        raise yaml.constructor.ConstructorError(None, None, f"unexpected node for !{tag_suffix}", node.start_mark)
    if tag_suffix == "Ref":
        return {"Ref": value}
    if tag_suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{tag_suffix}": value}


_TemplateLoader.add_multi_constructor("!", _short_form)


def parse_template(body: Mapping[str, Any] | str | bytes, *, source: str) -> StackTemplate:
    """A template given as parsed JSON (what botocore hands back for JSON bodies) or as text."""
    if isinstance(body, (str, bytes)):
        text = body.decode("utf-8") if isinstance(body, bytes) else body
        try:
            body = json.loads(text)
        except ValueError:
            try:
                body = yaml.load(text, Loader=_TemplateLoader)  # noqa: S506 - a SafeLoader subclass
            except yaml.YAMLError as error:
                raise TemplateError(f"{source} is neither JSON nor YAML: {error}") from None
    if not isinstance(body, Mapping):
        raise TemplateError(f"{source} is not a CloudFormation template (expected a mapping at the top)")
    return StackTemplate(body, source=source)


def load_template_file(path: str | Path) -> StackTemplate:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise TemplateError(f"cannot read template {path}: {error.strerror or error}") from None
    return parse_template(text, source=str(path))
