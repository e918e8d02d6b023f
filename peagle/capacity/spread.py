"""Each measured rate's figures over its repeats: the pooled value, and the mean over the repeats with its 95%
interval (peagle/bench/intervals.py: Student t), so the report says how far a figure moves between seeds.

The pooled value is what the levels add up to: attainment is good requests over requests, goodput good requests
over the levels' wall time, tokens/s tokens over wall time; a percentile cannot be pooled without the requests,
so its pooled value is the levels' percentiles weighted by their requests (as peagle/simulate/service_curve.py
pools them), and the achieved rate and the requests in flight are the levels' mean. The interval is of the
per-level values, one per repeat (each on its own prompt and arrival seed): a rate measured once has none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from peagle.bench.intervals import Interval, mean_interval
from peagle.capacity.search import CapacitySearch

PERCENTILES = ("ttft_p50", "ttft_p90", "tpot_p50", "tpot_p90", "e2el_p50", "e2el_p90")


def _ratio(numerator: str, denominator: str) -> Callable[[Sequence], float]:
    def pooled(records: Sequence) -> float:
        total = sum(getattr(record, denominator) for record in records)
        return sum(getattr(record, numerator) for record in records) / total if total else 0.0

    return pooled


def _weighted(name: str) -> Callable[[Sequence], float]:
    def pooled(records: Sequence) -> float:
        total = sum(record.requests for record in records)
        return sum(getattr(record, name) * record.requests for record in records) / total if total else 0.0

    return pooled


def _mean(name: str) -> Callable[[Sequence], float]:
    return lambda records: sum(getattr(record, name) for record in records) / len(records)


# capacity.json's LevelRecord field -> how the levels at one rate pool into one value.
POOLED: dict[str, Callable[[Sequence], float]] = {
    "attainment": _ratio("good_requests", "requests"),
    "goodput": _ratio("good_requests", "wall_seconds"),
    "output_tokens_per_s": _ratio("output_tokens", "wall_seconds"),
    "achieved_rate": _mean("achieved_rate"),
    "in_flight_mean": _mean("in_flight_mean"),
    **{name: _weighted(name) for name in PERCENTILES},
}


@dataclass(frozen=True)
class Figure:
    """One figure at one rate: pooled over the repeats, and their mean with its interval."""

    overall: float  # the levels pooled (capacity.json: "pooled")
    spread: Interval

    def as_dict(self) -> dict:
        return {"pooled": self.overall, **self.spread.as_dict()}

    def text(self, scale: float = 1.0, digits: int = 1, unit: str = "") -> str:
        """ "98.6 (mean 97.9 ± 4.1 over 3 runs)" in the figure's unit x ``scale``; "98.6" for one run."""
        pooled = f"{self.overall * scale:.{digits}f}{unit}"
        half = self.spread.half_width
        if half is None:
            return pooled
        return f"{pooled} (mean {self.spread.mean * scale:.{digits}f} ± {half * scale:.{digits}f}, {self.spread.runs} runs)"


@dataclass(frozen=True)
class RateSpread:
    """What the levels at one offered rate measured, their verdict, and the seeds they ran on."""

    rate: float
    verdict: str
    seeds: tuple[int, ...]  # the arrivals' seed of each level, in the order measured
    figures: dict[str, Figure]

    @property
    def runs(self) -> int:
        return len(self.seeds)

    def as_dict(self) -> dict:
        return {
            "offered_rate": self.rate,
            "verdict": self.verdict,
            "runs": self.runs,
            "seeds": list(self.seeds),
            **{name: figure.as_dict() for name, figure in self.figures.items()},
        }


def rate_spread(search: CapacitySearch, rate: float) -> RateSpread:
    """The figures of the levels at ``rate`` (its judged ones), each pooled and with its interval; a figure no
    level measured (a percentile with no answer) is left out."""
    records = [point.detail for point in search.at(rate)]
    figures = {}
    for name, pool in POOLED.items():
        measured = [record for record in records if getattr(record, name, None) is not None]
        if measured:
            figures[name] = Figure(pool(measured), mean_interval([getattr(record, name) for record in measured]))
    return RateSpread(rate, search.verdict(rate), tuple(record.seed for record in records), figures)


def spreads(search: CapacitySearch) -> list[RateSpread]:
    """Every judged rate's spread, lowest rate first."""
    return [rate_spread(search, rate) for rate in search.rates]


# The per-rate table's columns: (figure, heading, scale, digits).
_COLUMNS = (
    ("attainment", "attainment %", 100.0, 1),
    ("goodput", "goodput req/s", 1.0, 3),
    ("output_tokens_per_s", "output tok/s", 1.0, 1),
    ("ttft_p90", "TTFT p90 ms", 1000.0, 0),
    ("tpot_p90", "TPOT p90 ms", 1000.0, 0),
)


def rates_table(rates: Sequence[RateSpread]) -> list[str]:
    """capacity.md's table of rates: each figure pooled over the rate's levels, with the mean ± its 95% interval
    over them when there were two or more."""
    lines = [
        "| offered req/s | levels (arrival seeds) | verdict | " + " | ".join(c[1] for c in _COLUMNS) + " |",
        "|---|---|---|" + "---|" * len(_COLUMNS),
    ]
    for spread in rates:
        cells = [
            spread.figures[name].text(scale, digits) if name in spread.figures else "n/a"
            for name, _, scale, digits in _COLUMNS
        ]
        seeds = ", ".join(str(seed) for seed in spread.seeds)
        lines.append(f"| {spread.rate:g} | {spread.runs} ({seeds}) | {spread.verdict} | " + " | ".join(cells) + " |")
    return lines
