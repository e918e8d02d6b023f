"""`peagle tune`: choose K by measurement.

For the local pair it serves each candidate setting in turn (`peagle local`, one at a time:
candidates must not compete for the same cores), measures it with `peagle bench` at every
concurrency level, and recommends a setting from those measurements (peagle/tune/choose.py).
Against a running server or a deployed endpoint (--url / --endpoint) it measures what that
setting delivers without redeploying. --from-results re-decides from stored bench runs.

Writes to --out: one bench folder per candidate, ``comparison/`` (bench's side-by-side
report and plots), ``recommendation.md`` (the table, the choice and why) and
``deployment-snippet.yaml``. Exit 0 with a recommendation, 1 when a candidate could not be
served or measured, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from peagle.local.tiny_pair import PAIRS

EXIT_OK, EXIT_FAILED, EXIT_BAD_ARGUMENTS = 0, 1, 2
READY_TIMEOUT_SECONDS = 300.0
DESCRIPTION = (
    "Serve each candidate (the local pair: K values from --k and any --schedule, one at a time), "
    "measure it with `peagle bench` at every --concurrency level, and recommend the setting with the evidence: "
    "recommendation.md (table, per-level winners, the choice and why), deployment-snippet.yaml, comparison/ "
    "(bench's side-by-side report and plots). --url/--endpoint measure a running server or a deployed endpoint "
    "as it is; --from-results decides from stored runs. Exit 0 ok, 1 a candidate failed, 2 bad arguments."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tune",
        help="measure K = 0 and other speculation settings, recommend one with the evidence",
        description=DESCRIPTION,
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--pair",
        default=None,
        choices=sorted(PAIRS),
        help="local pair to serve for each candidate (`peagle local --pair`; default tiny)",
    )
    where.add_argument("--url", help="measure the server already running here (its current setting only)")
    where.add_argument("--endpoint", help="measure this SageMaker endpoint as deployed (its current setting only)")
    where.add_argument(
        "--from-results", action="append", type=Path, metavar="RESULTS_JSON", help="decide from stored bench runs"
    )
    parser.add_argument(
        "--k", default="0,1,2,4", help="static K candidates for the local pair (default 0,1,2,4; 0 = off)"
    )
    parser.add_argument(
        "--schedule",
        action="append",
        default=[],
        metavar="LO-HI:K,...",
        help="also measure this dynamic schedule (repeatable), e.g. 1-2:4,3-16:0",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds over all candidates, interleaved; the choice uses each level's median, the table shows the "
        "spread (default 1)",
    )
    parser.add_argument("--concurrency", default="1,4,8", help="concurrency levels (default 1,4,8)")
    parser.add_argument("--requests", type=int, default=16, help="requests per level (default 16)")
    parser.add_argument("--max-tokens", type=int, default=128, help="output tokens per request (default 128)")
    parser.add_argument(
        "--buckets", default="short,long", help="prompt length buckets, as for bench (default short,long)"
    )
    parser.add_argument("--band", help="concurrency band LO-HI the recommendation is for (default: all levels)")
    parser.add_argument("--region", help="with --endpoint: its AWS region")
    parser.add_argument(
        "--inference-component",
        metavar="NAME",
        help="with --endpoint: measure this inference component (passed to `peagle bench`, whose warm-up waits "
        "for a copy if it is scaled to zero)",
    )
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.set_defaults(handler=run_tune)


def run_tune(args: argparse.Namespace) -> int:
    from peagle.cli_errors import run_reporting_errors
    from peagle.errors import PeagleError

    return run_reporting_errors(
        _tune, args, [(TuneFailed, EXIT_FAILED), ((PeagleError, ValueError), EXIT_BAD_ARGUMENTS)]
    )


class TuneFailed(RuntimeError):
    """A candidate could not be served or measured."""


def _tune(args: argparse.Namespace) -> int:
    from peagle.bench.results import load_results

    band = _band(args.band)
    if args.inference_component and not args.endpoint:
        raise ValueError("--inference-component names an inference component of an --endpoint; give --endpoint")
    if args.repeat < 1:
        raise ValueError(f"--repeat takes a number of rounds >= 1, got {args.repeat}")
    local = not (args.from_results or args.url or args.endpoint)
    candidates = _local_candidates(args) if local else []  # checked before anything is written or started
    args.out.mkdir(parents=True, exist_ok=True)
    if args.from_results:
        result_files = list(args.from_results)
    elif args.url or args.endpoint:
        result_files = [
            _bench(args, label=_round_label("deployed", round_, args.repeat), url=args.url, endpoint=args.endpoint)
            for round_ in range(1, args.repeat + 1)
        ]
    else:
        # Rounds interleave the candidates (off, K=2, K=4, off, K=2, ...) so that a slow spell of the
        # machine lands on several candidates rather than on every run of one.
        result_files = [
            _bench_local_candidate(args, _round_label(label, round_, args.repeat), options)
            for round_ in range(1, args.repeat + 1)
            for label, options in candidates
        ]
    runs = [run for path in result_files for run in load_results(path).runs]
    _compare(args, result_files)
    return _write_recommendation(args, runs, band)


def _round_label(label: str, round_: int, rounds: int) -> str:
    return label if rounds == 1 else f"{label} #{round_}"


def _band(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    low, _, high = text.partition("-")
    if not (low.isdigit() and high.isdigit() and 1 <= int(low) <= int(high)):
        raise ValueError(f"--band takes LO-HI concurrency, e.g. 1-8; got {text!r}")
    return int(low), int(high)


def _local_candidates(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    try:
        ks = sorted({int(part) for part in args.k.split(",") if part.strip()})
    except ValueError as error:
        raise ValueError(f"--k takes comma-separated integers, got {args.k!r}") from error
    if not ks or min(ks) < 0:
        raise ValueError(f"--k takes K values >= 0, got {args.k!r}")
    _refuse_what_the_launcher_would(ks, args.schedule)
    candidates = [("off" if k == 0 else f"K={k}", ["--speculative-tokens", str(k)]) for k in ks]
    candidates += [(f"schedule {schedule}", ["--speculative-schedule", schedule]) for schedule in args.schedule]
    return candidates


def _refuse_what_the_launcher_would(ks: list[int], schedules: list[str]) -> None:
    """Every candidate's K and schedule, checked with the launcher's own rules before the first
    server starts: a bad last candidate would otherwise fail after the others ran for minutes."""
    from peagle.local.cli import LOCAL_MAX_NUM_SEQS, parse_schedule
    from peagle.local.tiny_pair import TRAINED_SPECULATIVE_TOKENS
    from peagle_serve.contract import schedule_coverage_problems, schedule_problems

    trained_k = TRAINED_SPECULATIVE_TOKENS
    problems = [
        f"--k {k}: above the {trained_k} tokens the local drafters are trained for; use K <= {trained_k}"
        for k in ks
        if k > trained_k
    ]
    for text in schedules:
        try:
            bands = parse_schedule(text)
        except argparse.ArgumentTypeError as error:
            problems.append(f"--schedule {text}: {error}")
            continue
        found = schedule_problems(bands, trained_k=trained_k)
        found = found or schedule_coverage_problems(bands, LOCAL_MAX_NUM_SEQS)
        problems += [f"--schedule {text}: {problem}" for problem in found]
    if problems:
        raise ValueError("nothing was started:\n  - " + "\n  - ".join(problems))


def _folder_name(label: str) -> str:
    """ "K=4 #2" -> "K4-round2", "schedule 1-2:4,3-16:0" -> "schedule_1-24_3-160"."""
    return label.replace(" #", "-round").replace(" ", "_").replace("=", "").replace(":", "").replace(",", "_")


def _bench(args: argparse.Namespace, *, label: str, url: str | None = None, endpoint: str | None = None) -> Path:
    from peagle.cli import main

    out = args.out / _folder_name(label)
    argv = ["bench", "--label", label, "--concurrency", args.concurrency, "--requests", str(args.requests)]
    argv += ["--max-tokens", str(args.max_tokens), "--buckets", args.buckets, "--out", str(out)]
    argv += ["--url", url] if url else ["--endpoint", endpoint] + (["--region", args.region] if args.region else [])
    if endpoint and args.inference_component:
        argv += ["--inference-component", args.inference_component]
    if main(argv) not in (0, 3):  # 3: a regression against a baseline, which tune does not pass
        raise TuneFailed(f"`peagle {' '.join(argv)}` failed; its message is above")
    return out / "results.json"


def _bench_local_candidate(args: argparse.Namespace, label: str, options: list[str]) -> Path:
    from peagle.client.http_transport import HttpTransport  # noqa: F401 (httpx present: fail early)

    port = _free_port()
    command = [sys.executable, "-m", "peagle", "local", "--port", str(port), *options]
    if args.pair:
        command += ["--pair", args.pair]
    print(f"tune: serving {label}: {' '.join(command[2:])}", file=sys.stderr)
    log = (args.out / f"server-{_folder_name(label)}.log").open("w")
    # Its own session, so that a terminal's Ctrl-C reaches tune (KeyboardInterrupt) and not the server
    # directly; tune then stops it below. SIGTERM and SIGHUP would end tune without that cleanup and
    # leave the server running (seen here: `timeout` killed tune, the engine lived on), so while a
    # server runs they raise SystemExit and take the same way out.
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        with _termination_raises():
            _wait_ready(server, f"http://127.0.0.1:{port}", label, log.name)
            return _bench(args, label=label, url=f"http://127.0.0.1:{port}")
    finally:
        _stop(server)
        log.close()


@contextmanager
def _termination_raises() -> Iterator[None]:
    """SIGTERM / SIGHUP raise SystemExit(128 + signal) while inside (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def leave(signum: int, frame: object) -> None:
        print(f"tune: {signal.Signals(signum).name} received: stopping the server, then exiting", file=sys.stderr)
        raise SystemExit(128 + signum)

    previous = {number: signal.signal(number, leave) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_ready(server: subprocess.Popen, url: str, label: str, log_path: str) -> None:
    import urllib.request

    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise TuneFailed(f"{label}: the server exited with status {server.returncode}; see {log_path}")
        try:
            with urllib.request.urlopen(url + "/ping", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1.0)
    raise TuneFailed(f"{label}: not ready after {READY_TIMEOUT_SECONDS:.0f} s; see {log_path}")


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)  # the launcher drains, then exits
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def _compare(args: argparse.Namespace, result_files: list[Path]) -> None:
    from peagle.cli import main

    argv = ["bench", "--out", str(args.out / "comparison")]
    for path in result_files:
        argv += ["--from-results", str(path)]
    main(argv)


def candidates_from_runs(runs) -> list:
    """One Candidate per setting, its K from the run label ("off", "K=4", "schedule ...", each with an
    optional round suffix " #2"). Repeated runs of a setting are summarised per level by their median
    (tokens/s and TPOT p50) and their range."""
    import re
    from statistics import median

    from peagle.tune.choose import Candidate

    by_label: dict[str, list] = {}
    for run in runs:
        by_label.setdefault(re.sub(r" #\d+$", "", run.label), []).append(run)
    candidates = []
    for label, group in by_label.items():
        schedule = _schedule_from_label(label)
        if schedule:
            k = max(band[2] for band in schedule)
        elif label == "off":
            k = 0
        elif label.startswith("K="):
            k = int(label[2:])
        else:  # a deployed endpoint: what its counters or responses saw
            k = round(median(run.speculative_tokens or 0 for run in group))
        tokens: dict[int, list[float]] = {}
        tpots: dict[int, list[float]] = {}
        for run in group:
            for level in run.levels:
                tokens.setdefault(level.concurrency, []).append(level.output_tokens_per_s)
                if level.tpot_s:
                    tpots.setdefault(level.concurrency, []).append(level.tpot_s.p50)
        candidates.append(
            Candidate(
                label=label,
                speculative_tokens=k,
                schedule=schedule,
                tokens_per_s={c: median(values) for c, values in tokens.items()},
                tpot_p50_s={c: median(tpots[c]) if c in tpots else None for c in tokens},
                tokens_per_s_range={c: (min(v), max(v)) for c, v in tokens.items()} if len(group) > 1 else {},
                runs=len(group),
            )
        )
    return candidates


def _schedule_from_label(label: str) -> tuple[tuple[int, int, int], ...] | None:
    if not label.startswith("schedule "):
        return None
    bands = []
    for part in label.removeprefix("schedule ").split(","):
        span, _, k = part.partition(":")
        low, _, high = span.partition("-")
        bands.append((int(low), int(high), int(k)))
    return tuple(bands)


def _cell(candidate, concurrency: int) -> str:
    text = f"{candidate.tokens_per_s[concurrency]:.1f}"
    if concurrency in candidate.tokens_per_s_range:
        low, high = candidate.tokens_per_s_range[concurrency]
        text += f" [{low:.1f}-{high:.1f}]"
    tpot = candidate.tpot_p50_s.get(concurrency)
    return f"{text} ({tpot * 1000:.1f})" if tpot else text


def _write_recommendation(args: argparse.Namespace, runs, band: tuple[int, int] | None) -> int:
    from peagle.tune.choose import recommend

    candidates = candidates_from_runs(runs)
    recommendation = recommend(candidates, band)
    lines = ["# Speculation settings measured, and the one to deploy", ""]
    levels = [choice.concurrency for choice in recommendation.levels]
    repeated = max(candidate.runs for candidate in candidates) > 1
    if repeated:
        lines += [
            f"Each setting was measured {max(c.runs for c in candidates)} times, in interleaved rounds: cells are "
            "medians, with the lowest-highest run in brackets.",
            "",
        ]
    lines.append("| setting | " + " | ".join(f"c={c} tok/s (TPOT p50 ms)" for c in levels) + " |")
    lines.append("|---|" + "---|" * len(levels))
    for candidate in candidates:
        lines.append(f"| {candidate.label} | " + " | ".join(_cell(candidate, c) for c in levels) + " |")
    lines += ["", "Best at each level:", ""]
    for choice in recommendation.levels:
        speedup = f", {choice.speedup_vs_off:.2f}x speculation off" if choice.speedup_vs_off else ""
        close = (
            f"; its runs overlap {choice.within_spread_of}'s, so the order of the two may be noise"
            if choice.within_spread_of
            else ""
        )
        lines.append(
            f"- concurrency {choice.concurrency}: {choice.best} ({choice.tokens_per_s:.1f} tok/s{speedup}{close})"
        )
    lines += [
        "",
        f"Recommended: **{recommendation.chosen.label}**"
        + (f" for concurrency {band[0]}-{band[1]}" if band else " over the measured levels")
        + f" (static choice gives up at most {recommendation.worst_shortfall:.0%} against the best at any level).",
        f"Dynamic schedules: {recommendation.dynamic_verdict}.",
        "",
        "Apply it in the deployment file:",
        "",
        "```yaml",
        recommendation.deployment_snippet().rstrip(),
        "```",
        "",
        "Plots and per-run reports: `comparison/`. Measurements on one machine at one time: re-run when the "
        "instance type, the pair or the traffic (prompt lengths, concurrency) change.",
    ]
    (args.out / "recommendation.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (args.out / "deployment-snippet.yaml").write_text(recommendation.deployment_snippet(), encoding="utf-8")
    print("\n".join(lines[lines.index("Best at each level:") :]))
    print(
        f"\nwritten: {args.out / 'recommendation.md'}, {args.out / 'deployment-snippet.yaml'}, {args.out / 'comparison'}"
    )
    return EXIT_OK
