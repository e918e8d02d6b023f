"""What one serving unit does at each load, as measured: a service curve.

A vLLM unit does not hold a request for a fixed time: every request in its batch slows the others (the local
partial pair at K=4: mean TPOT 29 ms at 0.2 request/s, 127 ms at 1.4; docs/baselines/simulator-replay/K4/).
`peagle capacity` measures a unit at several request rates (open loop, Poisson arrivals) and writes what each
level did to ``service-curve.json``: the rate the unit completed, the requests in flight, and the TTFT and TPOT
each request had (mean, p50, p90), with the share meeting the SLO it was judged against. The simulator reads it
(``peagle simulate --service-curve``) and serves each minute at the rate the minute gives each unit:

- between two measured rates, every figure is interpolated linearly in the rate; below the lowest measured rate
  the lowest level's figures hold (a lighter load is no slower), and a unit completes no more than the highest
  rate measured (beyond it the simulator's fluid model queues what it cannot serve, and what waits past the
  60 s invocation timeout times out);
- a request's time in the unit is the level's mean end-to-end latency (TTFT + TPOT x the tokens after the
  first), so the requests in flight follow Little's law as they did when measured;
- a request meets the SLO with the share measured at that rate when the SLO is the one the curve was measured
  against (``peagle capacity --slo`` / the profile); for another SLO, the share of a lognormal fitted to each
  latency's p50 and p90, TTFT and TPOT taken as independent (they are correlated in a real batch, so this errs
  low when both bounds bite).

Its error against a real server, replayed minute by minute, is measured by ``peagle capacity --replay`` and
committed in docs/baselines/simulator-replay/ (peagle/simulate/model_error.py prints it on every report).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import NormalDist

from peagle.catalog import Slo
from peagle.settings.errors import PeagleError

SCHEMA = "peagle-service-curve/1"
FILE_NAME = "service-curve.json"
# A level whose sender fell this far behind its schedule did not offer the rate it names (peagle capacity's own
# rule for a sender that fell behind, peagle/capacity/search.py): left out of the curve.
SENDER_BEHIND_SHARE = 0.9
_Z90 = NormalDist().inv_cdf(0.9)
# A level kept up with its rate when it completed at least this share of it over its wall time (the requests still
# in flight after the last send, about one request's time, are in that time): our choice. It is lax: on the partial
# pair at K=4 (docs/baselines/simulator-replay/K4/capacity.json) the levels at 0.2-1.4 requests/s completed 100, 98,
# 94, 88 and 82 % of their rate, so 1.4 counts as served although a minute at 1.3 queued on the same server (the
# ramp's last minute in K4/replay.md): one reason the simulator errs optimistic past capacity.
KEPT_UP_SHARE = 0.8


class ServiceCurveError(PeagleError):
    """A service curve file that cannot be used."""


@dataclass(frozen=True)
class CurvePoint:
    """One measured level: what a unit did while it completed ``rate`` requests a second."""

    rate: float  # requests/s sent to the unit (the level's achieved rate)
    completed: float  # requests/s it answered over the level, its drain included
    in_flight: float  # at that rate, by Little's law: rate x e2e_mean
    e2e_mean: float
    ttft_mean: float
    ttft_p50: float
    ttft_p90: float
    tpot_mean: float
    tpot_p50: float
    tpot_p90: float
    attainment: float  # share of its requests meeting every bound of the curve's SLO
    requests: int


@dataclass(frozen=True)
class ServiceCurve:
    points: tuple[CurvePoint, ...]  # by rate
    ttft_seconds: float | None  # the SLO the levels were judged against
    tpot_seconds: float | None
    e2e_seconds: float | None
    output_tokens: int  # max_tokens of the measured requests
    source: str  # what was measured, where and when, in one line
    host: str = ""  # the machine it ran on
    measured: bool = True  # False: an estimate (peagle/simulate/service_estimate.py), not a measurement
    path: str = field(default="", compare=False)

    @property
    def max_rps(self) -> float:
        """The most requests a second one unit was measured to serve: the most it completed in a level, or the rate
        of a level it kept up with (completed at least KEPT_UP_SHARE of it: the level's drain, after the last send,
        counts in its wall time)."""
        kept_up = [point.rate for point in self.points if point.completed >= KEPT_UP_SHARE * point.rate]
        return max([point.completed for point in self.points] + kept_up)

    def at(self, rate: float) -> CurvePoint:
        """The unit's figures at ``rate`` (requests/s it completes), interpolated between measured levels."""
        points = self.points
        if rate <= points[0].rate:
            return points[0]
        if rate >= points[-1].rate:
            return points[-1]
        upper = next(index for index, point in enumerate(points) if point.rate >= rate)
        low, high = points[upper - 1], points[upper]
        weight = (rate - low.rate) / (high.rate - low.rate)
        mixed = {
            name: getattr(low, name) + (getattr(high, name) - getattr(low, name)) * weight
            for name in CurvePoint.__dataclass_fields__
        }
        return CurvePoint(**{**mixed, "rate": rate, "requests": 0})

    def request_seconds(self, rate: float) -> float:
        return self.at(rate).e2e_mean

    def slo_share(self, slo: Slo, rate: float) -> float:
        """Share of requests answered at ``rate`` that meet ``slo``'s bounds (see the module docstring)."""
        point = self.at(rate)
        if (slo.ttft_seconds, slo.tpot_seconds, slo.e2e_seconds) == (
            self.ttft_seconds,
            self.tpot_seconds,
            self.e2e_seconds,
        ):
            return min(1.0, max(0.0, point.attainment))
        share = 1.0
        for bound, p50, p90 in (
            (slo.ttft_seconds, point.ttft_p50, point.ttft_p90),
            (slo.tpot_seconds, point.tpot_p50, point.tpot_p90),
        ):
            if bound is not None:
                share *= _lognormal_below(bound, p50, p90)
        if slo.e2e_seconds is not None:
            share *= 1.0 if point.e2e_mean <= slo.e2e_seconds else 0.0
        return share

    def describe(self) -> str:
        return (
            f"{'measured' if self.measured else 'estimated'} service curve ({self.source}; {len(self.points)} levels, up to {self.max_rps:.3g} requests/s "
            f"per unit{', ' + self.host if self.host else ''}{', ' + self.path if self.path else ''})"
        )

    def to_json(self) -> str:
        payload = {"schema": SCHEMA, **{key: value for key, value in asdict(self).items() if key != "path"}}
        return json.dumps(payload, indent=2) + "\n"


def _lognormal_below(bound: float, p50: float, p90: float) -> float:
    """P(X <= bound) for a lognormal with that median and 90th percentile (a point mass where they agree)."""
    if p50 <= 0:
        return 1.0
    sigma = max(0.0, math.log(max(p90, p50) / p50)) / _Z90
    if sigma == 0 or bound <= 0:
        return 1.0 if bound >= p50 else 0.0
    return NormalDist().cdf((math.log(bound) - math.log(p50)) / sigma)


def curve_from_levels(
    levels: list[dict], *, slo: Slo, output_tokens: int, source: str, host: str = ""
) -> ServiceCurve | None:
    """A curve from `peagle capacity`'s judged levels (capacity.json ``points``): levels at the same rate pooled
    (weighted by their requests), levels whose sender fell behind left out (they did not send the rate they name).
    None when no level is usable."""
    usable = [
        level
        for level in levels
        if level.get("requests")
        and level.get("ttft_p50") is not None
        and level.get("tpot_p50") is not None
        and level.get("achieved_rate", 0) >= SENDER_BEHIND_SHARE * level.get("offered_rate", 0)
    ]
    by_rate: dict[float, list[dict]] = {}
    for level in usable:
        by_rate.setdefault(level["offered_rate"], []).append(level)
    points = [_pooled(group) for _, group in sorted(by_rate.items())]
    if not points:
        return None
    points.sort(key=lambda point: point.rate)
    return ServiceCurve(
        points=tuple(points),
        ttft_seconds=slo.ttft_seconds,
        tpot_seconds=slo.tpot_seconds,
        e2e_seconds=slo.e2e_seconds,
        output_tokens=output_tokens,
        source=source,
        host=host,
    )


def _pooled(group: list[dict]) -> CurvePoint:
    weights = [level["requests"] for level in group]
    total = sum(weights)

    def mean(key: str, fallback: str | None = None) -> float:
        values = [level.get(key) if level.get(key) is not None else level.get(fallback or key) for level in group]
        return sum(value * weight for value, weight in zip(values, weights, strict=True)) / total

    rate = mean("achieved_rate")
    e2e = mean("e2el_mean", "e2el_p50")
    return CurvePoint(
        rate=rate,
        completed=mean("completed_rate"),
        in_flight=rate * e2e,
        e2e_mean=e2e,
        ttft_mean=mean("ttft_mean", "ttft_p50"),
        ttft_p50=mean("ttft_p50"),
        ttft_p90=mean("ttft_p90"),
        tpot_mean=mean("tpot_mean", "tpot_p50"),
        tpot_p50=mean("tpot_p50"),
        tpot_p90=mean("tpot_p90"),
        attainment=mean("attainment"),
        requests=total,
    )


def load_curve(path: Path) -> ServiceCurve:
    """A service-curve.json written by `peagle capacity`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, ValueError) as error:
        raise ServiceCurveError(f"--service-curve {path}: cannot be read ({error})") from None
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not data.get("points"):
        raise ServiceCurveError(
            f"--service-curve {path}: not a service curve (schema {SCHEMA}, written by `peagle capacity --out DIR` as "
            f"DIR/{FILE_NAME}); measure one with `peagle capacity --pair PAIR --out DIR` or "
            "`peagle capacity --endpoint NAME --out DIR`"
        )
    try:
        points = tuple(sorted((CurvePoint(**point) for point in data["points"]), key=lambda point: point.rate))
        fields = {key: data[key] for key in ServiceCurve.__dataclass_fields__ if key in data and key != "points"}
        return ServiceCurve(points=points, **fields, path=str(path))
    except (TypeError, KeyError) as error:
        raise ServiceCurveError(f"--service-curve {path}: a point or field is malformed ({error})") from None
