"""What `peagle capacity` writes to --out: capacity.json (every level), capacity.md (the answer, its
cost and the search), knee.png, and capacity-snippet.yaml (the scaling targets for a deployment file)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean

from peagle.bench.intervals import CONFIDENCE
from peagle.bench.stats import cost_per_million_output_tokens
from peagle.capacity.levels import LevelRecord
from peagle.capacity.search import (
    CONVERGED,
    INTERRUPTED,
    MACHINE_BUSY,
    MAX_RATE,
    MIN_RATE,
    SWEPT,
    TIME_BUDGET,
    CapacitySearch,
)
from peagle.capacity.spread import rate_spread, rates_table, spreads

SCHEMA = "peagle-capacity/1"
HOURS_PER_MONTH = 730  # AWS pricing's month: 365 x 24 / 12
_STOPPED = {
    CONVERGED: "the bracket narrowed to the tolerance, deciding points repeated",
    TIME_BUDGET: "the time budget ran out before the bracket narrowed to the tolerance: the rate is a lower bound",
    INTERRUPTED: "interrupted (Ctrl-C): the rate is what the levels measured so far support",
    MAX_RATE: "every level up to --max-rate met the SLO: the capacity is at least the rate given",
    MIN_RATE: "no level down to --min-rate met the SLO",
    MACHINE_BUSY: "the machine was busy: a level stayed noisy when measured again, so no capacity is published "
    "from a machine that was measuring its other work",
    SWEPT: "--sweep: each rate given measured (--repeats times), without a search; the capacity is the highest of them "
    "that passed, so it is as fine as the rates given",
}
_NOTHING_MET = {
    **_STOPPED,
    TIME_BUDGET: "the time budget ran out before a level met the SLO: lower --start-rate, or give more --time-budget",
    INTERRUPTED: "interrupted (Ctrl-C) before a level met the SLO",
}


@dataclass(frozen=True)
class Context:
    """What was measured and how: the lines the report and the snippet state."""

    date: str
    target: str  # e.g. "local pair partial (peagle local)", "http://...", "endpoint E variant V"
    speculative_tokens: str  # "4", "0 (off)", "schedule 1-2:4,3-16:0", "not reported"
    slo_text: str  # planner.describe_slo
    slo_source: str
    sampling: str
    settings: dict
    headroom: float
    instances: int = 1
    inference_component: str | None = None
    peak_rps: float | None = None
    price_per_hour_usd: float | None = None
    price_source: str | None = None
    notes: list[str] = field(default_factory=list)
    prompts: str = ""  # which prompts: a file with its sha256, or "synthetic prompts (buckets ..., seed ...)"
    speculative_schedule: str | None = None  # a local pair's K by batch size (--speculative-schedule), as given


@dataclass(frozen=True)
class Answer:
    """The capacity per instance (or copy) and what the server carried there (its repeats pooled)."""

    rate_per_instance: float
    concurrency_per_instance: float
    attainment: float
    attainment_per_bound: dict[str, float]
    goodput_per_instance: float
    output_tokens_per_s_per_instance: float
    in_flight_peak: int
    vllm_running_mean: float | None
    vllm_waiting_mean: float | None
    levels: int
    # The rate's figures over its levels (peagle/capacity/spread.py): verdict, runs, seeds, and each figure
    # pooled and as the mean with its 95% interval. Not divided by the instances.
    spread: dict = field(default_factory=dict)


def answer(search: CapacitySearch, instances: int) -> Answer | None:
    """The capacity the quiet levels support; None when none passed, or when the search stopped on a busy
    machine (a bracket it could not finish is no answer)."""
    rate = search.last_pass
    if rate is None or search.stop_reason == MACHINE_BUSY:
        return None
    records: list[LevelRecord] = [point.detail for point in search.at(rate)]
    requests = sum(r.requests for r in records)
    wall = sum(r.wall_seconds for r in records)
    bounds = records[0].attainment_per_bound.keys()

    def gauge(name: str) -> float | None:
        values = [getattr(r, name) for r in records if getattr(r, name) is not None]
        return mean(values) / instances if values else None

    return Answer(
        rate_per_instance=rate / instances,
        concurrency_per_instance=mean(r.in_flight_mean for r in records) / instances,
        attainment=search.pooled_attainment(rate),
        attainment_per_bound={
            key: sum(r.attainment_per_bound[key] * r.requests for r in records) / requests for key in bounds
        },
        goodput_per_instance=sum(r.good_requests for r in records) / wall / instances,
        output_tokens_per_s_per_instance=sum(r.output_tokens for r in records) / wall / instances,
        in_flight_peak=max(r.in_flight_peak for r in records),
        vllm_running_mean=gauge("vllm_running_mean"),
        vllm_waiting_mean=gauge("vllm_waiting_mean"),
        levels=len(records),
        spread=rate_spread(search, rate).as_dict(),
    )


def max_instances_for(peak_rps: float, found: Answer, headroom: float) -> int:
    """Units for ``peak_rps`` at the measured rate x headroom: the planner's rule, so the snippet's
    max_capacity and `peagle plan --peak-rps` on the applied file agree."""
    from peagle.planning.planner import ScalingTarget
    from peagle.settings import MeasuredCapacity

    measured = MeasuredCapacity(
        requests_per_second=round(found.rate_per_instance, 3),
        concurrency=max(0.01, round(found.concurrency_per_instance, 2)),
        headroom=headroom,
        slo="",
        source="",
    )
    units = ScalingTarget(found.concurrency_per_instance, "instance", "measured", measured).fleet_for(peak_rps)
    assert units is not None, "fleet_for answers None only when nothing was measured"
    return units


def snippet(found: Answer, context: Context) -> str:
    """The deployment-file lines: scaling targets from the measured capacity with the headroom."""
    h = context.headroom
    source = f"peagle capacity, {context.date}, {context.target}, K={context.speculative_tokens}"
    source += f", {context.prompts}" if context.prompts else ""
    lines = [
        f"# peagle capacity {context.date}: {context.target}, K={context.speculative_tokens}, SLO {context.slo_text}"
    ]
    target_concurrency = f"{found.concurrency_per_instance * h:.2f}"
    fleet = max_instances_for(context.peak_rps, found, h) if context.peak_rps else None
    # The same keys in both modes: units are instances, or copies of an inference component.
    lines += [
        "autoscaling:",
        f"  target_concurrency: {target_concurrency}",
        f"  max_requests_per_second: {found.rate_per_instance:.3f}",
        f"  headroom: {h:g}",
    ]
    if fleet:
        lines += ["  min_capacity: 1", f"  max_capacity: {fleet}"]
    lines += [
        "  measured_capacity:",
        f"    requests_per_second: {found.rate_per_instance:.3f}",
        f"    concurrency: {found.concurrency_per_instance:.2f}",
        f"    headroom: {h:g}",
        f"    slo: {json.dumps(context.slo_text)}",
        f"    source: {json.dumps(source)}",
    ]
    return "\n".join(lines) + "\n"


def write_report(search: CapacitySearch, context: Context, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    found = answer(search, context.instances)
    paths = [out / "capacity.json", out / "capacity.md"]
    paths[0].write_text(_json(search, context, found), encoding="utf-8")
    if search.steps:
        paths.append(_knee_plot(search, context, out / "knee.png"))
    paths[1].write_text(_markdown(search, context, found, [p.name for p in paths[2:]]), encoding="utf-8")
    if found is not None:
        paths.append(out / "capacity-snippet.yaml")
        paths[-1].write_text(snippet(found, context), encoding="utf-8")
    return paths


def _json(search: CapacitySearch, context: Context, found: Answer | None) -> str:
    payload = {
        "schema": SCHEMA,
        "date": context.date,
        "target": context.target,
        "speculative_tokens": context.speculative_tokens,
        "speculative_schedule": context.speculative_schedule,
        "slo": context.slo_text,
        "slo_source": context.slo_source,
        "sampling": context.sampling,
        "prompts": context.prompts,
        "settings": context.settings,
        "instances": context.instances,
        "stop_reason": search.stop_reason,
        "elapsed_seconds": search.elapsed_seconds,
        "capacity": None if found is None else found.__dict__,
        "first_fail_rate": search.first_fail,
        # Each rate's verdict and figures over its levels, pooled and as a mean with its interval.
        "confidence": CONFIDENCE,
        "cannot_tell_rates": search.cannot_tell,
        "rates": [spread.as_dict() for spread in spreads(search)],
        "points": [
            {"phase": step.phase, "elapsed_seconds": step.elapsed_seconds, **step.measured.detail.as_dict()}
            for step in search.steps
        ],
        # Measured on a busy machine (each with its host conditions and why): kept, never judged.
        "noisy_points": [
            {"phase": step.phase, "elapsed_seconds": step.elapsed_seconds, **step.measured.detail.as_dict()}
            for step in search.noisy
        ],
        "notes": context.notes,
    }
    return json.dumps(payload, indent=2) + "\n"


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:.0f}"


def _markdown(search: CapacitySearch, context: Context, found: Answer | None, plots: list[str]) -> str:
    lines = [f"# Capacity at the SLO: {context.target}", ""]
    if found is None:
        lines += [f"**No measured rate met the SLO** ({_NOTHING_MET[search.stop_reason]}).", ""]
    else:
        lines += [*_answer_lines(found, context), ""]
    lines += [
        f"Search: {len(search.steps)} levels in {search.elapsed_seconds:.0f} s; stopped: "
        f"{(_STOPPED if found else _NOTHING_MET)[search.stop_reason]}."
        + (
            f" Lowest rate that did not pass (failed, or could not tell): {search.first_fail:g} requests/s offered."
            if search.first_fail is not None
            else ""
        ),
        "",
        f"SLO: {context.slo_text} ({context.slo_source}); a request meets it as `vllm bench serve --goodput` counts "
        "(peagle/slo.py). Sampling: "
        + context.sampling
        + "."
        + (f" Prompts: {context.prompts}." if context.prompts else ""),
        "",
    ]
    lines += _rate_lines(search)
    lines += ["", "Every level:", ""]
    lines += _levels_table(search, found)
    lines += _machine_lines(search)
    lines += ["", "Settings: " + "; ".join(f"{key} {value}" for key, value in context.settings.items()) + "."]
    lines += ["", *[f"Note: {note}" for note in context.notes]] if context.notes else []
    lines += ["", *[f"![knee]({name})" for name in plots]]
    if found is not None:
        lines += [
            "",
            "Apply it in the deployment file (`capacity-snippet.yaml`):",
            "",
            "```yaml",
            snippet(found, context).rstrip(),
            "```",
        ]
    return "\n".join(lines) + "\n"


def _answer_lines(found: Answer, context: Context) -> list[str]:
    """The capacity found, per instance (or copy): the rate, the concurrency it carried, goodput and cost."""
    per = "copy" if context.inference_component else "instance"
    lines = [
        f"**{found.rate_per_instance:.3f} requests/s per {per}** meet the SLO ({context.slo_text}): attainment "
        f"{found.attainment:.1%} over {found.levels} level(s) at that rate"
        + "".join(f", {key} {share:.1%}" for key, share in found.attainment_per_bound.items())
        + ".",
        "",
        f"- Concurrency carried there: {found.concurrency_per_instance:.2f} requests in flight per {per} (the "
        f"load's own time-averaged count; peak {found.in_flight_peak})"
        + (
            f"; vLLM's gauges: {found.vllm_running_mean:.2f} running, {found.vllm_waiting_mean:.2f} waiting on average"
            if found.vllm_running_mean is not None
            else "; vLLM's running/waiting gauges not visible (no /metrics)"
        )
        + ".",
        f"- Goodput {found.goodput_per_instance:.3f} requests/s, {found.output_tokens_per_s_per_instance:.1f} "
        f"output tokens/s per {per}.",
        _how_sure(found),
    ]
    if context.instances > 1:
        lines.append(
            f"- Measured against {context.instances} instances as one target; every figure above is divided "
            f"by {context.instances} (--instances), which assumes SageMaker spreads the load evenly."
        )
    return lines + _cost_lines(found, context, per)


def _how_sure(found: Answer) -> str:
    """The answer's levels: their seeds and the interval of their attainments, or that there is none."""
    seeds = ", ".join(str(seed) for seed in found.spread.get("seeds", []))
    attained = found.spread.get("attainment", {})
    if attained.get("low") is None:
        return (
            f"- How sure: measured once (arrival seed {seeds}), so no interval: the verdict rests on one level "
            "(give --repeats 3 or more, and the time budget for them)."
        )
    half = (attained["high"] - attained["low"]) / 2
    return (
        f"- How sure: its {found.levels} levels ran on arrival seeds {seeds}; their attainments' mean is "
        f"{attained['mean']:.1%} ± {half:.1%} ({CONFIDENCE:.0%} interval, Student t), at or above the target."
    )


def _rate_lines(search: CapacitySearch) -> list[str]:
    """Each rate's figures over its levels, and the rates whose levels could not tell."""
    lines = [
        f"Per rate, its levels pooled; in brackets their mean ± the {CONFIDENCE:.0%} interval (Student t over the "
        "levels, each on its own seed; peagle/bench/intervals.py) where a rate has two or more. A rate passes when "
        "its pooled attainment meets the target and the interval lies at or above it, fails when both lie below, "
        "and otherwise the levels cannot tell:",
        "",
        *rates_table(spreads(search)),
    ]
    if search.cannot_tell:
        lines += [
            "",
            "**Could not tell** whether these rates meet the target: "
            + ", ".join(f"{rate:g}" for rate in search.cannot_tell)
            + " requests/s (their levels' attainment interval straddles it); the capacity is the highest rate that "
            "passed. More --repeats or --requests-per-level narrow the interval.",
        ]
    return lines


def _levels_table(search: CapacitySearch, found: Answer | None) -> list[str]:
    """One row per measured level, with the per-bound attainment columns when a rate was found."""
    bounds = list(found.attainment_per_bound) if found else []
    lines = [
        "| phase | offered req/s | achieved | attainment | "
        + " | ".join(bounds)
        + (" | " if found else "")
        + "goodput | TTFT p50/p90 ms | TPOT p50/p90 ms | E2EL p50/p90 ms | in flight mean/peak | vLLM running/waiting |",
        "|---|---|---|---|" + ("---|" * len(bounds) if found else "") + "---|---|---|---|---|---|",
    ]
    for step in search.steps:
        r: LevelRecord = step.measured.detail
        gauges = f"{r.vllm_running_mean:.1f}/{r.vllm_waiting_mean:.1f}" if r.vllm_running_mean is not None else "n/a"
        lines.append(
            f"| {step.phase} | {r.offered_rate:g} | {r.achieved_rate:.3g} | {r.attainment:.1%} | "
            + "".join(f"{r.attainment_per_bound.get(key, 0):.1%} | " for key in bounds)
            + f"{r.goodput:.3f} | {_ms(r.ttft_p50)}/{_ms(r.ttft_p90)} | {_ms(r.tpot_p50)}/{_ms(r.tpot_p90)} | "
            f"{_ms(r.e2el_p50)}/{_ms(r.e2el_p90)} | {r.in_flight_mean:.2f}/{r.in_flight_peak} | {gauges} |"
        )
    return lines


def _machine_lines(search: CapacitySearch) -> list[str]:
    """The levels measured on a busy machine (not judged), and how busy the machine was during the others."""
    lines: list[str] = []
    if search.noisy:
        lines += [
            "",
            f"**{len(search.noisy)} level(s) measured on a busy machine**, not judged (capacity.json: noisy_points):",
            "",
            *[f"- {step.phase} at {step.rate:g} req/s: {'; '.join(step.measured.busy)}" for step in search.noisy],
        ]
    quiet = [step.measured.detail.host for step in search.steps if step.measured.detail.host is not None]
    if quiet:
        lines += [
            "",
            "Machine during the judged levels: other work at most "
            f"{max(host.other_work_cores or 0 for host in quiet):.2f} of {quiet[0].cpu_count} cores, load average "
            f"at most {max(host.load_1m_max for host in quiet):.2f}, steal at most "
            f"{max(host.steal_share or 0 for host in quiet):.1%} (capacity.json: each point's host).",
        ]
    return lines


def _cost_lines(found: Answer, context: Context, per: str) -> list[str]:
    price = context.price_per_hour_usd
    if price is None:
        return ["- Cost: give --instance-type (catalog price) or --price-per-hour to see it."]
    per_million = cost_per_million_output_tokens(price, found.output_tokens_per_s_per_instance)
    lines = [
        f"- Cost: ${price:.2f} per {per}-hour ({context.price_source}); "
        + (f"${per_million:.2f} per 1M output tokens at this rate." if per_million else "no output tokens measured.")
    ]
    if context.peak_rps:
        fleet = max_instances_for(context.peak_rps, found, context.headroom)
        lines.append(
            f"- Peak {context.peak_rps:g} requests/s at headroom {context.headroom:g}: {fleet} {per}(s) "
            f"(ceil({context.peak_rps:g} / ({found.rate_per_instance:.3f} x {context.headroom:g}))), "
            f"${fleet * price * HOURS_PER_MONTH:,.0f} per month if the peak lasted all month "
            f"({HOURS_PER_MONTH} h), ${price * HOURS_PER_MONTH:,.0f} at the minimum of one."
        )
    return lines


def _knee_plot(search: CapacitySearch, context: Context, path: Path) -> Path:
    """Per offered rate: the pooled attainment and the mean goodput and p90s as lines (the search's
    verdicts), each level as a dot (repeats at one rate show their spread)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records: list[LevelRecord] = [step.measured.detail for step in search.steps]
    rates = search.rates

    def per_rate(name: str, scale: float = 1.0) -> list[float | None]:
        values = []
        for rate in rates:
            found = [getattr(r, name) for r in records if r.offered_rate == rate and getattr(r, name) is not None]
            values.append(mean(found) * scale if found else None)
        return values

    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    left.plot(rates, [search.pooled_attainment(rate) * 100 for rate in rates], "o-", label="attainment, pooled %")
    left.scatter([r.offered_rate for r in records], [r.attainment * 100 for r in records], s=12, alpha=0.4)
    left.axhline(search.settings.target_attainment * 100, color="grey", linestyle="--", label="target")
    if search.last_pass is not None:
        left.axvline(search.last_pass, color="tab:red", alpha=0.5, label="capacity")
    left.set_xlabel("offered requests/s")
    left.set_ylabel("attainment % (all bounds)")
    twin = left.twinx()
    twin.plot(rates, per_rate("goodput"), "s:", color="tab:green", label="goodput req/s")
    twin.set_ylabel("goodput requests/s")
    left.legend(loc="lower left", fontsize=7)
    twin.legend(loc="lower right", fontsize=7)
    for name, label in (("ttft_p90", "TTFT p90 ms"), ("tpot_p90", "TPOT p90 ms")):
        points = [(rate, value) for rate, value in zip(rates, per_rate(name, 1000), strict=True) if value is not None]
        (line,) = right.plot([p[0] for p in points], [p[1] for p in points], "o-", label=label)
        dots = [(r.offered_rate, getattr(r, name) * 1000) for r in records if getattr(r, name) is not None]
        right.scatter([d[0] for d in dots], [d[1] for d in dots], s=12, alpha=0.4, color=line.get_color())
    right.set_xlabel("offered requests/s")
    right.set_ylabel("ms (mean of the levels' p90)")
    right.set_yscale("log")
    right.legend(fontsize=7)
    figure.suptitle(f"{context.target}, K={context.speculative_tokens}: {context.slo_text}", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
