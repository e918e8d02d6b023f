"""Every `peagle` command's exit codes, declared once, and the one way a command turns an expected error into
``error: <message>`` on stderr and its code.

A command's handler returns an ``ExitCode``; the errors it expects (bad input, an AWS call that failed) it leaves
to ``run_reporting_errors``, which prints them without a traceback. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from enum import IntEnum

ErrorTypes = type[Exception] | tuple[type[Exception], ...]


class ExitCode(IntEnum):
    """What a `peagle` command's exit status means, the same for every command (each command's --help says
    which of them it uses)."""

    OK = 0
    # The command ran and its check or its work failed: a verdict failed (simulate, smoke), a grant is missing
    # (access), preflight refused, a request or a job failed, an AWS call failed where the command has no AWS code
    # of its own (stage, batch).
    FAILED = 1
    # Bad input: an option, a file or a deployment the command cannot use; nothing was done. The same as argparse's
    # for a usage error: "This method prints a usage message including the message to the standard error and
    # terminates the program with a status code of 2" (https://docs.python.org/3/library/argparse.html,
    # ArgumentParser.error).
    BAD_INPUT = 2
    # AWS could not be asked: no credentials or region, or an AWS call was refused (preflight, traffic, smoke,
    # prompts).
    AWS = 3
    # `peagle bench --baseline`: the run is worse than the baseline (it shares 3 with AWS: bench calls no AWS API).
    REGRESSED = 3
    # 128 + SIGINT, what a shell reports for a command ended by Ctrl-C.
    INTERRUPTED = 130
    # 128 + SIGPIPE, what a shell reports for a command whose reader went away.
    OUTPUT_CLOSED = 141


def report_error(message: object, code: ExitCode) -> ExitCode:
    """Print ``error: <message>`` on stderr and return ``code``: how a command ends on an error it expects."""
    print(f"error: {message}", file=sys.stderr)
    return code


def run_reporting_errors(
    run: Callable[[argparse.Namespace], int],
    args: argparse.Namespace,
    exits: Sequence[tuple[ErrorTypes, ExitCode]],
    *,
    describe: Callable[[Exception], str] = str,
) -> int:
    """``run(args)``; an error matching an entry of ``exits`` (first match wins) is printed as
    ``error: <describe(error)>`` on stderr, without a traceback, and its code returned. Others propagate."""
    try:
        return run(args)
    except Exception as error:
        for types, code in exits:
            if isinstance(error, types):
                return report_error(describe(error), code)
        raise
