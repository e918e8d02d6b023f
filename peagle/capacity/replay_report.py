"""What `peagle capacity --replay` writes to --out: replay.json (every minute of every trace, real and simulated)
and replay.md (per trace, the simulator's error; then the minutes)."""

from __future__ import annotations

import json
from pathlib import Path

from peagle.capacity.replay import MinuteFigures, TraceComparison
from peagle.catalog import Slo
from peagle.planning.planner import describe_slo
from peagle.simulate.service_curve import ServiceCurve

SCHEMA = "peagle-replay/1"


def write_replay(comparisons: list[TraceComparison], curve: ServiceCurve, slo: Slo, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "schema": SCHEMA,
        "service_curve": curve.describe(),
        "slo": describe_slo(slo),
        "traces": [comparison.as_dict() for comparison in comparisons],
    }
    paths = [out / "replay.json", out / "replay.md"]
    paths[0].write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(_markdown(comparisons, curve, slo), encoding="utf-8")
    return paths


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:.0f}"


def _error(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.0%}"


def _markdown(comparisons: list[TraceComparison], curve: ServiceCurve, slo: Slo) -> str:
    lines = [
        "# How far `peagle simulate`'s unit is from the server",
        "",
        f"Each trace was sent open loop to the server and run through the simulator's unit (one unit, no scaling) "
        f"served by the {curve.describe()}. SLO: {describe_slo(slo)}. Errors are the simulator's minus (or over) "
        "the server's; p90s are the request-weighted means of each minute's p90.",
        "",
        "| trace | requests | within SLO, real | simulated | error (points) | p90 TTFT ms real / sim | error | "
        "p90 TPOT ms real / sim | error | median minute error TTFT / TPOT | load (1 min, max) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for one in comparisons:
        requests = sum(pair.real.requests for pair in one.minutes)
        load = (one.host or {}).get("load_1m_max")
        lines.append(
            f"| {one.trace} | {requests:.0f} | {one.real_attainment:.1%} | {one.predicted_attainment:.1%} | "
            f"{one.attainment_error_points:+.1f} | {_ms(one.real_ttft_p90)} / {_ms(one.predicted_ttft_p90)} | "
            f"{_error(one.ttft_p90_error)} | {_ms(one.real_tpot_p90)} / {_ms(one.predicted_tpot_p90)} | "
            f"{_error(one.tpot_p90_error)} | {_error(one.median_ttft_p90_error)} / "
            f"{_error(one.median_tpot_p90_error)} | {'n/a' if load is None else load} |"
        )
    for one in comparisons:
        lines += [
            "",
            f"## {one.trace}, minute by minute",
            "",
            "| minute | requests | within SLO real / sim | TTFT mean ms real / sim | TTFT p90 | TPOT mean ms real / sim "
            "| TPOT p90 |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [_minute_row(pair.minute, pair.real, pair.predicted) for pair in one.minutes]
    return "\n".join(lines) + "\n"


def _minute_row(minute: int, real: MinuteFigures, predicted: MinuteFigures) -> str:
    return (
        f"| {minute} | {real.requests:.0f} | {real.within_slo:.0%} / {predicted.within_slo:.0%} | "
        f"{_ms(real.ttft_mean)} / {_ms(predicted.ttft_mean)} | {_ms(real.ttft_p90)} / {_ms(predicted.ttft_p90)} | "
        f"{_ms(real.tpot_mean)} / {_ms(predicted.tpot_mean)} | {_ms(real.tpot_p90)} / {_ms(predicted.tpot_p90)} |"
    )
