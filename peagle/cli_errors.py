"""How a `peagle` command turns an expected error into one line and an exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

ErrorTypes = type[Exception] | tuple[type[Exception], ...]


def run_reporting_errors(
    run: Callable[[argparse.Namespace], int], args: argparse.Namespace, exits: Sequence[tuple[ErrorTypes, int]]
) -> int:
    """``run(args)``; an error matching an entry of ``exits`` (first match wins) is printed as
    ``error: <message>`` on stderr, without a traceback, and its code returned. Others propagate."""
    try:
        return run(args)
    except Exception as error:
        for types, code in exits:
            if isinstance(error, types):
                print(f"error: {error}", file=sys.stderr)
                return code
        raise
