"""The `peagle` command line.

Each subcommand lives in the module that owns its logic and exposes
``register(subparsers)``, which adds its parser and sets ``handler`` to a function
``(argparse.Namespace) -> int`` (the exit code). Heavy imports (torch, vllm, boto3)
stay inside handlers so `peagle plan` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys

# module path -> the subcommands it registers; importing is cheap by contract.
_COMMAND_MODULES = (
    "peagle.commands_plan",  # catalog, plan
    "peagle.local.cli",  # local
    "peagle.client.cli",  # invoke
    "peagle.bench.cli",  # bench
    "peagle.batch.cli",  # batch
    "peagle.stage.cli",  # stage
    "peagle.preflight.cli",  # preflight
    "peagle.smoke.cli",  # smoke
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="peagle",
        description="P-EAGLE speculative decoding on Amazon SageMaker with vLLM.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in _COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Let `peagle catalog | head` end quietly instead of with a BrokenPipeError.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
