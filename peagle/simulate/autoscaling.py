"""Application Auto Scaling acting on one scalable target, as its documentation describes it.

Step scaling (API reference, StepScalingPolicyConfiguration and StepAdjustment,
https://docs.aws.amazon.com/autoscaling/application/APIReference/API_StepScalingPolicyConfiguration.html,
and botocore's application-autoscaling service-2.json):
- bounds are relative to the alarm threshold, closed towards it: with a threshold of 50, "To initiate
  the adjustment when the metric is greater than or equal to 50 and less than 60, specify a lower bound
  of 0 and an upper bound of 10"; "To initiate the adjustment when the metric is greater than 40 and
  less than or equal to 50, specify a lower bound of -10 and an upper bound of 0" (StepAdjustment);
- ``ExactCapacity`` sets the capacity, ``ChangeInCapacity`` adds, ``PercentChangeInCapacity`` scales;
  the step is chosen on the alarm's datapoints aggregated by ``MetricAggregationType`` ("If the
  aggregation type is null, the value is treated as Average");
- Cooldown: "If not specified, the default value is 300" (StepScalingPolicyConfiguration.Cooldown). "After
  Application Auto Scaling successfully scales out using a step scaling policy, it starts to calculate
  the cooldown time. The scaling policy won't increase the desired capacity again unless either a larger
  scale out is triggered or the cooldown period ends. While the cooldown period is in effect, capacity
  added by the initiating scale-out activity is calculated as part of the desired capacity for the next
  scale-out activity." So every scale-out starts a cooldown. "With scale-in policies ... scale-in
  activities are blocked until the cooldown period has expired. However, if another alarm triggers a
  scale-out activity during the cooldown period after a scale-in activity, Application Auto Scaling
  scales out the target immediately. In this case, the cooldown period for the scale-in activity stops
  and doesn't complete." Which of the two scale-out sentences decides after another policy lowered the
  capacity is ``Assumptions.cooldown_after_lowered``, run both ways.
- Target tracking's default cooldowns (TargetTrackingScalingPolicyConfiguration ScaleOutCooldown):
  "Application Auto Scaling provides a default value of 300 for ... Amazon SageMaker endpoint variants
  ... For all other scalable targets, the default value is 0". Inference components are not in the list: 0.

Target tracking ("Target tracking scaling policies for Application Auto Scaling",
https://docs.aws.amazon.com/autoscaling/application/userguide/application-auto-scaling-target-tracking.html):
"Application Auto Scaling creates and manages the CloudWatch alarms that trigger the scaling policy and
calculates the scaling adjustment based on the metric and the target value"; the metric "must increase
or decrease proportionally to the capacity", so the new capacity here is ceil(units x metric / target).
"If the metric is missing data points, this causes the CloudWatch alarm state to change to
INSUFFICIENT_DATA. When this happens, Application Auto Scaling cannot scale" (same guide): the managed
alarms treat missing data as missing. They are not part of the API; ``TRACKING_ALARMS`` holds the shape
AWS shows for them.

Several policies: "Application Auto Scaling gives precedence to the policy that provides the largest
capacity for both scale out and scale in" (PutScalingPolicy); ``Assumptions.conflicts`` says whether
that rule or one-action-after-another applies to alarms acting in the same minute. A change while the
target is still provisioning the previous one follows ``Assumptions.updates_while_updating``. Capacity
stays within MinCapacity and MaxCapacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from peagle.settings.schedules import ScheduledAction
from peagle.simulate.cloudwatch import ALARM, AlarmState
from peagle.simulate.scaling_template import (
    Alarm,
    ScalableTarget,
    StepAdjustment,
    StepPolicy,
    TargetTrackingPolicy,
)

VARIANT_DEFAULT_COOLDOWN_SECONDS = 300  # target tracking on a variant; other targets 0
STEP_DEFAULT_COOLDOWN_SECONDS = 300  # any step policy without Cooldown

# The alarms of a target-tracking policy, (datapoints above the target to scale out, datapoints under
# SCALE_IN_SHARE of it to scale in), in one-minute datapoints. One-minute metrics: 3 of 3 above and 15 of
# 15 below, as the AlarmHigh/AlarmLow pair AWS creates is shown in the Application Auto Scaling user
# guide's examples. The 10-second SageMaker metrics: scale-out within a minute, and scale-in after "90
# 10-second data points" (15 minutes) of low load ("Unlock cost savings with the new scale down to zero
# feature in SageMaker Inference", AWS Machine Learning Blog, 2024-12-03).
TRACKING_ALARMS = {False: (3, 15), True: (1, 15)}
SCALE_IN_SHARE = 0.9


@dataclass
class Proposal:
    policy: str
    capacity: int
    direction: str  # "out" | "in"


class _Cooldowns:
    def __init__(self, out_seconds: int, in_seconds: int, reading: str, consulted: set[str]) -> None:
        self.out_seconds, self.in_seconds, self.reading = out_seconds, in_seconds, reading
        self.consulted = consulted
        self.out_until = -math.inf
        self.out_base = 0  # the capacity before the scale-out that started the running cooldown
        self.out_set = 0  # the capacity that scale-out set
        self.in_until = -math.inf

    def scale_out(self, current: int, change, minute: int) -> int:
        """The capacity ``change(base)`` asks for. During the cooldown the base is the capacity before the
        initiating scale-out (what it added counts as desired); with the ``blocked`` reading only a scale-out
        larger than the initiating one acts until the cooldown ends."""
        if minute >= self.out_until:
            return max(current, change(current))
        desired = change(self.out_base)
        if current < desired <= self.out_set:
            self.consulted.add("cooldown_after_lowered")  # the two readings part here
            if self.reading == "blocked":
                return current
        return max(current, desired)

    def record(self, before: int, after: int, minute: int) -> None:
        if after > before:
            # Every successful scale-out starts a cooldown. One inside a running cooldown continues it: the
            # capacity before the first one stays the base, so what they added counts as desired (rebasing
            # on each would let a repeated step add its whole adjustment again every minute).
            if minute >= self.out_until:
                self.out_base = before
            self.out_set = after
            self.out_until = minute + self.out_seconds / 60
        elif after < before:
            self.in_until = minute + self.in_seconds / 60


class PolicyRuntime:
    """One policy and its alarms."""

    label: str
    alarms: list[AlarmState]
    cooldowns: _Cooldowns

    def propose(self, current: int, serving: int, minute: int) -> Proposal | None: ...

    def record(self, before: int, after: int, minute: int) -> None:
        self.cooldowns.record(before, after, minute)

    def cancel_scale_in_cooldown(self) -> None:
        self.cooldowns.in_until = -math.inf


class StepRuntime(PolicyRuntime):
    def __init__(self, policy: StepPolicy, alarms: list[AlarmState], reading: str, consulted: set[str]) -> None:
        self.policy, self.alarms, self.label = policy, alarms, policy.logical_id
        cooldown = STEP_DEFAULT_COOLDOWN_SECONDS if policy.cooldown_seconds is None else policy.cooldown_seconds
        self.cooldowns = _Cooldowns(cooldown, cooldown, reading, consulted)

    def propose(self, current: int, serving: int, minute: int) -> Proposal | None:
        proposals = []
        for alarm_state in self.alarms:
            if alarm_state.state != ALARM:
                continue
            step = step_for(self.policy, alarm_state.alarm, _aggregated(self.policy, alarm_state.evaluated))
            if step is None:
                continue
            adjusted = _adjusted(self.policy, step)
            if adjusted(current) > current:
                capacity = self.cooldowns.scale_out(current, adjusted, minute)
                if capacity > current:
                    proposals.append(Proposal(self.label, capacity, "out"))
            elif adjusted(current) < current and minute >= self.cooldowns.in_until:
                proposals.append(Proposal(self.label, adjusted(current), "in"))
        return max(proposals, key=lambda proposal: proposal.capacity, default=None)


class TrackingRuntime(PolicyRuntime):
    def __init__(self, policy: TargetTrackingPolicy, default_cooldown: int, reading: str, consulted: set[str]) -> None:
        self.policy, self.label = policy, policy.logical_id
        out_datapoints, in_datapoints = TRACKING_ALARMS[policy.high_resolution]
        self.high = _managed_alarm(policy, "AlarmHigh", "GreaterThanThreshold", policy.target_value, out_datapoints)
        self.low = _managed_alarm(
            policy, "AlarmLow", "LessThanThreshold", SCALE_IN_SHARE * policy.target_value, in_datapoints
        )
        self.alarms = [self.high] if policy.disable_scale_in else [self.high, self.low]
        self.cooldowns = _Cooldowns(
            default_cooldown if policy.scale_out_cooldown_seconds is None else policy.scale_out_cooldown_seconds,
            default_cooldown if policy.scale_in_cooldown_seconds is None else policy.scale_in_cooldown_seconds,
            reading,
            consulted,
        )

    def propose(self, current: int, serving: int, minute: int) -> Proposal | None:
        value = self.high.last_value
        if value is None or serving == 0:
            return None  # no metric, or no unit to divide the load by: target tracking cannot compute
        needed = math.ceil(round(serving * value / self.policy.target_value, 9))
        if self.high.state == ALARM and needed > current:
            capacity = self.cooldowns.scale_out(current, lambda base: needed, minute)
            return Proposal(self.label, capacity, "out") if capacity > current else None
        if (
            self.low in self.alarms
            and self.low.state == ALARM
            and needed < current
            and minute >= self.cooldowns.in_until
        ):
            return Proposal(self.label, needed, "in")
        return None


class TargetScaling:
    """All of one scalable target's policies and alarms. ``consulted`` collects the open readings
    (``Assumptions`` fields) whose value made a difference at least once: a reading never consulted cannot
    change the timeline."""

    def __init__(self, target: ScalableTarget, conflicts: str, cooldown_reading: str = "counted") -> None:
        self.target, self.conflicts = target, conflicts
        # The bounds policies act within; scheduled actions change them (``schedule``).
        self.min_capacity, self.max_capacity = target.min_capacity, target.max_capacity
        self.consulted: set[str] = set()
        default = VARIANT_DEFAULT_COOLDOWN_SECONDS if target.unit == "instances" else 0
        states = {alarm.logical_id: AlarmState(alarm) for alarm in target.alarms}
        self.policies: list[PolicyRuntime] = [
            *(
                StepRuntime(
                    policy,
                    [state for state in states.values() if policy.logical_id in state.alarm.policy_ids],
                    cooldown_reading,
                    self.consulted,
                )
                for policy in target.step_policies
            ),
            *(TrackingRuntime(policy, default, cooldown_reading, self.consulted) for policy in target.target_tracking),
        ]

    def alarm_states(self) -> list[AlarmState]:
        return [state for policy in self.policies for state in policy.alarms]

    def act(
        self, current: int, serving: int, minute: int, *, updating: bool = False, wait_for_updates: bool = False
    ) -> tuple[int, list[str]]:
        """The capacity after this minute's actions, and what acted. ``updating``: the target is still
        provisioning its last change; with ``wait_for_updates`` it takes none now, the alarms act again next
        minute, and a policy whose activity did not happen starts no cooldown."""
        proposals = self._proposals(current, serving, minute)
        if not proposals:
            return current, []
        if updating:
            self.consulted.add("updates_while_updating")
        if len(proposals) > 1:
            self.consulted.add("conflicts")
        if updating and wait_for_updates:
            return current, [
                f"{self._said(proposal, current)} (waits: the last change is still starting)"
                for _, proposal in proposals
            ]
        if self.conflicts == "largest":
            outs = [item for item in proposals if item[1].direction == "out"]
            policy, proposal = max(outs or proposals, key=lambda item: item[1].capacity)
            return self._apply(policy, proposal, current, minute), [self._said(proposal, current)]
        said = []
        for policy, _ in sorted(proposals, key=lambda item: item[1].direction != "out"):
            again = dict((id(p), q) for p, q in self._proposals(current, serving, minute))  # from what was left
            proposal = again.get(id(policy))
            if proposal is not None:
                before = current
                current = self._apply(policy, proposal, current, minute)
                said.append(self._said(proposal, before))
        return current, said

    def _proposals(self, current: int, serving: int, minute: int) -> list[tuple[PolicyRuntime, Proposal]]:
        proposals = [
            (policy, proposal)
            for policy in self.policies
            if (proposal := policy.propose(current, serving, minute)) is not None
        ]
        # "You can have multiple target tracking scaling policies for a scalable target, provided that each
        # of them uses a different metric. Application Auto Scaling scales based on the policy that provides
        # the largest capacity for both scale in and scale out" (Application Auto Scaling User Guide,
        # "Target tracking scaling policies"): a tracking policy not ready to scale in provides the current
        # capacity, so scale-in needs all of them ready, and goes to the largest capacity they ask for.
        # A scale-in the floor holds changes nothing: not an action (a scheduled floor would log one a minute).
        proposals = [(p, q) for p, q in proposals if not (q.direction == "in" and current <= self.min_capacity)]
        tracking = [
            policy
            for policy in self.policies
            if isinstance(policy, TrackingRuntime) and not policy.policy.disable_scale_in
        ]
        ins = [(p, q) for p, q in proposals if isinstance(p, TrackingRuntime) and q.direction == "in"]
        if ins:
            proposals = [(p, q) for p, q in proposals if (p, q) not in ins]
            if len(ins) == len(tracking):
                policy, proposal = max(ins, key=lambda item: item[1].capacity)
                proposals.append((policy, proposal))
        return proposals

    def _apply(self, policy: PolicyRuntime, proposal: Proposal, current: int, minute: int) -> int:
        capacity = min(self.max_capacity, max(self.min_capacity, proposal.capacity))
        policy.record(current, capacity, minute)
        if capacity > current:
            for other in self.policies:
                other.cancel_scale_in_cooldown()
        return capacity

    def schedule(self, action: ScheduledAction, current: int) -> tuple[int, str]:
        """A scheduled action's new bounds, and the capacity they leave: out to the new minimum if below it,
        in to the new maximum if above it (schedules.py quotes the rule); the policies then act within
        them."""
        if action.min_capacity is not None:
            self.min_capacity = action.min_capacity
        if action.max_capacity is not None:
            self.max_capacity = action.max_capacity
        # One bound given past the other (the overview's considerations: "you must include both sizes to ensure
        # that the new minimum capacity is not higher than the maximum capacity"): what the service then does
        # is not documented; the simulator lets the action's bound win.
        if self.min_capacity > self.max_capacity:
            if action.min_capacity is not None:
                self.max_capacity = self.min_capacity
            else:
                self.min_capacity = self.max_capacity
        capacity = min(self.max_capacity, max(self.min_capacity, current))
        said = f"scheduled {action.name}: bounds {self.min_capacity}-{self.max_capacity}"
        return capacity, said + (f": {current} -> {capacity}" if capacity != current else "")

    @staticmethod
    def _said(proposal: Proposal, before: int) -> str:
        return f"{proposal.policy}: {before} -> {proposal.capacity}"


def _managed_alarm(
    policy: TargetTrackingPolicy, suffix: str, comparison: str, threshold: float, datapoints: int
) -> AlarmState:
    """One of the alarms Application Auto Scaling manages for a target-tracking policy."""
    return AlarmState(
        Alarm(
            logical_id=f"{policy.logical_id}-{suffix}",
            description=f"target tracking: {comparison} {threshold:g}",
            query=policy.query,
            comparison=comparison,
            threshold=threshold,
            evaluation_periods=datapoints,
            datapoints_to_alarm=datapoints,
            treat_missing_data="missing",
            policy_ids=(policy.logical_id,),
        )
    )


def _aggregated(policy: StepPolicy, values: list[float]) -> float | None:
    """The alarm's evaluated datapoints aggregated by the policy's MetricAggregationType (None: none real,
    the alarm breaches through missing data treated as breaching)."""
    if not values:
        return None
    if policy.aggregation == "Minimum":
        return min(values)
    if policy.aggregation == "Maximum":
        return max(values)
    return sum(values) / len(values)


def step_for(policy: StepPolicy, alarm: Alarm, value: float | None) -> StepAdjustment | None:
    """The step adjustment for ``value``: its difference from the threshold lies in the step's interval,
    closed at the end nearer the threshold (a lower bound >= 0 is inclusive, an upper bound <= 0 too)."""
    difference = 0.0 if value is None else value - alarm.threshold  # breaching through missing data
    for step in policy.steps:
        below = step.upper is not None and step.upper <= 0
        lower_ok = step.lower is None or (difference > step.lower if below else difference >= step.lower)
        upper_ok = step.upper is None or (difference <= step.upper if below else difference < step.upper)
        if lower_ok and upper_ok:
            return step
    return None


def _adjusted(policy: StepPolicy, step):
    if policy.adjustment_type == "ExactCapacity":
        return lambda base: step.adjustment
    if policy.adjustment_type == "PercentChangeInCapacity":

        def percent(base: int) -> int:
            change = base * step.adjustment / 100
            magnitude = max(abs(change), policy.min_adjustment_magnitude or 0)
            return base + int(math.copysign(math.floor(magnitude) or 1, change))

        return percent
    return lambda base: base + step.adjustment
