"""CloudWatch alarm evaluation, as the Amazon CloudWatch User Guide documents it.

- "Alarm evaluation" (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-evaluation.html):
  "Evaluation Periods is the number of the most recent periods, or data points, to evaluate when
  determining alarm state. Datapoints to Alarm is the number of data points within the Evaluation
  Periods that must be breaching to cause the alarm to go to the ALARM state."
- "Configuring how CloudWatch alarms treat missing data"
  (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-missing-data.html):
  "notBreaching - Missing data points are treated as "good" and within the threshold"; "breaching -
  Missing data points are treated as "bad" and breaching the threshold"; "ignore - The current alarm
  state is maintained"; "missing - If all data points in the alarm evaluation range are missing, the
  alarm transitions to INSUFFICIENT_DATA"; "The default behavior is missing." The same page, on how
  the state is evaluated when data is missing: CloudWatch "attempts to retrieve a higher number of data
  points than the number specified as Evaluation Periods" (the evaluation range); with no datapoint
  missing it evaluates the most recent ones; with some missing but at least Evaluation Periods real
  ones in the range, it evaluates "the most recent real data points ... including the necessary extra
  data points from farther back in the evaluation range" and the missing-data treatment "is not needed
  and is ignored"; with fewer real ones it "fills in the missing data points with the result you
  specified for how to treat missing data", using "missing data points only as few times as possible".
  Its example table shows an alarm with the default treatment going to ALARM on one breaching
  datapoint among missing ones (`- - X - -`), and the page warns that alarms "might repeatedly
  re-evaluate the last set of data points for a period of time after the metric has stopped flowing".
  How much farther back the range reaches "depends on the length of the alarm period": here, an
  assumption, ``EVALUATION_RANGE_EXTRA_PERIODS`` more than Evaluation Periods (the table's five
  datapoints for a three-period alarm).
- "Alarm actions" (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-actions.html):
  "Except for Auto Scaling actions, the actions happen only on state transitions, and are not
  performed again if the condition persists for hours or days"; for Auto Scaling actions "the alarm
  continues to invoke the action once per minute that the alarm remains in the new state". So a
  scaling alarm acts on every minute it is in ALARM, not only on the transition.
"""

from __future__ import annotations

from peagle.simulate import metric_math
from peagle.simulate.scaling_template import Alarm, MetricQuery
from peagle.simulate.service import Datapoint, Minute, aggregate

OK, ALARM, INSUFFICIENT = "OK", "ALARM", "INSUFFICIENT_DATA"
EVALUATION_RANGE_EXTRA_PERIODS = 2


def datapoint(query: MetricQuery, history: list[Minute], at: int) -> Datapoint:
    """The value ``query`` has for the period ending at minute ``at``."""
    if query.stat is not None:
        return aggregate(history, query.stat, at)
    values = {name: datapoint(inner, history, at) for name, inner in query.inputs.items()}
    return metric_math.evaluate(query.expression or "", values)


class AlarmState:
    """One alarm through time; ``evaluate`` once per minute, in order (a period's datapoint is final once
    its minute is over, so each is computed once)."""

    def __init__(self, alarm: Alarm) -> None:
        self.alarm = alarm
        self.state = INSUFFICIENT
        self.last_value: Datapoint = None
        self.evaluated: list[float] = []  # the real datapoints the last evaluation used, newest first
        self._values: dict[int, Datapoint] = {}

    def _value(self, history: list[Minute], end: int) -> Datapoint:
        if end not in self._values:
            self._values[end] = datapoint(self.alarm.query, history, end)
        return self._values[end]

    def evaluate(self, history: list[Minute], at: int) -> str:
        alarm = self.alarm
        period = max(1, alarm.query.period_seconds // 60)
        needed, to_alarm = alarm.evaluation_periods, alarm.datapoints_to_alarm
        # The evaluation range, newest first; a period ends at a whole multiple of its length. Periods before
        # the simulation's start are not evaluated: the alarm did not exist yet.
        reach = needed + EVALUATION_RANGE_EXTRA_PERIODS
        ends = [end for end in (at - index * period for index in range(reach)) if end >= 0]
        values = [self._value(history, end) for end in ends]
        self.last_value = values[0] if values else None
        present = [value for value in values if value is not None]
        if len(present) >= needed:
            self.evaluated = present[:needed]
            breaching = sum(1 for value in self.evaluated if alarm.breaches(value))
            self.state = ALARM if breaching >= to_alarm else OK
            return self.state
        self.evaluated = present
        breaching = sum(1 for value in present if alarm.breaches(value))
        # Missing periods that exist (not before the start) are filled, as few as needed to make up the
        # Evaluation Periods.
        filled = min(needed, len(ends)) - len(present)
        treatment = alarm.treat_missing_data
        if treatment == "breaching":
            self.state = ALARM if breaching + filled >= to_alarm else OK
        elif treatment == "notBreaching":
            self.state = ALARM if breaching >= to_alarm else OK
        elif not present:
            if treatment == "missing":
                self.state = INSUFFICIENT
            # "ignore": the state is kept
        else:
            # Missing points are not filled ("missing"/"ignore"): the real ones decide, and one breaching
            # datapoint among missing ones is enough (the page's `- - X - -`).
            self.state = ALARM if breaching >= min(to_alarm, len(present)) else OK
        return self.state
