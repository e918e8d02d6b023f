"""docs/library.md's reference tables, as rows, from what they describe (peagle/reference_docs.py renders them and
tests/infra/test_reference_docs.py fails when the page differs): PeagleEndpoint's props from their declaration
(peagle_cdk/peagle_endpoint_props.py), the value types' factories from their signatures, so an argument added to a
value type (or a field added to the section ``EndpointMode.inference_components(**settings)`` takes) is on the page.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from enum import Enum
from typing import Any

from aws_cdk import Duration

from peagle_cdk.endpoint_props import (
    AbBaseline,
    Autoscaling,
    DataCapture,
    EndpointMode,
    ModelWeights,
    Rollout,
    Routing,
    ScheduledCapacity,
    ServingImage,
    Speculation,
)
from peagle_cdk.peagle_endpoint_props import PROPS, REQUIRED, file_key
from peagle_cdk.serving_image_build import BaseImage
from peagle_cdk.settings_model import InferenceComponentSettings

_DEPRECATED = {"safety_factor"}  # Autoscaling's old name of headroom: accepted, not shown


def props_rows() -> list[list[str]]:
    """prop | type | default | what it is | deployment file."""
    return [
        [f"`{prop.name}`", f"`{prop.annotation}`", _default(prop), prop.doc, _code(file_key(prop))] for prop in PROPS
    ]


def _default(prop: Any) -> str:
    if prop.default_words is not None:
        return prop.default_words
    return "required" if prop.default is REQUIRED else f"`{_value(prop.default)}`"


def _code(text: str | None) -> str:
    return f"`{text}`" if text else ""


def _value(value: Any) -> str:
    """A default as a user writes it: strings quoted, Durations in words."""
    if isinstance(value, Duration):
        milliseconds = int(value.to_milliseconds())
        for unit, per in (("days", 86_400_000), ("hours", 3_600_000), ("minutes", 60_000), ("seconds", 1000)):
            if milliseconds % per == 0:
                return f"Duration.{unit}({milliseconds // per})"
        return f"Duration.millis({milliseconds})"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, Autoscaling) and value == Autoscaling():
        return "Autoscaling()"
    return repr(value)


def signature(make: Callable[..., Any], name: str) -> str:
    """``name(argument=default, ...)`` of a factory or constructor; ``**settings`` spelled as the fields of the section
    it takes by name (``EndpointMode.inference_components``)."""
    shown = []
    for parameter in inspect.signature(make).parameters.values():
        if parameter.name in _DEPRECATED:
            continue
        if parameter.kind is parameter.VAR_KEYWORD:
            shown += _section_fields(make, {p for p in inspect.signature(make).parameters})
        elif parameter.default is parameter.empty:
            shown.append(parameter.name)
        else:
            shown.append(f"{parameter.name}={_value(parameter.default)}")
    return f"`{name}({', '.join(shown)})`"


def _section_fields(make: Callable[..., Any], named: set[str]) -> list[str]:
    """The fields ``make``'s ``**settings`` takes: the inference-components section's others, by their names."""
    if make is not EndpointMode.inference_components:
        raise ValueError(f"{make.__qualname__} takes **kwargs that the reference cannot name")
    taken = named | {"scale_to_zero_after_idle_minutes"}  # scale_to_zero_after, a Duration
    return [
        f"{field}={_value(info.get_default(call_default_factory=True))}"
        for field, info in InferenceComponentSettings.model_fields.items()
        if field not in taken
    ]


# type -> (its factories, or the class itself; what it chooses: the page's words)
VALUE_TYPES: dict[type, tuple[tuple[str, ...], str]] = {
    ModelWeights: (
        ("from_bucket", "from_location", "from_hub"),
        "an S3 prefix holding `target/` and `drafter/` side by side, as `peagle stage` writes them "
        "([batch-and-stage.md](batch-and-stage.md)), the role decrypting with the bucket's KMS key "
        "(`bucket.encryption_key`) when it has one, or with `key` (it wins: the key of an imported bucket, which CDK "
        "does not know, or another key the objects use); a prefix given by name; or the Hugging Face Hub, downloaded "
        "by the container at start-up (needs network isolation off; the token secret's value never reaches the "
        "template)",
    ),
    ServingImage: (
        ("build_in_account", "from_asset", "from_ecr_repository"),
        "built in CodeBuild in the endpoint's account and region during `cdk deploy` (`base` None: "
        "`BaseImage.docker_hub()`; the context goes up as a small S3 asset; tagged with the hash of the context and "
        "base, built once per stack however many endpoints use it, nothing built on a redeploy or rollback of the "
        "same context; the stack's repository, scanned on push, KMS-encrypted, immutable tags, tagged images kept, "
        "or yours in the same account and region; [deployment.md](deployment.md#the-serving-image-built-in-your-"
        "account)); built and pushed by the CLI's Docker (`directory` None: the `inference_image/` build context "
        "shipped in the package); or one you pushed",
    ),
    BaseImage: (
        ("docker_hub", "pull_through_cache", "existing_pull_through_cache", "mirror", "mirror_uri"),
        "where the in-account build pulls the pinned vLLM base from: Docker Hub; an ECR pull-through cache rule made "
        "with the stack (a secret named `ecr-pullthroughcache/...`; the prefix defaults to one derived from the stack "
        "and the secret, so a new secret is a new rule; one rule per secret per stack); a rule you have; your ECR "
        "copy of the base",
    ),
    Speculation: (
        ("recommended", "fixed", "off", "by_batch_size"),
        "the planner's default K (K by load where modelled, else the pair's recommended K; `peagle plan` says "
        "which); a fixed K; the target alone (K=0); K by batch size, "
        "`[(min_batch, max_batch, k), ...]` ([speculation.md](speculation.md#k-by-batch-size))",
    ),
    Rollout: (
        ("blue_green", "rolling", "none"),
        "blue/green traffic shifting with baking (variants only); instances or copies replaced in batches; "
        "SageMaker's plain update, needed to add or remove a variant ([rollouts.md](rollouts.md))",
    ),
    EndpointMode: (
        ("variants", "inference_components"),
        "one replica per instance, at least one instance running; or inference components, several copies per "
        "instance, copies and instances may scale to zero (`scale_to_zero_after` None: the copy's start budget + 2 "
        "min, the shortest idle window that never removes a copy before it serves; the other keywords are the "
        "deployment file's `endpoint.inference_components` fields; "
        "[inference-components.md](inference-components.md))",
    ),
    Autoscaling: (
        (),
        "instances of the variant, or copies of the component (`min_capacity` 0 scales the component to zero); the "
        "target is `target_concurrency` per unit if given, else `measured_capacity`'s (what `peagle capacity` "
        "measured in flight at the SLO, times its headroom: the `TargetValue` of the tracking policy), else the "
        "planner's stated guess; `max_requests_per_second` tracks invocations instead (variants only); "
        "`scale_on_queue` also tracks vLLM's requests waiting per unit ([scaling.md](scaling.md#scaling-on-the-queue)); "
        "the keywords are the deployment file's `autoscaling` fields ([scaling.md](scaling.md))",
    ),
    ScheduledCapacity: (
        (),
        "capacity bounds by schedule, for `Autoscaling(schedules=...)`: `schedule` an `appscaling.Schedule` or its "
        "expression as a string (`'cron(0 20 * * ? *)'`, `'rate(1 day)'`, `'at(2027-01-04T08:00:00)'`), checked "
        "where it is given against Application Auto Scaling's syntax",
    ),
    Routing: (
        ("least_outstanding_requests", "random", "prefix_aware"),
        "how SageMaker spreads requests over the instances; `prefix_aware` turns prefix caching on and is refused "
        "for a pair that does not allow it ([routing.md](routing.md))",
    ),
    DataCapture: (
        (),
        'a sample of the requests for `peagle prompts`: `method="data_capture"`, SageMaker Data Capture into a '
        'private bucket of the endpoint\'s own (variants mode only); `method="request_log"`, the container logs the '
        "sampled requests to the endpoint's log group, either mode ([production-loop.md](production-loop.md))",
    ),
    AbBaseline: (
        (),
        "the baseline's K, its share of requests (variants; `None`: half) and its fixed instance count",
    ),
}


def value_type_rows() -> list[list[str]]:
    """type | factories | what it chooses. Every value type validates its arguments when it is made: a wrong type
    is a TypeError naming the argument, a value out of bounds a ConfigError in the props' words."""
    rows = []
    for kind, (factories, words) in VALUE_TYPES.items():
        made = [signature(getattr(kind, name), name) for name in factories] or [signature(kind, kind.__name__)]
        rows.append([f"`{kind.__name__}`", "; ".join(made), words])
    return rows
