"""The endpoint side of the simulation: units (copies or instances) that serve only after a start-up
delay, the load they carry each minute and the per-minute datapoints they emit.

What AWS documents and this model follows:
- a component scaled to zero answers "no capacity" and emits ``NoCapacityInvocationFailures``:
  "SageMaker AI emits ... when an endpoint receives an inference request, but the endpoint has no
  active instances to serve the request" ("Scale an endpoint to zero instances",
  https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-zero-instances.html); "the
  provisioning process takes several minutes. During that time, any attempts to invoke the endpoint
  will produce an error" (same page);
- ``ConcurrentRequestsPerCopy``/``ConcurrentRequestsPerModel`` count in-flight requests per unit,
  queued and streaming ones included; ``ModelLatency`` is in microseconds; ``GPUUtilization`` sums its
  GPUs, the components' ``GPUUtilizationNormalized`` is 0-100 ("Amazon SageMaker AI metrics in Amazon
  CloudWatch", https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html);
- managed instance scaling with ``IDLE_RELEASE`` "Releases instances that have no hosted inference
  component copies" (API reference, ProductionVariantManagedInstanceScalingScaleInPolicy).

Everything else is an ``Assumptions`` field, printed with every result; the deciding ones run both ways.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from peagle.simulate.scaling_template import MetricStat

Datapoint = float | None
INVOKE_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class Assumptions:
    """What the simulation assumes where AWS does not say. Each field's comment says why its default."""

    # Does a request refused for lack of capacity count in Invocations? No AWS page says; deciding for an
    # idle alarm on Invocations, so the simulator runs it both ways.
    refused_count_as_invocations: bool = False
    # Several alarms acting on one target in the same minute: "Application Auto Scaling gives precedence to
    # the policy that provides the largest capacity for both scale out and scale in" (PutScalingPolicy,
    # Application Auto Scaling API reference) when policies conflict at the same time; whether two alarms'
    # repeated actions count as "the same time" is not said. "largest" applies the rule; "in-turn" applies
    # each action in turn, scale-in last (each alarm's action is its own scaling activity). Run both ways.
    conflicts: str = "largest"  # largest | in-turn
    # Model download + container start-up of a new unit, seconds; default: the plan's two timeouts (the
    # longest start SageMaker still accepts). AWS measured 5-6 minutes from zero for 8B and 70B models
    # ("Unlock cost savings with the new scale down to zero feature in SageMaker Inference", 2024-12-03).
    startup_seconds: float = 0.0
    # An instance's launch before its first copy or model starts: "several minutes" (scale-to-zero page).
    instance_launch_seconds: float = 300.0
    # Mean time a request holds one of vLLM's max_num_seqs slots; default: half the profile's p90 SLA.
    request_seconds: float = 5.0
    # The metrics of an interval are evaluated at its end, with no publishing delay.
    # An idle unit that serves reports ConcurrentRequestsPerCopy/PerModel 0; a minute without requests has
    # no Invocations datapoint (why the templates' idle alarms treat missing data as breaching).
    idle_concurrency_reported_as_zero: bool = True

    def described(self) -> list[str]:
        return [
            f"refused requests {'count' if self.refused_count_as_invocations else 'do not count'} in Invocations",
            "actions in one minute: "
            + (
                "the largest capacity wins (AWS's rule for conflicting policies)"
                if self.conflicts == "largest"
                else "applied in turn, scale-in last"
            ),
            f"a new unit serves after {self.startup_seconds:.0f} s (download + start-up)"
            f" plus {self.instance_launch_seconds:.0f} s when it needs a new instance",
            f"a request holds a vLLM slot for {self.request_seconds:g} s on average",
            "idle serving units report concurrency 0"
            if self.idle_concurrency_reported_as_zero
            else "idle units report nothing",
            "datapoints are evaluated at the end of their minute, without publishing delay",
        ]

    def label(self) -> str:
        return (
            f"refused {'counted' if self.refused_count_as_invocations else 'not counted'}, conflicts {self.conflicts}"
        )

    def but(self, **changes) -> Assumptions:
        return replace(self, **changes)


@dataclass(frozen=True)
class UnitShape:
    """What one unit is: a copy of a component (several per instance) or a variant's instance."""

    kind: str  # "copies" | "instances"
    max_num_seqs: int
    units_per_instance: int
    max_instances: int
    min_instances: int
    gpus_per_unit: int
    # An asynchronous endpoint queues what it cannot serve, even at zero instances (ApproximateBacklogSize,
    # HasBacklogWithoutCapacity: "Autoscale an asynchronous endpoint",
    # https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-autoscale.html).
    asynchronous: bool = False


@dataclass
class Minute:
    """One minute of the endpoint: the load and what was emitted."""

    minute: int
    offered: float
    served: float = 0.0
    refused: float = 0.0
    queued: float = 0.0  # not served in the minute: timed out (real-time) or still queued (asynchronous)
    desired: int = 0
    serving: int = 0
    starting: int = 0
    instances: int = 0
    in_flight_per_unit: float = 0.0
    latency_seconds: float | None = None
    datapoints: dict[str, Datapoint] = field(default_factory=dict)
    alarms: dict[str, str] = field(default_factory=dict)
    actions: list[str] = field(default_factory=list)

    @property
    def slo_missed(self) -> float:
        """Requests refused, timed out, or (asynchronous) still queued at the minute's end."""
        return self.refused + self.queued


class Endpoint:
    """Units with start times; ``set_desired`` is what Application Auto Scaling changes."""

    def __init__(self, shape: UnitShape, assumptions: Assumptions, initial: int) -> None:
        self.shape, self.assumptions = shape, assumptions
        self.ready_at: list[float] = [0.0] * initial  # minute each unit serves from (the deploy's start as ready)
        self.instances_ready_at: list[float] = [0.0] * max(shape.min_instances, self._instances_for(initial))
        self.backlog = 0.0

    @property
    def desired(self) -> int:
        return len(self.ready_at)

    def serving(self, minute: int) -> int:
        return sum(1 for ready in self.ready_at if ready <= minute)

    def set_desired(self, count: int, minute: int) -> None:
        if count < self.desired:
            # Starting units go first, then the newest serving ones.
            self.ready_at.sort()
            del self.ready_at[count:]
        while self.desired < count:
            self.ready_at.append(minute + self._start_minutes(minute))
        self._release_instances()

    def _instances_for(self, units: int) -> int:
        return math.ceil(units / self.shape.units_per_instance) if self.shape.kind == "copies" else units

    def _start_minutes(self, minute: int) -> float:
        start = self.assumptions.startup_seconds / 60
        if self.shape.kind == "instances":
            return start + self.assumptions.instance_launch_seconds / 60
        needed = self._instances_for(self.desired + 1)
        if needed > len(self.instances_ready_at):
            if needed > self.shape.max_instances:
                return math.inf  # no instance may be added: the copy waits for room that never comes
            self.instances_ready_at.append(minute + self.assumptions.instance_launch_seconds / 60)
            return start + self.assumptions.instance_launch_seconds / 60
        # Room on a running (or launching) instance.
        slot_instance = sorted(self.instances_ready_at)[needed - 1]
        return max(start, slot_instance - minute + start)

    def _release_instances(self) -> None:
        keep = max(self.shape.min_instances, self._instances_for(self.desired))
        self.instances_ready_at.sort()
        del self.instances_ready_at[keep:]

    def run_minute(self, minute: int, offered: float) -> Minute:
        """Carry one minute of load and emit its datapoints."""
        shape, assumptions = self.shape, self.assumptions
        serving = self.serving(minute)
        record = Minute(
            minute=minute,
            offered=offered,
            desired=self.desired,
            serving=serving,
            starting=self.desired - serving,
            instances=len(self.instances_ready_at),
        )
        if serving == 0 and shape.asynchronous:
            self.backlog = record.queued = self.backlog + offered
        elif serving == 0:
            record.refused = offered
        else:
            per_minute = serving * shape.max_num_seqs * 60 / assumptions.request_seconds
            waiting = offered + self.backlog
            record.served = min(waiting, per_minute)
            record.queued = waiting - record.served
            # Asynchronous requests wait in the queue; a real-time one that found no slot within the
            # minute has timed out: "A customer's model containers must respond to requests within 60
            # seconds" (InvokeEndpoint, SageMaker Runtime API reference). While it waited (half a minute
            # on average) it counted as in flight.
            self.backlog = record.queued if shape.asynchronous else 0.0
            waited = record.queued if shape.asynchronous else record.queued / 2
            in_flight = record.served * assumptions.request_seconds / 60 + waited
            record.in_flight_per_unit = in_flight / serving
            if record.served:
                record.latency_seconds = INVOKE_TIMEOUT_SECONDS if record.queued else assumptions.request_seconds
        record.datapoints = self._datapoints(record)
        return record

    def _datapoints(self, record: Minute) -> dict[str, Datapoint]:
        shape, assumptions = self.shape, self.assumptions
        invocations = record.served + (record.refused if assumptions.refused_count_as_invocations else 0.0)
        serving = record.serving
        per_unit_invocations = invocations / serving if serving and invocations else None
        concurrency = (
            record.in_flight_per_unit
            if serving and (record.in_flight_per_unit > 0 or assumptions.idle_concurrency_reported_as_zero)
            else None
        )
        gpu_share = min(1.0, record.in_flight_per_unit / shape.max_num_seqs) * 100 if serving else None
        return {
            "Invocations": invocations or None,
            "InvocationsPerCopy": per_unit_invocations,
            "InvocationsPerInstance": per_unit_invocations,
            "ConcurrentRequestsPerCopy": concurrency,
            "ConcurrentRequestsPerModel": concurrency,
            "NoCapacityInvocationFailures": record.refused or None,
            "ModelLatency": None if record.latency_seconds is None else record.latency_seconds * 1_000_000,
            "GPUUtilizationNormalized": gpu_share,
            "GPUUtilization": None if gpu_share is None else gpu_share * shape.gpus_per_unit,
            # Asynchronous endpoints: the queue (in flight included, an assumption) and whether it waits for capacity.
            "ApproximateBacklogSize": record.queued + record.served * assumptions.request_seconds / 60,
            "ApproximateBacklogSizePerInstance": (record.queued + record.served * assumptions.request_seconds / 60)
            / serving
            if serving
            else None,
            "HasBacklogWithoutCapacity": 1.0 if record.queued and not serving else 0.0,
        }


MODELLED_METRICS = frozenset(
    {
        "Invocations",
        "InvocationsPerCopy",
        "InvocationsPerInstance",
        "ConcurrentRequestsPerCopy",
        "ConcurrentRequestsPerModel",
        "NoCapacityInvocationFailures",
        "ModelLatency",
        "GPUUtilizationNormalized",
        "GPUUtilization",
        "ApproximateBacklogSize",
        "ApproximateBacklogSizePerInstance",
        "HasBacklogWithoutCapacity",
    }
)


def aggregate(history: list[Minute], stat: MetricStat, at: int) -> Datapoint:
    """The datapoint of ``stat`` for the period ending at minute ``at`` (periods of whole minutes)."""
    minutes = max(1, stat.period_seconds // 60)
    values = [
        record.datapoints.get(stat.name) for record in history[max(0, at - minutes + 1) : at + 1] if record.minute <= at
    ]
    present = [value for value in values if value is not None]
    if not present:
        return None
    if stat.statistic == "Sum":
        return sum(present)
    if stat.statistic in ("Maximum",) or stat.statistic.startswith("p"):
        return max(present)
    if stat.statistic == "Minimum":
        return min(present)
    if stat.statistic == "SampleCount":
        return float(len(present))
    return sum(present) / len(present)
