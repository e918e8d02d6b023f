"""`peagle capacity --replay`: how far `peagle simulate`'s unit is from the real one.

A trace of requests per minute (`peagle simulate --traffic`'s CSV) is sent open loop to the target: each minute's
requests at times drawn uniformly within the minute (a Poisson process given its count), with the prompts and
sampling `peagle capacity` measures with. The same trace goes through the simulator's unit
(peagle/simulate/service.py ``Endpoint``, one unit that does not scale, clients that send once) served by the
service curve, and the two are compared minute by minute: the share of requests within the SLO, and the mean and
p90 of TTFT and TPOT. Per trace:

- attainment error: the simulator's share of the trace's requests within the SLO minus the real share, in
  percentage points;
- p90 errors: the simulator's request-weighted mean of the minutes' p90 TTFT (and TPOT) over the real one, minus 1;
  the median of the per-minute relative errors is kept too.

A request is put in the minute it was scheduled in, whenever it finished; a real request with no answer meets no
bound (peagle/slo.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from peagle.bench.stats import RequestRecord, distribution, request_timings
from peagle.catalog import Slo
from peagle.simulate.service import Assumptions, Endpoint, UnitShape
from peagle.simulate.service_curve import ServiceCurve
from peagle.simulate.traffic import Trace
from peagle.slo import attainment

# The simulator's minutes after the trace, for what it left waiting (its clients send once: nothing waits long).
DRAIN_MINUTES = 3


@dataclass(frozen=True)
class MinuteFigures:
    requests: float
    within_slo: float  # share
    ttft_mean: float | None
    ttft_p90: float | None
    tpot_mean: float | None
    tpot_p90: float | None


@dataclass(frozen=True)
class MinuteComparison:
    minute: int
    real: MinuteFigures
    predicted: MinuteFigures


@dataclass(frozen=True)
class TraceComparison:
    trace: str
    minutes: tuple[MinuteComparison, ...]
    real_attainment: float
    predicted_attainment: float
    real_ttft_p90: float | None  # request-weighted mean of the minutes' p90
    predicted_ttft_p90: float | None
    real_tpot_p90: float | None
    predicted_tpot_p90: float | None
    median_ttft_p90_error: float | None
    median_tpot_p90_error: float | None
    host: dict | None = None

    @property
    def attainment_error_points(self) -> float:
        return (self.predicted_attainment - self.real_attainment) * 100

    @property
    def ttft_p90_error(self) -> float | None:
        return _relative(self.predicted_ttft_p90, self.real_ttft_p90)

    @property
    def tpot_p90_error(self) -> float | None:
        return _relative(self.predicted_tpot_p90, self.real_tpot_p90)

    def summary(self) -> str:
        return (
            f"within the SLO {self.real_attainment:.1%} real, {self.predicted_attainment:.1%} simulated "
            f"({self.attainment_error_points:+.1f} points); p90 TTFT {_error_text(self.ttft_p90_error)}, "
            f"p90 TPOT {_error_text(self.tpot_p90_error)}"
        )

    def as_dict(self) -> dict:
        return {
            **asdict(self),
            "attainment_error_points": self.attainment_error_points,
            "ttft_p90_error": self.ttft_p90_error,
            "tpot_p90_error": self.tpot_p90_error,
        }


def _error_text(error: float | None) -> str:
    return "n/a" if error is None else f"{error:+.0%}"


def _relative(predicted: float | None, real: float | None) -> float | None:
    if predicted is None or real is None or real <= 0:
        return None
    return predicted / real - 1


def send_offsets(trace: Trace, seed: int) -> list[float]:
    """Seconds from the start of each request: a minute's count (rounded) at uniform times within it."""
    generator = random.Random(seed)
    offsets: list[float] = []
    for minute, count in enumerate(trace.requests_per_minute):
        offsets += sorted(60.0 * (minute + generator.random()) for _ in range(round(count)))
    return offsets


def predict(trace: Trace, curve: ServiceCurve, slo: Slo, counts: Sequence[int]) -> list[MinuteFigures]:
    """The simulator's unit, minute by minute, for the requests the replay sent (``counts`` per minute)."""
    shape = UnitShape(
        kind="instances", max_num_seqs=1, units_per_instance=1, max_instances=1, min_instances=1, gpus_per_unit=1
    )
    endpoint = Endpoint(shape, Assumptions(service=curve, clients="once"), initial=1, slo=slo)
    found = []
    for minute, count in enumerate([*counts, *([0] * DRAIN_MINUTES)]):
        record = endpoint.run_minute(minute, float(count))
        if minute >= len(counts):
            break
        point = curve.at(record.unit_rate)
        served = record.served > 1e-9
        found.append(
            MinuteFigures(
                requests=float(count),
                within_slo=record.within_slo / count if count else 1.0,
                ttft_mean=point.ttft_mean if served else None,
                ttft_p90=point.ttft_p90 if served else None,
                tpot_mean=point.tpot_mean if served else None,
                tpot_p90=point.tpot_p90 if served else None,
            )
        )
    return found


def observed(records: Sequence[RequestRecord], slo: Slo, minutes: int) -> list[MinuteFigures]:
    """What the server did for the requests scheduled in each minute."""
    by_minute: list[list[RequestRecord]] = [[] for _ in range(minutes)]
    for record in records:
        by_minute[min(minutes - 1, int((record.scheduled_s or 0.0) // 60))].append(record)
    found = []
    for group in by_minute:
        ok = [record for record in group if record.ok]
        ttft = distribution([record.ttft_s for record in ok if record.ttft_s is not None])
        tpot = distribution([record.tpot_s for record in ok if record.tpot_s is not None])
        found.append(
            MinuteFigures(
                requests=float(len(group)),
                within_slo=attainment(slo, request_timings(group)).all_bounds if group else 1.0,
                ttft_mean=ttft.mean if ttft else None,
                ttft_p90=ttft.p90 if ttft else None,
                tpot_mean=tpot.mean if tpot else None,
                tpot_p90=tpot.p90 if tpot else None,
            )
        )
    return found


def compare(trace: Trace, real: list[MinuteFigures], predicted: list[MinuteFigures], host=None) -> TraceComparison:
    minutes = tuple(
        MinuteComparison(minute, one, other) for minute, (one, other) in enumerate(zip(real, predicted, strict=True))
    )
    total = sum(one.requests for one in real) or 1.0

    def share(figures: list[MinuteFigures]) -> float:
        return sum(one.within_slo * one.requests for one in figures) / total

    def weighted(figures: list[MinuteFigures], name: str) -> float | None:
        pairs = [(getattr(one, name), one.requests) for one in figures if getattr(one, name) is not None]
        weight = sum(count for _, count in pairs)
        return sum(value * count for value, count in pairs) / weight if weight else None

    def median_error(name: str) -> float | None:
        errors = sorted(
            error
            for pair in minutes
            if (error := _relative(getattr(pair.predicted, name), getattr(pair.real, name))) is not None
        )
        return abs_median(errors)

    return TraceComparison(
        trace=trace.name,
        minutes=minutes,
        real_attainment=share(real),
        predicted_attainment=share(predicted),
        real_ttft_p90=weighted(real, "ttft_p90"),
        predicted_ttft_p90=weighted(predicted, "ttft_p90"),
        real_tpot_p90=weighted(real, "tpot_p90"),
        predicted_tpot_p90=weighted(predicted, "tpot_p90"),
        median_ttft_p90_error=median_error("ttft_p90"),
        median_tpot_p90_error=median_error("tpot_p90"),
        host=host,
    )


def abs_median(errors: list[float]) -> float | None:
    """The median of the errors' sizes (signless)."""
    sizes = sorted(abs(error) for error in errors)
    if not sizes:
        return None
    middle = len(sizes) // 2
    return sizes[middle] if len(sizes) % 2 else (sizes[middle - 1] + sizes[middle]) / 2


def replay_trace(
    send: Callable[[list[float]], list[RequestRecord]],
    trace: Trace,
    curve: ServiceCurve,
    slo: Slo,
    *,
    seed: int,
    host: Callable[[], dict | None] = lambda: None,
) -> TraceComparison:
    """Send ``trace`` with ``send`` (open loop at the offsets given), predict it, and compare."""
    offsets = send_offsets(trace, seed)
    minutes = len(trace.requests_per_minute)
    counts = [0] * minutes
    for offset in offsets:
        counts[min(minutes - 1, math.floor(offset / 60))] += 1
    records = send(offsets)
    return compare(trace, observed(records, slo, minutes), predict(trace, curve, slo, counts), host())
