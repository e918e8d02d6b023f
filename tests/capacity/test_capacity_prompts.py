"""Which prompts a capacity figure came from: --prompts-file named with its sha256 in capacity.json,
capacity.md and the snippet's source, or "synthetic prompts (...)" with a note saying production prompts
are better. On a stand-in target (no server)."""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from capacity_stand_in import level

import peagle.capacity.cli as capacity_cli
import peagle.capacity.levels as levels
from peagle.cli import main


@pytest.fixture
def sent(monkeypatch):
    """The prompts each level was given (the stand-in target answers every level with capacity_stand_in's)."""
    prompts: list = []

    class Client:
        def generate(self, request):
            prompts.append(request.prompt or request.messages)
            return SimpleNamespace(timings=SimpleNamespace(e2e_s=2.0))

    @contextmanager
    def target(args):
        yield Client(), None, "stand-in"

    def measure_level(client, requests, slo, *, rate, repeat, **_):
        prompts.extend(request.prompt or request.messages for request in requests)
        return level(rate, repeat)

    monkeypatch.setattr(capacity_cli, "_target", target)
    monkeypatch.setattr(levels, "measure_level", measure_level)
    return prompts


def test_the_figure_names_the_prompts_file_it_came_from(sent, tmp_path, capsys):
    prompts_file = tmp_path / "prompts.jsonl"
    prompts_file.write_text('{"prompt": "from production"}\n{"messages": [{"role": "user", "content": "hi"}]}\n')
    out = tmp_path / "out"
    argv = ["capacity", "--url", "http://stand-in", "--prompts-file", str(prompts_file), "--out", str(out)]
    assert main(argv) == 0
    assert "from production" in sent and "Notes:" not in "".join(map(str, sent))  # no synthetic prompt was sent
    named = f"{prompts_file} (sha256 {hashlib.sha256(prompts_file.read_bytes()).hexdigest()[:12]}, 2 prompts)"
    document = json.loads((out / "capacity.json").read_text())
    assert document["prompts"] == named and document["settings"]["prompts"] == named
    assert f"Prompts: {named}." in (out / "capacity.md").read_text()
    assert named in (out / "capacity-snippet.yaml").read_text()  # measured_capacity.source
    assert "synthetic prompts" not in capsys.readouterr().err


def test_synthetic_prompts_are_named_and_noted(sent, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["capacity", "--url", "http://stand-in", "--out", str(out)]) == 0
    document = json.loads((out / "capacity.json").read_text())
    assert document["prompts"] == "synthetic prompts (buckets short, seed 0)"
    assert any("peagle prompts" in note for note in document["notes"])
    assert "capacity: note: synthetic prompts: the answer depends on the prompts" in capsys.readouterr().err


def test_buckets_and_a_prompts_file_are_refused_together(tmp_path, capsys):
    prompts_file = tmp_path / "prompts.jsonl"
    prompts_file.write_text('{"prompt": "p"}\n')
    argv = ["capacity", "--url", "http://x", "--buckets", "short", "--prompts-file", str(prompts_file)]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    assert "give one of them" in capsys.readouterr().err
    assert (
        main(
            [
                "capacity",
                "--url",
                "http://x",
                "--prompts-file",
                str(tmp_path / "missing.jsonl"),
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "--prompts-file" in capsys.readouterr().err


def test_prompts_that_set_their_own_sampling_say_so(sent, tmp_path):
    prompts_file = tmp_path / "prompts.jsonl"
    prompts_file.write_text('{"prompt": "a", "temperature": 0.2}\n{"prompt": "b"}\n')
    out = tmp_path / "out"
    assert main(["capacity", "--url", "http://stand-in", "--prompts-file", str(prompts_file), "--out", str(out)]) == 0
    document = json.loads((out / "capacity.json").read_text())
    assert document["prompts"].endswith("2 prompts; temperature set by 1)")
    assert (
        "prompts that set their own sampling or length keep it (the capture's): temperature on 1 of 2"
        in document["notes"][0]
    )
