"""An option table builds the parser the add_argument calls it replaces: the options in order, a titled group,
and a mutually exclusive group that argparse enforces (required or not)."""

from __future__ import annotations

import argparse

import pytest

from peagle.cli_options import add_command, added_by, exclusive, group, option


def _add_region(parser, *, default: str) -> None:
    parser.add_argument("--region", default=default)


TABLE = (
    option("--out", required=True, help="where"),
    exclusive(option("--url"), option("--endpoint"), required=True),
    group("the job", option("--count", type=int, default=1), description="job settings"),
    added_by(_add_region, default="us-east-1"),
)


def _parser() -> argparse.ArgumentParser:
    subparsers = argparse.ArgumentParser(prog="peagle").add_subparsers(dest="command", required=True)
    return add_command(subparsers, "demo", lambda args: 0, TABLE, help="a demo")


def test_a_table_parses_as_its_calls_would():
    args = _parser().parse_args(["--out", "o", "--url", "u", "--count", "3"])
    assert (args.out, args.url, args.endpoint, args.count, args.region) == ("o", "u", None, 3, "us-east-1")
    assert args.handler(args) == 0


@pytest.mark.parametrize(
    "argv", [["--out", "o"], ["--out", "o", "--url", "u", "--endpoint", "e"]], ids=["none", "both"]
)
def test_the_exclusive_group_is_enforced(argv, capsys):
    with pytest.raises(SystemExit) as raised:
        _parser().parse_args(argv)
    assert raised.value.code == 2
    assert "--url" in capsys.readouterr().err


def test_help_lists_the_options_in_table_order_and_the_group_by_title():
    text = _parser().format_help()
    assert text.index("--out") < text.index("--url") < text.index("--endpoint") < text.index("--region")
    assert "the job:\n  job settings\n\n  --count COUNT" in text
    assert "(--url URL | --endpoint ENDPOINT)" in text  # one of them, required
