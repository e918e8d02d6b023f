"""Write a benchmark's report folder: results.json, report.md and the PNG plots."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from peagle.bench.compare import (
    find_regressions,
    matching_baseline_run,
    not_compared,
    sampling_differs,
    sampling_differs_from_baseline,
)
from peagle.bench.plots import write_plots
from peagle.bench.report_md import write_report
from peagle.bench.results import BenchResults, RunResult, results_to_json


def write_report_folder(
    runs: Sequence[RunResult],
    out_dir: Path,
    *,
    environment: dict[str, Any],
    settings: dict[str, Any],
    baseline: BenchResults | None = None,
    baseline_path: Path | None = None,
    tolerance: float = 0.10,
) -> tuple[BenchResults, list[dict]]:
    regressions: list[dict] = []
    left_out: list[str] = []
    side_by_side = sampling_differs(runs)
    sampling_notes = [side_by_side] if side_by_side else []
    if baseline is not None:
        sampling_notes += sampling_differs_from_baseline(runs, baseline)
        for run in runs:
            baseline_run = matching_baseline_run(run, baseline)
            if baseline_run is not None:
                regressions += find_regressions(run, baseline_run, tolerance)
                left_out += not_compared(run, baseline_run)
    results = BenchResults(
        created_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        environment=environment,
        settings=settings,
        runs=list(runs),
        regressions=regressions,
        compared_to=str(baseline_path) if baseline_path else None,
        sampling_notes=sampling_notes,
        not_compared=left_out,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(results_to_json(results), encoding="utf-8")
    plots = write_plots(results.runs, out_dir)
    write_report(results, out_dir / "report.md", [path.name for path in plots])
    return results, regressions
