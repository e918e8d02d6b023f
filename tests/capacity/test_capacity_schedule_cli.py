"""`peagle capacity --pair P --speculative-schedule ...` through the command's entry, with `peagle local` and the
levels stood in for (no server): a schedule the launcher would refuse exits 2 before anything starts, a good one
is served with the launcher's flag and recorded where K is, and each repeat of a rate runs on its own seed."""

from __future__ import annotations

import json
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from capacity_stand_in import level

import peagle.capacity.levels as levels
import peagle.capacity.local_pair as local_pair
import peagle.client.cli as client_cli
from peagle.cli import main

SCHEDULE = "1-2:4,3-16:0"


class FakeClient:
    def generate(self, request):  # a warm-up answer: the ramp is sized from its latency
        return SimpleNamespace(timings=SimpleNamespace(e2e_s=2.0))


@pytest.fixture
def pair_stand_in(monkeypatch):
    """`peagle local` records the options it was started with; each level is the stand-in's, and records the
    repeat, the seeds and the prompts it was given."""
    seen: dict = {"served": [], "levels": []}

    @contextmanager
    def serve_local(options, **_):
        seen["served"].append(options)
        yield "http://stand-in"

    @contextmanager
    def build_client(url, endpoint, args, **_):
        yield FakeClient()

    def measure_level(client, requests, slo, *, rate, repeat, seed, prompts_seed=None, **_):
        prompts = tuple(request.prompt for request in requests)
        seen["levels"].append(
            {"rate": rate, "repeat": repeat, "seed": seed, "prompts_seed": prompts_seed, "prompts": prompts}
        )
        return level(rate, repeat)

    monkeypatch.setattr(local_pair, "serve_local", serve_local)
    monkeypatch.setattr(client_cli, "build_client", build_client)
    monkeypatch.setattr(levels, "measure_level", measure_level)
    return seen


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--pair", "partial", "--speculative-schedule", "1-2:4,3-8:0"], "the bands end at batch size 8"),
        (["--pair", "partial", "--speculative-schedule", "1-2:0,3-16:4"], "drafts nothing at batch size 1"),
        (["--pair", "partial", "--speculative-schedule", "1-16:9"], "K=9 is above the 8 tokens"),
        (["--pair", "partial", "--speculative-schedule", "1-2:4,4-16:0"], "no band covers batch size 3"),
        (["--pair", "partial", "--speculative-schedule", "fast"], "'fast' is not a band LO-HI:K"),
        (["--pair", "partial", "--speculative-tokens", "9"], "--speculative-tokens 9: above the 8 tokens"),
        (
            ["--pair", "partial", "--speculative-tokens", "4", "--speculative-schedule", SCHEDULE],
            f"--speculative-tokens 4 and --speculative-schedule {SCHEDULE} both set K: give one",
        ),
        (["--url", "http://127.0.0.1:9", "--speculative-schedule", SCHEDULE], "sets the K of a local --pair"),
        (["--endpoint", "e", "--speculative-schedule", SCHEDULE], "an --endpoint keeps its own"),
    ],
    ids=[
        "short of max_num_seqs",
        "K=0 at batch 1",
        "above trained K",
        "gap",
        "not bands",
        "K above trained",
        "both",
        "url",
        "endpoint",
    ],
)
def test_a_schedule_the_launcher_would_refuse_exits_2_before_anything_starts(
    pair_stand_in, tmp_path, capsys, arguments, message
):
    assert main(["capacity", "--out", str(tmp_path / "out"), *arguments]) == 2
    assert message in capsys.readouterr().err
    assert pair_stand_in["served"] == [] and pair_stand_in["levels"] == []
    assert not (tmp_path / "out").exists()


def test_a_schedule_is_served_with_the_launchers_flag_and_recorded_where_k_is(pair_stand_in, tmp_path):
    out = tmp_path / "out"
    assert main(["capacity", "--pair", "partial", "--speculative-schedule", SCHEDULE, "--out", str(out)]) == 0
    assert pair_stand_in["served"] == [["--pair", "partial", "--speculative-schedule", SCHEDULE]]
    document = json.loads((out / "capacity.json").read_text())
    assert document["speculative_tokens"] == f"schedule {SCHEDULE}" and document["speculative_schedule"] == SCHEDULE
    assert f"K=schedule {SCHEDULE}" in (out / "capacity-snippet.yaml").read_text()
    assert f"K=schedule {SCHEDULE}" in json.loads((out / "service-curve.json").read_text())["source"]


def test_each_repeat_of_a_rate_draws_its_own_prompts_and_arrivals_from_seed_plus_repeat(pair_stand_in, tmp_path):
    out = tmp_path / "out"
    assert main(["capacity", "--pair", "partial", "--seed", "7", "--out", str(out)]) == 0
    measured = pair_stand_in["levels"]
    answer = json.loads((out / "capacity.json").read_text())["capacity"]["rate_per_instance"]
    at_answer = [entry for entry in measured if entry["rate"] == answer]
    assert [entry["repeat"] for entry in at_answer] == [0, 1, 2]  # --repeats 3 by default
    assert [entry["prompts_seed"] for entry in at_answer] == [7, 8, 9]
    assert all(entry["seed"] == 7 for entry in measured)  # measure_level adds the repeat to the arrivals' seed
    assert len({entry["prompts"][:4] for entry in at_answer}) == 3  # three prompt sets, one per seed
    first = {entry["prompts"][:4] for entry in measured if entry["repeat"] == 0}
    assert len(first) == 1  # every rate's first level sends the run's own prompts (seed 7)
    assert "draws its own synthetic prompts and arrivals from seed 7 + i" in (out / "capacity.md").read_text()


def test_a_prompts_files_repeats_change_the_arrivals_only(pair_stand_in, tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": f"Production request {i}."}) + "\n" for i in range(4)))
    out = tmp_path / "out"
    assert main(["capacity", "--pair", "partial", "--prompts-file", str(prompts), "--out", str(out)]) == 0
    measured = pair_stand_in["levels"]
    assert {entry["prompts_seed"] for entry in measured} == {None}
    assert len({entry["prompts"][:4] for entry in measured}) == 1 and max(entry["repeat"] for entry in measured) == 2
    assert "change the arrivals only" in (out / "capacity.md").read_text()
