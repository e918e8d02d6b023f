"""The endpoint's routing section: how SageMaker spreads requests over the instances."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from peagle.catalog import StrictModel
from peagle.settings.refs import setting, spelled

# SageMaker's routing strategies (SageMaker API Reference, ProductionVariantRoutingConfig,
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantRoutingConfig.html): "Valid Values:
# LEAST_OUTSTANDING_REQUESTS | RANDOM | PREFIX_AWARE"; "PREFIX_AWARE: The endpoint routes requests that share the same
# prompt prefix to the same instance. When the number of in-flight requests on the selected instance reaches the
# configured threshold, the endpoint routes the request to an instance with more available capacity." botocore
# 1.44.5's RoutingStrategy enum also lists KV_AWARE, which no AWS document describes: not offered.
ROUTING_STRATEGIES = ("LEAST_OUTSTANDING_REQUESTS", "RANDOM", "PREFIX_AWARE")


# PrefixAwareRoutingConfig (API_PrefixAwareRoutingConfig.html): PrefixLength "Valid Range: Minimum value of 1024.
# Maximum value of 65536", ConcurrencyThreshold "Valid Range: Minimum value of 1. Maximum value of 1024"; both
# "Required when RoutingStrategy is PREFIX_AWARE", and the config is given "only when you set RoutingStrategy to
# PREFIX_AWARE" (API_ProductionVariantRoutingConfig.html).
PREFIX_LENGTH_RANGE = (1024, 65536)


CONCURRENCY_THRESHOLD_RANGE = (1, 1024)


class RoutingSettings(StrictModel):
    """How SageMaker spreads a real-time endpoint's requests over its instances (each production variant's
    RoutingConfig; with inference components, the instance pool's). Changing any of it replaces the endpoint config:
    `peagle preflight` says what that update does (docs/preflight.md, rule routing)."""

    PROP_TYPE: ClassVar[str] = "Routing"  # PeagleEndpoint's routing prop (peagle_cdk/endpoint_props.py)

    strategy: Literal["LEAST_OUTSTANDING_REQUESTS", "RANDOM", "PREFIX_AWARE"] = Field(
        default="LEAST_OUTSTANDING_REQUESTS",
        json_schema_extra=spelled(
            "routing",
            **{
                '"LEAST_OUTSTANDING_REQUESTS"': "routing=Routing.least_outstanding_requests()",
                '"RANDOM"': "routing=Routing.random()",
                '"PREFIX_AWARE"': "routing=Routing.prefix_aware(prefix_length=...)",
            },
        ),
        description="LEAST_OUTSTANDING_REQUESTS: to the instance with the fewest requests in flight (LLM requests "
        "vary 100x in length); RANDOM; PREFIX_AWARE: requests whose first prefix_length bytes match go to the same "
        "instance, whose vLLM prefix cache then serves the shared part (needs prefix caching on, which the pair "
        "must allow: docs/routing.md)",
    )
    prefix_length: int | None = Field(
        default=None,
        json_schema_extra=spelled("Routing.prefix_aware(prefix_length=...)"),
        description="PREFIX_AWARE only, required: how much of each request decides its instance, 1024-65536 (bytes "
        "of the InvokeEndpoint body; characters of the messages for the OpenAI-compatible API). Cover the shared "
        "part (the JSON up to and including the system prompt) plus some of what differs, or every request lands "
        "on one instance",
    )
    concurrency_threshold: int | None = Field(
        default=None,
        json_schema_extra=spelled("Routing.prefix_aware(concurrency_threshold=...)"),
        description="PREFIX_AWARE only: requests in flight on the prefix's instance before SageMaker sends the next "
        "one elsewhere, 1-1024; unset: the requests one instance's engines run at once (max_num_seqs x replicas "
        "per instance, `peagle plan` prints it), so a request spills over rather than queue inside vLLM",
    )

    @field_validator("strategy", mode="before")
    @classmethod
    def _strategy(cls, value: Any) -> Any:
        if value not in ROUTING_STRATEGIES:
            why = (
                " (botocore lists KV_AWARE, but no AWS document says what it does: not offered)"
                if value == "KV_AWARE"
                else ""
            )
            raise ValueError(
                f"{value!r} is not a routing strategy SageMaker documents{why}; use one of "
                f"{', '.join(ROUTING_STRATEGIES)} (SageMaker API Reference, ProductionVariantRoutingConfig)"
            )
        return value

    @field_validator("prefix_length", "concurrency_threshold", mode="before")
    @classmethod
    def _in_range(cls, value: Any, info) -> Any:
        if value is None:
            return value
        low, high = PREFIX_LENGTH_RANGE if info.field_name == "prefix_length" else CONCURRENCY_THRESHOLD_RANGE
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            aws = "PrefixLength" if info.field_name == "prefix_length" else "ConcurrencyThreshold"
            raise ValueError(
                f"{value!r} is outside SageMaker's range for {aws}: a whole number {low}-{high} "
                "(SageMaker API Reference, PrefixAwareRoutingConfig)"
            )
        return value

    @model_validator(mode="after")
    def _prefix_aware_fields(self) -> RoutingSettings:
        given = [name for name in ("prefix_length", "concurrency_threshold") if getattr(self, name) is not None]
        if self.strategy != "PREFIX_AWARE" and given:
            raise ValueError(
                f"{' and '.join(setting('endpoint.routing.' + name) for name in given)} apply to prefix-aware routing "
                f'only (SageMaker takes PrefixAwareRoutingConfig "only when you set RoutingStrategy to PREFIX_AWARE"); '
                f"set {setting('endpoint.routing.strategy', 'PREFIX_AWARE')} or remove them"
            )
        if self.strategy == "PREFIX_AWARE" and self.prefix_length is None:
            raise ValueError(
                f"prefix-aware routing needs {setting('endpoint.routing.prefix_length')} (SageMaker: PrefixLength is "
                '"Required when RoutingStrategy is PREFIX_AWARE"): how many bytes of each request body decide its '
                f"instance, 1024-65536; e.g. {setting('endpoint.routing.prefix_length', 4096)} when the system prompt "
                "is under ~4000 characters"
            )
        return self
