"""The interval arithmetic tune's and capacity's verdicts rest on (peagle/bench/intervals.py)."""

from __future__ import annotations

import math

import pytest

from peagle.bench.intervals import (
    Verdict,
    compare,
    difference_interval,
    mean_interval,
    ratio_interval,
    t_quantile,
)

# Two-sided 95% critical values of Student's t (upper 0.025 point), NIST/SEMATECH e-Handbook of Statistical
# Methods, 1.3.6.7.2 "Critical Values of the Student's t Distribution",
# https://www.itl.nist.gov/div898/handbook/eda/section3/eda3672.htm: "0.975" column.
PUBLISHED_T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 9: 2.262, 29: 2.045, 100: 1.984}


@pytest.mark.parametrize(("df", "published"), sorted(PUBLISHED_T_975.items()))
def test_t_quantile_matches_the_published_table(df: int, published: float) -> None:
    assert t_quantile(df) == pytest.approx(published, abs=0.002)


def test_three_runs_give_the_t_interval() -> None:
    interval = mean_interval([10.0, 12.0, 14.0])
    # mean 12, sd 2, se 2/sqrt(3), t(2) = 4.303
    assert interval.mean == 12.0
    assert interval.half_width == pytest.approx(4.303 * 2 / math.sqrt(3), abs=0.01)
    assert interval.text() == "12.0 ± 5.0 (3 runs)"


def test_one_run_has_no_interval_and_decides_nothing() -> None:
    interval = mean_interval([64.2])
    assert not interval.known and not interval.excludes(0.0)
    assert interval.text(unit="tok/s") == "64.2 tok/s (1 run, no interval)"
    assert compare([64.2], [20.1]) is Verdict.CANNOT_TELL


def test_pairing_by_seed_sees_a_small_steady_difference() -> None:
    # The seeds move both settings a lot (prompt sets differ), the difference little: paired, it is beyond doubt;
    # the two means' own intervals overlap.
    first, second = [50.0, 80.0, 65.0], [48.0, 77.5, 63.0]
    assert mean_interval(first).low < mean_interval(second).high  # unpaired, the intervals overlap
    assert compare(first, second) is Verdict.FIRST
    assert compare(second, first) is Verdict.SECOND


def test_a_difference_inside_the_noise_cannot_be_told() -> None:
    assert compare([0.55, 0.88, 0.94], [0.81, 0.86, 0.91]) is Verdict.CANNOT_TELL


def test_ratio_is_paired_and_refuses_a_zero() -> None:
    ratio = ratio_interval([90.0, 80.0, 100.0], [100.0, 100.0, 100.0])
    assert ratio.mean == pytest.approx(0.9)
    with pytest.raises(ValueError, match="above 0 in every run"):
        ratio_interval([1.0], [0.0])


def test_unpaired_runs_are_refused() -> None:
    with pytest.raises(ValueError, match="one run of each setting per seed"):
        difference_interval([1.0, 2.0], [1.0])
