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
from pathlib import Path

from peagle.bench.host_conditions import add_busy_limit_argument, busy_limit_from
from peagle.bench.results import describe_sampling
from peagle.catalog import ProfileName
from peagle.cli_errors import ExitCode
from peagle.cli_options import add_command, added_by, exclusive, option
from peagle.client.cli import MEASURED_PROFILE_DEFAULT, TEMPERATURE_ALLOWED
from peagle.local.served import LocalServerFailed, serve_local
from peagle.local.tiny_pair import PAIRS
from peagle.slo import add_slo_arguments

DEFAULT_BUCKETS = "short,long"
DESCRIPTION = (
    "Serve each candidate (the local pair: K values from --k and any --schedule, one at a time), "
    "measure it with `peagle bench` at every --concurrency level and --temperatures value (default: the "
    "--profile's temperature, what users get), and recommend the setting, decided at the profile's temperature, "
    "with the evidence: "
    "recommendation.md (table, per-level winners, the choice and why), deployment-snippet.yaml, comparison/ "
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
        default=1,
        help="rounds over all candidates, interleaved; the choice uses each level's median, the table shows the "
        "spread (default 1)",
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
    option("--concurrency", default="1,4,8", help="closed-loop concurrency levels (default 1,4,8)"),
    option(
        "--request-rate",
        metavar="RATES",
        help="open loop instead: request rates (requests/s) your traffic arrives at, e.g. 0.5,1,2; the candidates "
        "are then ranked by goodput, the requests/s answered within the SLO, with tokens/s beside it",
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
        help="band LO-HI of the levels the recommendation is for: concurrency, or with --request-rate the request "
        "rates your traffic spans, e.g. 0.5-2 (default: all levels)",
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

    return run_reporting_errors(
        _tune,
        args,
        [((TuneFailed, LocalServerFailed), ExitCode.FAILED), ((PeagleError, ValueError), ExitCode.BAD_INPUT)],
    )


class TuneFailed(RuntimeError):
    """A candidate could not be served or measured."""


def _tune(args: argparse.Namespace) -> int:
    from peagle.tune.choose import decision_temperature

    band = _band(args.band)
    if args.inference_component and not args.endpoint:
        raise ValueError("--inference-component names an inference component of an --endpoint; give --endpoint")
    if args.repeat < 1:
        raise ValueError(f"--repeat takes a number of rounds >= 1, got {args.repeat}")
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
            _bench(
                args,
                label=_run_label("deployed", temperature, temperatures, round_, args.repeat),
                temperature=temperature,
                url=args.url,
                endpoint=args.endpoint,
            )
            for round_ in rounds
            for temperature in temperatures
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
    _compare(args, result_files)
    return _write_recommendation(args, _runs(result_files), band, deployed, prompts_text)


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
        return describe_synthetic_prompts(buckets, 0)  # bench's default --seed
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


def _bench(
    args: argparse.Namespace, *, label: str, temperature: float, url: str | None = None, endpoint: str | None = None
) -> Path:
    from peagle.cli import main

    out = args.out / _folder_name(label)
    load = ["--request-rate", args.request_rate] if args.request_rate else ["--concurrency", args.concurrency]
    load += ["--slo", args.slo] if args.slo else []
    load += ["--attainment", str(args.attainment)] if args.attainment is not None else []
    argv = ["bench", "--label", label, *load, "--requests", str(args.requests), "--busy-limit", str(args.busy_limit)]
    prompts = ["--buckets", "none", "--prompts-file", str(args.prompts_file)] if args.prompts_file else []
    prompts = prompts or ["--buckets", args.buckets or DEFAULT_BUCKETS]
    argv += ["--max-tokens", str(args.max_tokens), *prompts, "--out", str(out)]
    argv += ["--profile", args.profile or MEASURED_PROFILE_DEFAULT, "--temperature", str(temperature)]
    argv += ["--top-p", str(args.top_p)] if args.top_p is not None else []
    argv += ["--url", url] if url else ["--endpoint", endpoint] + (["--region", args.region] if args.region else [])
    if endpoint and args.inference_component:
        argv += ["--inference-component", args.inference_component]
    if main(argv) not in (0, 3):  # 3: a regression against a baseline, which tune does not pass
        raise TuneFailed(f"`peagle {' '.join(argv)}` failed; its message is above")
    return out / "results.json"


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
            _bench(
                args,
                label=_run_label(setting, temperature, temperatures, round_, args.repeat),
                temperature=temperature,
                url=url,
            )
            for temperature in temperatures
        ]


def _compare(args: argparse.Namespace, result_files: list[Path]) -> None:
    from peagle.cli import main

    argv = ["bench", "--out", str(args.out / "comparison")]
    for path in result_files:
        argv += ["--from-results", str(path)]
    main(argv)


def noisy_levels(runs) -> list[str]:
    """ "<run> <load>: why" for every level measured on a busy machine."""
    return [
        f"{run.label} {level.load_label}: {'; '.join(level.host.busy)}"
        for run in runs
        for level in run.levels
        if level.noisy
    ]


def candidates_by_sampling(runs) -> dict:
    """The runs' candidates per sampling: ``{Sampling.key (None: not recorded): (Sampling, [Candidate])}``,
    in the order first measured."""
    groups: dict = {}
    for run in runs:
        groups.setdefault(run.sampling.key if run.sampling else None, []).append(run)
    return {key: (group[0].sampling, candidates_from_runs(group)) for key, group in groups.items()}


def candidates_from_runs(runs) -> list:
    """One Candidate per setting, its K from the run label ("off", "K=4", "schedule ...", each with an
    optional temperature " T=0.7" and round suffix " #2"). Repeated runs of a setting are summarised per
    level by their median (tokens/s and TPOT p50) and their range."""
    import re
    from statistics import median

    from peagle.tune.choose import Candidate

    by_label: dict[str, list] = {}
    for run in runs:
        by_label.setdefault(re.sub(r"( T=[0-9.]+)?( #\d+)?$", "", run.label), []).append(run)
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
        tokens: dict[float, list[float]] = {}
        tpots: dict[float, list[float]] = {}
        goodput: dict[float, list[float]] = {}
        for run in group:
            for level in run.levels:
                if level.noisy:  # measured on a busy machine: never chosen from (noisy_levels lists it)
                    continue
                # A level is its concurrency, or (open loop) its offered request rate.
                at = level.open_loop.offered_request_rate if level.open_loop else level.concurrency
                tokens.setdefault(at, []).append(level.output_tokens_per_s)
                if level.tpot_s:
                    tpots.setdefault(at, []).append(level.tpot_s.p50)
                if level.open_loop and level.slo:
                    goodput.setdefault(at, []).append(level.slo.goodput_requests_per_s)
        candidates.append(
            Candidate(
                label=label,
                speculative_tokens=k,
                schedule=schedule,
                tokens_per_s={c: median(values) for c, values in tokens.items()},
                tpot_p50_s={c: median(tpots[c]) if c in tpots else None for c in tokens},
                tokens_per_s_range={c: (min(v), max(v)) for c, v in tokens.items()} if len(group) > 1 else {},
                runs=len(group),
                goodput_rps={rate: median(values) for rate, values in goodput.items()},
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


def _write_recommendation(
    args: argparse.Namespace, runs, band: tuple[float, float] | None, deployed, prompts_text: str = ""
) -> int:
    """recommendation.md (a table and a decision per sampling, the deployed one first) and the snippet,
    decided at the deployed temperature (choose.decision_temperature)."""
    from peagle.tune.choose import GOODPUT, decision_temperature, greedy_versus_sampled, recommend, slo_verdict

    noisy = noisy_levels(runs)
    groups = candidates_by_sampling(runs)
    if noisy and not any(candidate.tokens_per_s for _, candidates in groups.values() for candidate in candidates):
        raise TuneFailed(
            "machine busy: every level was measured on a busy machine, so nothing is chosen from them ("
            + "; ".join(noisy[:3])
            + "); stop the other work (a second engine, a test suite) and run again"
        )
    temperature, why = decision_temperature({key[0] if key else None for key in groups}, deployed.temperature)
    decided_key = _decided_key(groups, temperature, deployed.top_p)
    # Open-loop runs judged against an SLO are ranked by goodput (what users get), tokens/s beside it.
    slo_text = _slo_text(runs)
    by_goodput = slo_text is not None and all(c.goodput_rps for _, cs in groups.values() for c in cs)
    recommendations = {
        key: recommend(candidates, band, objective=GOODPUT if by_goodput else "tokens_per_s")
        for key, (_, candidates) in groups.items()
    }
    lines = [
        "# Speculation settings measured, and the one to deploy",
        "",
        f"Deployed sampling: {deployed.describe()}. The recommendation is made at {why}: acceptance, and so the "
        "best K, depends on the temperature, and greedy decoding overstates it on a real drafter.",
        "",
    ]
    if prompts_text:
        lines += [f"Prompts: {prompts_text}. Acceptance, and so the best K, depends on the prompts too.", ""]
    if by_goodput:
        lines += [
            f"The candidates are ranked by goodput: requests/s answered within the SLO ({slo_text}), measured with "
            "requests arriving at each rate (open loop). Output tokens/s is shown beside it.",
            "",
        ]
    for key in sorted(groups, key=lambda key: key != decided_key):  # the decided sampling first
        sampling, candidates = groups[key]
        lines += _sampling_section(
            sampling, candidates, recommendations[key], band, decided=key == decided_key, by_goodput=by_goodput
        )
        if by_goodput and slo_text is not None:
            lines += [slo_verdict(recommendations[key], recommend(candidates, band), slo_text), ""]
    # Greedy against the sampled temperatures, at the decided top_p (recorded samplings only).
    same_top_p = [key for key in groups if key and decided_key and key[1] == decided_key[1]]
    comparison = greedy_versus_sampled({key[0]: recommendations[key].chosen.label for key in same_top_p})
    if comparison:
        lines += [comparison, ""]
    if noisy:
        lines += [
            f"**{len(noisy)} level(s) measured on a busy machine were left out**: the choice is made without "
            "them, so a level where any candidate was noisy decided nothing (each run's report.md, 'Machine during "
            "each level', says what the machine did); measure them again on a quiet machine:",
            "",
            *[f"- {line}" for line in noisy],
            "",
        ]
    decided = recommendations[decided_key]
    lines += _recommended_lines(decided, band, why, by_goodput)
    (args.out / "recommendation.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (args.out / "deployment-snippet.yaml").write_text(decided.deployment_snippet(), encoding="utf-8")
    print("\n".join(lines[2:]))
    print(
        f"\nwritten: {args.out / 'recommendation.md'}, {args.out / 'deployment-snippet.yaml'}, {args.out / 'comparison'}"
    )
    return ExitCode.OK


def _band_text(band: tuple[float, float], by_goodput: bool) -> str:
    return f"request rates {band[0]:g}-{band[1]:g} req/s" if by_goodput else f"concurrency {band[0]:g}-{band[1]:g}"


def _recommended_lines(decided, band: tuple[float, float] | None, why: str, by_goodput: bool = False) -> list[str]:
    """The choice at the decided sampling, why, and the deployment-file lines that apply it."""
    return [
        f"Recommended: **{decided.chosen.label}**"
        + (f" for {_band_text(band, by_goodput)}" if band else " over the measured levels")
        + f", at {why} (static choice gives up at most {decided.worst_shortfall:.0%} against the best at any level).",
        f"Dynamic schedules: {decided.dynamic_verdict}.",
        "",
        "Apply it in the deployment file:",
        "",
        "```yaml",
        decided.deployment_snippet().rstrip(),
        "```",
        "",
        "Plots and per-run reports: `comparison/`. Measurements on one machine at one time: re-run when the "
        "instance type, the pair, the profile or the traffic (prompt lengths, concurrency) change.",
    ]


def _decided_key(groups: dict, temperature: float | None, top_p: float | None):
    """The sampling group measured at ``temperature``, the one at the deployed top_p when several are."""
    matching = [key for key in groups if (key[0] if key else None) == temperature]
    return next((key for key in matching if key and key[1] == top_p), matching[0])


def _slo_text(runs) -> str | None:
    """The SLO the runs' levels were judged against, as `peagle plan` prints it (None: none recorded)."""
    from peagle.planning.planner import describe_slo

    recorded = next((level.slo for run in runs for level in run.levels if level.open_loop and level.slo), None)
    return describe_slo(recorded.as_slo()) if recorded else None


def _goodput_cell(candidate, rate: float) -> str:
    return f"{candidate.goodput_rps[rate]:.2f} ({candidate.tokens_per_s[rate]:.1f} tok/s)"


def _sampling_section(
    sampling, candidates, recommendation, band: tuple[float, float] | None, *, decided: bool, by_goodput: bool = False
) -> list[str]:
    """One sampling's table, per-level winners and band choice."""
    levels = [choice.concurrency for choice in recommendation.levels]
    if by_goodput:
        return _goodput_section(sampling, candidates, recommendation, band, levels, decided=decided)
    lines = _section_header(sampling, decided=decided)
    runs = max(candidate.runs for candidate in candidates)
    if runs > 1:
        lines += [
            f"Each setting was measured {runs} times, in interleaved rounds: cells are medians, with the "
            "lowest-highest run in brackets.",
            "",
        ]
    lines.append("| setting | " + " | ".join(f"c={c} tok/s (TPOT p50 ms)" for c in levels) + " |")
    lines += _table_rows(candidates, levels, _cell)
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
    where = _band_text(band, False) if band else "the measured levels"
    lines += [
        "",
        f"Best for {where}: {recommendation.chosen.label} (static choice gives up at most "
        f"{recommendation.worst_shortfall:.0%} against the best at any level). Dynamic schedules: "
        f"{recommendation.dynamic_verdict}.",
        "",
    ]
    return lines


def _section_header(sampling, *, decided: bool) -> list[str]:
    lines = ["## Sampling: " + (describe_sampling(sampling) if sampling else "not recorded by these runs"), ""]
    return lines + (["The recommendation below is made at this sampling.", ""] if decided else [])


def _table_rows(candidates, levels, cell) -> list[str]:
    """The separator row and one row per candidate, ``cell(candidate, level)`` in each column."""
    rows = ["|---|" + "---|" * len(levels)]
    return rows + [f"| {c.label} | " + " | ".join(cell(c, level) for level in levels) + " |" for c in candidates]


def _goodput_section(sampling, candidates, recommendation, band, levels, *, decided: bool) -> list[str]:
    """One sampling's table of goodput (tokens/s) per request rate, per-rate winners and the band choice."""
    lines = _section_header(sampling, decided=decided)
    lines.append("| setting | " + " | ".join(f"{rate:g} req/s: goodput req/s (tok/s)" for rate in levels) + " |")
    lines += _table_rows(candidates, levels, _goodput_cell)
    lines += ["", "Most goodput at each request rate:", ""]
    for choice in recommendation.levels:
        versus = f", {choice.speedup_vs_off:.2f}x speculation off" if choice.speedup_vs_off else ""
        lines.append(
            f"- {choice.concurrency:g} req/s: {choice.best} ({choice.tokens_per_s:.2f} req/s within the SLO{versus})"
        )
    where = _band_text(band, True) if band else "the measured request rates"
    lines += [
        "",
        f"Best for {where}: {recommendation.chosen.label} (gives up at most {recommendation.worst_shortfall:.0%} of "
        f"the best goodput at any rate). Dynamic schedules: {recommendation.dynamic_verdict}.",
        "",
    ]
    return lines
