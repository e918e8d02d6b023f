"""What `peagle simulate` writes: one summary (markdown) that opens with a table of every scenario (target x
trace x the readings that gave the same timeline: requests answered, lost, the longest wait, cost,
verdict), then what to change for each failing verdict, the assumptions, and per scenario its verdicts;
and per scenario a timeline table (CSV) and plot (PNG)."""

from __future__ import annotations

import csv
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from peagle.simulate.scenarios import Result
from peagle.simulate.service import READING_FIELDS, READINGS

COLUMNS = (
    "minute",
    "offered_rpm",
    "answered_on_time",
    "answered_after_wait",
    "answered_late",
    "timed_out",
    "refused",
    "expired",
    "waiting",
    "desired",
    "starting",
    "serving",
    "instances",
    "in_flight_per_unit",
)


@dataclass
class Scenario:
    """Results of one target and trace whose timelines were identical, under the readings they share."""

    results: list[Result]
    number: int
    of: int  # readings run for this target and trace

    @property
    def first(self) -> Result:
        return self.results[0]

    @property
    def slug(self) -> str:
        timeline = self.first.timeline
        text = f"{timeline.setup.name}-{timeline.trace.name}-{self.number}"
        return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")

    def readings(self) -> str:
        """The readings this scenario stands for, in words: those it fixes, or "every reading"."""
        chosen = [{field: getattr(r.timeline.assumptions, field) for field in READING_FIELDS} for r in self.results]
        if len(chosen) >= self.of:
            return "every reading" if self.of > 1 else self.first.timeline.assumptions.label()
        fixed = [
            reading.describe(chosen[0][reading.field])
            for reading in READINGS
            if len({choice[reading.field] for choice in chosen}) == 1
        ]
        return "; ".join(fixed or ["mixed readings"]) + f" ({len(chosen)} of {self.of})"


def scenarios(results: list[Result]) -> list[Scenario]:
    """Results grouped by target and trace, then by identical timelines (in order of first appearance)."""
    groups: dict[tuple, list[Result]] = {}
    for result in results:
        timeline = result.timeline
        signature = tuple(
            (m.desired, m.serving, m.instances, round(m.served, 6), round(m.lost, 6)) for m in timeline.minutes
        )
        groups.setdefault((timeline.setup.name, timeline.trace.name, signature), []).append(result)
    numbered: dict[tuple[str, str], int] = {}
    runs: dict[tuple[str, str], int] = {}
    for target, trace, _ in groups:
        runs[(target, trace)] = runs.get((target, trace), 0) + len(groups[(target, trace, _)])
    found = []
    for (target, trace, _), members in groups.items():
        numbered[(target, trace)] = numbered.get((target, trace), 0) + 1
        found.append(Scenario(members, numbered[(target, trace)], runs[(target, trace)]))
    return found


def write_table(scenario: Scenario, path: Path) -> None:
    timeline = scenario.first.timeline
    alarms = list(timeline.alarm_names)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([*COLUMNS, *(timeline.alarm_names[alarm] for alarm in alarms), "actions"])
        for m in timeline.minutes:
            writer.writerow(
                [
                    m.minute,
                    f"{m.offered:.1f}",
                    f"{m.on_time:.1f}",
                    f"{m.after_wait:.1f}",
                    f"{m.late:.1f}",
                    f"{m.timed_out:.1f}",
                    f"{m.refused:.1f}",
                    f"{m.expired:.1f}",
                    f"{m.waiting:.1f}",
                    m.desired,
                    m.starting,
                    m.serving,
                    m.instances,
                    f"{m.in_flight_per_unit:.2f}",
                    *(m.alarms.get(alarm, "") for alarm in alarms),
                    "; ".join(m.actions),
                ]
            )


def write_plot(scenario: Scenario, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    result = scenario.first
    timeline = result.timeline
    minutes = [m.minute for m in timeline.minutes]
    alarms = list(timeline.alarm_names)
    asynchronous = timeline.setup.shape.asynchronous
    rows = 4 if asynchronous else 3
    ratios = [2, 2] + ([1.2] if asynchronous else []) + [max(1, len(alarms)) * 0.35]
    figure, axes = plt.subplots(
        rows, 1, figsize=(11, 8 if asynchronous else 7.5), sharex=True, gridspec_kw={"height_ratios": ratios}
    )
    capacity, load, states = axes[0], axes[1], axes[-1]
    unit = timeline.setup.target.unit
    capacity.step(minutes, [m.desired for m in timeline.minutes], where="post", label=f"{unit} requested")
    capacity.step(minutes, [m.serving for m in timeline.minutes], where="post", label=f"{unit} serving")
    if unit == "copies":
        capacity.step(minutes, [m.instances for m in timeline.minutes], where="post", label="instances", alpha=0.6)
    capacity.axhline(
        timeline.setup.target.max_capacity, color="tab:red", linestyle=":", linewidth=1, label=f"max {unit}"
    )
    capacity.yaxis.set_major_locator(MaxNLocator(integer=True))
    capacity.set_ylim(bottom=0)
    capacity.set_ylabel(unit)
    capacity.legend(fontsize=7, loc="upper right")
    seen = result.outcome
    verdict = "PASS" if result.passed else "FAIL: " + "; ".join(v.name for v in result.verdicts if not v.passed)
    title = (
        f"{timeline.setup.name}, traffic {timeline.trace.name} ({scenario.readings()}): answered "
        f"{seen.answered_share:.1%}, ${seen.cost_usd:,.2f}. {verdict}"
    )
    capacity.set_title("\n".join(textwrap.wrap(title, 130)), fontsize=8)
    load.plot(minutes, [m.offered for m in timeline.minutes], label="offered", color="grey")
    load.plot(minutes, [m.served for m in timeline.minutes], label="answered")
    if any(m.late for m in timeline.minutes):
        load.plot(minutes, [m.late for m in timeline.minutes], label="answered after a timeout")
    for label, values in (
        (
            "sends refused (no capacity; retried until the cold-start wait is over)",
            [m.refused_sends for m in timeline.minutes],
        ),
        ("timed out (sends, resent or lost)", [m.timeouts for m in timeline.minutes]),
        ("expired", [m.expired for m in timeline.minutes]),
    ):
        if any(values):
            load.plot(minutes, values, label=label)
    load.set_ylabel("requests per minute")
    load.set_ylim(bottom=0)
    load.legend(fontsize=7, loc="upper right")
    if asynchronous:
        backlog = axes[2]
        backlog.plot(minutes, [m.waiting for m in timeline.minutes], color="tab:purple", label="queued")
        backlog.set_ylabel("queued requests")
        backlog.set_ylim(bottom=0)
        backlog.legend(fontsize=7, loc="upper right")
    # One-minute states stay visible on a day-long axis: each stretch is at least a few pixels wide.
    least = max(1.0, len(minutes) / 500)
    for row, alarm in enumerate(alarms):
        for state, color in (("ALARM", "tab:red"), ("INSUFFICIENT_DATA", "lightgrey")):
            runs, start = [], None
            for m in timeline.minutes:
                inside = m.alarms.get(alarm) == state
                if inside and start is None:
                    start = m.minute
                elif not inside and start is not None:
                    runs.append((start, max(least, m.minute - start)))
                    start = None
            if start is not None:
                runs.append((start, max(least, len(minutes) - start)))
            states.broken_barh(runs, (row, 0.8), facecolors=color, linewidth=0)
    states.set_yticks([row + 0.4 for row in range(len(alarms))])
    states.set_yticklabels([timeline.alarm_names[alarm][:34] for alarm in alarms], fontsize=7)
    states.set_ylim(0, max(1, len(alarms)))
    states.set_xlabel("minute (alarms: red ALARM, grey INSUFFICIENT_DATA)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _money(value: float | None) -> str:
    if value is None:
        return "-"
    return f"${value:,.2f}" if value < 1000 else f"${value:,.0f}"


def _wait(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def summary_rows(found: list[Scenario]) -> list[list[str]]:
    rows = []
    for scenario in found:
        result, seen = scenario.first, scenario.first.outcome
        timeline = result.timeline
        lost = "/".join(
            f"{seen.share(amount):.1%}"
            for amount in (seen.late + seen.timed_out, seen.refused, seen.expired + seen.unresolved)
        )
        over = f"{seen.over_instance_minutes / 60:,.1f} h ({_money(seen.over_cost_usd)})"
        rows.append(
            [
                f"{timeline.setup.name}",
                timeline.trace.name,
                scenario.readings(),
                f"{seen.answered_share:.1%}",
                lost,
                _wait(seen.worst_wait_seconds),
                _money(seen.cost_usd),
                _money(seen.cost_per_million_tokens_usd),
                over,
                "PASS" if result.passed else "FAIL",
            ]
        )
    return rows


SUMMARY_HEADER = (
    "target",
    "traffic",
    "readings",
    "answered",
    "lost: timed out or late/refused/expired",
    "worst wait",
    "cost",
    "per 1M output tokens",
    "beyond need (instance-h)",
    "verdict",
)


def summary(results: list[Result], source: str, found: list[Scenario] | None = None) -> str:
    found = found if found is not None else scenarios(results)
    lines = [f"# Scaling simulation of {source}", ""]
    if results:
        first = results[0].timeline
        lines += [
            f"{len(results)} runs: {len({(r.timeline.setup.name, r.timeline.trace.name) for r in results})} target x "
            f"trace pair(s), each under {len({r.timeline.assumptions.label() for r in results})} reading(s) of the "
            f"rules AWS leaves open; runs with identical timelines share a row. The SLO asks that "
            f"{first.setup.slo_attainment:.0%} of requests be answered. Cost is on-demand, "
            f"${first.setup.price_per_instance_hour:,.2f} per instance-hour.",
            "",
            "| " + " | ".join(SUMMARY_HEADER) + " |",
            "|" + "|".join("---" for _ in SUMMARY_HEADER) + "|",
        ]
        lines += ["| " + " | ".join(row) + " |" for row in summary_rows(found)]
        lines.append("")
    failing = [(scenario, verdict) for scenario in found for verdict in scenario.first.verdicts if not verdict.passed]
    if failing:
        lines += ["## What to change", ""]
        for scenario, verdict in failing:
            timeline = scenario.first.timeline
            lines.append(
                f"- **{timeline.setup.name}, {timeline.trace.name}** ({scenario.readings()}): {verdict.name}. "
                f"{verdict.detail}." + (f" **Change:** {verdict.fix}." if verdict.fix else "")
            )
        lines.append("")
    if results:
        base = results[0].timeline.assumptions
        lines += ["## Assumptions", "", "Run both ways (AWS does not say):", ""]
        lines += [f"- {reading.question}" for reading in READINGS]
        lines += ["", "Fixed (the command line sets the numbers):", ""]
        lines += [f"- {text}" for text in base.fixed()]
        lines.append("")
    lines += ["## Scenarios", ""]
    for scenario in found:
        result = scenario.first
        timeline, seen = result.timeline, result.outcome
        target = timeline.setup.target
        lines += [
            f"### {timeline.setup.name} ({target.unit} {target.min_capacity}-{target.max_capacity}), traffic "
            f"{timeline.trace.name}: {'PASS' if result.passed else 'FAIL'}",
            "",
            f"Readings: {scenario.readings()}. Files: `{scenario.slug}.csv`, `{scenario.slug}.png`.",
            "",
            f"Cost: {seen.instance_minutes / 60:,.1f} instance-hours, {_money(seen.cost_usd)}; per answered request "
            f"{_money(seen.cost_per_answered_usd)}, per 1M output tokens {_money(seen.cost_per_million_tokens_usd)}; "
            f"{seen.over_instance_minutes / 60:,.1f} instance-hours beyond what the load needed "
            f"({_money(seen.over_cost_usd)}).",
            "",
        ]
        lines += [f"- {'pass' if v.passed else 'FAIL'}: {v.name}. {v.detail}" for v in result.verdicts]
        lines.append("")
    return "\n".join(lines)


def write(results: list[Result], out: Path, *, source: str, plots: bool = True) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    found = scenarios(results)
    for scenario in found:
        write_table(scenario, out / f"{scenario.slug}.csv")
        if plots:
            write_plot(scenario, out / f"{scenario.slug}.png")
    path = out / "simulation.md"
    path.write_text(summary(results, source, found), encoding="utf-8")
    return path
