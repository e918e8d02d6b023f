"""The error band every simulation report prints is the committed replay baseline's
(docs/baselines/simulator-replay/), and says what it covers."""

from __future__ import annotations

import json
from pathlib import Path

from peagle.simulate import model_error

REPO = Path(__file__).resolve().parents[2]


def _replays() -> dict[str, dict]:
    root = REPO / model_error.BASELINE
    return {
        folder.name.removeprefix("K"): json.loads((folder / "replay.json").read_text())
        for folder in sorted(root.glob("K*"))
    }


def test_the_packaged_summary_is_the_baselines_replays():
    replays = _replays()
    assert set(replays) == {"0", "4"} and all(len(document["traces"]) >= 3 for document in replays.values())
    packaged = json.loads(model_error.SUMMARY_FILE.read_text())
    assert packaged == model_error.summarize(replays)


def test_the_band_printed_is_the_worst_trace_of_each_figure():
    summary = model_error.summarize(_replays())
    band = model_error.error_band()
    worst = max(abs(trace["attainment_error_points"]) for trace in summary["traces"])
    assert f"SLO attainment within {worst:.1f} percentage points" in band
    assert "K=0 and K=4" in band and model_error.BASELINE in band
    assert "the scaling (alarms, Auto Scaling, start-up times) is modelled from AWS's documents" in band
