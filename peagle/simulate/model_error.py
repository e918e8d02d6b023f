"""The simulator's measured error, printed on every simulation report (as BLIS prints its own).

`peagle capacity --replay` sends a trace to a real server and compares, minute by minute, what the server did with
what the simulator's unit predicts from the service curve the same run measured (peagle/capacity/replay.py). The
committed baseline, docs/baselines/simulator-replay/ (one folder per K, each with its service-curve.json and
replay.json), is summed up in model_error.json beside this module, so an installed peagle prints it;
tests/simulate/test_model_error.py checks that the summary is the baseline's.
"""

from __future__ import annotations

import json
from pathlib import Path

SUMMARY_FILE = Path(__file__).with_name("model_error.json")
BASELINE = "docs/baselines/simulator-replay/"


def summarize(replays: dict[str, dict]) -> dict:
    """The worst error over every trace of every replay.json (``{K: document}``), and each trace's."""
    traces = [
        {
            "k": k,
            "trace": trace["trace"],
            "attainment_error_points": round(trace["attainment_error_points"], 1),
            "ttft_p90_error": None if trace["ttft_p90_error"] is None else round(trace["ttft_p90_error"], 3),
            "tpot_p90_error": None if trace["tpot_p90_error"] is None else round(trace["tpot_p90_error"], 3),
        }
        for k, document in sorted(replays.items())
        for trace in document["traces"]
    ]

    def worst(name: str) -> float | None:
        values = [abs(trace[name]) for trace in traces if trace[name] is not None]
        return max(values) if values else None

    return {
        "baseline": BASELINE,
        "what": "local partial pair (peagle local) on a 2-core CPU, one unit, no scaling",
        "traces": traces,
        "worst_attainment_points": worst("attainment_error_points"),
        "worst_ttft_p90_error": worst("ttft_p90_error"),
        "worst_tpot_p90_error": worst("tpot_p90_error"),
    }


def error_band() -> str:
    """The line every report prints: how far the simulator's unit was from a real server."""
    try:
        summary = json.loads(SUMMARY_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "the simulator's error against a real server: not measured (no model_error.json in this install)"
    ks = sorted({trace["k"] for trace in summary["traces"]})
    return (
        f"Measured error of the simulator's unit against a real server replaying the same traffic (`peagle capacity "
        f"--replay`, {summary['what']}, K={' and K='.join(ks)}, {len(summary['traces'])} traces; {summary['baseline']}): "
        f"SLO attainment within {summary['worst_attainment_points']:.1f} percentage points, p90 TTFT within "
        f"{_percent(summary['worst_ttft_p90_error'])}, p90 TPOT within {_percent(summary['worst_tpot_p90_error'])} "
        "(the worst trace of each). It holds for a unit served by a measured service curve; the fixed-slot unit used "
        "without one has no measured error, and the scaling (alarms, Auto Scaling, start-up times) is modelled from "
        "AWS's documents, not replayed here."
    )


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def write_summary(repo: Path) -> dict:
    """model_error.json from the baseline's replay.json files (``python -m peagle.simulate.model_error``)."""
    replays = {
        folder.name.removeprefix("K"): json.loads((folder / "replay.json").read_text(encoding="utf-8"))
        for folder in sorted((repo / BASELINE).glob("K*"))
        if (folder / "replay.json").is_file()
    }
    summary = summarize(replays)
    SUMMARY_FILE.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


if __name__ == "__main__":
    print(json.dumps(write_summary(Path.cwd()), indent=2))
