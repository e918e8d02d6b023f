"""The autoscaling section: the scaling bounds and targets, scheduled capacity, and what `peagle capacity`
measured."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, PositiveInt, model_validator

from peagle.catalog import StrictModel
from peagle.settings.refs import spelled
from peagle.settings.renames import renamed
from peagle.settings.schedules import ScheduledAction, ScheduleError

# The share of a measured capacity the scaling targets aim at: one default for the scaling settings (both doors)
# and `peagle capacity --headroom`, which writes it into its snippet.
DEFAULT_HEADROOM = 0.8


class ScheduledScaling(StrictModel):
    """Capacity bounds from a schedule, e.g. fewer instances off-peak."""

    PROP_TYPE: ClassVar[str] = "ScheduledCapacity"

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9]{0,63}$", description="PascalCase id, stable across deploys")
    # The three forms Application Auto Scaling takes (botocore data/application-autoscaling/2016-02-06/service-2.json,
    # PutScheduledActionRequest.Schedule: "At expressions - "at(yyyy-mm-ddThh:mm:ss)"; Rate expressions -
    # "rate(value unit)"; Cron expressions - "cron(fields)""); each form's fields are checked by _expression below.
    schedule: str = Field(
        pattern=r"^(cron\(.+\)|rate\(.+\)|at\(.+\))$", description="e.g. 'cron(0 20 * * ? *)' (UTC unless time_zone)"
    )
    min_capacity: PositiveInt = Field(description="the scaling floor while the schedule holds (formerly min_instances)")
    max_capacity: PositiveInt = Field(
        description="the scaling ceiling while the schedule holds (formerly max_instances)"
    )
    time_zone: str | None = Field(default=None, description="IANA name, e.g. Europe/Berlin")

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return renamed(
            data, "autoscaling.schedules[]", {"min_instances": "min_capacity", "max_instances": "max_capacity"}
        )

    @model_validator(mode="after")
    def _expression(self) -> ScheduledScaling:
        """What Application Auto Scaling would refuse at deploy time (six cron fields, one day field `?`, values
        in range, an IANA time zone), refused at synth: the rules and their sources are in
        peagle/settings/schedules.py, which `peagle simulate` runs the schedule with."""
        action = ScheduledAction(
            self.name, self.schedule, self.min_capacity, self.max_capacity, self.time_zone or "UTC"
        )
        try:
            action.check(simulated=False)
        except ScheduleError as error:
            raise ValueError(str(error)) from None
        return self


class MeasuredCapacity(StrictModel):
    """What `peagle capacity` measured for one instance (or copy): the highest request rate at which the
    SLO still held, and the requests in flight there. Its snippet sets the scaling targets from it with
    ``headroom``; kept here so `peagle plan` can say where the targets came from and size a fleet."""

    requests_per_second: float = Field(gt=0, description="highest rate meeting the SLO, per instance")
    concurrency: float = Field(gt=0, description="requests in flight at that rate (the load's own mean)")
    headroom: float = Field(gt=0, le=1, description="share of the capacity the scaling targets aim at")
    slo: str = Field(description="the SLO it was measured at, as `peagle plan` prints it")
    source: str = Field(description="what was measured, where and when")


class AutoscalingSettings(StrictModel):
    """Scaling of the variant's DesiredInstanceCount (Application Auto Scaling's
    ``sagemaker:variant:DesiredInstanceCount``; SageMaker Developer Guide, "Automatic scaling of
    Amazon SageMaker AI models", https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling.html)."""

    enabled: bool = Field(
        default=True,
        description="false: fixed capacity (instance.count instances, or initial_copies copies), not scaled",
        json_schema_extra=spelled("autoscaling", false="autoscaling=None", true="autoscaling=Autoscaling(...)"),
    )
    min_capacity: int | None = Field(
        default=None,
        ge=0,
        description="the scaling floor in serving units: instances (variants, at least 1) or copies "
        "(inference_components, 0 scales the component to zero); unset: 1 instance, or 0 copies (with autoscaling "
        "off: the units the deploy starts). Formerly autoscaling.min_instances and "
        "endpoint.inference_components.min_copies",
        json_schema_extra=spelled("Autoscaling(min_capacity=...)"),
    )
    max_capacity: PositiveInt | None = Field(
        default=None,
        le=100,
        description="the scaling ceiling in serving units; unset: 2 instances, or as many copies as "
        "endpoint.inference_components.max_instances hold. Formerly autoscaling.max_instances and "
        "endpoint.inference_components.max_copies",
        json_schema_extra=spelled("Autoscaling(max_capacity=...)"),
    )
    target: Literal["concurrency", "invocations"] = Field(
        default="concurrency",
        description="concurrency: target tracking on SageMakerVariantConcurrentRequestsPerModelHighResolution, "
        "in-flight requests per unit (10 s metric, counts queued and streaming requests); "
        "invocations (variants): requests per minute per instance, target max_requests_per_second x headroom x 60, "
        "needs max_requests_per_second",
        json_schema_extra=spelled(
            "Autoscaling(max_requests_per_second=...)",
            **{
                '"concurrency"': "Autoscaling(target_concurrency=...)",
                '"invocations"': "Autoscaling(max_requests_per_second=...)",
            },
        ),
    )
    target_concurrency: float | None = Field(
        default=None,
        gt=0,
        description="requests in flight per unit (instance or copy) to scale on; `peagle capacity`'s snippet sets it "
        "to the concurrency measured within the SLO x headroom; unset: 75% of the plan's max_num_seqs (a guess). "
        "Formerly target_concurrency_per_instance and endpoint.inference_components.target_concurrency_per_copy",
        json_schema_extra=spelled("Autoscaling(target_concurrency=...)"),
    )
    max_requests_per_second: float | None = Field(
        default=None,
        gt=0,
        description="the highest requests/s per instance that meets the SLO, measured with `peagle capacity` "
        "(formerly max_rps_per_instance)",
        json_schema_extra=spelled("Autoscaling(max_requests_per_second=...)"),
    )
    headroom: float = Field(
        default=DEFAULT_HEADROOM,
        gt=0,
        le=1,
        description="share of max_requests_per_second the invocations target aims at (formerly safety_factor)",
        json_schema_extra=spelled("Autoscaling(headroom=...)"),
    )
    measured_capacity: MeasuredCapacity | None = Field(
        default=None,
        description="written by `peagle capacity`: where the targets above came from; with no concurrency target "
        "set, the target is its concurrency x headroom",
        json_schema_extra=spelled("Autoscaling(measured_capacity=...)"),
    )
    scale_on_queue: bool = Field(
        default=False,
        description="also scale on vLLM's queue: target tracking on requests waiting per unit (the KPI line's "
        "RequestsWaiting, Average per minute), beside the concurrency (or invocations) policy, which decides how far "
        "in (this one only holds a scale-in back while requests wait; off where copies scale to zero). It scales out "
        "where requests wait before concurrency reaches its target, e.g. long prompts whose KV cache holds fewer "
        "requests than the concurrency target; needs observability.kpi_interval_seconds <= 60",
        json_schema_extra=spelled("Autoscaling(scale_on_queue=...)"),
    )
    target_requests_waiting: float | None = Field(
        default=None,
        gt=0,
        description="requests waiting per unit the queue policy aims at (scale_on_queue); unset: the queue one unit "
        "admits within the profile's TTFT bound, max_num_seqs x TTFT / the plan's request time (half the p90 "
        "latency SLA), at least 1",
        json_schema_extra=spelled("Autoscaling(target_requests_waiting=...)"),
    )
    gpu_utilization_target_percent: float | None = Field(
        default=80,
        gt=0,
        le=100,
        description="GPU utilization target tracking, per GPU (multiplied by the GPU count, because the metric "
        "sums GPUs); null: no GPU policy",
        json_schema_extra=spelled("Autoscaling(gpu_utilization_percent=...)"),
    )
    latency_step_scaling: bool = Field(
        default=True,
        description="step scaling while p90 ModelLatency exceeds the SLA: +1 instance, +2 at twice the SLA; never "
        "scales in (target tracking does); waits an instance's whole start budget (the plan's timeouts + 600 s) "
        "between steps, because its alarm acts every minute it is in ALARM",
        json_schema_extra=spelled("Autoscaling(latency_step_scaling=...)"),
    )
    scale_in_cooldown_seconds: int = Field(
        default=900,
        ge=0,
        le=3600,
        description="target tracking's scale-in cooldown; GPU instances are slow to replace",
        json_schema_extra=spelled("Autoscaling(scale_in_cooldown=...)"),
    )
    scale_out_cooldown_seconds: int = Field(
        default=120,
        ge=0,
        le=3600,
        description="target tracking's scale-out cooldown",
        json_schema_extra=spelled("Autoscaling(scale_out_cooldown=...)"),
    )
    schedules: list[ScheduledScaling] = Field(
        default=[],
        description="cron-based capacity (min/max capacity by schedule), e.g. fewer instances at night",
        json_schema_extra=spelled("Autoscaling(schedules=...)"),
    )

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return renamed(
            data,
            "autoscaling",
            {
                "safety_factor": "headroom",
                "min_instances": "min_capacity",
                "max_instances": "max_capacity",
                "target_concurrency_per_instance": "target_concurrency",
                "max_rps_per_instance": "max_requests_per_second",
            },
        )
