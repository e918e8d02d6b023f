"""`peagle local`'s default K per constructed pair: one table (peagle/local/measured_k.py) with each default's source,
read when neither --speculative-tokens nor --speculative-schedule is given, and printed by `peagle local --help`.
No server starts here: the options are parsed as `peagle local` parses them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from peagle.cli import build_parser
from peagle.local import cli as local_cli
from peagle.local import measured_k
from peagle.local.measured_k import MEASURED_DEFAULTS, MeasuredDefault
from peagle.local.tiny_pair import PAIRS, TRAINED_SPECULATIVE_TOKENS
from peagle_serve.contract import schedule_coverage_problems, schedule_problems

REPO = Path(__file__).resolve().parents[2]


def _args(*argv: str):
    return build_parser().parse_args(["local", *argv])


def test_every_local_pair_has_a_measured_default_with_a_source_that_exists():
    assert set(MEASURED_DEFAULTS) == set(PAIRS)
    for name, default in MEASURED_DEFAULTS.items():
        folders = re.findall(r"docs/baselines/[\w-]+", default.source)
        assert all((REPO / folder).is_dir() for folder in folders), (name, folders)
        assert folders or default.source.startswith("not measured"), name
        if default.schedule:
            assert default.speculative_tokens == max(band[2] for band in default.schedule), name
            assert not schedule_problems(list(default.schedule), trained_k=TRAINED_SPECULATIVE_TOKENS), name
            assert not schedule_coverage_problems(default.schedule, local_cli.LOCAL_MAX_NUM_SEQS), name
        assert 0 <= default.speculative_tokens <= TRAINED_SPECULATIVE_TOKENS, name


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_without_a_flag_the_pairs_measured_default_is_served(pair):
    args = _args("--pair", pair)
    assert local_cli.speculative_tokens(args) == MEASURED_DEFAULTS[pair].speculative_tokens
    assert local_cli.speculative_schedule(args) == (list(MEASURED_DEFAULTS[pair].schedule) or None)


def test_a_flag_replaces_the_default():
    assert local_cli.speculative_tokens(_args("-k", "0")) == 0
    assert local_cli.speculative_tokens(_args("--speculative-tokens", "2")) == 2
    args = _args("--speculative-schedule", "1-2:4,3-16:0")
    assert local_cli.speculative_tokens(args) == 4
    assert local_cli.speculative_schedule(args) == [(1, 2, 4), (3, 16, 0)]


def test_a_measured_schedule_in_the_table_is_served_when_no_flag_is_given(monkeypatch):
    """What the lead's measurement will do: put a schedule in the table, and `peagle local` serves it."""
    schedule = ((1, 2, 3), (3, 16, 2))
    table = {
        **MEASURED_DEFAULTS,
        "partial": MeasuredDefault(3, "docs/baselines/k-by-load", schedule),
        "demo": MeasuredDefault(2, "docs/baselines/k-by-load"),
    }
    monkeypatch.setattr(local_cli, "MEASURED_DEFAULTS", table)
    monkeypatch.setattr(measured_k, "MEASURED_DEFAULTS", table)
    args = _args("--pair", "partial")
    assert local_cli.speculative_schedule(args) == list(schedule)
    assert local_cli.speculative_tokens(args) == 3
    assert local_cli.speculative_tokens(_args("--pair", "demo")) == 2
    assert local_cli.speculative_schedule(_args("--pair", "demo")) is None
    assert local_cli.speculative_tokens(_args("--pair", "partial", "-k", "1")) == 1
    assert local_cli.speculative_schedule(_args("--pair", "partial", "-k", "1")) is None


def test_help_says_each_pairs_default_and_where_it_comes_from(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["local", "--help"])
    # argparse wraps the help, at spaces and hyphens: compared without whitespace.
    text = re.sub(r"\s+", "", capsys.readouterr().out)
    assert "Default:thepair'smeasuredchoice(peagle/local/measured_k.py)" in text
    for name, default in MEASURED_DEFAULTS.items():
        assert re.sub(r"\s+", "", f"{name}: {default.describe()}") in text
