"""`peagle capacity --pair`: the local pair served through `peagle local` for the run, with one K
(--speculative-tokens) or K by batch size (--speculative-schedule, the launcher's own flag, as `peagle tune
--schedule` serves a candidate), checked with the launcher's rules before anything starts."""

from __future__ import annotations

import argparse
from contextlib import contextmanager

from peagle.local.served import serve_local


def _setting(args: argparse.Namespace) -> tuple[int | None, str | None]:
    """(K, schedule text) served: the flags', else the pair's measured default (peagle/local/measured_k.py), always
    passed to `peagle local` explicitly so the report names what was measured."""
    if args.speculative_schedule is not None or args.speculative_tokens is not None:
        return args.speculative_tokens, args.speculative_schedule
    from peagle.local.measured_k import measured_default

    default = measured_default(args.pair)
    if default.schedule:  # in --speculative-schedule's words, LO-HI:K bands
        return None, ",".join(f"{low}-{high}:{k}" for low, high, k in default.schedule)
    return default.speculative_tokens, None


def speculation_refusal(args: argparse.Namespace) -> str | None:
    """Why the K or schedule given cannot be served, every reason at once; None when it can (or none was given)."""
    from peagle.local.speculation_checks import speculation_problems

    k, schedule = args.speculative_tokens, args.speculative_schedule
    if k is None and schedule is None:
        return None
    if not args.pair:
        flag = "--speculative-schedule" if schedule is not None else "--speculative-tokens"
        return f"{flag} sets the K of a local --pair; a --url server or an --endpoint keeps its own"
    if k is not None and schedule is not None:
        return (
            f"--speculative-tokens {k} and --speculative-schedule {schedule} both set K: give one (a schedule is K "
            "by batch size; --speculative-tokens 0 turns speculation off)"
        )
    if k is not None and k < 0:
        return f"--speculative-tokens {k}: 0 (off) or more"
    problems = speculation_problems(
        [] if k is None else [k],
        [] if schedule is None else [schedule],
        k_flag="--speculative-tokens",
        schedule_flag="--speculative-schedule",
    )
    return "nothing was started:\n  - " + "\n  - ".join(problems) if problems else None


def k_text(args: argparse.Namespace) -> str | None:
    """A local pair's K in the report's words ("4", "0 (off)", "schedule 1-2:4,3-16:0"); None for another target."""
    if not args.pair:
        return None
    k, schedule = _setting(args)
    if schedule is not None:
        return f"schedule {schedule}"
    return "0 (off)" if k == 0 else str(k)


@contextmanager
def served_pair(args: argparse.Namespace):
    """`peagle local --pair` on a free port, started and stopped as peagle tune serves its candidates."""
    k, schedule = _setting(args)
    setting = ["--speculative-schedule", schedule] if schedule is not None else ["--speculative-tokens", str(k)]
    args.out.mkdir(parents=True, exist_ok=True)
    with serve_local(
        ["--pair", args.pair, *setting],
        log_path=args.out / "server.log",
        label=f"pair {args.pair} K={k_text(args)}",
        parent="capacity",
    ) as url:
        yield url
