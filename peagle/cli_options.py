"""A `peagle` command's options as data: a table of ``option(...)``, ``added_by(...)`` and ``group(...)`` entries
that ``add_command`` turns into its argparse parser, in the table's order (the order `--help` lists them).

An entry holds exactly what ``ArgumentParser.add_argument`` takes, so a table reads as the calls it replaces.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class OptionSpec(Protocol):
    def add_to(self, parser: Any) -> None: ...


@dataclass(frozen=True)
class Option:
    """One ``add_argument(*flags, **settings)``."""

    flags: tuple[str, ...]
    settings: Mapping[str, Any]

    def add_to(self, parser: Any) -> None:
        parser.add_argument(*self.flags, **self.settings)


@dataclass(frozen=True)
class AddedBy:
    """Options a shared helper adds (``add(parser, *args, **settings)``), e.g. peagle.slo.add_slo_arguments."""

    add: Callable[..., None]
    args: tuple[Any, ...]
    settings: Mapping[str, Any]

    def add_to(self, parser: Any) -> None:
        self.add(parser, *self.args, **self.settings)


@dataclass(frozen=True)
class Group:
    """An argument group (a titled section of --help) or a mutually exclusive group, and the options in it."""

    options: tuple[OptionSpec, ...]
    title: str | None = None
    description: str | None = None
    exclusive: bool = False
    required: bool = False

    def add_to(self, parser: Any) -> None:
        if self.exclusive:
            holder = parser.add_mutually_exclusive_group(required=self.required)
        else:
            holder = parser.add_argument_group(self.title, self.description)
        add_options(holder, self.options)


def option(*flags: str, **settings: Any) -> Option:
    return Option(flags, settings)


def added_by(add: Callable[..., None], *args: Any, **settings: Any) -> AddedBy:
    return AddedBy(add, args, settings)


def group(title: str, *options: OptionSpec, description: str | None = None) -> Group:
    return Group(options, title=title, description=description)


def exclusive(*options: OptionSpec, required: bool = False) -> Group:
    return Group(options, exclusive=True, required=required)


def add_options(parser: Any, options: tuple[OptionSpec, ...]) -> None:
    for spec in options:
        spec.add_to(parser)


def add_command(
    subparsers: argparse._SubParsersAction,
    name: str,
    handler: Callable[[argparse.Namespace], int],
    options: tuple[OptionSpec, ...],
    **parser_settings: Any,
) -> argparse.ArgumentParser:
    """The subcommand ``name`` with ``options``; ``handler`` runs it (peagle/cli.py calls ``args.handler(args)``)."""
    parser = subparsers.add_parser(name, **parser_settings)
    add_options(parser, options)
    parser.set_defaults(handler=handler)
    return parser
