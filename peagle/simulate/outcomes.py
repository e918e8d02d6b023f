"""What a timeline meant for its users and what it cost: requests answered on time, answered after a
cold start, timed out, refused and expired; the longest wait; instance-hours at the plan's price, per
answered request and per 1M output tokens; and the unit-minutes beyond what the load needed."""

from __future__ import annotations

import math
from dataclasses import dataclass

from peagle.simulate.engine import Timeline


@dataclass(frozen=True)
class Outcome:
    requests: float
    on_time: float
    after_wait: float
    late: float  # answered after a timeout: served, but not as the SLO asks
    timed_out: float
    refused: float
    expired: float
    # At the end of the trace: real-time clients still retrying (counted lost: nothing answered them in
    # the trace), and asynchronous requests still queued that the maximum could not answer within their
    # time-to-live (lost) or could (``queued_in_time``, neither answered nor lost).
    unresolved: float
    queued_in_time: float
    worst_wait_seconds: float
    instance_minutes: float
    unit_minutes: float
    needed_unit_minutes: float
    over_instance_minutes: float  # instances beyond those the load's units needed, minute by minute
    price_per_instance_hour: float
    units_per_instance: int
    output_tokens_per_request: float
    peak_need_units: int  # uncapped: what the peak minute needed at full slots
    max_units: int
    minutes_over_max: int  # minutes whose load needs more units than the maximum
    lost_minutes: tuple[int, int] | None  # first and last minute that lost requests
    drain_minutes: int = 0  # simulated after the trace for the requests it left outstanding (engine.py)
    # With a measured service curve (Assumptions.service): requests answered at their first send within the SLO's
    # TTFT and TPOT bounds. None: the SLO's bounds were not checked (the unit's latencies were not measured).
    within_slo: float | None = None

    @property
    def slo_judged(self) -> float:
        """The requests the SLO's bounds judge: all but those that waited for a cold start (a scale-to-zero
        endpoint makes them wait by design; the cold-start verdicts judge them)."""
        return self.requests - self.after_wait

    @property
    def slo_share(self) -> float | None:
        """Share of the judged requests answered within the SLO's bounds; None when not checked."""
        if self.within_slo is None:
            return None
        return self.within_slo / self.slo_judged if self.slo_judged > 1e-9 else 1.0

    def meets(self, attainment: float) -> bool:
        """The SLO's attainment reached: within its bounds where they were checked, else answered in time."""
        if self.slo_share is not None:
            return self.slo_share >= attainment - 1e-9
        return self.share(self.lost) <= 1 - attainment + 1e-9

    @property
    def answered(self) -> float:
        """Answered as the SLO asks: at the first send, or after waiting for a cold start."""
        return self.on_time + self.after_wait

    @property
    def served(self) -> float:
        return self.answered + self.late

    @property
    def lost(self) -> float:
        return self.late + self.timed_out + self.refused + self.expired + self.unresolved

    def share(self, amount: float) -> float:
        return amount / self.requests if self.requests else 0.0

    @property
    def answered_share(self) -> float:
        return self.share(self.answered) if self.requests else 1.0

    @property
    def cost_usd(self) -> float:
        return self.instance_minutes / 60 * self.price_per_instance_hour

    @property
    def over_cost_usd(self) -> float:
        return self.over_instance_minutes / 60 * self.price_per_instance_hour

    @property
    def cost_per_answered_usd(self) -> float | None:
        """Per request served (late ones included: they were paid for)."""
        return self.cost_usd / self.served if self.served else None

    @property
    def cost_per_million_tokens_usd(self) -> float | None:
        tokens = self.served * self.output_tokens_per_request
        return self.cost_usd / tokens * 1e6 if tokens else None


def outcome(timeline: Timeline) -> Outcome:
    setup, assumptions, minutes = timeline.setup, timeline.assumptions, timeline.minutes
    unit_rpm = setup.unit_rpm(assumptions)
    needs = [math.ceil(round(m.offered / unit_rpm, 9)) for m in minutes]
    waits = [seconds for m in minutes for seconds, requests in m.waits if requests > 1e-9]
    lost_at = [m.minute for m in minutes if m.lost > 1e-9]
    lost_in_queue, in_time = _queued_at_the_end(timeline)
    return Outcome(
        requests=sum(m.offered for m in minutes),
        on_time=sum(m.on_time for m in minutes),
        after_wait=sum(m.after_wait for m in minutes),
        late=sum(m.late for m in minutes),
        timed_out=sum(m.timed_out for m in minutes),
        refused=sum(m.refused for m in minutes),
        expired=sum(m.expired for m in minutes),
        unresolved=timeline.left_waiting + lost_in_queue,
        queued_in_time=in_time,
        worst_wait_seconds=max(waits, default=0.0),
        instance_minutes=float(sum(m.instances for m in minutes)),
        unit_minutes=float(sum(m.desired for m in minutes)),
        needed_unit_minutes=float(sum(needs)),
        over_instance_minutes=float(
            sum(max(0, m.instances - instances_for(setup, need)) for m, need in zip(minutes, needs, strict=True))
        ),
        price_per_instance_hour=setup.price_per_instance_hour,
        units_per_instance=setup.shape.units_per_instance,
        output_tokens_per_request=assumptions.output_tokens,
        peak_need_units=max(needs, default=0),
        max_units=setup.max_units,
        minutes_over_max=sum(1 for need in needs if need > setup.max_units),
        lost_minutes=(lost_at[0], lost_at[-1]) if lost_at else None,
        drain_minutes=timeline.drain_minutes,
        within_slo=sum(m.within_slo for m in minutes) if _slo_checked(timeline) else None,
    )


def _slo_checked(timeline: Timeline) -> bool:
    """Each request was judged against the SLO's bounds: a real-time unit with a measured service curve."""
    setup = timeline.setup
    return timeline.assumptions.service is not None and setup.slo is not None and not setup.shape.asynchronous


def instances_for(setup, units: int) -> int:
    """The instances ``units`` need: a variant's units are instances; copies pack onto instances (managed
    instance scaling keeps at least its minimum)."""
    return setup.shape.instances_needed(units)


def _queued_at_the_end(timeline: Timeline) -> tuple[float, float]:
    """Asynchronous requests still queued when the trace ends, split into those the maximum capacity would
    answer within their time-to-live (first in, first out) and those it would not."""
    if not timeline.left_queued:
        return 0.0, 0.0
    setup, assumptions = timeline.setup, timeline.assumptions
    end = len(timeline.minutes)
    per_minute = setup.max_units * setup.unit_rpm(assumptions)
    ttl_minutes = assumptions.async_ttl_seconds / 60
    ahead = lost = in_time = 0.0
    for sent, count in timeline.left_queued:
        ahead += count
        if end - sent + ahead / per_minute > ttl_minutes:
            lost += count
        else:
            in_time += count
    return lost, in_time
