"""PNG plots of a benchmark: throughput vs latency per concurrency, and runs side by side.

Small on purpose (baselines are committed): 100 dpi, a few tens of KB each.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from peagle.bench.compare import METRICS, concurrency_levels
from peagle.bench.results import RunResult

_DPI = 100


def write_plots(runs: Sequence[RunResult], out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # no display on servers and CI
    paths = [_throughput_vs_latency(runs, out_dir / "throughput_vs_latency.png")]
    if len(runs) > 1:
        paths.append(_side_by_side(runs, out_dir / "runs_side_by_side.png"))
    return paths


def _throughput_vs_latency(runs: Sequence[RunResult], path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for axis, metric_name in zip(axes, ("tpot_p50", "e2e_p90"), strict=False):
        metric = METRICS[metric_name]
        for run in runs:
            points = [(metric.read(level), level.output_tokens_per_s, level.concurrency) for level in run.levels]
            points = [(x * metric.scale, y, c) for x, y, c in points if x is not None]
            if not points:
                continue
            axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=run.label)
            for x, y, concurrency in points:
                axis.annotate(f"c={concurrency}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
        axis.set_xlabel(f"{metric.title} ({metric.unit})")
        axis.set_ylabel("output tokens/s")
        axis.margins(0.15)  # room for the c=N labels
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.suptitle("Throughput vs latency, one point per concurrency", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=_DPI)
    plt.close(figure)
    return path


def _side_by_side(runs: Sequence[RunResult], path: Path) -> Path:
    import matplotlib.pyplot as plt

    levels = concurrency_levels(runs)
    names = ("output_tokens_per_s", "tpot_p50", "ttft_p50")
    figure, axes = plt.subplots(1, len(names), figsize=(10, 3.4))
    width = 0.8 / len(runs)
    for axis, name in zip(axes, names, strict=False):
        metric = METRICS[name]
        for index, run in enumerate(runs):
            values = []
            for concurrency in levels:
                level = run.level(concurrency)
                value = metric.read(level) if level else None
                values.append(value * metric.scale if value is not None else 0.0)
            positions = [i + (index - (len(runs) - 1) / 2) * width for i in range(len(levels))]
            axis.bar(positions, values, width=width, label=run.label)
        axis.set_xticks(range(len(levels)), [f"c={c}" for c in levels])
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
