"""The `peagle` command line.

Each subcommand lives in the module that owns its logic and exposes
``register(subparsers)``, which adds its parser from a table of options
(peagle/cli_options.py, ``add_command``) and sets ``handler`` to a function
``(argparse.Namespace) -> int`` returning an exit code of peagle/cli_errors.py's
``ExitCode``, the one table every command shares; expected errors end as
``error: <message>`` through ``run_reporting_errors``. Heavy imports (torch, vllm, boto3)
stay inside handlers so `peagle plan` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from peagle.cli_errors import ExitCode, report_error

DISTRIBUTION = "peagle-sagemaker"  # pyproject.toml [project] name

# module path -> the subcommands it registers; importing is cheap by contract.
_COMMAND_MODULES = (
    "peagle.commands_plan",  # catalog, plan
    "peagle.local.cli",  # local
    "peagle.client.cli",  # invoke
    "peagle.bench.cli",  # bench
    "peagle.batch.cli",  # batch
    "peagle.stage.cli",  # stage
    "peagle.preflight.cli",  # preflight
    "peagle.access.cli",  # access
    "peagle.simulate.cli",  # simulate
    "peagle.smoke.cli",  # smoke
    "peagle.tune.cli",  # tune
    "peagle.capacity.cli",  # capacity
    "peagle.prompts_capture.cli",  # prompts
    "peagle.traffic.cli",  # traffic
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="peagle",
        description="P-EAGLE speculative decoding on Amazon SageMaker with vLLM.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in _COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


# Top-level packages a command may import lazily -> the make target that installs them.
# `make synth` installs the client set; the vLLM CPU build is only for `peagle local` and tests.
_INSTALLED_BY = {
    **dict.fromkeys(("vllm", "torch", "transformers", "safetensors", "tokenizers"), "make serving-deps"),
    **dict.fromkeys(
        ("boto3", "botocore", "httpx", "matplotlib", "huggingface_hub", "tqdm", "prometheus_client"), "make client-deps"
    ),
}


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed; `make synth` installs it)"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = int(args.handler(args) or 0)
        sys.stdout.flush()  # inside the try: a reader gone before the last buffered line is handled below
        return code
    except BrokenPipeError:
        # `peagle catalog | head` ends quietly. Not by SIGPIPE's default disposition: "Do not set SIGPIPE's
        # disposition to SIG_DFL in order to avoid BrokenPipeError. Doing that would cause your program to exit
        # unexpectedly whenever any socket connection is interrupted while your program is still writing to it"
        # (Python docs, signal, "Note on SIGPIPE"): bench, capacity and invoke write to sockets. A broken socket
        # is the command's own error; only a closed standard output ends here.
        if not _stdout_closed():
            raise
        # "Python flushes standard streams on exit; redirect remaining output to devnull to avoid another
        # BrokenPipeError at shutdown" (same note).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.OUTPUT_CLOSED
    except KeyboardInterrupt:
        # Commands with something to add catch it themselves (batch: the job keeps running;
        # smoke: nothing was changed); everything else ends here, without a traceback.
        print(f"interrupted: peagle {args.command} stopped (Ctrl-C)", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except ModuleNotFoundError as error:
        package = (error.name or "").split(".")[0]
        if package not in _INSTALLED_BY:
            raise
        where = _INSTALLED_BY[package]
        if where == "make client-deps":  # also an extra of the wheel (pyproject.toml: cli)
            where = 'pip install "<the peagle_sagemaker wheel>[cli]"` (its cli extra), or `make client-deps` from the repository root'
        else:
            where += "` from the repository root"
        return report_error(
            f"`peagle {args.command}` needs the Python package {package!r}, which is not installed in "
            f"this environment; install it with `{where}",
            ExitCode.BAD_INPUT,
        )


def _stdout_closed() -> bool:
    """Whether standard output's reader is gone: poll(2) reports POLLERR on "the write end of a pipe when the read end
    has been closed" (Linux poll(2) man page, POLLERR), POLLHUP where a system reports a hang-up instead."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        events = poller.poll(0)
    except (AttributeError, OSError, ValueError):  # no poll(), or stdout is no file (a test's capture)
        return False
    return any(mask & (select.POLLERR | select.POLLHUP) for _, mask in events)


if __name__ == "__main__":
    sys.exit(main())
