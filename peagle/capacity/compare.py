"""`peagle capacity --compare FIRST SECOND`: two capacity runs measured on the same seeds (the same --seed,
prompts, sampling and SLO: e.g. K=4 and a schedule, each with `--sweep 0.5,1 --repeats 3`), compared rate by
rate, their levels paired by seed (peagle/bench/intervals.py: the interval of the per-seed difference), so a
verdict says "higher", "lower" or "cannot tell" and never just the larger mean. Nothing is served."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from peagle.bench.intervals import CONFIDENCE, Interval, Verdict, compare, difference_interval, mean_interval

SCHEMA = "peagle-capacity/1"
# The figures compared: (capacity.json level field, words, unit, digits).
FIGURES = (
    ("goodput", "goodput", "req/s", 3),
    ("attainment", "attainment", "", 3),
    ("output_tokens_per_s", "output tokens/s", "tok/s", 1),
)
# What must match for two runs to be measured on the same workload.
SAME = ("slo", "sampling", "prompts")


class CompareError(ValueError):
    """The files are not two capacity runs on the same workload."""


@dataclass(frozen=True)
class FigureComparison:
    name: str
    first: Interval
    second: Interval
    difference: Interval  # first - second, paired by seed
    verdict: Verdict

    def as_dict(self) -> dict:
        return {
            "first": self.first.as_dict(),
            "second": self.second.as_dict(),
            "difference": self.difference.as_dict(),
            "verdict": self.verdict.value,
        }


@dataclass(frozen=True)
class RateComparison:
    rate: float
    seeds: tuple[tuple[int, int | None], ...]  # (arrival seed, prompts seed) of each pair of levels
    figures: tuple[FigureComparison, ...]

    def as_dict(self) -> dict:
        return {
            "offered_rate": self.rate,
            "seeds": [list(seed) for seed in self.seeds],
            **{figure.name: figure.as_dict() for figure in self.figures},
        }


def load_run(path: Path) -> dict:
    """A capacity.json (or the folder holding one)."""
    path = Path(path)
    path = path / "capacity.json" if path.is_dir() else path
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CompareError(f"--compare {path}: cannot be read as capacity.json ({error})") from None
    if (
        not isinstance(document, dict)
        or document.get("schema") != SCHEMA
        or not isinstance(document.get("points"), list)
    ):
        raise CompareError(
            f"--compare {path}: not a capacity run (schema {SCHEMA}); give the capacity.json of two "
            "`peagle capacity --out DIR` runs"
        )
    return document


def workload_problems(first: dict, second: dict) -> list[str]:
    """What differs between the two runs' workloads (a paired comparison needs the same one)."""
    return [
        f"the runs' {key} differ ({first.get(key)!r} and {second.get(key)!r}): measure both with the same --seed, "
        "prompts, sampling and SLO"
        for key in SAME
        if first.get(key) != second.get(key)
    ]


def _levels_by_seed(document: dict, rate: float) -> dict[tuple[int, int | None], dict]:
    return {
        (point["seed"], point.get("prompts_seed")): point
        for point in document["points"]
        if point["offered_rate"] == rate
    }


def compare_runs(first: dict, second: dict) -> list[RateComparison]:
    """Every rate both runs measured on at least one common seed, its figures paired by seed."""
    common = sorted({p["offered_rate"] for p in first["points"]} & {p["offered_rate"] for p in second["points"]})
    found = []
    for rate in common:
        ours, theirs = _levels_by_seed(first, rate), _levels_by_seed(second, rate)
        seeds = tuple(sorted(set(ours) & set(theirs), key=lambda seed: seed[0]))
        if not seeds:
            continue
        figures = []
        for name, *_ in FIGURES:
            a = [float(ours[seed][name]) for seed in seeds]
            b = [float(theirs[seed][name]) for seed in seeds]
            figures.append(
                FigureComparison(name, mean_interval(a), mean_interval(b), difference_interval(a, b), compare(a, b))
            )
        found.append(RateComparison(rate, seeds, tuple(figures)))
    return found


def label(document: dict) -> str:
    return f"K={document.get('speculative_tokens')}"


def lines(first: dict, second: dict, compared: list[RateComparison]) -> list[str]:
    """One line per rate and figure: both means, the paired difference with its interval, and the verdict."""
    a, b = label(first), label(second)
    if not compared:
        return [
            f"{a} vs {b}: no rate was measured on the same seed in both runs (measure both with --sweep and "
            "the same --seed)"
        ]
    words = {Verdict.FIRST: f"{a} higher", Verdict.SECOND: f"{b} higher", Verdict.CANNOT_TELL: "cannot tell"}
    found = []
    for rate in compared:
        for figure, (_, name, unit, digits) in zip(rate.figures, FIGURES, strict=True):
            difference = figure.difference
            spread = "" if difference.half_width is None else f" ± {difference.half_width:.{digits}f}"
            found.append(
                f"{a} vs {b} at {rate.rate:g} req/s, {name}: {figure.first.mean:.{digits}f} vs "
                f"{figure.second.mean:.{digits}f}{' ' + unit if unit else ''}, difference "
                f"{difference.mean:+.{digits}f}{spread} over {len(rate.seeds)} seed(s) ({CONFIDENCE:.0%} interval, "
                f"paired by seed): {words[figure.verdict]}"
            )
    return found


def write_comparison(first: dict, second: dict, out: Path) -> tuple[list[Path], list[str]]:
    """comparison.json and comparison.md in ``out``; the lines, for the terminal."""
    compared = compare_runs(first, second)
    text = lines(first, second, compared)
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "schema": "peagle-capacity-comparison/1",
        "first": {"speculative_tokens": first.get("speculative_tokens"), "date": first.get("date")},
        "second": {"speculative_tokens": second.get("speculative_tokens"), "date": second.get("date")},
        "slo": first.get("slo"),
        "confidence": CONFIDENCE,
        "rates": [rate.as_dict() for rate in compared],
    }
    paths = [out / "comparison.json", out / "comparison.md"]
    paths[0].write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    header = [
        f"# Capacity compared: {label(first)} vs {label(second)}",
        "",
        f"SLO {first.get('slo')}; {first.get('prompts')}; {first.get('sampling')}. Each figure is the mean over the "
        f"levels both runs measured on the same seed, and the difference's {CONFIDENCE:.0%} interval is of the "
        "per-seed differences (Student t, peagle/bench/intervals.py): a setting is higher only beyond it.",
        "",
    ]
    paths[1].write_text("\n".join(header + [f"- {line}" for line in text]) + "\n", encoding="utf-8")
    return paths, text
