"""`peagle tune` end to end on the real engine (the serving lane): two seeds, both loops, then the proposal."""

from __future__ import annotations

import pytest

from peagle.cli import main


@pytest.mark.engine
def test_a_small_local_tune_reports_intervals_and_a_proposal(tmp_path, capsys):
    # The serving lane: two rounds (seeds 0 and 1) of off and K=2 on the tiny pair, closed and open loop, then the
    # proposal. --busy-limit 1: about the path, not the machine (see test_tune_choice's engine test).
    out = tmp_path / "tune"
    argv = ["tune", "--pair", "tiny", "--k", "0,2", "--concurrency", "1,2", "--request-rate", "1", "--repeat", "2"]
    argv += ["--requests", "2", "--max-tokens", "16", "--buckets", "short", "--busy-limit", "1"]
    assert main([*argv, "--out", str(out)]) == 0
    report = (out / "recommendation.md").read_text()
    assert "Each setting was measured 2 times" in report and " ± " in report
    assert "Rounds: 2, on seeds 0-1" in report and "Proposed: **" in report
    assert "### Open loop" in report
    assert (out / "deployment-snippet.yaml").is_file() and (out / "library-snippet.py").is_file()
