"""Comparing runs: side by side (e.g. speculation on vs off) and against a stored baseline."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from peagle.bench.results import BenchResults, LevelResult, RunResult, describe_sampling


@dataclass(frozen=True)
class Metric:
    name: str
    title: str
    read: Callable[[LevelResult], float | None]
    higher_is_better: bool
    scale: float = 1.0  # for display (seconds -> ms)
    unit: str = ""


def _p(attribute: str, percentile: str) -> Callable[[LevelResult], float | None]:
    def read(level: LevelResult) -> float | None:
        distribution = getattr(level, attribute)
        return getattr(distribution, percentile) if distribution else None

    return read


def _acceptance(attribute: str) -> Callable[[LevelResult], float | None]:
    return lambda level: getattr(level.acceptance, attribute) if level.acceptance else None


def _server(attribute: str) -> Callable[[LevelResult], float | None]:
    return lambda level: getattr(level.server_latency, attribute) if level.server_latency else None


def _slo(attribute: str) -> Callable[[LevelResult], float | None]:
    return lambda level: getattr(level.slo, attribute) if level.slo else None


METRICS: dict[str, Metric] = {
    metric.name: metric
    for metric in (
        Metric("output_tokens_per_s", "output tok/s", lambda level: level.output_tokens_per_s, True),
        Metric("requests_per_s", "req/s", lambda level: level.requests_per_s, True),
        Metric("ttft_p50", "TTFT p50", _p("ttft_s", "p50"), False, 1000, "ms"),
        Metric("tpot_p50", "TPOT p50", _p("tpot_s", "p50"), False, 1000, "ms"),
        Metric("itl_p50", "ITL p50", _p("itl_s", "p50"), False, 1000, "ms"),
        Metric("e2e_p50", "e2e p50", _p("e2e_s", "p50"), False, 1, "s"),
        Metric("e2e_p90", "e2e p90", _p("e2e_s", "p90"), False, 1, "s"),
        Metric("server_ttft_mean", "server TTFT mean", _server("ttft_mean_s"), False, 1000, "ms"),
        Metric("server_tpot_mean", "server TPOT mean", _server("tpot_mean_s"), False, 1000, "ms"),
        Metric("acceptance_rate", "acceptance rate", _acceptance("acceptance_rate"), True),
        Metric("acceptance_length", "acceptance length", _acceptance("mean_acceptance_length"), True),
        Metric("cost_per_million", "$ / 1M output tok", lambda level: level.cost_per_million_output_tokens_usd, False),
        Metric("slo_attainment", "SLO attainment", _slo("all_bounds"), True),
        Metric("goodput", "goodput", _slo("goodput_requests_per_s"), True, 1, "req/s"),
        Metric(
            "achieved_request_rate",
            "achieved request rate",
            lambda level: level.open_loop.achieved_request_rate if level.open_loop else None,
            True,
            1,
            "req/s",
        ),
    )
}

# ITL is left out of comparisons: it moves with how tokens are chunked (several per
# event under speculation) and delivered (bursts from a busy server), not with speed.
SIDE_BY_SIDE_METRICS = (
    "output_tokens_per_s",
    "requests_per_s",
    "ttft_p50",
    "tpot_p50",
    "e2e_p50",
    "e2e_p90",
    "server_ttft_mean",
    "server_tpot_mean",
    "acceptance_length",
    "slo_attainment",
    "goodput",
)
# What --compare-to checks.
REGRESSION_METRICS = ("output_tokens_per_s", "ttft_p50", "tpot_p50", "e2e_p90", "acceptance_rate")
ERROR_RATE_SLACK = 0.01  # absolute: one failure in 100 more than the baseline


def reference_run(runs: Sequence[RunResult]) -> RunResult:
    """What ratios are taken against: the run with speculation off if there is one
    (so a ratio > 1 in throughput is the speed-up of speculation), else the first."""
    return next((run for run in runs if run.speculation == "off"), runs[0])


def level_keys(runs: Sequence[RunResult]) -> list[tuple[int, float]]:
    """Every level of ``runs`` (``LevelResult.key``): closed-loop concurrencies, then open-loop rates."""
    return sorted({level.key for run in runs for level in run.levels})


def key_label(key: tuple[int, float]) -> str:
    """``c=4`` or ``2 req/s`` for a ``LevelResult.key``."""
    concurrency, rate = key
    if concurrency:
        return f"c={concurrency}"
    return "inf req/s" if rate == float("inf") else f"{rate:g} req/s"


def ratio(value: float | None, reference: float | None) -> float | None:
    if value is None or not reference:
        return None
    return value / reference


def matching_baseline_run(run: RunResult, baseline: BenchResults) -> RunResult | None:
    """The baseline run with the same label, or the only one if the baseline has one."""
    same_label = [candidate for candidate in baseline.runs if candidate.label == run.label]
    if same_label:
        return same_label[0]
    return baseline.runs[0] if len(baseline.runs) == 1 else None


def sampling_differs(runs: Sequence[RunResult]) -> str | None:
    """A sentence naming each sampling and its runs, when the runs were not all sampled alike."""
    if len({run.sampling.key if run.sampling else None for run in runs}) < 2:
        return None
    by_sampling: dict[str, list[str]] = {}
    for run in runs:
        by_sampling.setdefault(describe_sampling(run.sampling), []).append(f"`{run.label}`")
    listed = "; ".join(f"{sampling}: {', '.join(labels)}" for sampling, labels in by_sampling.items())
    return (
        f"The runs' sampling differs ({listed}). Acceptance, and so speed, changes with temperature: "
        "these runs are not compared like for like."
    )


def sampling_differs_from_baseline(runs: Sequence[RunResult], baseline: BenchResults) -> list[str]:
    """One sentence per run whose --compare-to baseline run was sampled otherwise."""
    notes = []
    for run in runs:
        before = matching_baseline_run(run, baseline)
        if before is None or (run.sampling and run.sampling.key) == (before.sampling and before.sampling.key):
            continue
        notes.append(
            f"`{run.label}` was sampled at {describe_sampling(run.sampling)}, its baseline `{before.label}` at "
            f"{describe_sampling(before.sampling)}: a change against it may come from the sampling, not a regression."
        )
    return notes


def not_compared(current: RunResult, baseline: RunResult) -> list[str]:
    """The shared levels left out of the regression check because either side was measured on a busy machine
    (host_conditions.py): a change against such a level measures the machine, not the server."""
    notes = []
    for level in current.levels:
        reference = baseline.level_at(level.key)
        if reference is None or not (level.noisy or reference.noisy):
            continue
        sides = [
            f"{name} ({'; '.join(host.busy)})"
            for name, host in (("this run", level.host), ("the baseline", reference.host))
            if host is not None and host.noisy  # LevelResult.noisy
        ]
        notes.append(
            f"`{current.label}` at {level.load_label} not compared with `{baseline.label}`: measured on a busy "
            f"machine in {' and '.join(sides)}"
        )
    return notes


def find_regressions(current: RunResult, baseline: RunResult, tolerance: float) -> list[dict]:
    """Every metric at every shared level (concurrency or request rate) that got worse than ``tolerance``.
    Levels measured on a busy machine on either side are left out (``not_compared`` lists them)."""
    regressions = []
    for level in current.levels:
        reference = baseline.level_at(level.key)
        if reference is None or level.noisy or reference.noisy:
            continue
        where = {
            "run": current.label,
            "baseline_run": baseline.label,
            "concurrency": level.concurrency,
            "load": level.load_label,
        }
        if level.error_rate > reference.error_rate + ERROR_RATE_SLACK:
            regressions.append(
                {
                    **where,
                    "metric": "error_rate",
                    "baseline": reference.error_rate,
                    "current": level.error_rate,
                    "change": level.error_rate - reference.error_rate,
                }
            )
        for name in REGRESSION_METRICS:
            metric = METRICS[name]
            now, before = metric.read(level), metric.read(reference)
            change = ratio(now, before)
            if change is None:
                continue
            worse = change < 1 - tolerance if metric.higher_is_better else change > 1 + tolerance
            if worse:
                regressions.append({**where, "metric": name, "baseline": before, "current": now, "change": change - 1})
    return regressions
