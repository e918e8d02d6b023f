"""The endpoint side of the simulation: units (copies or instances) that serve only after a start-up
delay, the requests they answer, refuse or let time out each minute, and the per-minute datapoints
they emit.

What AWS documents and this model follows:
- a component scaled to zero answers "no capacity" and emits ``NoCapacityInvocationFailures``:
  "SageMaker AI emits ... when an endpoint receives an inference request, but the endpoint has no
  active instances to serve the request" ("Scale an endpoint to zero instances",
  https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-zero-instances.html); "the
  provisioning process takes several minutes. During that time, any attempts to invoke the endpoint
  will produce an error" (same page);
- a real-time request is answered within 60 s or not at all: "A customer's model containers must
  respond to requests within 60 seconds" (InvokeEndpoint, SageMaker Runtime API reference);
- an asynchronous request waits in the queue up to its time-to-live: ``RequestTTLSeconds``, "Maximum
  age in seconds a request can be in the queue before it is marked as expired. The default is 6 hours,
  or 21,600 seconds" (InvokeEndpointAsync, botocore sagemaker-runtime service-2.json);
- ``ConcurrentRequestsPerCopy``/``ConcurrentRequestsPerModel`` count in-flight requests per unit,
  queued and streaming ones included; ``ModelLatency`` is in microseconds; ``GPUUtilization`` sums its
  GPUs, the components' ``GPUUtilizationNormalized`` is 0-100 ("Amazon SageMaker AI metrics in Amazon
  CloudWatch", https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html);
- managed instance scaling with ``IDLE_RELEASE`` "Releases instances that have no hosted inference
  component copies" (API reference, ProductionVariantManagedInstanceScalingScaleInPolicy); which instances the
  copies hold follows the placement strategy and scale-in policy the template states (peagle/simulate/placement.py,
  which also names what it assumes where AWS says nothing);
- a component with ``DataCacheConfig.EnableCaching`` caches "the model artifacts and container image":
  "With caching enabled, the endpoint caches this data in each instance that it provisions for the
  inference component. That way, the inference component deploys faster during the auto scaling process.
  If caching isn't enabled, the inference component takes longer to deploy because of the time it spends
  downloading the data" (API reference, InferenceComponentDataCacheConfig,
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentDataCacheConfig.html).
  The cache is on the instance and helps only a copy placed on one already running: "This approach reduced
  the cold start latency for scaling inference component operations that reuse existing instances", and a
  new instance is "the scenario where our previous instance-store-based caching couldn't help" ("Introducing
  container caching in Amazon SageMaker AI for faster model scaling", AWS Machine Learning Blog, 2026-06-16,
  https://aws.amazon.com/blogs/machine-learning/introducing-container-caching-in-amazon-sagemaker-ai-for-faster-model-scaling/;
  read here in copies of the post, not on the AWS page itself). So a copy on a new instance, a wake from zero
  with every instance released included, downloads again. How much time the cache saves AWS does not say:
  the ``data_cache`` reading.

Everything else is an ``Assumptions`` field, printed with every result; the deciding ones run both ways.
Requests are fluid (fractions of a request per minute), grouped in cohorts by the minute they were first
sent, so each one's wait is known.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field, replace

from peagle.catalog import Slo
from peagle.client.retry import RetryPolicy
from peagle.simulate.scaling_template import MetricStat
from peagle.simulate.service_curve import ServiceCurve
from peagle.simulate.unit_shape import UnitShape

Datapoint = float | None
INVOKE_TIMEOUT_SECONDS = 60.0
ASYNC_DEFAULT_TTL_SECONDS = 21_600.0
# peagle.client (peagle/client/retry.py RetryPolicy): every send, the first included, counts towards
# max_attempts; a client waiting for a copy sleeps between half and all of the cold-start delay cap.
RETRY_MAX_ATTEMPTS = RetryPolicy().max_attempts
COLD_START_SENDS_PER_MINUTE = 60 / (0.75 * RetryPolicy().cold_start_max_delay_s)


@dataclass(frozen=True)
class Reading:
    """One rule AWS leaves open, with the values the simulator runs it both ways with."""

    field: str
    flag: str  # the `peagle simulate` option that picks one value
    question: str
    values: tuple[tuple[object, str, str], ...]  # (value, the option's word for it, what it means)

    # (value, what it means): the value when the rule does not arise for a target (``data_cache`` for a target
    # whose component caches nothing); it is not an option's word, and a label leaves it out.
    inapplicable: tuple[object, str] | None = None

    def describe(self, value: object) -> str:
        if self.inapplicable is not None and value == self.inapplicable[0]:
            return self.inapplicable[1]
        return next(text for candidate, _, text in self.values if candidate == value)

    def applies(self, value: object) -> bool:
        return self.inapplicable is None or value != self.inapplicable[0]

    def value_of(self, word: str) -> object:
        return next(value for value, candidate, _ in self.values if candidate == word)


# The rules AWS does not settle that decide outcomes: every run covers each of them both ways.
READINGS = (
    Reading(
        "refused_count_as_invocations",
        "--refused-counted",
        "Does a request refused for lack of capacity count in Invocations? No AWS page says.",
        (
            (False, "no", "refused requests do not count in Invocations"),
            (True, "yes", "refused requests count in Invocations"),
        ),
    ),
    Reading(
        "conflicts",
        "--conflicts",
        "Two alarms acting on one target in the same minute: is that PutScalingPolicy's conflict (\"the "
        'policy that provides the largest capacity"), or two scaling activities applied in turn?',
        (
            ("largest", "largest", "actions in one minute: the largest capacity wins"),
            ("in-turn", "in-turn", "actions in one minute: applied in turn, scale-in last"),
        ),
    ),
    Reading(
        "cooldown_after_lowered",
        "--cooldown",
        "A scale-out policy's cooldown is running and another policy lowered the capacity: may the first add "
        'again at once ("capacity added by the initiating scale-out activity is calculated as part of the '
        'desired capacity"), or only for "a larger scale out" until the cooldown ends?',
        (
            (
                "counted",
                "counted",
                "in a scale-out cooldown the added capacity counts as desired: lost capacity is re-added",
            ),
            (
                "blocked",
                "blocked",
                "in a scale-out cooldown only a larger scale-out acts: lost capacity waits for its end",
            ),
        ),
    ),
    Reading(
        "updates_while_updating",
        "--updates",
        "A capacity change arrives while the previous one is still provisioning (the endpoint or component "
        "is Updating): does it apply at once, or wait until the update completes? SageMaker documents only "
        'that UpdateEndpointWeightsAndCapacities "sets the endpoint status to Updating" until it is done.',
        (
            ("at-once", "at-once", "a change while units start applies at once (starting units may be cancelled)"),
            (
                "after-update",
                "after-update",
                "a change while units start waits for them (the alarm repeats it each minute)",
            ),
        ),
    ),
    Reading(
        "data_cache",
        "--data-cache",
        "A component whose template caches its data (DataCacheConfig.EnableCaching, the weights downloaded by "
        "SageMaker from the model's ModelDataSource): AWS says only that it \"deploys faster during the auto scaling "
        'process" (InferenceComponentDataCacheConfig), with no figure. Does a copy added on an instance that has '
        "already hosted one skip the model download, or gain nothing to count on? Either way a copy on a new "
        "instance (a wake from zero included) downloads: the cache goes with the instance.",
        (
            (
                "on-instance",
                "on-instance",
                "data cache on the instance: a copy added where one has run skips the model download; a new "
                "instance (a wake from zero included) downloads again",
            ),
            ("no-gain", "no-gain", "data cache saves no time: every copy downloads"),
        ),
        inapplicable=("off", "the component caches no model data: every copy downloads"),
    ),
)
READING_FIELDS = tuple(reading.field for reading in READINGS)


@dataclass(frozen=True)
class Assumptions:
    """What the simulation assumes where AWS does not say. Each field's comment says why its default."""

    # The deciding readings (READINGS), each run both ways.
    refused_count_as_invocations: bool = False
    conflicts: str = "largest"  # largest | in-turn
    cooldown_after_lowered: str = "counted"  # counted | blocked
    updates_while_updating: str = "at-once"  # at-once | after-update
    # on-instance | no-gain; "off" where the target's component caches no model data (scenarios.run sets it from
    # the template, UnitShape.data_cache), so the reading runs both ways only where it can matter.
    data_cache: str = "off"
    # Model download + container start-up of a new unit, seconds; ``startup_basis`` says where it came from
    # (scenarios.base_assumptions: a typical start estimated from the plan, or the plan's whole budget).
    startup_seconds: float = 0.0
    startup_basis: str = "given"
    # A copy's start when its instance already holds the component's cached data (the ``on-instance`` reading):
    # ``startup_seconds`` without the model download (scenarios.base_assumptions). None: no shorter than a start.
    cached_startup_seconds: float | None = None
    # An instance's launch before its first copy or model starts: "several minutes" (scale-to-zero page).
    instance_launch_seconds: float = 300.0
    # Mean time a request holds one of vLLM's max_num_seqs slots; default: half the profile's p90 SLA. Used only
    # without a measured service curve (``service``), and for asynchronous endpoints.
    request_seconds: float = 5.0
    # What one unit does at each load, measured by `peagle capacity` (peagle/simulate/service_curve.py): a
    # real-time unit then serves each minute at the rate the minute gives it, with that rate's time per request
    # and share of requests within the SLO. None: the fixed slots above, and the SLO's TTFT and TPOT not checked.
    service: ServiceCurve | None = None
    # Without a measured curve: the roofline estimate's low and high bounds (peagle/simulate/service_estimate.py),
    # each minute's requests judged against the SLO by both; empty where the estimate has no figures.
    estimates: tuple[ServiceCurve, ...] = ()
    # Tokens one request holds in the KV cache (prompt + output) where requests are long: a unit then runs at most
    # the requests its KV cache holds (UnitShape.kv_cache_tokens / this), fewer than max_num_seqs when prompts are
    # long, and the rest wait in vLLM's queue (RequestsWaiting). None: the slots are max_num_seqs (the planner sizes
    # the KV cache for max_num_seqs requests of the profile's typical context). Fixed slots only: a measured service
    # curve already holds what the KV cache did to the measured unit.
    context_tokens: float | None = None
    # Output tokens per answered request, for the cost per 1M output tokens; default: half max_tokens.
    output_tokens: float = 512.0
    # Clients refused "no capacity" retry as peagle.client does (its cold-start backoff, 5-30 s between
    # sends, so at least once a minute) until their cold-start wait is over ("retry"), or send once ("once").
    # A request that timed out is not retried (peagle.client's ResponseTimeoutError is final).
    clients: str = "retry"
    cold_start_wait_seconds: float = 0.0
    # An asynchronous request's RequestTTLSeconds (AWS's default).
    async_ttl_seconds: float = ASYNC_DEFAULT_TTL_SECONDS
    # An idle unit that serves reports ConcurrentRequestsPerCopy/PerModel 0; a minute without requests has
    # no Invocations datapoint (why the templates' idle alarms treat missing data as breaching).
    idle_concurrency_reported_as_zero: bool = True

    def deciding(self) -> list[str]:
        return [
            reading.describe(getattr(self, reading.field))
            for reading in READINGS
            if reading.applies(getattr(self, reading.field))
        ]

    @property
    def cached_start_seconds(self) -> float:
        """A copy's start on an instance that holds the component's cached data, under the ``on-instance``
        reading (``startup_seconds`` otherwise)."""
        if self.data_cache != "on-instance" or self.cached_startup_seconds is None:
            return self.startup_seconds
        return min(self.startup_seconds, self.cached_startup_seconds)

    def fixed(self) -> list[str]:
        clients = (
            f"clients retry as peagle.client does: what is refused for lack of capacity until their cold-start "
            f"wait ({self.cold_start_wait_seconds / 60:.0f} min) is over, {COLD_START_SENDS_PER_MINUTE:.1f} sends a "
            f"minute; what timed out up to {RETRY_MAX_ATTEMPTS} sends in all (an answer after a timeout is late)"
            if self.clients == "retry"
            else "clients send each request once: a refused or timed-out request is lost"
        )
        cached = (
            [
                "the component caches its model data (DataCacheConfig.EnableCaching in the template, or its instance "
                "type caches whatever that says): under the "
                f"on-instance reading a copy added on an instance that has hosted one serves after "
                f"{self.cached_startup_seconds or self.startup_seconds:.0f} s (the model download skipped), under "
                "no-gain after the whole start; a copy on a new instance, a wake from zero included, downloads: "
                'the cache is on the instance and goes with it (AWS Machine Learning Blog, "Introducing container '
                'caching in Amazon SageMaker AI for faster model scaling": a new instance is "the scenario where '
                "our previous instance-store-based caching couldn't help\")"
            ]
            if self.data_cache != "off"
            else []
        )
        return [
            f"a new unit serves after {self.startup_seconds:.0f} s of download + start-up ({self.startup_basis}),"
            f" plus {self.instance_launch_seconds:.0f} s when it needs a new instance",
            *cached,
            self.unit_model(),
            f"an answered request yields {self.output_tokens:g} output tokens",
            "a real-time request not answered within its minute times out (60 s) and reports ModelLatency 60 s",
            clients,
            f"an asynchronous request expires after {self.async_ttl_seconds / 3600:g} h in the queue",
            "idle serving units report concurrency 0"
            if self.idle_concurrency_reported_as_zero
            else "idle units report nothing",
            "an instance is billed from its launch until it is released",
            "datapoints are evaluated at the end of their minute, without publishing delay",
        ]

    def unit_model(self) -> str:
        """What a unit's service is modelled on, for every report."""
        if self.service is not None:
            return (
                f"a real-time unit serves as its {self.service.describe()} says: at the requests a minute brings each "
                "unit, the measured time per request and share within the SLO (interpolated between levels; no more "
                "than the highest rate measured); an asynchronous one holds each request "
                f"{self.request_seconds:g} s"
            )
        judged = (
            "the SLO's TTFT and TPOT are judged by the roofline estimate's low and high bounds ("
            + "; ".join(curve.source for curve in self.estimates)
            + "), a verdict they disagree on not checked"
            if self.estimates
            else "the SLO's TTFT and TPOT are not checked"
        )
        held = (
            f", at most the requests its KV cache holds at {self.context_tokens:g} tokens each"
            if self.context_tokens is not None
            else ""
        )
        return (
            f"a unit is a fixed number of slots (vLLM's max_num_seqs{held}), each request holding one for "
            f"{self.request_seconds:g} s whatever the load (the planner's estimate: half the profile's p90 latency "
            f"SLA, not measured): answered within the timeout is judged, {judged}; give a measured curve with "
            "--service-curve (`peagle capacity --out DIR` writes DIR/service-curve.json)"
        )

    def label(self) -> str:
        return ", ".join(
            [
                f"refused {'counted' if self.refused_count_as_invocations else 'not counted'}",
                f"conflicts {self.conflicts}",
                f"cooldown {self.cooldown_after_lowered}",
                f"updates {self.updates_while_updating}",
                *([f"data cache {self.data_cache}"] if self.data_cache != "off" else []),
            ]
        )

    def but(self, **changes) -> Assumptions:
        return replace(self, **changes)


@dataclass
class Cohort:
    """Requests first sent in one minute and not answered yet."""

    sent: int
    count: float
    timeouts: int = 0  # sends that timed out so far
    refused_since: int | None = None  # the first minute it was refused "no capacity" (its cold-start wait)


@dataclass
class Minute:
    """One minute of the endpoint: the load, what became of it, and what was emitted."""

    minute: int
    offered: float
    on_time: float = 0.0  # answered at the first send
    after_wait: float = 0.0  # answered after waiting for a unit (a cold start), retried meanwhile
    late: float = 0.0  # answered on a resend after a timeout: past 60 s, not within the SLO
    timed_out: float = 0.0  # real-time: no answer within 60 s, and no send left (or sent once)
    timeouts: float = 0.0  # sends that timed out this minute, resent or not
    refused: float = 0.0  # lost for lack of capacity: sent once, or the client's wait ran out
    refused_sends: float = 0.0  # every send refused "no capacity" this minute, retries included
    waiting: float = 0.0  # at the minute's end: retrying (real-time) or queued (asynchronous)
    expired: float = 0.0  # asynchronous: older than the request's time-to-live
    desired: int = 0
    floor: int | None = None  # the scaling's bounds in the minute (scheduled actions move them); None: the target's
    ceiling: int | None = None
    serving: int = 0
    starting: int = 0
    instances: int = 0
    in_flight_per_unit: float = 0.0
    # With a service curve: requests answered at their first send within the SLO's bounds, and the requests a
    # second sent to each serving unit (the curve's x).
    within_slo: float = 0.0
    unit_rate: float = 0.0
    request_seconds: float = 0.0  # the minute's time per answered request
    # (ModelLatency in seconds, requests): the minute's latency distribution.
    latency: tuple[tuple[float, float], ...] = ()
    waits: list[tuple[float, float]] = field(default_factory=list)  # (seconds from first send, requests)
    datapoints: dict[str, Datapoint] = field(default_factory=dict)
    alarms: dict[str, str] = field(default_factory=dict)
    actions: list[str] = field(default_factory=list)

    @property
    def served(self) -> float:
        """Answered in the minute, late ones included."""
        return self.on_time + self.after_wait + self.late

    @property
    def lost(self) -> float:
        """Not answered as the SLO asks: late, timed out, refused or expired."""
        return self.late + self.timed_out + self.refused + self.expired


@dataclass
class Host:
    """An instance of a component's endpoint: the minute it is up, the minute from which it holds the
    component's model data (a copy downloaded it there and served; inf: none has yet), and its copies."""

    ready_at: float
    cached_from: float = math.inf
    copies: int = 0


@dataclass
class Unit:
    requested: int  # the minute its scale-out took effect
    ready_at: float  # the minute it serves from
    host: Host | None = None  # the instance a copy is placed on (None: an instance's own unit, or no room)


@dataclass(frozen=True)
class CancelledStart:
    """A unit removed while it was still starting and none served: the requests it woke for are lost."""

    minute: int
    requested: int
    by: str


class Endpoint:
    """Units with start times on the instances that host them; ``set_desired`` is what Application Auto Scaling
    changes. One model for both kinds: a variant's instance is a host of one unit (units_per_instance 1, no pool
    minimum, no pool bound), so it starts with its unit and goes with it; a component's copies share hosts as the
    shape's placement says. What differs is the shape's (peagle/simulate/unit_shape.py), never asked here."""

    def __init__(self, shape: UnitShape, assumptions: Assumptions, initial: int, slo: Slo | None = None) -> None:
        self.shape, self.assumptions, self.slo = shape, assumptions, slo
        self.units: list[Unit] = [Unit(0, 0.0) for _ in range(initial)]  # the deploy's units serve from the start
        hosting = self._instances_for(initial)  # the deploy's copies downloaded there and serve from the start
        self.hosts: list[Host] = [
            Host(0.0, 0.0 if index < hosting else math.inf) for index in range(max(shape.min_instances, hosting))
        ]
        for index, unit in enumerate(self.units):  # the deploy's units fill its instances
            unit.host = self.hosts[index // shape.units_per_instance]
            unit.host.copies += 1
        self.last_change = 0  # the minute copies or instances last changed (a consolidation waits its cooldown)
        self.waiting: deque[Cohort] = deque()  # real-time requests refused "no capacity", retrying
        self.queue: deque[Cohort] = deque()  # asynchronous requests not served yet
        self.cancelled: list[CancelledStart] = []
        # The open readings (READINGS fields) the endpoint's own behaviour turned on (Timeline.consulted).
        self.consulted: set[str] = set()

    @property
    def desired(self) -> int:
        return len(self.units)

    def serving(self, minute: int) -> int:
        return sum(1 for unit in self.units if unit.ready_at <= minute)

    def updating(self, minute: int) -> bool:
        """A unit is still starting: the endpoint (or component) is Updating."""
        return any(unit.ready_at > minute for unit in self.units)

    @property
    def instances(self) -> int:
        return len(self.hosts)

    def set_desired(self, count: int, minute: int, by: str = "") -> None:
        if count != self.desired:
            self.last_change = minute
        if count < self.desired:
            removed = self._removed(self.desired - count, minute)
            self.units = [unit for unit in self.units if all(unit is not gone for gone in removed)]
            if self.serving(minute) == 0:
                self.cancelled += [
                    CancelledStart(minute, unit.requested, by) for unit in removed if unit.ready_at > minute
                ]
        while self.desired < count:
            self.units.append(self._started(minute))
        self._release_instances()

    def _removed(self, count: int, minute: int) -> list[Unit]:
        """The units a scale-in removes, counted off their instances: starting ones first (the newest first), then
        serving ones, a component's from the instance its placement empties first (placement.py)."""
        starting = sorted((unit for unit in self.units if unit.ready_at > minute), key=lambda unit: -unit.requested)
        removed = starting[:count]
        serving = [unit for unit in self.units if unit.ready_at <= minute]
        for unit in removed:
            if unit.host is not None:
                unit.host.copies -= 1
        while len(removed) < count and serving:
            unit = max(serving, key=self._removal_order)  # each choice sees the copies the last one took
            serving.remove(unit)
            removed.append(unit)
            if unit.host is not None:
                unit.host.copies -= 1
        return removed

    def _removal_order(self, unit: Unit) -> tuple:
        """Greatest first: BINPACK takes from the emptiest instance, SPREAD from the fullest; the newest instance, then
        the newest unit, breaks a tie."""
        host = unit.host
        if host is None:
            return (0, 0.0, unit.requested)
        load = -host.copies if self.shape.placement.packs else host.copies
        return (load, host.ready_at, unit.requested)

    def _instances_for(self, units: int) -> int:
        return self.shape.instances_holding(units)

    def _started(self, minute: int) -> Unit:
        """A new unit, placed on an instance with room as the placement says (BINPACK: the fullest, SPREAD: the
        emptiest, the oldest on a tie), on a new instance when none has room (always, for a variant's unit)."""
        start = self.assumptions.startup_seconds / 60
        launch = self.assumptions.instance_launch_seconds / 60
        room = [host for host in self.hosts if host.copies < self.shape.units_per_instance]
        if not room:
            if self.shape.beyond_pool(len(self.hosts) + 1):
                return Unit(minute, math.inf)  # no instance may be added: the copy waits for room that never comes
            # A new instance has no cache: its copy downloads, and the data is there once it serves.
            host = Host(minute + launch, minute + launch + start, copies=1)
            self.hosts.append(host)
            return Unit(minute, minute + start + launch, host)
        sign = -1 if self.shape.placement.packs else 1
        host = min(room, key=lambda candidate: (sign * candidate.copies, candidate.ready_at))
        if self.shape.data_cache and host.cached_from <= minute:
            # A copy of the component ran here and its data is cached on the instance: the reading decides.
            self.consulted.add("data_cache")
            start = self.assumptions.cached_start_seconds / 60
        ready = max(start, host.ready_at - minute + start)
        host.cached_from = min(host.cached_from, minute + ready)
        host.copies += 1
        return Unit(minute, minute + ready, host)

    def _release_instances(self) -> None:
        """The instances that host no unit go (a variant's with its unit; a pool's by IDLE_RELEASE, and CONSOLIDATION's
        idle instances), the newest first, down to managed instance scaling's minimum; their cache goes with them."""
        self.hosts.sort(key=lambda host: host.ready_at)
        empty = [host for host in self.hosts if host.copies == 0]
        spare = max(0, len(self.hosts) - self.shape.min_instances)
        for host in empty[len(empty) - min(spare, len(empty)) :]:
            self.hosts.remove(host)

    def consolidate(self, minute: int) -> None:
        """CONSOLIDATION: once its cooldown has passed since the last change, empty up to its step of the emptiest
        instances onto the others with room and release them (placement.py says what is assumed)."""
        placement = self.shape.placement
        if not placement.consolidates:
            return
        if minute - self.last_change < placement.cooldown_minutes:
            return
        moved = False
        for _ in range(placement.max_step):
            hosts = sorted(self.hosts, key=lambda host: (host.copies, -host.ready_at))
            if len(hosts) <= max(self.shape.min_instances, 1) or not hosts[0].copies:
                break
            source, others = hosts[0], hosts[1:]
            if sum(self.shape.units_per_instance - host.copies for host in others) < source.copies:
                break
            for unit in (unit for unit in self.units if unit.host is source):
                target = max(
                    (host for host in others if host.copies < self.shape.units_per_instance),
                    key=lambda host: host.copies,
                )
                unit.host, source.copies, target.copies = target, source.copies - 1, target.copies + 1
            self.hosts.remove(source)
            moved = True
        if moved:
            self.last_change = minute

    @property
    def outstanding(self) -> bool:
        """Requests sent and neither answered nor given up: clients still retrying, or still queued."""
        return any(cohort.count > 1e-9 for cohort in (*self.waiting, *self.queue))

    def run_minute(self, minute: int, offered: float) -> Minute:
        """Carry one minute of load and emit its datapoints."""
        self.consolidate(minute)
        serving = self.serving(minute)
        record = Minute(
            minute=minute,
            offered=offered,
            desired=self.desired,
            serving=serving,
            starting=self.desired - serving,
            instances=self.instances,
        )
        if self.shape.asynchronous:
            self._asynchronous(record)
        else:
            self._real_time(record)
        record.datapoints = self._datapoints(record)
        return record

    def _capacity(self, serving: int) -> float:
        """Requests a minute the serving units answer at most."""
        return serving * unit_rpm(self.shape, self.assumptions)

    def _curve(self) -> ServiceCurve | None:
        """The measured service curve, for a real-time unit (an asynchronous one keeps the fixed slots)."""
        return None if self.shape.asynchronous else self.assumptions.service

    def _real_time(self, record: Minute) -> None:
        """Retrying clients (``Assumptions.clients``) send again what was refused "no capacity" until
        their cold-start wait is over, and what timed out up to ``RetryPolicy.max_attempts`` sends in all,
        as peagle.client does (a SageMaker invocation timeout is a ModelError without a status, which
        peagle/client/retry.py retries); the resends come in the next minute."""
        assumptions, minute = self.assumptions, record.minute
        retrying = assumptions.clients == "retry"
        limit = assumptions.cold_start_wait_seconds / 60
        still = deque()
        for cohort in self.waiting:
            if cohort.refused_since is not None and minute - cohort.refused_since > limit:
                record.refused += cohort.count  # the client's cold-start wait is over
            else:
                still.append(cohort)
        self.waiting = still
        if record.offered:
            self.waiting.append(Cohort(minute, record.offered))
        if record.serving == 0:
            # Every waiting client sends again before the minute is out (peagle.client's cold-start backoff
            # is 5-30 s); a new one sends for the first time.
            for cohort in self.waiting:
                first = cohort.sent == minute and cohort.refused_since is None
                record.refused_sends += cohort.count * (1 if first else COLD_START_SENDS_PER_MINUTE)
                if cohort.refused_since is None:
                    cohort.refused_since = minute
            if not retrying:
                record.refused += sum(cohort.count for cohort in self.waiting)
                self.waiting.clear()
            record.waiting = sum(cohort.count for cohort in self.waiting)
            return
        room = self._capacity(record.serving)
        curve = self._curve()
        # The curve's x: the requests a second sent to each serving unit (what its levels offered), not the share it
        # can serve: past its highest rate a unit is as slow as its saturated levels were, and serves no more.
        record.unit_rate = sum(cohort.count for cohort in self.waiting) / 60 / record.serving
        request_seconds = curve.request_seconds(record.unit_rate) if curve else assumptions.request_seconds
        record.request_seconds = request_seconds
        resent: deque[Cohort] = deque()
        for cohort in self.waiting:  # oldest first: the retrying clients' next send finds the unit
            taken = min(cohort.count, room)
            room -= taken
            if cohort.timeouts:
                record.late += taken
            elif cohort.refused_since is not None:
                record.after_wait += taken
            else:
                record.on_time += taken
            if taken:
                record.waits.append(((minute - cohort.sent) * 60 + request_seconds, taken))
            left = cohort.count - taken  # a unit serves, but no slot frees within 60 s
            if left > 1e-9:
                record.timeouts += left
                if retrying and cohort.timeouts + 2 <= RETRY_MAX_ATTEMPTS:
                    resent.append(Cohort(cohort.sent, left, cohort.timeouts + 1, cohort.refused_since))
                else:
                    record.timed_out += left
        self.waiting = resent
        record.waiting = sum(cohort.count for cohort in resent)
        # Little's law: an answered request is in flight for its request time, a timed-out one for 60 s.
        in_flight = record.served * request_seconds / 60 + record.timeouts
        record.in_flight_per_unit = in_flight / record.serving
        record.latency = ((request_seconds, record.served), (INVOKE_TIMEOUT_SECONDS, record.timeouts))
        if curve is not None and self.slo is not None:
            record.within_slo = record.on_time * curve.slo_share(self.slo, record.unit_rate)

    def _asynchronous(self, record: Minute) -> None:
        assumptions, minute = self.assumptions, record.minute
        ttl = assumptions.async_ttl_seconds / 60
        while self.queue and minute - self.queue[0].sent > ttl:
            record.expired += self.queue.popleft().count
        if record.offered:
            self.queue.append(Cohort(minute, record.offered))
        room = self._capacity(record.serving)
        record.request_seconds = assumptions.request_seconds
        while self.queue and room > 0:
            cohort = self.queue[0]
            taken = min(cohort.count, room)
            room -= taken
            cohort.count -= taken
            if cohort.sent == minute:
                record.on_time += taken
            else:
                record.after_wait += taken
            record.waits.append(((minute - cohort.sent) * 60 + assumptions.request_seconds, taken))
            if cohort.count <= 1e-9:
                self.queue.popleft()
        record.waiting = sum(cohort.count for cohort in self.queue)
        if record.serving:
            record.in_flight_per_unit = record.served * assumptions.request_seconds / 60 / record.serving
            record.latency = ((assumptions.request_seconds, record.served),)

    def _datapoints(self, record: Minute) -> dict[str, Datapoint]:
        shape, assumptions = self.shape, self.assumptions
        invoked = record.served + record.timeouts
        invocations = invoked + (record.refused_sends if assumptions.refused_count_as_invocations else 0.0)
        serving = record.serving
        per_unit_invocations = invocations / serving if serving and invocations else None
        concurrency = (
            record.in_flight_per_unit
            if serving and (record.in_flight_per_unit > 0 or assumptions.idle_concurrency_reported_as_zero)
            else None
        )
        gpu_share = min(1.0, record.in_flight_per_unit / shape.max_num_seqs) * 100 if serving else None
        # vLLM's requests waiting per serving unit, as the KPI lines report it (their RequestsWaiting, Average): what is
        # in flight beyond the requests a unit runs at once. A minute's requests no slot takes time out and count as
        # in flight for the whole minute (Little's law above), so they are the queue.
        waiting = max(0.0, record.in_flight_per_unit - running_slots(shape, assumptions)) if serving else None
        in_flight = record.served * record.request_seconds / 60
        backlog = record.waiting + in_flight
        return {
            "Invocations": invocations or None,
            "InvocationsPerCopy": per_unit_invocations,
            "InvocationsPerInstance": per_unit_invocations,
            "ConcurrentRequestsPerCopy": concurrency,
            "ConcurrentRequestsPerModel": concurrency,
            "RequestsWaiting": waiting,
            "NoCapacityInvocationFailures": record.refused_sends or None,
            "GPUUtilizationNormalized": gpu_share,
            "GPUUtilization": None if gpu_share is None else gpu_share * shape.gpus_per_unit,
            # Asynchronous endpoints: the queue (in flight included, an assumption) and whether it waits for capacity.
            "ApproximateBacklogSize": backlog,
            "ApproximateBacklogSizePerInstance": backlog / serving if serving else None,
            "HasBacklogWithoutCapacity": 1.0 if record.waiting and not serving else 0.0,
        }


def running_slots(shape: UnitShape, assumptions: Assumptions) -> float:
    """Requests one unit runs at once: vLLM's max_num_seqs, or fewer where the KV cache holds fewer requests of
    ``Assumptions.context_tokens`` each: vLLM's scheduler takes a request only when ``kv_cache_manager.allocate_slots``
    finds its blocks ("# The request cannot be scheduled." otherwise; vllm/v1/core/sched/scheduler.py, Scheduler.schedule),
    so the rest wait. A measured curve holds its own limit."""
    if assumptions.context_tokens is None or shape.kv_cache_tokens is None or shape.asynchronous:
        return float(shape.max_num_seqs)
    return float(max(1, min(shape.max_num_seqs, int(shape.kv_cache_tokens // assumptions.context_tokens))))


def unit_rpm(shape: UnitShape, assumptions: Assumptions) -> float:
    """Requests a minute one unit answers at most: the highest rate its service curve measured (a real-time unit),
    else every slot it runs (``running_slots``) busy for the fixed request time."""
    if assumptions.service is not None and not shape.asynchronous:
        return assumptions.service.max_rps * 60
    return running_slots(shape, assumptions) * 60 / assumptions.request_seconds


MODELLED_METRICS = frozenset(
    {
        "Invocations",
        "InvocationsPerCopy",
        "InvocationsPerInstance",
        "ConcurrentRequestsPerCopy",
        "ConcurrentRequestsPerModel",
        "RequestsWaiting",
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
    records = history[max(0, at - minutes + 1) : at + 1]
    if stat.name == "ModelLatency":
        return _latency(records, stat.statistic)
    present = [value for record in records if (value := record.datapoints.get(stat.name)) is not None]
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


def _latency(records: list[Minute], statistic: str) -> Datapoint:
    """ModelLatency (microseconds) over the requests of ``records``: a percentile is the latency below which
    that share of the requests fall, so a p90 moves only when more than 10 % are slow."""
    counts: dict[float, float] = {}
    for record in records:
        for seconds, requests in record.latency:
            if requests > 0:
                counts[seconds] = counts.get(seconds, 0.0) + requests
    total = sum(counts.values())
    if total <= 0:
        return None
    ordered = sorted(counts.items())
    if statistic == "Maximum":
        value = ordered[-1][0]
    elif statistic == "Minimum":
        value = ordered[0][0]
    elif statistic.startswith("p"):
        rank, seen, value = float(statistic[1:]) / 100 * total, 0.0, ordered[-1][0]
        for seconds, requests in ordered:
            seen += requests
            if seen >= rank - 1e-9:
                value = seconds
                break
    else:  # Average (SampleCount and Sum are not used on latency)
        value = sum(seconds * requests for seconds, requests in ordered) / total
    return value * 1_000_000
