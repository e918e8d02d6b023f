"""PNG plots of a benchmark: throughput vs latency per level, runs side by side, and for open-loop
levels SLO attainment and goodput against the offered request rate.

Small on purpose (baselines are committed): 100 dpi, a few tens of KB each.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from peagle.bench.compare import METRICS, key_label, level_keys
from peagle.bench.results import RunResult

_DPI = 100


def write_plots(runs: Sequence[RunResult], out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # no display on servers and CI
    paths = [_throughput_vs_latency(runs, out_dir / "throughput_vs_latency.png")]
    if len(runs) > 1:
        paths.append(_side_by_side(runs, out_dir / "runs_side_by_side.png"))
    if any(
        level.open_loop and level.slo and not math.isinf(level.open_loop.offered_request_rate)
        for run in runs
        for level in run.levels
    ):
        paths.append(_slo_vs_rate(runs, out_dir / "slo_vs_request_rate.png"))
    return paths


def _throughput_vs_latency(runs: Sequence[RunResult], path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for axis, metric_name in zip(axes, ("tpot_p50", "e2e_p90"), strict=False):
        metric = METRICS[metric_name]
        for run in runs:
            points = [(metric.read(level), level.output_tokens_per_s, level.load_label) for level in run.levels]
            points = [(x * metric.scale, y, load) for x, y, load in points if x is not None]
            if not points:
                continue
            axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=run.label)
            for x, y, load in points:
                axis.annotate(load, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
        axis.set_xlabel(f"{metric.title} ({metric.unit})")
        axis.set_ylabel("output tokens/s")
        axis.margins(0.15)  # room for the c=N labels
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.suptitle("Throughput vs latency, one point per level", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=_DPI)
    plt.close(figure)
    return path


def _side_by_side(runs: Sequence[RunResult], path: Path) -> Path:
    import matplotlib.pyplot as plt

    levels = level_keys(runs)
    names = ("output_tokens_per_s", "tpot_p50", "ttft_p50")
    figure, axes = plt.subplots(1, len(names), figsize=(10, 3.4))
    width = 0.8 / len(runs)
    for axis, name in zip(axes, names, strict=False):
        metric = METRICS[name]
        for index, run in enumerate(runs):
            values = []
            for key in levels:
                level = run.level_at(key)
                value = metric.read(level) if level else None
                values.append(value * metric.scale if value is not None else 0.0)
            positions = [i + (index - (len(runs) - 1) / 2) * width for i in range(len(levels))]
            axis.bar(positions, values, width=width, label=run.label)
        axis.set_xticks(range(len(levels)), [key_label(key) for key in levels], fontsize=7)
        axis.set_title(f"{metric.title}" + (f" ({metric.unit})" if metric.unit else ""), fontsize=9)
        axis.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    speculation = {run.speculation for run in runs}
    title = "With vs without speculation" if {"on", "off"} <= speculation else "Runs side by side"
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=_DPI)
    plt.close(figure)
    return path


def _slo_vs_rate(runs: Sequence[RunResult], path: Path) -> Path:
    """Attainment (all bounds) and goodput against the offered rate; 'inf' levels have no place on the axis."""
    import matplotlib.pyplot as plt

    figure, (attained, goodput) = plt.subplots(1, 2, figsize=(9, 3.4))
    targets = set()
    for run in runs:
        levels = sorted(
            (
                (level.open_loop, level.slo)
                for level in run.levels
                if level.open_loop and level.slo and not math.isinf(level.open_loop.offered_request_rate)
            ),
            key=lambda level: level[0].offered_request_rate,
        )
        if not levels:
            continue
        rates = [load.offered_request_rate for load, _ in levels]
        attained.plot(rates, [slo.all_bounds * 100 for _, slo in levels], marker="o", label=run.label)
        goodput.plot(rates, [slo.goodput_requests_per_s for _, slo in levels], marker="o", label=f"{run.label} goodput")
        goodput.plot(
            rates, [load.achieved_request_rate for load, _ in levels], linestyle=":", label=f"{run.label} sent"
        )
        targets |= {slo.target_attainment for _, slo in levels}
    for target in targets:
        attained.axhline(target * 100, color="grey", linestyle="--", linewidth=0.8)
    attained.set_ylabel("requests meeting every bound (%)")
    goodput.set_ylabel("req/s")
    for axis in (attained, goodput):
        axis.set_xlabel("offered request rate (req/s)")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    figure.suptitle("SLO attainment and goodput vs offered request rate (dashed: target)", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=_DPI)
    plt.close(figure)
    return path
