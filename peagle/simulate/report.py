"""What `peagle simulate` writes: one summary (markdown) that opens with a table of every scenario (target x
trace x the readings that gave the same timeline: requests answered, lost, the longest wait, cost,
verdict) and one of the endpoints side by side (SLO, price, start, verdicts, cost), then what to change for
each failing verdict, then a section per endpoint: its own SLO, price, assumptions and scenarios with their
verdicts; and per scenario a timeline table (CSV) and plot (PNG)."""

from __future__ import annotations

import csv
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from peagle.simulate.model_error import error_band
from peagle.simulate.scenarios import Result
from peagle.simulate.service import READING_FIELDS, READINGS, Assumptions

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
            if len({choice[reading.field] for choice in chosen}) == 1 and reading.applies(chosen[0][reading.field])
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


# Zoomed panels: the failing windows with the most requests lost, this many, each with this much either side.
ZOOM_WINDOWS = 3
ZOOM_MARGIN_MINUTES = 20
# Alarm states by what they mean: a scale-out alarm in ALARM is scaling out; a scale-in alarm in ALARM is the
# normal state of a fleet with spare capacity (target tracking's low alarm sits there whenever the load is
# under its share of the target); no data is neither.
ALARM_COLOURS = {
    ("ALARM", True): ("tab:orange", "scale-out alarm in ALARM: asking for capacity"),
    ("ALARM", False): ("lightsteelblue", "scale-in alarm in ALARM: spare capacity (normal)"),
    ("INSUFFICIENT_DATA", True): ("lightgrey", "no data"),
    ("INSUFFICIENT_DATA", False): ("lightgrey", "no data"),
}
_OUTSIDE = {"fontsize": 7, "loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0}


def write_plot(scenario: Scenario, path: Path) -> None:
    """The timeline at a glance: capacity with its bounds (scheduled changes marked), requests offered and
    answered, the sends that were refused or timed out on their own axis (they count sends, retries included,
    and would flatten the answered line), the alarms by meaning, and a zoomed panel per failing window.
    Legends sit outside the axes, clear of the data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from peagle.simulate.scheduled_floor import loss_windows

    result = scenario.first
    timeline = result.timeline
    history = timeline.minutes
    minutes = [m.minute for m in history]
    alarms = list(timeline.alarm_names)
    asynchronous = timeline.setup.shape.asynchronous
    sends = {
        "sends refused (no capacity; retried until the cold-start wait is over)": [m.refused_sends for m in history],
        "sends timed out (resent or lost)": [m.timeouts for m in history],
        "expired": [m.expired for m in history],
    }
    sends = {label: values for label, values in sends.items() if any(values)}
    windows = sorted(loss_windows(timeline), key=lambda w: -sum(m.lost for m in history[w[0] : w[1] + 1]))[
        :ZOOM_WINDOWS
    ]
    panels = ["capacity", "load"] + (["sends"] if sends else []) + (["backlog"] if asynchronous else []) + ["states"]
    heights = {"capacity": 2, "load": 2, "sends": 1.2, "backlog": 1.2, "states": max(1, len(alarms)) * 0.35}
    ratios = [heights[name] for name in panels] + ([1.8] if windows else [])
    figure = plt.figure(figsize=(13, 2.2 + 1.6 * sum(ratios)))
    grid = figure.add_gridspec(len(ratios), max(1, len(windows)), height_ratios=ratios)
    first = figure.add_subplot(grid[0, :])
    axes = {"capacity": first} | {
        name: figure.add_subplot(grid[row, :], sharex=first) for row, name in enumerate(panels) if row
    }
    capacity, load, states = axes["capacity"], axes["load"], axes["states"]
    _capacity_panel(capacity, timeline)
    seen = result.outcome
    verdict = "PASS" if result.passed else "FAIL: " + "; ".join(v.name for v in result.verdicts if not v.passed)
    title = (
        f"{timeline.setup.name}, traffic {timeline.trace.name} ({scenario.readings()}): answered "
        f"{seen.answered_share:.1%}, ${seen.cost_usd:,.2f}. {verdict}"
    )
    capacity.set_title("\n".join(textwrap.wrap(title, 150)), fontsize=8)
    _requests(load, minutes, history)
    load.legend(**_OUTSIDE)
    if sends:
        for label, values in sends.items():
            axes["sends"].plot(minutes, values, label=label)
        axes["sends"].set_ylabel("sends per minute")
        axes["sends"].set_ylim(bottom=0)
        axes["sends"].legend(**_OUTSIDE)
    if asynchronous:
        backlog = axes["backlog"]
        backlog.plot(minutes, [m.waiting for m in history], color="tab:purple", label="queued")
        backlog.set_ylabel("queued requests")
        backlog.set_ylim(bottom=0)
        backlog.legend(**_OUTSIDE)
    _alarm_states(states, timeline, alarms, Patch)
    _zoom_panels(figure, grid, len(panels), windows, minutes, history)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _capacity_panel(capacity, timeline) -> None:
    """Units requested and serving (and instances under copies), the bounds, and the scheduled changes marked."""
    from matplotlib.ticker import MaxNLocator

    history = timeline.minutes
    minutes = [m.minute for m in history]
    unit = timeline.setup.target.unit
    capacity.step(minutes, [m.desired for m in history], where="post", label=f"{unit} requested")
    capacity.step(minutes, [m.serving for m in history], where="post", label=f"{unit} serving")
    if unit == "copies":
        capacity.step(minutes, [m.instances for m in history], where="post", label="instances", alpha=0.6)
    target = timeline.setup.target
    floors = [target.min_capacity if m.floor is None else m.floor for m in history]
    ceilings = [target.max_capacity if m.ceiling is None else m.ceiling for m in history]
    capacity.step(minutes, ceilings, where="post", color="tab:red", linestyle=":", linewidth=1, label=f"max {unit}")
    capacity.step(minutes, floors, where="post", color="tab:green", linestyle=":", linewidth=1, label=f"min {unit}")
    for m in history:
        for action in m.actions:
            if action.startswith("scheduled "):
                capacity.axvline(m.minute, color="tab:green", alpha=0.4, linewidth=0.8)
                capacity.annotate(
                    action.split(":")[0].removeprefix("scheduled "),
                    (m.minute, 0),
                    xytext=(2, 2),
                    textcoords="offset points",
                    fontsize=6,
                    rotation=90,
                    color="tab:green",
                )
    capacity.yaxis.set_major_locator(MaxNLocator(integer=True))
    capacity.set_ylim(bottom=0, top=max(ceilings + [m.desired for m in history]) * 1.15 + 0.5)
    capacity.set_ylabel(unit)
    capacity.legend(**_OUTSIDE)


def _zoom_panels(figure, grid, row: int, windows: list[tuple[int, int]], minutes: list[int], history) -> None:
    """A zoomed panel per failing window, side by side in the grid's ``row``."""
    for column, (start, end) in enumerate(windows):
        zoom = figure.add_subplot(grid[row, column])
        low, high = max(0, start - ZOOM_MARGIN_MINUTES), min(len(history), end + ZOOM_MARGIN_MINUTES + 1)
        _requests(zoom, minutes[low:high], history[low:high])
        lost = [m.lost for m in history[low:high]]
        zoom.fill_between(minutes[low:high], lost, step="post", color="tab:red", alpha=0.3, label="lost")
        zoom.set_title(f"failing window, minutes {start}-{end} (zoomed)", fontsize=7)
        zoom.tick_params(labelsize=6)
        if column == len(windows) - 1:
            zoom.legend(**_OUTSIDE)


def _requests(axis, minutes: list[int], history) -> None:
    axis.plot(minutes, [m.offered for m in history], label="offered", color="grey")
    axis.plot(minutes, [m.served for m in history], label="answered")
    if any(m.late for m in history):
        axis.plot(minutes, [m.late for m in history], label="answered after a timeout")
    axis.set_ylabel("requests per minute")
    axis.set_ylim(bottom=0)


def _alarm_states(states, timeline, alarms: list[str], patch) -> None:
    # One-minute states stay visible on a day-long axis: each stretch is at least a few pixels wide.
    least = max(1.0, len(timeline.minutes) / 500)
    shown: dict[str, str] = {}
    for row, alarm in enumerate(alarms):
        upward = timeline.alarm_upward.get(alarm, True)
        for state in ("ALARM", "INSUFFICIENT_DATA"):
            colour, meaning = ALARM_COLOURS[(state, upward)]
            runs, start = [], None
            for m in timeline.minutes:
                inside = m.alarms.get(alarm) == state
                if inside and start is None:
                    start = m.minute
                elif not inside and start is not None:
                    runs.append((start, max(least, m.minute - start)))
                    start = None
            if start is not None:
                runs.append((start, max(least, len(timeline.minutes) - start)))
            if runs:
                shown[meaning] = colour
            states.broken_barh(runs, (row, 0.8), facecolors=colour, linewidth=0)
    states.set_yticks([row + 0.4 for row in range(len(alarms))])
    states.set_yticklabels([timeline.alarm_names[alarm][:34] for alarm in alarms], fontsize=7)
    states.set_ylim(0, max(1, len(alarms)))
    states.set_xlabel(f"minute of the trace (minute 0: {timeline.trace.start:%Y-%m-%d %H:%M} UTC)")
    if shown:
        states.legend(handles=[patch(color=colour, label=meaning) for meaning, colour in shown.items()], **_OUTSIDE)


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


@dataclass(frozen=True)
class EndpointResults:
    """One endpoint's part of a simulation. What its section states (the SLO its targets were judged against, the
    price they were costed at, the fixed assumptions and what was read from the template) comes from its own
    results' setups and assumptions, never from another endpoint's."""

    name: str | None  # None: not known (results grouped by ``by_endpoint``)
    results: list[Result]

    @property
    def title(self) -> str:
        return self.name or ", ".join(self.targets)

    @property
    def targets(self) -> list[str]:
        return list(dict.fromkeys(result.timeline.setup.name for result in self.results))

    @property
    def assumptions(self) -> Assumptions:
        """As run; a component that caches its model data says how its cached start is counted (Assumptions.fixed)."""
        ran = [result.timeline.assumptions for result in self.results]
        return next((assumed for assumed in ran if assumed.data_cache != "off"), ran[0])

    def holds(self, scenario: Scenario) -> bool:
        return any(result is scenario.first for result in self.results)


def by_endpoint(results: list[Result]) -> list[EndpointResults]:
    """``results`` in sections where nothing says which endpoint each came from: targets that share every figure a
    section states (SLO, price, fixed assumptions) share one, so no section states a figure one of its targets was
    not run with."""
    groups: dict[tuple, list[Result]] = {}
    for result in results:
        setup, assumed = result.timeline.setup, result.timeline.assumptions
        key = (_slo(setup), setup.price_per_instance_hour, tuple(assumed.but(data_cache="off").fixed()))
        groups.setdefault(key, []).append(result)
    return [EndpointResults(None, members) for members in groups.values()]


def _slo(setup) -> str:
    """The SLO a target was judged against: the profile's bounds (as `peagle plan` prints them) at the attainment
    the run held it to (the profile's, or --attainment's)."""
    from peagle.planning.planner import describe_slo

    if setup.slo is None:
        return f"{setup.slo_attainment * 100:g}% of requests"
    held = setup.slo.model_copy(update={"attainment": setup.slo_attainment})
    return describe_slo(held) + (" (--attainment)" if setup.slo_attainment != setup.slo.attainment else "")


def _per_target(section: EndpointResults, describe) -> str:
    """``describe(setup)`` of the section's targets: once when they agree, else target by target."""
    said = {result.timeline.setup.name: describe(result.timeline.setup) for result in section.results}
    if len(set(said.values())) == 1:
        return next(iter(said.values()))
    return "; ".join(f"{target}: {text}" for target, text in said.items())


def _unit_kind(setup) -> str:
    target = setup.target
    kind = f"asynchronous {target.unit}" if setup.shape.asynchronous else target.unit
    return f"{setup.name} ({kind} {target.min_capacity}-{target.max_capacity})"


ENDPOINTS_HEADER = (
    "endpoint",
    "targets",
    "SLO",
    "price per instance-hour",
    "start",
    "unit served by",
    "scenarios",
    "cost per scenario",
)


def endpoint_rows(sections: list[EndpointResults], found: list[Scenario]) -> list[list[str]]:
    """The endpoints side by side: what each was judged against and priced at, its start, its verdicts and cost."""
    rows = []
    for section in sections:
        mine = [scenario for scenario in found if section.holds(scenario)]
        passed = sum(scenario.first.passed for scenario in mine)
        costs = sorted(scenario.first.outcome.cost_usd for scenario in mine)
        assumed = section.assumptions
        rows.append(
            [
                section.title,
                _per_target(section, _unit_kind)
                if len(section.targets) == 1
                else ", ".join(dict.fromkeys(_unit_kind(result.timeline.setup) for result in section.results)),
                _per_target(section, _slo),
                _per_target(section, lambda setup: _money(setup.price_per_instance_hour)),
                f"{assumed.startup_seconds:.0f} s (+{assumed.instance_launch_seconds:.0f} s with a new instance)",
                assumed.service.source if assumed.service is not None else "fixed slots (SLO bounds not checked)",
                f"{passed} PASS, {len(mine) - passed} FAIL",
                _money(costs[0]) if costs[0] == costs[-1] else f"{_money(costs[0])}-{_money(costs[-1])}",
            ]
        )
    return rows


def summary(
    results: list[Result],
    source: str,
    found: list[Scenario] | None = None,
    endpoints: list[EndpointResults] | None = None,
) -> str:
    """The report; ``endpoints``: the results by endpoint (default: ``by_endpoint``)."""
    found = found if found is not None else scenarios(results)
    sections = [section for section in (endpoints or by_endpoint(results)) if section.results]
    lines = [f"# Scaling simulation of {source}", ""]
    if results:
        lines += [
            f"{len(results)} runs: {len({(r.timeline.setup.name, r.timeline.trace.name) for r in results})} target x "
            f"trace pair(s), each under {len({r.timeline.assumptions.label() for r in results})} reading(s) of the "
            "rules AWS leaves open; runs with identical timelines share a row. Each endpoint is judged against its own "
            "SLO and costed at its own instance-hour price: side by side under Endpoints, in full in its section.",
            "",
            *_table(SUMMARY_HEADER, summary_rows(found)),
            "",
            error_band(),
            "",
            "## Endpoints",
            "",
            *_table(ENDPOINTS_HEADER, endpoint_rows(sections, found)),
            "",
        ]
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
    for section in sections:
        lines += _endpoint_section(section, [scenario for scenario in found if section.holds(scenario)])
    return "\n".join(lines)


def _verdict_word(verdict) -> str:
    """pass, FAIL, or "not checked" where nothing here could tell (Verdict.checked)."""
    if not verdict.checked:
        return "not checked"
    return "pass" if verdict.passed else "FAIL"


def _table(header: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"] + [
        "| " + " | ".join(row) + " |" for row in rows
    ]


def _endpoint_section(section: EndpointResults, found: list[Scenario]) -> list[str]:
    """One endpoint: its targets, SLO and price, the assumptions it ran under, and its scenarios."""
    results = section.results
    lines = [
        f"## Endpoint {section.name}" if section.name else f"## {section.title}",
        "",
        f"Targets: {', '.join(dict.fromkeys(_unit_kind(result.timeline.setup) for result in results))}. "
        f"SLO: {_per_target(section, _slo)}. Cost is on-demand, "
        f"{_per_target(section, lambda setup: _money(setup.price_per_instance_hour))} per instance-hour.",
        "",
        "### Assumptions",
        "",
        "Run both ways (AWS does not say):",
        "",
    ]
    lines += [
        f"- {reading.question}"
        for reading in READINGS
        if any(reading.applies(getattr(r.timeline.assumptions, reading.field)) for r in results)
    ]
    lines += ["", "Fixed (the command line sets the numbers):", ""]
    lines += [f"- {text}" for text in section.assumptions.fixed()]
    lines.append("")
    read = template_assumptions(results)
    if read:
        lines += ["Read from the template, and assumed about it:", ""]
        lines += [f"- {name}: {text}" for name, text in read]
        lines.append("")
    lines += ["### Scenarios", ""]
    for scenario in found:
        result = scenario.first
        timeline, seen = result.timeline, result.outcome
        target = timeline.setup.target
        lines += [
            f"#### {timeline.setup.name} ({target.unit} {target.min_capacity}-{target.max_capacity}), traffic "
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
        lines += [f"- {_verdict_word(v)}: {v.name}. {v.detail}" for v in result.verdicts]
        lines.append("")
    return lines


def template_assumptions(results: list[Result]) -> list[tuple[str, str]]:
    """(target, text) for what each target's simulation read from its template and assumed about it (a component's
    placement and scale-in policy, UnitShape.assumed), once per target."""
    found: list[tuple[str, str]] = []
    for result in results:
        setup = result.timeline.setup
        found += [(setup.name, text) for text in setup.shape.assumed() if (setup.name, text) not in found]
    return found


def write(
    results: list[Result],
    out: Path,
    *,
    source: str,
    plots: bool = True,
    endpoints: list[EndpointResults] | None = None,
) -> Path:
    """simulation.md, and each scenario's table and plot, into ``out``; ``endpoints`` as ``summary`` takes them."""
    out.mkdir(parents=True, exist_ok=True)
    found = scenarios(results)
    for scenario in found:
        write_table(scenario, out / f"{scenario.slug}.csv")
        if plots:
            write_plot(scenario, out / f"{scenario.slug}.png")
    path = out / "simulation.md"
    path.write_text(summary(results, source, found, endpoints), encoding="utf-8")
    return path
