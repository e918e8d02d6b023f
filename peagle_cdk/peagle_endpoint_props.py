"""PeagleEndpoint's props, declared once: each prop's name, the type its signature writes, its default, how a
wrong type is refused and what it is. Derived from this table: the props that build the settings model
(``SETTINGS_PROPS``), the type check where the props enter (``check_prop_types``), and the reference table in
docs/library.md (peagle/reference_docs.py). The deployment file's key of a prop is not written here: it is the
settings field whose prop spelling names the prop (peagle/settings/refs.py, ``spelled``).

``PeagleEndpoint.__init__`` keeps its keyword arguments written out, for users' IDEs;
tests/constructs/test_props_declared_once.py fails when its names, annotations, defaults or docstring's
``:param`` list differ from this table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, get_args

from aws_cdk import Duration
from aws_cdk import aws_ec2 as ec2
from pydantic import BaseModel

from peagle.catalog import InstanceType, ModelPair
from peagle_cdk import prop_types
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
from peagle_cdk.settings_model import DEFAULTS, DeploymentConfig, ProfileOverridesSection, SloSection

Check = Callable[[str, str, Any], None]  # (owner, prop, value): raises the TypeError of a wrong type
REQUIRED = object()


def _whole(owner: str, name: str, value: Any) -> None:
    prop_types.check_number(owner, name, value, whole=True)


def _number(owner: str, name: str, value: Any) -> None:
    prop_types.check_number(owner, name, value)


def _instance(expected: type | tuple[type, ...], described: str) -> Check:
    def check(owner: str, name: str, value: Any) -> None:
        prop_types.check_instance(owner, name, value, expected, described)

    return check


def _duration(example: str) -> Check:
    def check(owner: str, name: str, value: Any) -> None:
        prop_types.check_duration(owner, name, value, example)

    return check


def _interface(interface: str, *, many: bool = False) -> Check:
    def check(owner: str, name: str, value: Any) -> None:
        (prop_types.check_interfaces if many else prop_types.check_interface)(owner, name, value, interface)

    return check


def _required(check: Check, described: str) -> Check:
    def check_required(owner: str, name: str, value: Any) -> None:
        if value is None:
            raise TypeError(prop_types.refused(owner, name, value, described))
        check(owner, name, value)

    return check_required


_TEXT = _instance(str, prop_types.TEXT)
_BOOLEAN = _instance(bool, prop_types.BOOLEAN)


@dataclass(frozen=True)
class Prop:
    name: str
    annotation: str  # as PeagleEndpoint.__init__ writes it
    check: Check
    default: Any  # REQUIRED, or the signature's default
    doc: str  # what it is (the reference's words)
    default_words: str | None = None  # the reference's default, where the value's repr does not say it
    file_key: str | None = None  # the deployment file's key, for a prop whose field has no prop spelling


_OBSERVABILITY = DEFAULTS.observability
_WEIGHTS = "ModelWeights.from_bucket(bucket, prefix) or ModelWeights.from_hub()"
_IMAGE = (
    "ServingImage.build_in_account(...), ServingImage.from_asset() or ServingImage.from_ecr_repository(repository, tag)"
)

PROPS: tuple[Prop, ...] = (
    Prop("weights", "ModelWeights", _required(_instance(ModelWeights, _WEIGHTS), _WEIGHTS), REQUIRED,
         "where `target/` and `drafter/` come from (`ModelWeights.from_bucket(bucket, prefix)` or `from_hub()`); "
         "the role may read that prefix only", default_words="required"),
    Prop("model", "str", _TEXT, DEFAULTS.model,
         "a catalog pair id (`peagle catalog`, [catalog.md](catalog.md)), or the id of `custom_pair`"),
    Prop("custom_pair", "ModelPair | None", _instance(ModelPair, "a peagle_cdk.ModelPair"), None,
         "a pair the catalog lacks (target, drafter, facts: the fields of `pairs.yaml`)"),
    Prop("instance_type", "str", _TEXT, DEFAULTS.instance.type,
         "a SageMaker instance type; the catalog gives its GPU facts, or `instance_facts`"),
    Prop("instance_facts", "InstanceType | None", _instance(InstanceType, "a peagle_cdk.InstanceType"), None,
         "the GPU and host facts of a type the catalog lacks"),
    Prop("instance_count", "int", _whole, DEFAULTS.instance.count, "initial instances"),
    Prop("price_per_hour_usd", "float | None", _number, None,
         "on-demand USD per instance-hour (a savings plan, another region) for the plan's cost and "
         "`EndpointMonitoring`'s cost widgets and cost alarm", default_words="the catalog's (or `instance_facts`') price"),
    Prop("inference_ami_version", "str | None", _TEXT, None, "the GPU host (NVIDIA driver)",
         default_words="the one the image needs"),
    Prop("fallback_instance_types", "Sequence[str] | None", _instance((list, tuple), "a list of instance types"),
         None, "instance types SageMaker falls back to, in priority order, when `instance_type` has no capacity (an "
         "instance pool, at most 4 besides it; each planned as its own type) "
         "([deployment.md](deployment.md#instance-pools-and-reservations))", default_words="none: one type"),
    Prop("instance_provision_timeout", "Duration | None", _duration("Duration.minutes(10)"), None,
         "how long SageMaker tries to get capacity across the pool's types (5-60 minutes, whole seconds)",
         default_words="10 minutes with `fallback_instance_types`, else SageMaker's"),
    Prop("ml_reservation_arn", "str | None", _TEXT, None,
         "an ML capacity reservation to launch into, and only into (one instance type: not with "
         "`fallback_instance_types`)", default_words="none: on-demand capacity"),
    Prop("profile", "str", _TEXT, DEFAULTS.profile.value, "`chatbot`, `codegen` or `batch`: sampling, lengths, SLO"),
    Prop("profile_overrides", "ProfileOverrides | None", _instance(ProfileOverridesSection, "a peagle_cdk.ProfileOverrides"),
         None, "single fields of the profile changed"),
    Prop("slo", "SloSettings | None", _instance(SloSection, "a peagle_cdk.SloSettings"), None,
         "single fields of the profile's SLO changed"),
    Prop("speculation", "Speculation | None",
         _instance(Speculation, "Speculation.fixed(k), Speculation.off() or Speculation.recommended()"), None,
         "K, the draft tokens per step (`Speculation` below)", default_words="`Speculation.recommended()`"),
    Prop("mode", "EndpointMode | None",
         _instance(EndpointMode, "EndpointMode.variants() or EndpointMode.inference_components(...)"), None,
         "production variants or inference components (`EndpointMode` below)",
         default_words="`EndpointMode.variants()`"),
    Prop("autoscaling", "Autoscaling | None", _instance(Autoscaling, "Autoscaling(...) or None (fixed capacity)"),
         Autoscaling(), "the serving units' scaling, the same words in both modes (`Autoscaling` below); `None`: "
         "fixed capacity", default_words="`Autoscaling()`"),
    Prop("rollout", "Rollout | None",
         _instance(Rollout, "Rollout.blue_green(...), Rollout.rolling(...) or Rollout.none()"), None,
         "how updates roll out ([rollouts.md](rollouts.md))",
         default_words="blue/green for variants, rolling for components"),
    Prop("ab_baseline", "AbBaseline | None", _instance(AbBaseline, "AbBaseline(...)"), None,
         "a second variant (or component) of the same target with another K, for A/B "
         "([speculation.md](speculation.md#ab-does-speculation-pay-on-your-traffic))"),
    Prop("capture", "DataCapture | None", _instance(DataCapture, "DataCapture(...) or None (no capture)"), None,
         "a sample of the requests for `peagle prompts` (`DataCapture` below): SageMaker Data Capture into a private "
         "bucket of the endpoint's own (variants mode only), or the container's request log in the endpoint's log "
         "group (either mode); turning it on rolls the endpoint "
         "([production-loop.md](production-loop.md#1-capture-opt-in))", default_words="`None` (off)"),
    Prop("routing", "Routing | None",
         _instance(Routing, "Routing.least_outstanding_requests(), Routing.random(), Routing.prefix_aware(...) or None"),
         None, "how SageMaker spreads requests over the instances (either mode; `Routing` below); changing it "
         "replaces the endpoint config ([routing.md](routing.md))",
         default_words="`Routing.least_outstanding_requests()`"),
    Prop("image", "ServingImage | None", _instance(ServingImage, _IMAGE), None,
         "the serving image, built in CodeBuild during `cdk deploy` with no Docker on your machine; "
         "`ServingImage.from_asset()`: your Docker builds and pushes it",
         default_words="`ServingImage.build_in_account()`, the file's default (`image.build: in_account`)",
         file_key="image"),
    Prop("name", "str | None", _TEXT, None,
         "lower-case prefix of the physical names (`<name>-endpoint`, `<name>-primary`); pass it to pin the names: "
         "changing it replaces the endpoint",
         default_words="the stack's and the construct's ids and a hash of its path, within 24 characters "
         "(`chatservice-chat-3f2a91bc`)"),
    Prop("endpoint_name", "str | None", _TEXT, None,
         "the endpoint's name; a physical name, so its log group and metric filters exist before it logs; changing "
         "it replaces the endpoint", default_words="`<name>-endpoint`"),
    Prop("role", "iam.IRole | None", _interface("IRole"), None,
         "your own execution role (trusting `sagemaker.amazonaws.com`)", default_words="a new one"),
    Prop("vpc", "ec2.IVpc | None", _interface("IVpc"), None,
         "run the model in your VPC; the role gets the ENI permissions SageMaker needs. Isolated subnets need VPC "
         "endpoints: an S3 gateway endpoint and the interface endpoints in `peagle_cdk.INTERFACE_ENDPOINTS` (ECR API "
         "and Docker, CloudWatch Logs and metrics, STS); `PrivateNetwork(scope, id)` makes such a VPC, and `cdk "
         "synth` warns of those the VPC lacks", default_words="SageMaker's managed network", file_key="network.vpc"),
    Prop("vpc_subnets", "ec2.SubnetSelection | None", _instance(ec2.SubnetSelection, "an ec2.SubnetSelection"), None,
         "the model's subnets (at most 16), never public ones",
         default_words="with `vpc`: its private subnets with egress, else its isolated ones"),
    Prop("security_groups", "Sequence[ec2.ISecurityGroup] | None", _interface("ISecurityGroup", many=True), None,
         "the model's security groups (at most 5)",
         default_words="with `vpc`: a new one without ingress, HTTPS out only (`security_group`), as "
         "`@aws-cdk/aws-sagemaker-alpha`'s `Model` makes one"),
    Prop("network_isolation", "bool", _BOOLEAN, DEFAULTS.network.isolation,
         "no network or AWS credentials in the container"),
    Prop("container_startup_timeout", "Duration | None", _duration("Duration.minutes(20)"), None,
         "the container's start-up budget", default_words="sized from the weights"),
    Prop("model_download_timeout", "Duration | None", _duration("Duration.minutes(20)"), None,
         "the weights' download budget", default_words="sized from the weights"),
    Prop("latency_sla", "Duration | None", _duration("Duration.seconds(10)"), None,
         "the p90 ModelLatency the latency alarm and step scaling act on", default_words="the profile's"),
    Prop("volume_key", "kms.IKey | None", _interface("IKey"), None, "KMS key of the ML storage volume",
         default_words="a new key, or none on types with local NVMe storage (where a key does not encrypt it)"),
    Prop("log_retention_days", "int", _whole, _OBSERVABILITY.log_retention_days,
         "how long the endpoint's logs are kept ([observability.md](observability.md))"),
    Prop("kpi_interval", "Duration", _duration("Duration.minutes(1)"),
         Duration.seconds(_OBSERVABILITY.kpi_interval_seconds), "how often the launcher's KPIs are published"),
    Prop("metric_publish_frequency", "Duration", _duration("Duration.minutes(1)"),
         Duration.seconds(_OBSERVABILITY.metric_publish_frequency_seconds),
         "how often SageMaker publishes the endpoint's metrics: 10 s, 30 s or 1 minute"),
    Prop("detailed_observability", "bool", _BOOLEAN, _OBSERVABILITY.detailed_observability,
         "SageMaker's per-GPU, per-instance and container metrics"),
    Prop("vllm_args", "Mapping[str, bool | int | float | str] | None",
         _instance(Mapping, "a mapping of vLLM option names to values"), None, "extra vLLM flags, passed through"),
)  # fmt: skip

# The props passed to the settings model apart, with defaults made per endpoint (peagle_cdk/endpoint_config.py).
_APART = ("mode", "name", "speculation")


def check_prop_types(owner: str, props: Mapping[str, Any]) -> None:
    """Each prop's type, named in the TypeError (peagle_cdk/prop_types.py)."""
    for prop in PROPS:
        prop.check(owner, prop.name, props[prop.name])


@cache
def file_keys() -> dict[str, str]:
    """Prop -> the deployment file's key that holds it: the settings field whose prop spelling is the prop
    (``instance.count`` is ``spelled("instance_count")``; ``endpoint.routing`` ``spelled("routing=...")``)."""
    found: dict[str, str] = {}

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, info in model.model_fields.items():
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            spelled = str(extra.get("prop") or "")
            prop = spelled.split("=", 1)[0]
            if prop.isidentifier() and (spelled == prop or spelled.startswith(f"{prop}=")):
                found.setdefault(prop, prefix + name)
            inner = _model_in(info.annotation)
            if inner is not None:
                walk(inner, f"{prefix}{name}.")

    walk(DeploymentConfig, "")
    return {prop.name: found[prop.name] for prop in PROPS if prop.name in found}


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The section a field holds (itself, optional, or in a list or dict), else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((model for argument in get_args(annotation) if (model := _model_in(argument))), None)


def settings_props() -> tuple[str, ...]:
    """The props that become the settings model besides those passed apart: each one a settings field spells."""
    keys = file_keys()
    return tuple(prop.name for prop in PROPS if prop.name in keys and prop.name not in _APART)


def file_key(prop: Prop) -> str | None:
    return file_keys().get(prop.name) or prop.file_key
