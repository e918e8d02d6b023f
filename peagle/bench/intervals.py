"""How sure a measured figure is: a mean over repeated runs with its confidence interval, and whether two
settings measured on the same seeds differ beyond it.

A run of `peagle bench` at one level is one sample: its prompts and (open loop) its arrival times come from a
seed, and on a shared machine its tokens/s moves between runs a minute apart. So a figure a verdict rests on is
the mean over several seeds with a Student t interval (the runs are few, so the normal quantile would be too
narrow: at 3 runs the 95% quantile is 4.30, not 1.96), and two settings are compared *paired by seed*: both were
measured on the same prompts and arrivals, so the interval is of the per-seed difference (or ratio), which takes
the prompts' own variation out of the comparison. Two settings differ only when that interval excludes no
difference; otherwise the verdict is "cannot tell", never the larger mean.

The t quantile is computed here (no SciPy in the client's dependencies): the two-sided quantile of Student's t
with ``df`` degrees of freedom, by bisection on its CDF, integrated from the density
f(x) = Gamma((df+1)/2) / (sqrt(df pi) Gamma(df/2)) (1 + x^2/df)^(-(df+1)/2) with Simpson's rule.
tests/bench/test_intervals.py checks it against published critical values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

CONFIDENCE = 0.95  # the level every verdict in tune and capacity is stated at


def _t_density(x: float, df: int) -> float:
    log_scale = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_scale - (df + 1) / 2 * math.log1p(x * x / df))


def _t_cdf_above_zero(x: float, df: int, steps: int = 2000) -> float:
    """P(0 <= T <= x) by Simpson's rule (``steps`` even)."""
    width = x / steps
    total = _t_density(0.0, df) + _t_density(x, df)
    for index in range(1, steps):
        total += (4 if index % 2 else 2) * _t_density(index * width, df)
    return total * width / 3


@lru_cache(maxsize=128)
def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """The q with P(-q <= T <= q) = confidence for Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError(f"a t interval needs at least 1 degree of freedom (2 runs), got {df}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence is a share between 0 and 1, got {confidence}")
    target = confidence / 2
    low, high = 0.0, 1.0
    while _t_cdf_above_zero(high, df) < target:
        high *= 2
    for _ in range(60):
        middle = (low + high) / 2
        if _t_cdf_above_zero(middle, df) < target:
            low = middle
        else:
            high = middle
    return (low + high) / 2


@dataclass(frozen=True)
class Interval:
    """A mean over ``runs`` samples and its two-sided interval; low/high are None with a single run."""

    mean: float
    low: float | None
    high: float | None
    runs: int

    @property
    def known(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def half_width(self) -> float | None:
        if self.low is None or self.high is None:
            return None
        return (self.high - self.low) / 2

    def excludes(self, value: float) -> bool:
        """True when the interval lies wholly above or below ``value`` (never with a single run)."""
        if self.low is None or self.high is None:
            return False
        return value < self.low or value > self.high

    def text(self, digits: int = 1, unit: str = "") -> str:
        """ "64.2 ± 3.1 tok/s (3 runs)", or "64.2 tok/s (1 run, no interval)"."""
        unit = f" {unit}" if unit else ""
        if self.half_width is None:
            return f"{self.mean:.{digits}f}{unit} (1 run, no interval)"
        return f"{self.mean:.{digits}f} ± {self.half_width:.{digits}f}{unit} ({self.runs} runs)"

    def as_dict(self) -> dict:
        return {"mean": self.mean, "low": self.low, "high": self.high, "runs": self.runs, "confidence": CONFIDENCE}


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """The mean of ``values`` and its Student t interval (no interval from one value)."""
    if not values:
        raise ValueError("an interval needs at least one value")
    runs = len(values)
    mean = sum(values) / runs
    if runs == 1:
        return Interval(mean, None, None, 1)
    variance = sum((value - mean) ** 2 for value in values) / (runs - 1)
    half = t_quantile(runs - 1, confidence) * math.sqrt(variance / runs)
    return Interval(mean, mean - half, mean + half, runs)


def _paired(first: Sequence[float], second: Sequence[float]) -> None:
    if len(first) != len(second):
        raise ValueError(
            f"a paired comparison needs one run of each setting per seed: got {len(first)} and {len(second)} runs"
        )


def difference_interval(first: Sequence[float], second: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """first - second, paired by seed (the i-th run of each on the same prompts and arrivals)."""
    _paired(first, second)
    return mean_interval([a - b for a, b in zip(first, second, strict=True)], confidence)


def ratio_interval(first: Sequence[float], second: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """first / second, paired by seed: the mean of the per-seed ratios and its interval. A seed where ``second``
    is 0 has no ratio and is refused (say so rather than divide by it)."""
    _paired(first, second)
    if any(value == 0 for value in second):
        raise ValueError("a ratio needs the second setting above 0 in every run")
    return mean_interval([a / b for a, b in zip(first, second, strict=True)], confidence)


class Verdict(Enum):
    FIRST = "higher"  # the first setting is higher, beyond the interval
    SECOND = "lower"  # the first setting is lower, beyond the interval
    CANNOT_TELL = "cannot tell"  # the interval of the difference includes no difference (or one run)


def compare(first: Sequence[float], second: Sequence[float], confidence: float = CONFIDENCE) -> Verdict:
    """Whether ``first`` is higher or lower than ``second`` beyond the paired interval of their difference."""
    difference = difference_interval(first, second, confidence)
    if not difference.excludes(0.0):
        return Verdict.CANNOT_TELL
    return Verdict.FIRST if difference.mean > 0 else Verdict.SECOND
