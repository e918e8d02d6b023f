"""sagemaker-benchmark-results.md: a SageMaker AI benchmark job's levels in capacity.md's terms, and the job's answer
beside a local `peagle capacity` run's (its capacity.json: the capacity and the levels at that rate)."""

from __future__ import annotations

from statistics import mean

from peagle.slo import as_goodput_argument


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f} ms"


def _number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def side_by_side(found, beside: dict | None, instances: int) -> list[dict]:
    """One row per figure: the job's answer (per instance) and, with ``beside``, the local run's."""
    beside = beside or {}
    local = beside.get("capacity") or {}
    measured_at = local.get("rate_per_instance", 0.0) * beside.get("instances", 1)
    at_rate = [
        point for point in beside.get("points", []) if local and abs(point.get("offered_rate", 0) - measured_at) < 1e-9
    ]

    def local_mean(key: str) -> float | None:
        values = [point[key] for point in at_rate if point.get(key) is not None]
        return mean(values) if values else None

    def per_instance(value: float | None) -> float | None:
        return None if value is None else value / instances

    job = (
        {}
        if found is None
        else found.__dict__ | {"attainment": found.attainment, "ttft_p90": found.ttft_p90, "tpot_p90": found.tpot_p90}
    )
    return [
        {"figure": "requests/s meeting the SLO", "job": per_instance(job.get("request_throughput")),
         "local": local.get("rate_per_instance")},
        {"figure": "concurrency there", "job": per_instance(job.get("concurrency")),
         "local": local.get("concurrency_per_instance")},
        {"figure": "attainment", "job": job.get("attainment"), "local": local.get("attainment")},
        {"figure": "goodput, requests/s", "job": per_instance(job.get("goodput")),
         "local": local.get("goodput_per_instance")},
        {"figure": "output tokens/s", "job": per_instance(job.get("output_tokens_per_s")),
         "local": local.get("output_tokens_per_s_per_instance")},
        {"figure": "p90 TTFT", "job": job.get("ttft_p90"), "local": local_mean("ttft_p90")},
        {"figure": "p90 TPOT", "job": job.get("tpot_p90"), "local": local_mean("tpot_p90")},
    ]  # fmt: skip


def markdown(levels, verdicts, found, slo, slo_source: str, status: str, instances: int, rows: list[dict]) -> str:
    """``verdicts``: each level's (met the SLO or None, how it was judged), in the order of ``levels``."""
    from peagle.capacity.sagemaker_benchmark import aiperf_goodput

    lines = [
        "# SageMaker AI benchmark job, read by peagle capacity",
        "",
        f"Status: {status}. SLO `{as_goodput_argument(slo)}` at {slo.attainment:.0%} ({slo_source}); in AIPerf's "
        f'terms `--goodput "{aiperf_goodput(slo)}"`.',
        "",
        _answer(found, slo, instances),
        "",
        "Cost: not reported by the job (DescribeAIBenchmarkJob has no cost field, AIPerf's export none); the "
        "endpoint's instances bill by the hour, the job's hours included.",
        "",
        "## Beside the local run",
        "",
        "| figure | SageMaker job | local peagle capacity |",
        "|---|---|---|",
        *[
            f"| {row['figure']} | {_cell(row['job'], row['figure'])} | {_cell(row['local'], row['figure'])} |"
            for row in rows
        ],
        "",
        "## The job's levels",
        "",
        "| concurrency | requests/s | attainment | goodput | output tok/s | TTFT p50/p90 | TPOT p50/p90 | "
        "E2EL p90 | judged | export |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for level, (met, how) in zip(levels, verdicts, strict=True):
        judged = f"{'met' if met else 'missed' if met is not None else '-'} ({how})"
        lines.append(
            f"| {level.concurrency if level.concurrency is not None else '-'} | {_number(level.request_throughput)} | "
            f"{_share(level.attainment)} | {_number(level.goodput)} | {_number(level.output_tokens_per_s, 1)} | "
            f"{_ms(level.percentile('ttft', 'p50'))} / {_ms(level.ttft_p90)} | "
            f"{_ms(level.percentile('tpot', 'p50'))} / {_ms(level.tpot_p90)} | {_ms(level.percentile('e2el', 'p90'))} | "
            f"{judged} | {level.source} |"
        )
    lines += [
        "",
        "The job holds concurrency (simultaneous requests) fixed per level; peagle capacity offers an open-loop "
        "arrival rate. A level's requests/s is what the endpoint completed at that concurrency, and its attainment "
        "AIPerf's good requests over its requests where the job ran with this SLO's goodput constraints, counted per "
        "request as `vllm bench serve --goodput` counts them; otherwise each bound is judged at the attainment's "
        "percentile (p95 for 95%), which does not add up requests that miss different bounds.",
        "",
    ]
    return "\n".join(lines)


def _answer(found, slo, instances: int) -> str:
    if found is None:
        return (
            f"No level met the SLO for {slo.attainment:.0%} of its requests, or none could be judged (the table "
            "says how each level was judged)."
        )
    per = "" if instances == 1 else f" (measured against {instances} instances and divided by that)"
    return (
        f"The job's highest level meeting the SLO: concurrency {found.concurrency}, "
        f"{(found.request_throughput or 0) / instances:.3f} requests/s per instance{per}, attainment "
        f"{found.attainment:.1%}."
    )


def _cell(value: float | None, figure: str) -> str:
    if figure.startswith("p90"):
        return _ms(value)
    if figure == "attainment":
        return _share(value)
    return _number(value, 3)
