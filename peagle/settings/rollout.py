"""The rollout section: how an endpoint update rolls out (blue/green, rolling or SageMaker's plain update)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from peagle.catalog import StrictModel
from peagle.settings.refs import spelled


class BlueGreenSettings(StrictModel):
    PROP_TYPE: ClassVar[str] = "Rollout.blue_green"

    traffic: Literal["auto", "canary", "linear", "all_at_once"] = Field(
        default="auto",
        description="auto: canary with two or more instances, all_at_once (with baking) with one, since a "
        "canary must be at most half the fleet",
    )
    canary_percent: int = Field(
        default=10, ge=1, le=50, description="share of the fleet taking traffic first (SageMaker: at most 50%)"
    )
    linear_step_percent: int = Field(default=25, ge=10, le=50, description="SageMaker allows 10-50% per step")
    wait_seconds: int = Field(
        default=600,
        ge=0,
        le=3600,
        description="baking time between traffic shifts",
        json_schema_extra=spelled("Rollout.blue_green(wait=...)"),
    )
    termination_wait_seconds: int = Field(
        default=600,
        ge=0,
        le=3600,
        description="keep the old fleet this long after 100%",
        json_schema_extra=spelled("Rollout.blue_green(termination_wait=...)"),
    )
    max_execution_seconds: int = Field(
        default=7200,
        ge=600,
        le=28800,
        description="the update's time limit; its waits must fit in it",
        json_schema_extra=spelled("Rollout.blue_green(max_execution=...)"),
    )


class RollingSettings(StrictModel):
    PROP_TYPE: ClassVar[str] = "Rollout.rolling"

    batch_percent: int = Field(
        default=25,
        ge=5,
        le=50,
        description="share of instances (or copies) replaced per step; SageMaker needs each batch to be at least "
        "one instance, so rolling is refused on a fleet that can shrink below 100 / batch_percent instances",
    )
    wait_seconds: int = Field(
        default=600,
        ge=0,
        le=3600,
        description="baking time after each batch",
        json_schema_extra=spelled("Rollout.rolling(wait=...)"),
    )
    rollback_batch_percent: int = Field(
        default=100, ge=1, le=100, description="share of instances rolled back per step"
    )
    max_execution_seconds: int = Field(
        default=7200,
        ge=600,
        le=28800,
        description="the update's time limit; its waits must fit in it",
        json_schema_extra=spelled("Rollout.rolling(max_execution=...)"),
    )


class RolloutSettings(StrictModel):
    """How endpoint updates roll out. Blue/green needs a second GPU fleet while it runs.

    ``none`` deploys without a DeploymentConfig: SageMaker's plain update (new fleet, then
    switch; no canary, no baking, no auto-rollback). It exists for the one change deployment
    guardrails refuse: adding or removing a variant (the A/B test on or off), since "your new
    endpoint configuration must have the same variant name as the old endpoint configuration"
    (https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-exclusions.html).
    `peagle preflight` says when it is needed.
    """

    # Default blue_green for variants; in endpoint.mode inference_components the default is rolling
    # (peagle/settings/rules.py, components_roll_by_default).
    strategy: Literal["blue_green", "rolling", "none"] = Field(
        default="blue_green",
        json_schema_extra=spelled(
            "rollout",
            **{
                '"blue_green"': "rollout=Rollout.blue_green(...)",
                '"rolling"': "rollout=Rollout.rolling(...)",
                '"none"': "rollout=Rollout.none()",
            },
        ),
        description="blue_green: a second fleet takes the traffic under guardrails (the default with variants); "
        "rolling: batches of rolling.batch_percent, no second full GPU fleet (the default with inference "
        "components; not on multi-variant endpoints); none: SageMaker's plain update (above)",
    )
    blue_green: BlueGreenSettings = Field(
        default=BlueGreenSettings(), json_schema_extra=spelled("Rollout.blue_green(...)")
    )
    rolling: RollingSettings = Field(default=RollingSettings(), json_schema_extra=spelled("Rollout.rolling(...)"))
    auto_rollback: bool = Field(
        default=True,
        description="roll back when the 5xx or latency alarm fires during the update",
        json_schema_extra=spelled("Rollout...(auto_rollback=...)"),
    )
