"""What `peagle simulate` writes: per scenario a timeline table (CSV) and plot (PNG), and one summary
(markdown) with the verdicts and the assumptions they were reached under."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from peagle.simulate.scenarios import Result

COLUMNS = (
    "minute",
    "offered_rpm",
    "served",
    "refused",
    "timed_out_or_queued",
    "desired",
    "starting",
    "serving",
    "instances",
    "in_flight_per_unit",
)


def slug(result: Result) -> str:
    timeline = result.timeline
    text = f"{timeline.setup.target.name}-{timeline.trace.name}-{timeline.assumptions.label()}"
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def write_table(result: Result, path: Path) -> None:
    timeline = result.timeline
    alarms = list(timeline.alarm_names)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([*COLUMNS, *(timeline.alarm_names[alarm] for alarm in alarms), "actions"])
        for m in timeline.minutes:
            writer.writerow(
                [
                    m.minute,
                    f"{m.offered:.1f}",
                    f"{m.served:.1f}",
                    f"{m.refused:.1f}",
                    f"{m.queued:.1f}",
                    m.desired,
                    m.starting,
                    m.serving,
                    m.instances,
                    f"{m.in_flight_per_unit:.2f}",
                    *(m.alarms.get(alarm, "") for alarm in alarms),
                    "; ".join(m.actions),
                ]
            )


def write_plot(result: Result, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timeline = result.timeline
    minutes = [m.minute for m in timeline.minutes]
    alarms = list(timeline.alarm_names)
    figure, (capacity, load, states) = plt.subplots(
        3, 1, figsize=(11, 7.5), sharex=True, gridspec_kw={"height_ratios": [2, 2, max(1, len(alarms)) * 0.35]}
    )
    unit = timeline.setup.target.unit
    capacity.step(minutes, [m.desired for m in timeline.minutes], where="post", label=f"{unit} requested")
    capacity.step(minutes, [m.serving for m in timeline.minutes], where="post", label=f"{unit} serving")
    if unit == "copies":
        capacity.step(minutes, [m.instances for m in timeline.minutes], where="post", label="instances", alpha=0.6)
    capacity.set_ylabel(unit)
    capacity.legend(fontsize=8, loc="upper right")
    verdict = (
        "all properties hold"
        if result.passed
        else "FAILS: " + "; ".join(v.name for v in result.verdicts if not v.passed)
    )
    capacity.set_title(
        f"{timeline.setup.target.name}, {timeline.trace.name}, {timeline.assumptions.label()}\n{verdict}", fontsize=9
    )
    load.plot(minutes, [m.offered for m in timeline.minutes], label="offered", color="grey")
    load.plot(minutes, [m.served for m in timeline.minutes], label="served")
    load.plot(minutes, [m.refused for m in timeline.minutes], label="refused (no capacity)")
    load.plot(minutes, [m.queued for m in timeline.minutes], label="timed out / queued")
    load.set_ylabel("requests per minute")
    load.legend(fontsize=8, loc="upper right")
    for row, alarm in enumerate(alarms):
        for state, color in (("ALARM", "tab:red"), ("INSUFFICIENT_DATA", "lightgrey")):
            where = [m.alarms.get(alarm) == state for m in timeline.minutes]
            states.fill_between(minutes, row, row + 0.8, where=where, step="post", color=color, linewidth=0)
    states.set_yticks([row + 0.4 for row in range(len(alarms))])
    states.set_yticklabels([timeline.alarm_names[alarm][:34] for alarm in alarms], fontsize=7)
    states.set_xlabel("minute (red: ALARM, grey: INSUFFICIENT_DATA)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def summary(results: list[Result], source: str) -> str:
    lines = [f"# Scaling simulation of {source}", ""]
    if results:
        lines += ["Assumptions (the deciding ones vary per scenario):", ""]
        lines += [f"- {text}" for text in results[0].timeline.assumptions.described()[2:]]
        lines.append("")
    for result in results:
        timeline = result.timeline
        lines += [
            f"## {timeline.setup.target.name} ({timeline.setup.target.unit} "
            f"{timeline.setup.target.min_capacity}-{timeline.setup.target.max_capacity}), "
            f"traffic {timeline.trace.name}, {timeline.assumptions.label()}: {'PASS' if result.passed else 'FAIL'}",
            "",
            f"Files: `{slug(result)}.csv`, `{slug(result)}.png`",
            "",
        ]
        lines += [f"- {'pass' if v.passed else 'FAIL'}: {v.name}. {v.detail}" for v in result.verdicts]
        lines.append("")
    return "\n".join(lines)


def write(results: list[Result], out: Path, *, source: str, plots: bool = True) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for result in results:
        write_table(result, out / f"{slug(result)}.csv")
        if plots:
            write_plot(result, out / f"{slug(result)}.png")
    path = out / "simulation.md"
    path.write_text(summary(results, source), encoding="utf-8")
    return path
