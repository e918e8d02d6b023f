"""The value types of PeagleEndpoint's props, in CDK's conventions: static factories
(``ModelWeights.from_bucket``, ``ServingImage.from_asset``, ``Rollout.blue_green``), CDK types
(``s3.IBucket``, ``ecr.IRepository``, ``Duration``) and a ``bind()`` that grants what it needs, as
@aws-cdk/aws-sagemaker-alpha's ``ModelData.fromBucket`` and ``ContainerImage.fromAsset`` do.

Each type builds its section of the one settings model (``settings()``: peagle.settings'
SpeculationSettings, RolloutSettings, AutoscalingSettings, ...) itself, with no file-shaped dict in
between: PeagleEndpoint plans those sections through the same rules as `cdk synth` of the YAML app, and
a rule's message names the prop (peagle/settings/words.py).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from aws_cdk import Duration, TimeZone
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from peagle.settings.errors import ConfigError
from peagle_cdk import prop_types
from peagle_cdk.model_artifacts import ModelArtifactsLocation
from peagle_cdk.serving_image_build import BaseImage, build_in_account
from peagle_cdk.settings_model import (
    DEFAULTS,
    AbTestSettings,
    ArtifactsSettings,
    AutoscalingSettings,
    BlueGreenSettings,
    CaptureSettings,
    EndpointSettings,
    InferenceComponentSettings,
    MeasuredCapacity,
    MeasuredCapacitySection,
    RollingSettings,
    RolloutSettings,
    RoutingSettings,
    ScheduledScaling,
    SpeculationBand,
    SpeculationSettings,
    build,
    whole,
)

# The deployment file's defaults are the value types' (one set of numbers, peagle_cdk/settings_model.py).
_AUTOSCALING, _BLUE_GREEN, _ROLLING = DEFAULTS.autoscaling, DEFAULTS.rollout.blue_green, DEFAULTS.rollout.rolling
_COMPONENTS, _AB_TEST = DEFAULTS.endpoint.inference_components, DEFAULTS.ab_test
_CAPTURE = DEFAULTS.capture

# The serving image's build context: inference_image/, linked into this package as serving_image/ and
# shipped in the wheel as package data, so an installed library builds the same image.
INFERENCE_IMAGE_DIR = (Path(__file__).resolve().parent / "serving_image").resolve()


def _check_durations(owner: str, **durations: Any) -> None:
    for name, value in durations.items():
        prop_types.check_duration(owner, name, value, "Duration.minutes(10)")


# --- weights -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelWeights:
    """Where target/ and drafter/ come from: an S3 prefix (mounted at /opt/ml/model) or the Hugging
    Face Hub (downloaded by the container at start-up; needs network isolation off)."""

    location: ModelArtifactsLocation | None
    hub_token_secret_arn: str | None = None

    def __post_init__(self) -> None:
        self.settings()  # validated when made, as every value type (the module's docstring)

    @staticmethod
    def from_bucket(bucket: s3.IBucket, prefix: str, *, key: kms.IKey | None = None) -> ModelWeights:
        """``prefix`` (ending in '/') holds target/ and drafter/ side by side, as `peagle stage` writes
        them. The endpoint's role may read that prefix only, and decrypt with the bucket's KMS key
        (``bucket.encryption_key``) when it has one. ``key``: the KMS key the objects are encrypted with
        when it is not the bucket's (an imported bucket, or objects written with another key); it wins
        over the bucket's."""
        prop_types.check_interface("ModelWeights.from_bucket", "bucket", bucket, "IBucket")
        prop_types.check_instance("ModelWeights.from_bucket", "prefix", prefix, str, "a string ending in '/'")
        prop_types.check_interface("ModelWeights.from_bucket", "key", key, "IKey")
        # "To download, an object encrypted with an AWS KMS key, you need kms:Decrypt permissions" (Amazon S3
        # User Guide, "Protecting data using server-side encryption with AWS KMS keys (SSE-KMS)",
        # https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingKMSEncryption.html): a bucket encrypted
        # with a key of its own needs that key's grant as much as one given here.
        key = key or bucket.encryption_key
        return ModelWeights(ModelArtifactsLocation(bucket_name=bucket.bucket_name, prefix=prefix, key=key))

    @staticmethod
    def from_location(location: ModelArtifactsLocation) -> ModelWeights:
        """A prefix given by name (a bucket outside this app), e.g. ``ModelArtifactsLocation.from_s3_uri``."""
        return ModelWeights(location)

    @staticmethod
    def from_hub(*, token_secret_arn: str | None = None) -> ModelWeights:
        """The container downloads the pair's Hub ids; ``token_secret_arn``: a Secrets Manager secret holding
        a Hugging Face token for gated repositories (the role may read it; its value never reaches the
        template)."""
        return ModelWeights(None, hub_token_secret_arn=token_secret_arn)

    def settings(self) -> ArtifactsSettings:
        if self.location is None:
            return build(
                ArtifactsSettings,
                owner="ModelWeights.from_hub",
                path="artifacts",
                source="hub",
                hf_token_secret_arn=self.hub_token_secret_arn,
            )
        return ArtifactsSettings(source="s3")


# --- image -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BoundImage:
    image_uri: str
    repository: ecr.IRepository


class ServingImage:
    """The serving container: the launcher over the pinned vLLM (inference_image/)."""

    def __init__(
        self,
        *,
        directory: Path | None = None,
        repository: ecr.IRepository | None = None,
        tag: str = "",
        build_in_account: bool = False,
        base: BaseImage | None = None,
    ):
        self._directory, self._repository, self._tag = directory, repository, tag
        self._in_account, self._base = build_in_account, base

    @staticmethod
    def build_in_account(
        *, base: BaseImage | None = None, repository: ecr.IRepository | None = None, directory: str | Path | None = None
    ) -> ServingImage:
        """Built during `cdk deploy` in CodeBuild, in the endpoint's account and region: `cdk deploy` needs no
        Docker and uploads only the build context (peagle_cdk/serving_image_build.py). ``base``: where the build
        pulls the pinned vLLM base (default ``BaseImage.docker_hub()``, anonymously; ``pull_through_cache`` or
        ``mirror`` avoid Docker Hub's limits). ``repository``: where the image goes (default: the stack's image
        repository, scanned on push, KMS-encrypted, immutable tags, tagged images kept), in the endpoint's account
        and region. The image is tagged with the hash of its context and base: the same context is built once per
        stack however many endpoints use it, and a redeploy or a rollback of an unchanged context builds nothing.
        ``directory``: a build context of your own (default: the one shipped in this package)."""
        prop_types.check_instance("ServingImage.build_in_account", "base", base, BaseImage, "a BaseImage")
        prop_types.check_interface("ServingImage.build_in_account", "repository", repository, "IRepository")
        return ServingImage(
            directory=Path(directory) if directory else INFERENCE_IMAGE_DIR,
            repository=repository,
            build_in_account=True,
            base=base or BaseImage.docker_hub(),
        )

    @staticmethod
    def from_asset(directory: str | Path | None = None) -> ServingImage:
        """Build the image from its build context at deploy time (`cdk deploy` builds and pushes it;
        default: the context shipped in this package)."""
        return ServingImage(directory=Path(directory) if directory else INFERENCE_IMAGE_DIR)

    @staticmethod
    def from_ecr_repository(repository: ecr.IRepository, tag: str = "latest") -> ServingImage:
        """An image you built and pushed from inference_image/ (same launcher, same vLLM pin)."""
        return ServingImage(repository=repository, tag=tag)

    @staticmethod
    def from_settings(settings) -> ServingImage:
        """The deployment file's image section (peagle.settings.ImageSettings)."""
        if settings.build == "local_docker":
            return ServingImage.from_asset()
        return ServingImage.build_in_account(base=BaseImage.from_settings(settings))

    @property
    def source(self) -> str:
        """in_account, local_docker or repository (an image you pushed)."""
        return "in_account" if self._in_account else "repository" if self._repository is not None else "local_docker"

    def bind(self, scope: Construct) -> BoundImage:
        """The image for one endpoint: an asset becomes the child "ServingImage" of ``scope``; an in-account build
        is the stack's (peagle_cdk/serving_image_build.py ServingImageBuilds), shared by the endpoints that use it."""
        if self._in_account:
            directory, base = self._directory or INFERENCE_IMAGE_DIR, self._base or BaseImage.docker_hub()
            built = build_in_account(scope, directory=directory, base=base, repository=self._repository)
            return BoundImage(built.image_uri, built.repository)
        if self._repository is not None:
            return BoundImage(self._repository.repository_uri_for_tag(self._tag), self._repository)
        asset = ecr_assets.DockerImageAsset(
            Construct(scope, "ServingImage"),
            "Image",
            directory=str(self._directory),
            platform=ecr_assets.Platform.LINUX_AMD64,
        )
        return BoundImage(asset.image_uri, asset.repository)


# --- speculation -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Speculation:
    """How many tokens the P-EAGLE drafter proposes per step (K)."""

    speculative_tokens: int | None = None
    schedule: tuple[tuple[int, int, int], ...] | None = None

    def __post_init__(self) -> None:
        self.settings()

    @staticmethod
    def recommended() -> Speculation:
        """The planner's default K: K by load from its roofline where the GPU and pair have the figures, else the
        pair's recommended K for the profile (peagle/catalog/pairs.yaml); `peagle plan` prints which and why."""
        return Speculation()

    @staticmethod
    def fixed(speculative_tokens: int) -> Speculation:
        return Speculation(speculative_tokens=speculative_tokens)

    @staticmethod
    def off() -> Speculation:
        """No drafter: the target alone (a baseline to compare against)."""
        return Speculation(speculative_tokens=0)

    @staticmethod
    def by_batch_size(bands: list[tuple[int, int, int]]) -> Speculation:
        """K by batch size: (min_batch, max_batch, K) bands covering 1..max_num_seqs without gaps or
        overlap (vLLM's num_speculative_tokens_per_batch_size)."""
        for index, band in enumerate(bands):
            if isinstance(band, str | bytes) or len(band) != 3:
                raise TypeError(
                    f"Speculation.by_batch_size: bands[{index}] must be (min_batch, max_batch, K), e.g. (1, 8, 4), "
                    f"not {band!r}"
                )
        return Speculation(schedule=tuple((low, high, k) for low, high, k in bands))

    def settings(self) -> SpeculationSettings:
        owner = "Speculation.by_batch_size" if self.schedule is not None else "Speculation.fixed"
        schedule = (
            [
                build(
                    SpeculationBand,
                    owner=owner,
                    path="speculation.schedule",
                    min_batch=low,
                    max_batch=high,
                    speculative_tokens=k,
                )
                for low, high, k in self.schedule
            ]
            if self.schedule is not None
            else None
        )
        return build(
            SpeculationSettings,
            owner=owner,
            path="speculation",
            speculative_tokens=self.speculative_tokens,
            schedule=schedule,
        )


# --- rollout -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rollout:
    """How endpoint updates roll out: blue/green (variants only), rolling, or SageMaker's plain update."""

    section: RolloutSettings

    @property
    def strategy(self) -> str:
        return self.section.strategy

    @staticmethod
    def blue_green(
        *,
        traffic: Literal["auto", "canary", "linear", "all_at_once"] = _BLUE_GREEN.traffic,
        canary_percent: int = _BLUE_GREEN.canary_percent,
        linear_step_percent: int = _BLUE_GREEN.linear_step_percent,
        wait: Duration = Duration.seconds(_BLUE_GREEN.wait_seconds),
        termination_wait: Duration = Duration.seconds(_BLUE_GREEN.termination_wait_seconds),
        max_execution: Duration = Duration.seconds(_BLUE_GREEN.max_execution_seconds),
        auto_rollback: bool = True,
    ) -> Rollout:
        """A second fleet takes traffic in steps (``traffic`` auto: canary with two or more instances,
        all at once with baking with one), rolled back on the monitoring's alarms."""
        owner = "Rollout.blue_green"
        _check_durations(owner, wait=wait, termination_wait=termination_wait, max_execution=max_execution)
        steps = build(
            BlueGreenSettings,
            owner=owner,
            path="rollout.blue_green",
            traffic=traffic,
            canary_percent=canary_percent,
            linear_step_percent=linear_step_percent,
            wait_seconds=whole(owner, "wait", wait, "seconds"),
            termination_wait_seconds=whole(owner, "termination_wait", termination_wait, "seconds"),
            max_execution_seconds=whole(owner, "max_execution", max_execution, "seconds"),
        )
        return Rollout(
            build(
                RolloutSettings,
                owner=owner,
                path="rollout",
                strategy="blue_green",
                blue_green=steps,
                auto_rollback=auto_rollback,
            )
        )

    @staticmethod
    def rolling(
        *,
        batch_percent: int = _ROLLING.batch_percent,
        wait: Duration = Duration.seconds(_ROLLING.wait_seconds),
        rollback_batch_percent: int = _ROLLING.rollback_batch_percent,
        max_execution: Duration = Duration.seconds(_ROLLING.max_execution_seconds),
        auto_rollback: bool = True,
    ) -> Rollout:
        """Instances (or component copies) replaced ``batch_percent`` at a time."""
        owner = "Rollout.rolling"
        _check_durations(owner, wait=wait, max_execution=max_execution)
        steps = build(
            RollingSettings,
            owner=owner,
            path="rollout.rolling",
            batch_percent=batch_percent,
            wait_seconds=whole(owner, "wait", wait, "seconds"),
            rollback_batch_percent=rollback_batch_percent,
            max_execution_seconds=whole(owner, "max_execution", max_execution, "seconds"),
        )
        return Rollout(
            build(
                RolloutSettings,
                owner=owner,
                path="rollout",
                strategy="rolling",
                rolling=steps,
                auto_rollback=auto_rollback,
            )
        )

    @staticmethod
    def none() -> Rollout:
        """No DeploymentConfig: SageMaker's plain update (needed to add or remove a variant)."""
        return Rollout(RolloutSettings(strategy="none"))

    def settings(self) -> RolloutSettings:
        return self.section


# --- endpoint mode -----------------------------------------------------------------------------


@dataclass(frozen=True)
class EndpointMode:
    """Production variants (one model replica per instance, at least one instance running) or inference
    components (copies packed per instance, copies and instances may scale to zero)."""

    section: EndpointSettings

    @property
    def mode(self) -> str:
        return self.section.mode

    @staticmethod
    def variants() -> EndpointMode:
        return EndpointMode(EndpointSettings(mode="variants"))

    @staticmethod
    def inference_components(
        *,
        min_instances: int = _COMPONENTS.min_instances,
        max_instances: int = _COMPONENTS.max_instances,
        initial_copies: int = _COMPONENTS.initial_copies,
        accelerators_per_copy: int | None = None,
        scale_to_zero_after: Duration | None = None,
        **settings: Any,
    ) -> EndpointMode:
        """``min_instances`` 0 lets managed instance scaling release every instance; copy bounds and the
        per-copy target are Autoscaling's (min_capacity 0: the last copy goes after ``scale_to_zero_after``
        without a request, in whole minutes; None: the copy's start budget + 2 min, the shortest window that
        never removes a copy before it serves; a shorter one fails validation). ``settings``: any other field of
        the deployment file's ``endpoint.inference_components`` section, by the same name and with the same
        validation (docs/deployment-file.md), so a setting added to the section is a prop here too."""
        owner = "EndpointMode.inference_components"
        _check_durations(owner, scale_to_zero_after=scale_to_zero_after)
        named = {"min_instances", "max_instances", "initial_copies", "accelerators_per_copy"}
        others = sorted(set(InferenceComponentSettings.model_fields) - named - {"scale_to_zero_after_idle_minutes"})
        unknown = sorted(set(settings) - set(others))
        if unknown:
            raise TypeError(
                f"{owner}: no setting named {', '.join(unknown)}; it takes {', '.join(sorted(named))}, "
                f"scale_to_zero_after{''.join(', ' + name for name in others)}"
            )
        components = build(
            InferenceComponentSettings,
            owner=owner,
            path="endpoint.inference_components",
            min_instances=min_instances,
            max_instances=max_instances,
            initial_copies=initial_copies,
            accelerators_per_copy=accelerators_per_copy,
            scale_to_zero_after_idle_minutes=whole(owner, "scale_to_zero_after", scale_to_zero_after, "minutes"),
            **settings,
        )
        return EndpointMode(EndpointSettings(mode="inference_components", inference_components=components))


# --- autoscaling -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduledCapacity:
    """Capacity bounds from a schedule, e.g. fewer instances off-peak (variants). ``schedule``: an
    ``appscaling.Schedule`` (``Schedule.cron(...)``, ``Schedule.expression(...)``) or the expression itself as a
    string, ``'cron(0 20 * * ? *)'``, ``'rate(1 day)'`` or ``'at(2027-01-01T08:00:00)'``, which becomes
    ``appscaling.Schedule.expression(...)``; either is checked here against the syntax Application Auto Scaling
    accepts (peagle.settings.ScheduledScaling), so a wrong one fails on this line with the prop named."""

    name: str  # PascalCase construct id, stable across deploys
    schedule: appscaling.Schedule | str
    min_capacity: int
    max_capacity: int
    time_zone: TimeZone | None = None

    def __post_init__(self) -> None:
        owner = f"ScheduledCapacity {self.name!r}" if isinstance(self.name, str) else "ScheduledCapacity"
        prop_types.check_instance(owner, "name", self.name, str, "a PascalCase id such as 'NightFloor'")
        prop_types.check_instance(
            owner,
            "schedule",
            self.schedule,
            (appscaling.Schedule, str),
            "an appscaling.Schedule or its expression as a string, e.g. 'cron(0 20 * * ? *)' or "
            "appscaling.Schedule.cron(hour='20', minute='0')",
        )
        prop_types.check_instance(
            owner, "time_zone", self.time_zone, TimeZone, "a TimeZone, e.g. TimeZone.EUROPE_BERLIN"
        )
        if self.schedule is None or self.min_capacity is None or self.max_capacity is None:
            raise TypeError(f"{owner}: schedule, min_capacity and max_capacity are required, not None")
        if isinstance(self.schedule, str):
            object.__setattr__(self, "schedule", appscaling.Schedule.expression(self.schedule))
        self.settings()  # the expression's syntax and the bounds, refused here in the prop's words

    def settings(self) -> ScheduledScaling:
        """The schedule as the settings model holds it (autoscaling.schedules[])."""
        assert isinstance(self.schedule, appscaling.Schedule)  # a string became one in __post_init__
        return build(
            ScheduledScaling,
            owner=f"ScheduledCapacity {self.name}",
            path="autoscaling.schedules",
            name=self.name,
            schedule=self.schedule.expression_string,
            min_capacity=self.min_capacity,
            max_capacity=self.max_capacity,
            time_zone=self.time_zone.timezone_name if self.time_zone else None,
        )


# Autoscaling's keywords are AutoscalingSettings' fields (the deployment file's autoscaling section) by the same
# name, but these: a Duration for a field in seconds, and the GPU target's shorter name. ``enabled`` is the prop's
# presence (None: fixed capacity) and ``target`` follows from max_requests_per_second, so neither is a keyword.
# tests/constructs/test_props_declared_once.py checks the keywords and their defaults against the section's fields.
AUTOSCALING_RENAMED = {
    "gpu_utilization_percent": "gpu_utilization_target_percent",
    "scale_in_cooldown": "scale_in_cooldown_seconds",
    "scale_out_cooldown": "scale_out_cooldown_seconds",
}
AUTOSCALING_IMPLIED = ("enabled", "target")


@dataclass(frozen=True)
class Autoscaling:
    """Scaling of the serving units, in the same words for both modes: instances of the variant, or copies
    of the component (``min_capacity`` 0 scales the component to zero).

    The target: ``target_concurrency`` requests in flight per unit if given, else ``measured_capacity``'s
    (what `peagle capacity` measured at the SLO, times its headroom), else the planner's stated guess
    (`peagle plan` prints which). ``max_requests_per_second`` instead tracks invocations per instance
    (variants only). Each keyword is the autoscaling section's field of the same name (docs/deployment-file.md),
    validated by it when the Autoscaling is made.
    """

    min_capacity: int | None = _AUTOSCALING.min_capacity  # default: 1 instance, or 0 copies
    max_capacity: int | None = (
        _AUTOSCALING.max_capacity
    )  # default: 2 instances, or as many copies as max_instances hold
    target_concurrency: float | None = _AUTOSCALING.target_concurrency
    measured_capacity: MeasuredCapacity | None = None  # the section's default too (a test checks it)
    max_requests_per_second: float | None = _AUTOSCALING.max_requests_per_second
    headroom: float = _AUTOSCALING.headroom  # share of max_requests_per_second the invocations target aims at
    gpu_utilization_percent: float | None = _AUTOSCALING.gpu_utilization_target_percent
    scale_on_queue: bool = _AUTOSCALING.scale_on_queue  # also scale out on vLLM's requests waiting per unit
    target_requests_waiting: float | None = _AUTOSCALING.target_requests_waiting
    latency_step_scaling: bool = _AUTOSCALING.latency_step_scaling
    scale_in_cooldown: Duration = Duration.seconds(_AUTOSCALING.scale_in_cooldown_seconds)
    scale_out_cooldown: Duration = Duration.seconds(_AUTOSCALING.scale_out_cooldown_seconds)
    schedules: tuple[ScheduledCapacity, ...] = ()
    safety_factor: float | None = None  # deprecated: the old name of headroom

    def __post_init__(self) -> None:
        owner = "Autoscaling"
        if self.safety_factor is not None:
            if self.headroom != _AUTOSCALING.headroom:
                raise ValueError("Autoscaling: safety_factor is the old name of headroom; give only headroom")
            warnings.warn(
                "Autoscaling(safety_factor=...) is deprecated: it is now Autoscaling(headroom=...), same meaning",
                FutureWarning,
                stacklevel=3,
            )
            object.__setattr__(self, "headroom", self.safety_factor)
        prop_types.check_instance(
            owner,
            "measured_capacity",
            self.measured_capacity,
            MeasuredCapacitySection,  # made by a construct user, or read from a file
            "a peagle_cdk.MeasuredCapacity",
        )
        _check_durations(owner, scale_in_cooldown=self.scale_in_cooldown, scale_out_cooldown=self.scale_out_cooldown)
        if isinstance(self.schedules, (str, bytes)) or not isinstance(self.schedules, (tuple, list)):
            raise TypeError(prop_types.refused(owner, "schedules", self.schedules, "a tuple of ScheduledCapacity"))
        for index, schedule in enumerate(self.schedules):
            prop_types.check_instance(owner, f"schedules[{index}]", schedule, ScheduledCapacity, "a ScheduledCapacity")
        self.settings()  # every other keyword, by its field's type and bounds

    def settings(self) -> AutoscalingSettings:
        """The autoscaling section, the same in both modes (instances or copies): each keyword as its field."""
        owner = "Autoscaling"
        values: dict[str, Any] = {}
        for keyword in (field.name for field in fields(self) if field.name != "safety_factor"):
            value = getattr(self, keyword)
            if keyword in ("scale_in_cooldown", "scale_out_cooldown"):
                value = whole(owner, keyword, value, "seconds")
            elif keyword == "schedules":
                value = [schedule.settings() for schedule in value]
            values[AUTOSCALING_RENAMED.get(keyword, keyword)] = value
        target = "invocations" if self.max_requests_per_second is not None else "concurrency"
        return build(AutoscalingSettings, owner=owner, path="autoscaling", enabled=True, target=target, **values)


# --- A/B baseline ------------------------------------------------------------------------------


@dataclass(frozen=True)
class AbBaseline:
    """A second variant (or component) serving the same target with another K, 0 by default (no
    speculation): the dashboard then compares the two on live traffic."""

    speculative_tokens: int = _AB_TEST.baseline_speculative_tokens
    # Variants: the baseline's share of requests (None: half). Components have no split: each request
    # names its component.
    traffic_percent: float | None = None
    instance_count: int = _AB_TEST.baseline_instance_count

    def __post_init__(self) -> None:
        self.settings()

    def settings(self) -> AbTestSettings:
        # Set only when given: a rule tells a share given from the default one (deployment_rules.py, model_fields_set).
        share: dict[str, Any] = (
            {} if self.traffic_percent is None else {"baseline_traffic_percent": self.traffic_percent}
        )
        return build(
            AbTestSettings,
            owner="AbBaseline",
            path="ab_test",
            enabled=True,
            baseline_speculative_tokens=self.speculative_tokens,
            baseline_instance_count=self.instance_count,
            **share,
        )


# --- routing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Routing:
    """How SageMaker spreads the real-time endpoint's requests over its instances (the endpoint config's
    RoutingConfig). Changing it replaces the endpoint config: `peagle preflight` says what that update does.

    ``Routing.prefix_aware`` sends requests whose first ``prefix_length`` bytes match to the same instance, so its vLLM
    prefix cache serves the shared part; it needs prefix caching on (``vllm_args={"enable-prefix-caching": True}``)
    and a pair that allows it with its drafter (docs/routing.md)."""

    section: RoutingSettings

    @property
    def strategy(self) -> str:
        return self.section.strategy

    @staticmethod
    def least_outstanding_requests() -> Routing:
        """To the instance with the fewest requests in flight (the default)."""
        return Routing(RoutingSettings(strategy="LEAST_OUTSTANDING_REQUESTS"))

    @staticmethod
    def random() -> Routing:
        """To a randomly chosen instance."""
        return Routing(RoutingSettings(strategy="RANDOM"))

    @staticmethod
    def prefix_aware(*, prefix_length: int, concurrency_threshold: int | None = None) -> Routing:
        """``prefix_length``: bytes of each request body that decide its instance, 1024-65536 (cover the system
        prompt and some of what differs); ``concurrency_threshold``: requests in flight on that instance before
        the next goes elsewhere, 1-1024 (None: what one instance's engines run at once, from the plan)."""
        owner = "Routing.prefix_aware"
        return Routing(
            build(
                RoutingSettings,
                owner=owner,
                path="endpoint.routing",
                strategy="PREFIX_AWARE",
                prefix_length=prefix_length,
                concurrency_threshold=concurrency_threshold,
            )
        )

    def settings(self) -> RoutingSettings:
        return self.section


# --- data capture ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataCapture:
    """A sample of the endpoint's requests for `peagle prompts`, off unless given. ``method`` "data_capture" (the
    default): SageMaker Data Capture (variants mode); the requests (``mode`` "request_and_response": and the
    responses) land as JSON lines under capture/ in a bucket the construct creates (KMS-encrypted, private, SSL-only,
    access-logged), expired after ``expire_after``. ``method`` "request_log": the container prints the sampled
    requests (prompt or messages and sampling parameters only) to the endpoint's CloudWatch Logs group, for an
    account that may not be able to use Data Capture (AWS closed Model Monitor to new customers); the group must not
    keep its logs longer than ``expire_after`` (``log_retention_days``). Turning it on, off or changing it replaces
    the endpoint config or the model and rolls the endpoint out (docs/production-loop.md, "Capture").

    :param sampling_percentage: share of requests captured, 1-100 (default 10).
    :param mode: "request" (default) or "request_and_response" (data_capture only).
    :param expire_after: how long a captured request is kept, in whole days (default 30 days).
    :param key: the KMS key of the bucket and the captured objects (its key policy must let the endpoint's role use
        it); default: a new key with rotation. data_capture only: the request log is encrypted with the log group's key.
    :param method: "data_capture" (default) or "request_log".
    """

    sampling_percentage: int = _CAPTURE.sampling_percentage
    mode: Literal["request", "request_and_response"] = _CAPTURE.mode
    expire_after: Duration = Duration.days(_CAPTURE.expire_after_days)
    key: kms.IKey | None = None
    method: Literal["data_capture", "request_log"] = _CAPTURE.method

    def __post_init__(self) -> None:
        owner = "DataCapture"
        prop_types.check_instance(owner, "mode", self.mode, str, '"request" or "request_and_response"')
        prop_types.check_duration(owner, "expire_after", self.expire_after, "Duration.days(30)")
        prop_types.check_interface(owner, "key", self.key, "IKey")
        prop_types.check_instance(owner, "method", self.method, str, '"data_capture" or "request_log"')
        self.settings()

    def settings(self) -> CaptureSettings:
        """The capture section; the key, a CDK object, stays with the prop (PeagleEndpoint uses it)."""
        owner = "DataCapture"
        if self.method == "request_log" and self.key is not None:
            # The settings model refuses the file's kms_key_arn for the same reason (peagle/settings/capture.py, CaptureSettings).
            raise ConfigError(
                f'{owner}: key is the Data Capture bucket\'s key; with method="request_log" the requests are in the '
                "endpoint's CloudWatch Logs group, encrypted with that group's own key (created by the construct, "
                'with rotation): leave key=None, or use method="data_capture"'
            )
        return build(
            CaptureSettings,
            owner=owner,
            path="capture",
            enabled=True,
            method=self.method,
            sampling_percentage=self.sampling_percentage,
            mode=self.mode,
            expire_after_days=whole(owner, "expire_after", self.expire_after, "days"),
        )
