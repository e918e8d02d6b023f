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
  alarm transitions to INSUFFICIENT_DATA"; "The default behavior is missing." With some datapoints
  present, CloudWatch looks further back than the evaluation range; here only the present ones count.
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


def datapoint(query: MetricQuery, history: list[Minute], at: int) -> Datapoint:
    """The value ``query`` has for the period ending at minute ``at``."""
    if query.stat is not None:
        return aggregate(history, query.stat, at)
    values = {name: datapoint(inner, history, at) for name, inner in query.inputs.items()}
    return metric_math.evaluate(query.expression or "", values)


class AlarmState:
    """One alarm through time; ``evaluate`` once per minute."""

    def __init__(self, alarm: Alarm) -> None:
        self.alarm = alarm
        self.state = INSUFFICIENT
        self.last_value: Datapoint = None

    def evaluate(self, history: list[Minute], at: int) -> str:
        alarm = self.alarm
        period = max(1, alarm.query.period_seconds // 60)
        # The most recent EvaluationPeriods periods, newest first; a period ends at a whole multiple of its length.
        # Periods before the simulation's start are not evaluated: the alarm did not exist yet.
        ends = [end for end in (at - index * period for index in range(alarm.evaluation_periods)) if end >= 0]
        values = [datapoint(alarm.query, history, end) for end in ends]
        self.last_value = values[0]
        present = [value for value in values if value is not None]
        treatment = alarm.treat_missing_data
        missing = len(values) - len(present)
        breaching = sum(1 for value in present if alarm.breaches(value))
        if treatment == "breaching":
            breaching += missing
        if breaching >= alarm.datapoints_to_alarm:
            self.state = ALARM
        elif treatment in ("breaching", "notBreaching") or present:
            # Enough good (or treated-as-good) datapoints that the alarm cannot be breaching.
            self.state = OK
        elif treatment == "missing":
            self.state = INSUFFICIENT
        # "ignore": the state is kept when nothing is present
        return self.state
