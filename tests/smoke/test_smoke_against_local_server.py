"""`peagle smoke --url` against the real local P-EAGLE server (the shared K=4 engine)."""

from __future__ import annotations

import re

import pytest

from peagle.cli import main

pytestmark = pytest.mark.engine


def test_the_local_server_passes_the_http_steps(local_server, capsys):
    exit_code = main(["smoke", "--url", local_server.url, "--max-tokens", "24"])

    out, err = capsys.readouterr()
    lines = {line.split()[1]: line for line in out.splitlines() if line.split()[0] in ("ok", "FAIL", "skip")}
    assert exit_code == 0, out + err
    assert lines["plain-invocation"].startswith("ok ") and "200, 24 token(s)" in lines["plain-invocation"]
    assert lines["streamed-invocation"].startswith("ok ") and "24 token(s)" in lines["streamed-invocation"]
    assert ", greedy: " in lines["plain-invocation"]
    assert ", temperature 0.7, top_p 0.9 (profile chatbot): " in lines["streamed-invocation"]
    assert (
        lines["speculation-on"].startswith("ok ")
        and "accepted tokens during the smoke requests" in lines["speculation-on"]
    )
    # The answers' own acceptance, at the deployed sampling and greedy beside it (figures not pinned).
    assert re.search(
        r"; mean acceptance length \d+\.\d\d at temperature 0\.7, top_p 0\.9 \(profile chatbot\); \d+\.\d\d greedy$",
        lines["speculation-on"],
    ), lines["speculation-on"]
    for name in ("endpoint-in-service", "kpi-metrics", "alarms-ok"):
        assert lines[name].startswith("skip ") and "--url" in lines[name]
    assert "smoke test passed: 3 step(s) ok, 3 skipped" in out


def test_expecting_speculation_off_skips_the_counter_check(local_server, capsys):
    exit_code = main(["smoke", "--url", local_server.url, "--max-tokens", "4", "--expect-speculation", "off"])

    out = capsys.readouterr().out
    assert exit_code == 0
    assert "skip speculation-on       speculation expected off (--expect-speculation off)" in out
