"""`peagle tune`: choose K by measurement.

For the local pair it serves each candidate setting in turn (`peagle local`, one at a time:
candidates must not compete for the same cores), measures it with `peagle bench` at every
concurrency level and request rate, over several prompt-and-arrival seeds (one round per seed,
the candidates interleaved), proposes a K-by-batch-size schedule from the closed-loop levels
(peagle/tune/proposal.py), serves that schedule on the same seeds, and recommends a setting with
how sure each verdict is (peagle/tune/choose.py, peagle/tune/report.py).
Against a running server or a deployed endpoint (--url / --endpoint) it measures what that
setting delivers without redeploying. --from-results re-decides from stored bench runs.

Writes to --out: one bench folder per candidate, ``comparison/`` (bench's side-by-side
report and plots), ``recommendation.md`` (the tables, the choice and why),
``deployment-snippet.yaml`` and ``library-snippet.py`` (the same setting for the CDK library).
Exit 0 with a recommendation, 1 when a candidate could not be served or measured, 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from peagle.bench.host_conditions import add_busy_limit_argument, busy_limit_from
from peagle.catalog import ProfileName
from peagle.cli_errors import ExitCode
from peagle.cli_options import add_command, added_by, exclusive, option
from peagle.client.cli import MEASURED_PROFILE_DEFAULT, TEMPERATURE_ALLOWED
from peagle.local.served import LocalServerFailed, serve_local
from peagle.local.tiny_pair import PAIRS
from peagle.slo import add_slo_arguments

DEFAULT_BUCKETS = "short,long"
DEFAULT_CONCURRENCY = "1,4,8"
DESCRIPTION = (
    "Serve each candidate (the local pair: K values from --k and any --schedule, one at a time), "
    "measure it with `peagle bench` at every --concurrency level, every --request-rate and --temperatures value "
    "(default: the --profile's temperature, what users get), over --repeat prompt-and-arrival seeds, propose a "
    "K-by-batch-size schedule from the concurrency levels and measure it too, and recommend the setting, decided "
    "at the profile's temperature, with each figure's 95% interval: "
    "recommendation.md (tables, per-level winners or 'cannot tell', the proposal, the choice and why), "
    "deployment-snippet.yaml, library-snippet.py, comparison/ "
    "(bench's side-by-side report and plots). --url/--endpoint measure a running server or a deployed endpoint "
    "as it is; --from-results decides from stored runs. Exit 0 ok, 1 a candidate failed, 2 bad arguments."
)


_OPTIONS = (
    exclusive(
        option(
            "--pair",
            default=None,
            choices=sorted(PAIRS),
            help="local pair to serve for each candidate (`peagle local --pair`; default tiny)",
        ),
        option("--url", help="measure the server already running here (its current setting only)"),
        option("--endpoint", help="measure this SageMaker endpoint as deployed (its current setting only)"),
        option(
            "--from-results", action="append", type=Path, metavar="RESULTS_JSON", help="decide from stored bench runs"
        ),
    ),
    option("--k", default="0,1,2,4", help="static K candidates for the local pair (default 0,1,2,4; 0 = off)"),
    option(
        "--schedule",
        action="append",
        default=[],
        metavar="LO-HI:K,...",
        help="also measure this dynamic schedule (repeatable), e.g. 1-2:4,3-16:0",
    ),
    option(
        "--repeat",
        type=int,
        default=3,
        help="rounds over all candidates, interleaved, round r on prompt-and-arrival seed --seed + r - 1; figures are "
        "means with their 95%% interval over the rounds (default 3; 1 gives no interval, so no verdict beyond noise)",
    ),
    option(
        "--seed",
        type=int,
        default=0,
        help="seed of the first round (bench --seed: the synthetic prompts and the open-loop arrivals; with "
        "--prompts-file the arrivals only) (default 0)",
    ),
    option(
        "--no-measure-proposal",
        action="store_true",
        help="do not serve the proposed schedule after the candidates (quicker; it is then not recommended)",
    ),
    option(
        "--profile",
        choices=[profile.value for profile in ProfileName],
        help=f"catalog workload profile the requests are sampled as, whose temperature the recommendation is made at "
        f"(default {MEASURED_PROFILE_DEFAULT}, the profile of deployments/default.yaml)",
    ),
    option(
        "--temperatures",
        "--temperature",
        dest="temperatures",
        metavar="T,...",
        help="measure every candidate at each of these temperatures, comma-separated, each "
        f"{TEMPERATURE_ALLOWED}; e.g. 0,0.7 sets greedy beside the deployed sampling (default: the profile's "
        "temperature). The recommendation is made at the profile's temperature (not measured: at the nearest "
        "sampled one measured), never at greedy unless the profile is greedy",
    ),
    option("--top-p", type=float, help="override the profile's top_p"),
    option(
        "--concurrency",
        help="closed-loop concurrency levels; the proposed schedule's bands are cut at them (default 1,4,8, "
        "unless only --request-rate is given)",
    ),
    option(
        "--request-rate",
        metavar="RATES",
        help="also (or, without --concurrency, only) the open loop: request rates (requests/s) your traffic arrives "
        "at, e.g. 0.5,1; goodput, the requests/s answered within the SLO, with tokens/s beside it. With the "
        "concurrency levels too, every candidate is measured both ways (two bench runs per round); alone, the "
        "candidates are ranked by goodput",
    ),
    added_by(
        add_slo_arguments, default="the profile's SLO", what="; with --request-rate the candidates are ranked by it"
    ),
    added_by(add_busy_limit_argument),  # passed to each bench; noisy levels are never chosen from
    option("--requests", type=int, default=16, help="requests per level (default 16)"),
    option("--max-tokens", type=int, default=128, help="output tokens per request (default 128)"),
    option(
        "--buckets",
        help=f"synthetic prompt length buckets, as for bench (default {DEFAULT_BUCKETS}); not with --prompts-file",
    ),
    option(
        "--prompts-file",
        type=Path,
        metavar="JSONL",
        help="measure with these prompts instead of synthetic ones, e.g. production's from `peagle prompts` "
        "(bench's format); lines must not set temperature/top_p, which --temperatures decides (`peagle prompts "
        "--drop-field temperature --drop-field top_p`); recommendation.md names the file and a sha256 of it",
    ),
    option(
        "--band",
        help="band LO-HI of the levels the recommendation is for: concurrency, or with --request-rate alone the "
        "request rates your traffic spans, e.g. 0.5-2 (default: all levels)",
    ),
    option("--region", help="with --endpoint: its AWS region"),
    option(
        "--inference-component",
        metavar="NAME",
        help="with --endpoint: measure this inference component (passed to `peagle bench`, whose warm-up waits "
        "for a copy if it is scaled to zero)",
    ),
    option("--out", type=Path, required=True, help="output folder"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers,
        "tune",
        run_tune,
        _OPTIONS,
        help="measure K = 0 and other speculation settings, recommend one with the evidence",
        description=DESCRIPTION,
    )


def run_tune(args: argparse.Namespace) -> int:
    from peagle.cli_errors import run_reporting_errors
    from peagle.settings.errors import PeagleError
    from peagle.tune.report import TuneFailed

    return run_reporting_errors(
        _tune,
        args,
        [((TuneFailed, LocalServerFailed), ExitCode.FAILED), ((PeagleError, ValueError), ExitCode.BAD_INPUT)],
    )


def _tune(args: argparse.Namespace) -> int:
    from peagle.tune.choose import decision_temperature
    from peagle.tune.report import write_recommendation

    band = _band(args.band)
    if args.inference_component and not args.endpoint:
        raise ValueError("--inference-component names an inference component of an --endpoint; give --endpoint")
    if args.repeat < 1:
        raise ValueError(f"--repeat takes a number of rounds >= 1 (one per seed), got {args.repeat}")
    busy_limit_from(args)  # ValueError: exit 2, before anything is served
    deployed = _deployed_sampling(args)
    deployed_temperature = deployed.temperature
    assert deployed_temperature is not None  # a catalog profile's sampling always sets its temperature
    temperatures = _temperatures(args, deployed_temperature)
    if temperatures:
        decision_temperature(temperatures, deployed_temperature)  # greedy alone is refused before serving
    local = not (args.from_results or args.url or args.endpoint)
    candidates = _local_candidates(args) if local else []  # checked before anything is written or started
    if args.from_results:  # stored runs: refused before anything is written when all of them are greedy
        decision_temperature({_temperature_of(run) for run in _runs(args.from_results)}, deployed_temperature)
    prompts_text = _prompts_text(args)  # checked before anything is served
    rounds = range(1, args.repeat + 1)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.from_results:
        result_files = list(args.from_results)
    elif args.url or args.endpoint:
        result_files = [
            path
            for round_ in rounds
            for temperature in temperatures
            for path in _bench(
                args,
                label=_run_label("deployed", temperature, temperatures, round_, args.repeat),
                temperature=temperature,
                round_=round_,
                url=args.url,
                endpoint=args.endpoint,
            )
        ]
    else:
        # Rounds interleave the candidates (off, K=2, K=4, off, K=2, ...) so that a slow spell of the
        # machine lands on several candidates rather than on every run of one; each candidate's server
        # is measured at every temperature in turn, so the temperatures interleave the same way.
        result_files = [
            path
            for round_ in rounds
            for label, options in candidates
            for path in _bench_local_candidate(args, label, round_, options, temperatures)
        ]
        if not args.no_measure_proposal:
            result_files += _measure_proposal(args, result_files, deployed, temperatures)
    _compare(args, result_files)
    write_recommendation(args.out, _runs(result_files), band, deployed, prompts_text, _seeds_text(args))
    return ExitCode.OK


def _measure_proposal(args: argparse.Namespace, result_files: list[Path], deployed, temperatures) -> list[Path]:
    """Serve the schedule proposed from the candidates' runs, on the same seeds, levels and rates (a schedule has
    costs of its own, so it is measured, never inferred from the static K values); nothing when the proposal is a
    static K or a schedule already measured."""
    import sys

    from peagle.tune.report import proposal_to_measure

    try:
        proposal = proposal_to_measure(_runs(result_files), deployed)
    except ValueError:  # nothing to propose from (no shared level): the recommendation says why
        return []
    if proposal is None:
        return []
    print(f"tune: serving the proposed schedule {proposal.text} on the same seeds", file=sys.stderr)
    options = ["--speculative-schedule", proposal.text]
    return [
        path
        for round_ in range(1, args.repeat + 1)
        for path in _bench_local_candidate(args, proposal.label, round_, options, temperatures)
    ]


def _seeds_text(args: argparse.Namespace) -> str:
    """Which seeds the rounds were measured on, and what a seed moves."""
    if args.from_results:
        return ""
    seeds = f"seed {args.seed}" if args.repeat == 1 else f"seeds {args.seed}-{args.seed + args.repeat - 1}"
    moves = (
        "the prompts are the --prompts-file's in every round, so the seed moves the open-loop arrivals only"
        if args.prompts_file
        else "each seed draws the synthetic prompt set and the open-loop arrivals"
    )
    return f"Rounds: {args.repeat}, on {seeds} (`peagle bench --seed`, round r on --seed + r - 1): {moves}."


def _prompts_text(args: argparse.Namespace) -> str:
    """Which prompts the runs measured, in words; refuses a prompts file that would override the
    temperatures tune measures at, and notes synthetic prompts on stderr."""
    import sys

    from peagle.bench.prompts import (
        SYNTHETIC_PROMPTS_NOTE,
        describe_prompts_file,
        describe_synthetic_prompts,
        load_prompt_file,
        sampling_overrides,
    )
    from peagle.bench.results import load_results

    if args.from_results:
        if args.prompts_file or args.buckets:
            raise ValueError("--prompts-file/--buckets choose what to measure; --from-results runs keep their prompts")
        recorded = {str(load_results(path).settings.get("prompts", "not recorded")) for path in args.from_results}
        return "; ".join(sorted(recorded))
    if args.prompts_file is None:
        buckets = [bucket.strip() for bucket in (args.buckets or DEFAULT_BUCKETS).split(",") if bucket.strip()]
        print(f"tune: note: {SYNTHETIC_PROMPTS_NOTE}", file=sys.stderr)
        return describe_synthetic_prompts(buckets, args.seed)  # the first round's; _seeds_text names them all
    if args.buckets is not None:
        raise ValueError("--buckets picks synthetic prompts and --prompts-file replaces them: give one of them")
    try:
        prompts = load_prompt_file(args.prompts_file)
    except OSError as error:
        raise ValueError(f"--prompts-file: {error}") from None
    overrides = {name: count for name, count in sampling_overrides(prompts).items() if name in ("temperature", "top_p")}
    if overrides:
        raise ValueError(
            f"--prompts-file {args.prompts_file}: "
            + ", ".join(f"{count} of {len(prompts)} prompts set {name}" for name, count in overrides.items())
            + ", which would override the temperatures tune measures at (--temperatures, the profile's); write the "
            "file without them: `peagle prompts CAPTURE --drop-field temperature --drop-field top_p --out FILE`"
        )
    return describe_prompts_file(args.prompts_file, prompts)


def _runs(result_files: list[Path]) -> list:
    from peagle.bench.results import load_results

    return [run for path in result_files for run in load_results(path).runs]


def _run_label(setting: str, temperature: float, temperatures: list[float], round_: int, rounds: int) -> str:
    """ "K=4", with " T=0.7" when several temperatures are measured and " #2" when several rounds are."""
    label = setting if len(temperatures) == 1 else f"{setting} T={temperature:g}"
    return label if rounds == 1 else f"{label} #{round_}"


def _deployed_sampling(args: argparse.Namespace):
    """The profile's sampling (--profile, default chatbot), with --top-p in place of its top_p."""
    from peagle.bench.results import Sampling
    from peagle.client.cli import sampling_error

    refused = sampling_error(None, args.top_p)
    if refused:
        raise ValueError(refused)
    return Sampling.of_profile(args.profile or MEASURED_PROFILE_DEFAULT, top_p=args.top_p)


def _temperatures(args: argparse.Namespace, deployed: float) -> list[float]:
    """--temperatures, checked (each 0-2, duplicates dropped); default the profile's; none for --from-results."""
    if args.from_results:
        if args.temperatures is not None:
            raise ValueError(
                "--temperatures chooses what to measure; --from-results runs keep the sampling they were measured at"
            )
        return []
    if args.temperatures is None:
        return [deployed]
    temperatures: list[float] = []
    for part in args.temperatures.split(","):
        try:
            temperature = float(part)
        except ValueError:
            temperature = None
        if temperature is None or not 0 <= temperature <= 2:
            raise ValueError(
                f"--temperatures takes comma-separated temperatures, each {TEMPERATURE_ALLOWED}; "
                f"got {part.strip()!r} in {args.temperatures!r}"
            )
        if temperature not in temperatures:
            temperatures.append(temperature)
    return temperatures


def _temperature_of(run) -> float | None:
    return run.sampling.temperature if run.sampling else None


def _band(text: str | None) -> tuple[float, float] | None:
    if not text:
        return None
    low, _, high = text.partition("-")
    try:
        band = (float(low), float(high))
    except ValueError:
        band = None
    if band is None or not 0 < band[0] <= band[1]:
        raise ValueError(f"--band takes LO-HI levels (concurrency, or request rates), e.g. 1-8 or 0.5-2; got {text!r}")
    return band


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
    from peagle.local.speculation_checks import speculation_problems

    problems = speculation_problems(ks, schedules, k_flag="--k", schedule_flag="--schedule")
    if problems:
        raise ValueError("nothing was started:\n  - " + "\n  - ".join(problems))


def _folder_name(label: str) -> str:
    """ "K=4 #2" -> "K4-round2", "schedule 1-2:4,3-16:0" -> "schedule_1-24_3-160"."""
    return label.replace(" #", "-round").replace(" ", "_").replace("=", "").replace(":", "").replace(",", "_")


def _loads(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(folder suffix, bench arguments) per loop measured: bench runs one loop at a time, so a candidate measured
    at concurrency levels and request rates is two bench runs."""
    concurrency = args.concurrency or (None if args.request_rate else DEFAULT_CONCURRENCY)
    loads = [("", ["--concurrency", concurrency])] if concurrency else []
    return loads + ([("-open", ["--request-rate", args.request_rate])] if args.request_rate else [])


def _bench(
    args: argparse.Namespace,
    *,
    label: str,
    temperature: float,
    round_: int,
    url: str | None = None,
    endpoint: str | None = None,
) -> list[Path]:
    """One bench run per loop (closed, open) of one setting in one round, on the round's seed."""
    from peagle.cli import main
    from peagle.tune.report import TuneFailed

    paths = []
    for suffix, load in _loads(args):
        out = args.out / f"{_folder_name(label)}{suffix}"
        load = [*load, "--seed", str(args.seed + round_ - 1)]
        load += ["--slo", args.slo] if args.slo else []
        load += ["--attainment", str(args.attainment)] if args.attainment is not None else []
        argv = ["bench", "--label", label, *load, "--requests", str(args.requests)]
        argv += ["--busy-limit", str(args.busy_limit)]
        prompts = ["--buckets", "none", "--prompts-file", str(args.prompts_file)] if args.prompts_file else []
        prompts = prompts or ["--buckets", args.buckets or DEFAULT_BUCKETS]
        argv += ["--max-tokens", str(args.max_tokens), *prompts, "--out", str(out)]
        argv += ["--profile", args.profile or MEASURED_PROFILE_DEFAULT, "--temperature", str(temperature)]
        argv += ["--top-p", str(args.top_p)] if args.top_p is not None else []
        region = ["--region", args.region] if args.region else []
        argv += ["--url", url] if url else ["--endpoint", str(endpoint), *region]
        if endpoint and args.inference_component:
            argv += ["--inference-component", args.inference_component]
        if main(argv) not in (0, 3):  # 3: a regression against a baseline, which tune does not pass
            raise TuneFailed(f"`peagle {' '.join(argv)}` failed; its message is above")
        paths.append(out / "results.json")
    return paths


def _bench_local_candidate(
    args: argparse.Namespace, setting: str, round_: int, options: list[str], temperatures: list[float]
) -> list[Path]:
    """Serve one candidate and measure it at every temperature; one results file per temperature."""
    from peagle.client.http_transport import HttpTransport  # noqa: F401 (httpx present: fail early)

    served = setting if args.repeat == 1 else f"{setting} #{round_}"
    options = [*options, *(["--pair", args.pair] if args.pair else [])]
    log_path = args.out / f"server-{_folder_name(served)}.log"
    with serve_local(options, log_path=log_path, label=served, parent="tune") as url:
        return [
            path
            for temperature in temperatures
            for path in _bench(
                args,
                label=_run_label(setting, temperature, temperatures, round_, args.repeat),
                temperature=temperature,
                round_=round_,
                url=url,
            )
        ]


def _compare(args: argparse.Namespace, result_files: list[Path]) -> None:
    from peagle.cli import main

    argv = ["bench", "--out", str(args.out / "comparison")]
    for path in result_files:
        argv += ["--from-results", str(path)]
    main(argv)
