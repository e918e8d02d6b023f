"""Every committed baseline (docs/baselines/) says what the machine did while each level was measured,
and was measured quietly: a figure from a busy machine measures the machine (beside a second engine
serving load, the server under test got 0.04 of 2 cores and met the SLO on no request). The folders
measured before levels recorded their host were measured again or retired (docs/baselines/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BASELINES = Path(__file__).resolve().parents[2] / "docs" / "baselines"


def _measured_files() -> list[Path]:
    return sorted(path for name in ("results.json", "capacity.json", "replay.json") for path in BASELINES.rglob(name))


def _levels(path: Path) -> list[dict]:
    document = json.loads(path.read_text())
    if path.name == "capacity.json":
        return document["points"] + document.get("noisy_points", [])
    if path.name == "replay.json":  # peagle capacity --replay: each trace replayed is a level
        return document["traces"]
    return [level for run in document["runs"] for level in run["levels"]]


@pytest.mark.parametrize(
    "path",
    _measured_files(),
    ids=lambda path: path.parent.relative_to(BASELINES).as_posix(),
)
def test_a_baseline_records_its_machine_and_was_measured_quietly(path):
    levels = _levels(path)
    assert levels, f"{path}: no level"
    for level in levels:
        host = level.get("host")
        assert host, f"{path}: a level without its host conditions (measure it again with this version)"
        assert {"other_work_cores", "load_1m_max", "steal_share", "other_engines"} <= host.keys()
        assert not host["busy"], f"{path}: measured on a busy machine: {host['busy']}"
