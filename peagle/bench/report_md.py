"""``report.md``: the human-readable tables of a benchmark."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from peagle.bench.compare import METRICS, SIDE_BY_SIDE_METRICS, key_label, level_keys, ratio, reference_run
from peagle.bench.results import (
    BenchResults,
    Distribution,
    LevelResult,
    RunResult,
    SloResult,
    Speculation,
    describe_sampling,
)


def write_report(results: BenchResults, path: Path, plot_names: Sequence[str]) -> Path:
    lines = ["# Benchmark report", ""]
    lines += [f"**{line}**" if results.sampling_notes else line for line in sampling_lines(results)] + [""]
    lines += _environment(results)
    for run in results.runs:
        lines += _run_section(run)
    if len(results.runs) > 1:
        lines += _side_by_side(results.runs)
    if results.compared_to is not None:
        lines += _regressions(results)
    if plot_names:
        lines += ["## Plots", ""] + [f"![{name}]({name})" for name in plot_names] + [""]
    lines += _definitions()
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def sampling_lines(results: BenchResults) -> list[str]:
    """What the runs were sampled at, in plain words: one line when they agree, else what differs."""
    if results.sampling_notes:
        return list(results.sampling_notes)
    if not results.runs:
        return []
    return [f"Sampling: {describe_sampling(results.runs[0].sampling)}."]


def _environment(results: BenchResults) -> list[str]:
    env, settings = results.environment, results.settings
    rows = [("date (UTC)", results.created_utc)]
    rows += [(key.replace("_", " "), value) for key, value in env.items()]
    rows += [(key.replace("_", " "), value) for key, value in settings.items()]
    return ["## Environment and settings", "", "| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows] + [""]


def _run_section(run: RunResult) -> list[str]:
    k = f", K={run.speculative_tokens:g} (draft tokens per verify step, measured)" if run.speculative_tokens else ""
    price = f"${run.price_per_hour_usd:g}/h ({run.price_source})" if run.price_per_hour_usd is not None else "not given"
    lines = [
        f"## Run `{run.label}`",
        "",
        f"- target: {run.target}; model: {run.model or 'unknown'}; server: {run.server_version or 'unknown'}; "
        f"max model len: {run.max_model_len or 'unknown'}",
        f"- speculation: {run.speculation}{k}; instance price: {price}",
        f"- sampling: {describe_sampling(run.sampling)}",
    ]
    lines += [f"- note: {note}" for note in run.notes]
    lines += [
        "",
        "### Throughput, acceptance and cost",
        "",
        "| load | requests | error rate | req/s | output tok/s | acceptance rate | acceptance length | per-position acceptance | acceptance from | $ / 1M output tok |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for level in run.levels:
        spec = level.acceptance
        lines.append(
            f"| {level.load_label} | {level.requests} | {_errors(level)} | {level.requests_per_s:.2f} | "
            f"{level.output_tokens_per_s:.1f} | {_acceptance_cells(spec)} | {spec.source if spec else 'n/a'} | "
            f"{_num(level.cost_per_million_output_tokens_usd, '.2f')} |"
        )
    if any(level.speculation and level.speculation_from_responses for level in run.levels):
        lines += [
            "",
            "Acceptance from both sources (the responses' metrics.speculative_decoding summed, and the change of "
            "the server's /metrics counters over the level):",
            "",
            "| load | from | verify steps | draft tokens | accepted | acceptance rate | acceptance length | per-position acceptance |",
            "|---:|---|---:|---:|---:|---:|---:|---|",
        ]
        for level in run.levels:
            for spec in (level.speculation_from_responses, level.speculation):
                if spec is not None:
                    lines.append(
                        f"| {level.load_label} | {spec.source} | {spec.drafts} | {spec.draft_tokens} | "
                        f"{spec.accepted_tokens} | {_acceptance_cells(spec)} |"
                    )
    lines += _open_loop_table(run) + _slo_table(run) + _machine_table(run)
    lines += [
        "",
        "### Latency",
        "",
        "| load | TTFT p50 / p90 / p99 (ms) | TPOT p50 / p90 / p99 (ms) | ITL p50 / p90 / p99 (ms) | e2e p50 / p90 / p99 (s) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for level in run.levels:
        lines.append(
            f"| {level.load_label} | {_triple(level.ttft_s, 1000, '.0f')} | {_triple(level.tpot_s, 1000, '.1f')} | "
            f"{_triple(level.itl_s, 1000, '.1f')} | {_triple(level.e2e_s, 1, '.2f')} |"
        )
    if any(level.server_latency for level in run.levels):
        lines += [
            "",
            "Server-side means from vLLM's histograms (queue, TTFT, TPOT in ms; e2e in s):",
            "",
            "| load | queue | TTFT | TPOT | e2e |",
            "|---:|---:|---:|---:|---:|",
        ]
        for level in run.levels:
            server = level.server_latency
            if server is not None:
                lines.append(
                    f"| {level.load_label} | {_num(_scaled(server.queue_time_mean_s, 1000), '.1f')} | "
                    f"{_num(_scaled(server.ttft_mean_s, 1000), '.1f')} | {_num(_scaled(server.tpot_mean_s, 1000), '.2f')} | "
                    f"{_num(server.e2e_mean_s, '.2f')} |"
                )
    return lines + [""]


def _open_loop_table(run: RunResult) -> list[str]:
    loads = [level.open_loop for level in run.levels if level.open_loop]
    if not loads:
        return []
    lines = [
        "",
        "### Open-loop load",
        "",
        "Requests sent at their scheduled times whatever the server did (no send waits for an answer). Send lag: "
        "how far behind its schedule the sender fell (a cap's slot waits excluded); in flight: this load's own "
        "requests sent and not yet answered.",
        "",
        "| offered rate (req/s) | arrivals | max concurrency | achieved rate (req/s) | send lag max / p99 (ms) "
        "| slot wait mean / max (ms) | in flight peak / mean |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for load in loads:
        if math.isinf(load.offered_request_rate):
            arrivals = "all at once"
        else:
            shape = "Poisson" if load.burstiness == 1 else f"gamma, burstiness {load.burstiness:g}"
            arrivals = f"{shape} (seed {load.seed})"
        lines.append(
            f"| {load.rate_text} | {arrivals} | {load.max_concurrency or 'none'} | "
            f"{load.achieved_request_rate:.2f} | {load.send_lag_max_s * 1000:.0f} / {load.send_lag_p99_s * 1000:.0f} | "
            f"{load.slot_wait_mean_s * 1000:.0f} / {load.slot_wait_max_s * 1000:.0f} | "
            f"{load.in_flight_peak} / {load.in_flight_mean:.1f} |"
        )
    return lines


def _slo_table(run: RunResult) -> list[str]:
    levels = [(level.load_label, level.slo) for level in run.levels if level.slo]
    if not levels:
        return []
    described = sorted({_describe_slo(slo) for _, slo in levels})
    lines = [
        "",
        "### SLO attainment and goodput",
        "",
        f"SLO: {'; '.join(described)}. Attainment: share of the level's requests meeting the bound (a failed "
        "request meets none); goodput: requests meeting every bound per second of the level's wall time "
        "(vllm bench serve's definitions).",
        "",
        "| load | TTFT met | TPOT met | E2EL met | all bounds met | target | goodput (req/s) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for load_label, slo in levels:
        bounds = " | ".join(_share(slo.per_bound.get(key)) for key in ("ttft", "tpot", "e2el"))
        verdict = "meets" if slo.met else "**short**"
        lines.append(
            f"| {load_label} | {bounds} | {slo.all_bounds:.1%} ({verdict}) | {slo.target_attainment:.0%} | "
            f"{slo.goodput_requests_per_s:.2f} |"
        )
    return lines


def _machine_table(run: RunResult) -> list[str]:
    levels = [(level.load_label, level.host) for level in run.levels if level.host]
    if not levels:
        return []
    lines = [
        "",
        "### Machine during each level",
        "",
        "CPU in cores (CPU seconds per second) over the level, from /proc: other work is everything but the "
        "server under test and this load generator (steal included); the load average counts the server too. "
        "A **noisy** level was measured on a busy machine: do not compare or publish it. The CPU column names "
        "the vector instruction sets vLLM's CPU kernels follow: a figure from a CPU without avx512f is not "
        "comparable with one from a CPU with it.",
        "",
        "| load | other work (cores) | server (cores) | load generator (cores) | load avg max | steal | iowait "
        "| other vLLM processes | CPU | verdict |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for load_label, host in levels:
        verdict = "**noisy**: " + "; ".join(host.busy) if host.busy else "quiet"
        engines = "; ".join(host.other_engines) or "none"
        lines.append(
            f"| {load_label} | {_num(host.other_work_cores, '.2f')} of {host.cpu_count} | "
            f"{_num(host.server_cores, '.2f')} | {_num(host.own_cores, '.2f')} | {host.load_1m_max:.2f} | "
            f"{_percent(host.steal_share)} | {_percent(host.iowait_share)} | {engines} | {host.cpu_description()} | "
            f"{verdict} |"
        )
    return lines


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _describe_slo(slo: SloResult) -> str:
    from peagle.planning.planner import describe_slo

    return f"{describe_slo(slo.as_slo())} ({slo.source})"


def _share(value: float | None) -> str:
    return "no bound" if value is None else f"{value:.1%}"


def _side_by_side(runs: Sequence[RunResult]) -> list[str]:
    reference = reference_run(runs)
    others = [run for run in runs if run is not reference]
    header = [
        "load",
        "metric",
        *(f"`{run.label}`" for run in runs),
        *(f"`{run.label}` / `{reference.label}`" for run in others),
    ]
    lines = [
        "## Side by side",
        "",
        f"Ratios are against `{reference.label}`"
        + (
            " (speculation off): for tokens/s above 1 is a speed-up, for latencies below 1 is."
            if reference.speculation == "off"
            else "."
        ),
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for key in level_keys(runs):
        for name in SIDE_BY_SIDE_METRICS:
            metric = METRICS[name]
            values = [metric.read(level) if (level := run.level_at(key)) else None for run in runs]
            reference_level = reference.level_at(key)
            reference_value = metric.read(reference_level) if reference_level else None
            ratios = [
                ratio(metric.read(level) if (level := run.level_at(key)) else None, reference_value) for run in others
            ]
            title = f"{metric.title} ({metric.unit})" if metric.unit else metric.title
            cells = [
                key_label(key),
                title,
                *(_num(v * metric.scale if v is not None else None, ".2f") for v in values),
            ]
            cells += [_num(r, ".2f") + ("x" if r is not None else "") for r in ratios]
            lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def _regressions(results: BenchResults) -> list[str]:
    lines = [f"## Compared to `{results.compared_to}`", ""]
    if results.not_compared:
        lines += [
            "Not compared (a level measured on a busy machine measures the machine; measure it again quietly):",
            "",
            *[f"- {note}" for note in results.not_compared],
            "",
        ]
    if not results.regressions:
        return lines + ["No regression beyond the tolerance among the levels compared.", ""]
    lines += [
        "| run | baseline run | load | metric | baseline | now | change |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    for item in results.regressions:
        lines.append(
            f"| {item['run']} | {item['baseline_run']} | {item.get('load', item['concurrency'])} | {item['metric']} | "
            f"{item['baseline']:.4g} | {item['current']:.4g} | {item['change']:+.1%} |"
        )
    return lines + [""]


def _definitions() -> list[str]:
    return [
        "## Definitions",
        "",
        "- TTFT: request sent to first text chunk received (client side, includes queueing and retries).",
        "- TPOT: (e2e - TTFT) / (output tokens - 1) per request: decode time per output token.",
        "- ITL: gap between arrivals of new text (SSE events read together count once). With speculation an "
        "event can carry several tokens, so ITL overstates per-token latency; compare TPOT across speculation on/off.",
        "- output tok/s, req/s: successful requests' output tokens (server-reported usage) and count over the "
        "level's wall time: with `concurrency` requests in flight (closed loop, `c=N`) or sent at a request rate "
        "(open loop, `N req/s`).",
        "- acceptance rate = accepted / draft tokens; acceptance length = 1 + accepted / drafts (tokens per target "
        "step); per-position = accepted at draft position i / drafts, drafts being verify steps. Token-weighted "
        "over the level, from `responses` (the successful answers' metrics.speculative_decoding, summed) or from "
        "`/metrics` (the change of the server's counters over the level; URL targets only, as SageMaker does not "
        "pass /metrics through InvokeEndpoint). The same arithmetic as the launcher's peagle_kpi line.",
        "- Server-side means: vLLM's own histograms over the level (URL targets). When the client sees TTFT close "
        "to e2e and TPOT near 0, the server delivered the stream in one burst (a CPU-starved API server): "
        "trust these instead.",
        "- $ / 1M output tok = price per hour / (output tok/s x 3600) x 1e6: one instance kept busy at that concurrency.",
        "- Open loop (`--request-rate`): each level's requests are due at gamma-distributed gaps (shape "
        "`--burstiness`, 1 = Poisson) with mean 1 / rate, drawn and scaled as vllm bench serve draws them, and sent "
        "then whatever the server does. Its wall time runs from the schedule's start to the last answer (vllm bench "
        "serve's duration); achieved rate = requests / (schedule start to last send); send lag = actual send minus "
        "scheduled time, less any slot wait under `--max-concurrency`: large lag means the sender itself fell behind "
        "and the level offered less than its rate.",
        "- SLO: TTFT, TPOT (excluding the first token; a one-token answer meets any TPOT bound) and E2EL per request "
        "against the bounds; attainment is over all requests sent, goodput = requests meeting every bound / wall "
        "time: vllm bench serve's --goodput.",
        "",
    ]


def _acceptance_cells(spec: Speculation | None) -> str:
    """acceptance rate | acceptance length | per-position acceptance."""
    if spec is None:
        return "n/a | n/a | n/a"
    per_position = ", ".join(f"{p:.2f}" for p in spec.per_position_acceptance) or "n/a"
    return f"{_num(spec.acceptance_rate, '.3f')} | {_num(spec.mean_acceptance_length, '.2f')} | {per_position}"


def _errors(level: LevelResult) -> str:
    if not level.failed:
        return "0%"
    kinds = ", ".join(f"{kind} x{count}" for kind, count in level.errors_by_type.items())
    return f"{level.error_rate:.0%} ({kinds})"


def _num(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _scaled(value: float | None, scale: float) -> float | None:
    return None if value is None else value * scale


def _triple(distribution: Distribution | None, scale: float, spec: str) -> str:
    if distribution is None:
        return "n/a"
    return " / ".join(format(value * scale, spec) for value in (distribution.p50, distribution.p90, distribution.p99))
