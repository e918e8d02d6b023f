"""`peagle bench`: closed-loop concurrency levels or open-loop request rates against URLs and/or endpoints,
written to a report folder.

Exit codes: 0 ok; 1 a target failed its warm-up or a level's error rate exceeded
--max-error-rate; 2 bad arguments; 3 ran fine but regressed against --compare-to.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

from peagle.bench.host_conditions import add_busy_limit_argument, busy_limit_from
from peagle.bench.prompts import BUCKET_WORDS, DEFAULT_BUCKETS
from peagle.cli_errors import ExitCode, report_error
from peagle.cli_options import add_command, added_by, option
from peagle.client.cli import (
    MEASURED_PROFILE_DEFAULT,
    add_cold_start_wait_argument,
    add_inference_component_argument,
    add_price_arguments,
    add_sampling_arguments,
    add_target_variant_argument,
    cold_start_wait_error,
    instance_price,
    sampling_error,
)
from peagle.client.cold_start import COLD_START_DEFAULT_HELP
from peagle.slo import add_slo_arguments

DEFAULT_MAX_TOKENS = 128
DEFAULT_CONCURRENCY = "1,4"


_OPTIONS = (
    option("--url", action="append", default=[], help="a server speaking the container contract (repeatable)"),
    option("--endpoint", action="append", default=[], help="a SageMaker endpoint name (repeatable)"),
    option("--region", help="AWS region of the endpoints"),
    option(
        "--label",
        action="append",
        default=[],
        help="a name per target: the --url targets in order, then the --endpoint ones (default: the target)",
    ),
    added_by(
        add_target_variant_argument,
        repeatable=True,
        help_text="production variant for the --endpoint targets (InvokeEndpoint TargetVariant): once for all of "
        "them, or once per --endpoint in order, e.g. --endpoint E --endpoint E --target-variant Primary "
        "--target-variant Baseline to measure each A/B variant on its own; not for --url targets",
    ),
    added_by(
        add_inference_component_argument,
        repeatable=True,
        help_text="inference component for the --endpoint targets (InvokeEndpoint InferenceComponentName), for "
        "endpoints in inference-component mode: once for all of them, or once per --endpoint in order; may be "
        "combined with --target-variant; not for --url targets",
    ),
    added_by(
        add_cold_start_wait_argument,
        help_text="with --inference-component: when the component has no copy (scaled to zero), the warm-up waits "
        "this long for SageMaker to start one, and measuring begins after it; measured requests never wait (one "
        "that finds no copy counts as an error). Default: " + COLD_START_DEFAULT_HELP + "; 0: fail the warm-up at once",
    ),
    option(
        "--from-results",
        action="append",
        default=[],
        type=Path,
        metavar="RESULTS_JSON",
        help="add the runs of a stored results.json to the report (repeatable)",
    ),
    option("--out", type=Path, required=True, help="report folder (created)"),
    option(
        "--concurrency",
        help=f"closed loop: comma-separated levels, each that many requests in flight (default {DEFAULT_CONCURRENCY} "
        "unless --request-rate is given)",
    ),
    option(
        "--request-rate",
        metavar="RATES",
        help="open loop, in place of --concurrency: comma-separated request rates (requests/s, 'inf' for all at "
        "once); each level's requests are sent at their scheduled times whatever the server does, as vllm bench "
        "serve --request-rate sends them",
    ),
    option(
        "--burstiness",
        type=float,
        help="with --request-rate: gamma shape of the inter-arrival times (default 1, a Poisson process; above 1 "
        "more even, below 1 burstier), vllm bench serve's --burstiness",
    ),
    option(
        "--max-concurrency",
        type=int,
        help="with --request-rate: at most this many requests in flight; one due while all are busy waits for a "
        "slot (recorded), as with vllm bench serve's --max-concurrency (default: no cap)",
    ),
    added_by(
        add_slo_arguments,
        default="the --profile's SLO",
        what="; each level reports the share of requests meeting each bound and all, and goodput (requests/s "
        "meeting all)",
    ),
    option("--requests", type=int, default=12, help="requests per level (default 12)"),
    option("--warmup", type=int, default=1, help="unmeasured requests per target first (default 1)"),
    option(
        "--buckets",
        default=",".join(DEFAULT_BUCKETS),
        help=f"synthetic prompt length buckets from {', '.join(BUCKET_WORDS)}, or 'none' (default {','.join(DEFAULT_BUCKETS)})",
    ),
    option(
        "--prompts-file",
        type=Path,
        help="JSONL of extra prompts ({'prompt': ...} or {'messages': [...]} per line; `peagle prompts` writes one "
        "from the endpoint's Data Capture); results.json names it with a sha256 of its content",
    ),
    option("--seed", type=int, default=0, help="seed of the synthetic prompt set and of the --request-rate arrivals"),
    added_by(
        add_sampling_arguments,
        default_profile=MEASURED_PROFILE_DEFAULT,
        max_tokens_help=f"output tokens per request (default: the profile's max_tokens when --profile is given, "
        f"else {DEFAULT_MAX_TOKENS}, so local runs stay short)",
    ),
    option(
        "--no-ignore-eos",
        dest="ignore_eos",
        action="store_false",
        help="let generations stop at EOS (default: run to max_tokens so runs compare like for like)",
    ),
    added_by(add_price_arguments, costs="cost per 1M output tokens"),
    added_by(add_busy_limit_argument),
    option("--compare-to", type=Path, metavar="BASELINE_JSON", help="a stored results.json to check for regressions"),
    option("--tolerance", type=float, default=0.10, help="relative change counted as a regression (default 0.10)"),
    option(
        "--max-error-rate", type=float, default=0.0, help="exit 1 when a level's error rate is above this (default 0)"
    ),
    option("--max-attempts", type=int, default=5, help="client attempts per request (default 5)"),
    option("--server-note", help="free text recorded with the results, e.g. how the server was started"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers,
        "bench",
        run_bench,
        _OPTIONS,
        help="load-test endpoints or local servers and write a report",
        description="Send the same prompts at each concurrency level to every target (--url / --endpoint, "
        "repeatable, in order, each with an optional --label), then write report.md, results.json and PNG "
        "plots to --out. Runs stored earlier join the report with --from-results (side by side, e.g. "
        "speculation on vs off); --compare-to checks against a stored baseline. "
        "Exit 0 ok, 1 failed requests or target, 2 bad arguments, 3 regression vs --compare-to.",
    )


class BadArguments(ValueError):
    pass


def run_bench(args: argparse.Namespace) -> int:
    from peagle.bench.runner import WarmupFailedError
    from peagle.cli_errors import run_reporting_errors

    return run_reporting_errors(_run, args, [(BadArguments, ExitCode.BAD_INPUT), (WarmupFailedError, ExitCode.FAILED)])


def _run(args: argparse.Namespace) -> int:
    from peagle.bench.report_folder import write_report_folder
    from peagle.bench.results import load_results

    targets = _targets(args)
    stored_runs = []
    for path in args.from_results:
        stored_runs += _load(load_results, path).runs
    if not targets and not stored_runs:
        raise BadArguments("nothing to report: give --url/--endpoint targets and/or --from-results files")
    baseline = _load(load_results, args.compare_to) if args.compare_to else None

    settings = _settings(args) if targets else None
    new_runs = _run_targets(targets, settings, args) if targets else []
    runs = new_runs + stored_runs
    # Stored runs keep where and how they ran: their files' environment and settings.
    environment = _environment(args) if settings is not None else {}
    described = dict(settings.describe) if settings is not None else {}
    for path in args.from_results:
        stored = load_results(path)
        environment[f"environment of {path}"] = _one_line(stored.environment)
        described[f"settings of {path}"] = _one_line(stored.settings)
    results, regressions = write_report_folder(
        runs,
        args.out,
        environment=environment,
        settings=described,
        baseline=baseline,
        baseline_path=args.compare_to,
        tolerance=args.tolerance,
    )
    _print_summary(results, args.out)

    too_many_errors = [
        f"{run.label} at {level.load_phrase}: {level.error_rate:.0%} failed"
        for run in new_runs
        for level in run.levels
        if level.error_rate > args.max_error_rate
    ]
    if too_many_errors:
        return report_error("error rate above --max-error-rate: " + "; ".join(too_many_errors), ExitCode.FAILED)
    if results.not_compared:
        print(
            f"not compared: {len(results.not_compared)} level(s) measured on a busy machine, in this run or "
            f"{args.compare_to} (report.md, 'Compared to')",
            file=sys.stderr,
        )
    if regressions:
        print(
            f"regression: {len(regressions)} metric(s) worse than {args.compare_to} by more than {args.tolerance:.0%}; see report.md",
            file=sys.stderr,
        )
        return ExitCode.REGRESSED
    return ExitCode.OK


def _load(load_results, path: Path):
    try:
        return load_results(path)
    except ValueError as error:
        raise BadArguments(str(error)) from error


def _targets(args: argparse.Namespace):
    from peagle.bench.runner import BenchTarget

    targets = [BenchTarget(label=url, url=url) for url in args.url]
    refused = cold_start_wait_error(args.cold_start_wait)
    if refused:
        raise BadArguments(refused)
    variants = _per_endpoint(args, args.target_variant, "--target-variant", "a production variant", "TargetVariant")
    components = _per_endpoint(
        args, args.inference_component, "--inference-component", "an inference component", "InferenceComponentName"
    )
    targets += [
        BenchTarget(
            label="/".join(part for part in (name, variant, component) if part),
            endpoint=name,
            region=args.region,
            target_variant=variant,
            inference_component=component,
        )
        for name, variant, component in zip(args.endpoint, variants, components, strict=True)
    ]
    if args.label:
        if len(args.label) != len(targets):
            raise BadArguments(
                f"{len(args.label)} --label for {len(targets)} targets: give one per --url/--endpoint, in order"
            )
        targets = [replace(target, label=label) for label, target in zip(args.label, targets, strict=False)]
    labels = [target.label for target in targets]
    if len(set(labels)) != len(labels):
        raise BadArguments(f"labels must be unique, got {labels}")
    return targets


def _per_endpoint(args: argparse.Namespace, values: list[str], flag: str, what: str, api: str) -> list[str | None]:
    """One value (or None) per --endpoint: ``values`` given once apply to all, else one per --endpoint in order."""
    endpoints = args.endpoint
    if not values:
        return [None] * len(endpoints)
    if not endpoints:
        raise BadArguments(
            f"{flag} picks {what} of an --endpoint (InvokeEndpoint {api}); "
            f"a --url server has none: give --endpoint targets or drop {flag}"
        )
    if len(values) == 1:
        return [values[0]] * len(endpoints)
    if len(values) != len(endpoints):
        raise BadArguments(
            f"{len(values)} {flag} for {len(endpoints)} --endpoint targets: give one for all of them, "
            "or one per --endpoint, in order"
        )
    return list(values)


def _settings(args: argparse.Namespace):
    from peagle.bench.prompts import (
        describe_prompts_file,
        describe_synthetic_prompts,
        load_prompt_file,
        synthetic_prompts,
    )
    from peagle.bench.results import Sampling
    from peagle.bench.runner import BenchSettings

    open_loop = _open_loop(args)
    concurrency = [] if open_loop else _concurrency(args.concurrency or DEFAULT_CONCURRENCY)
    if args.requests < 1:
        raise BadArguments("--requests must be >= 1")

    refused = sampling_error(args.temperature, args.top_p)
    if refused:
        raise BadArguments(refused)

    buckets = [] if args.buckets == "none" else [b.strip() for b in args.buckets.split(",") if b.strip()]
    try:
        prompts = synthetic_prompts(buckets, seed=args.seed) if buckets else []
        sources = [describe_synthetic_prompts(buckets, args.seed)] if buckets else []
        if args.prompts_file:
            from_file = load_prompt_file(args.prompts_file)
            prompts += from_file
            sources.append(describe_prompts_file(args.prompts_file, from_file))
        template = _request_template(args)
        sampling = Sampling.of_profile(
            args.profile or MEASURED_PROFILE_DEFAULT, temperature=template.temperature, top_p=template.top_p
        )
    except (ValueError, OSError) as error:
        raise BadArguments(str(error)) from error
    if not prompts:
        raise BadArguments("no prompts: choose --buckets or give --prompts-file")

    slo, slo_source = _slo(args)
    price, price_source = _price(args)
    try:
        busy_limit = busy_limit_from(args)
    except ValueError as error:
        raise BadArguments(str(error)) from None
    from peagle.planning.planner import describe_slo

    describe = {
        **({"load": _describe_open_loop(open_loop)} if open_loop else {"concurrency": ",".join(map(str, concurrency))}),
        "requests_per_level": args.requests,
        "warmup_requests": args.warmup,
        "prompts": " + ".join(sources),
        "sampling": sampling.describe(),
        "max_tokens": f"{template.max_tokens} ({_max_tokens_source(args)})",
        "ignore_eos": args.ignore_eos,
        "slo": f"{describe_slo(slo)} ({slo_source})",
        "noisy when": busy_limit.describe(),
    }
    return BenchSettings(
        concurrency=concurrency,
        requests_per_level=args.requests,
        prompts=prompts,
        request_template=template,
        sampling=sampling,
        warmup_requests=args.warmup,
        price_per_hour_usd=price,
        price_source=price_source,
        describe=describe,
        open_loop=open_loop,
        slo=slo,
        slo_source=slo_source,
        busy_limit=busy_limit,
    )


def _concurrency(text: str) -> list[int]:
    try:
        concurrency = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise BadArguments(f"--concurrency takes comma-separated integers, got {text!r}") from error
    if not concurrency or min(concurrency) < 1:
        raise BadArguments(f"--concurrency levels must be >= 1, got {text!r}")
    return concurrency


def _open_loop(args: argparse.Namespace):
    """The --request-rate levels and their arrivals, or None for the closed loop."""
    from peagle.bench.runner import OpenLoopSettings

    if args.request_rate is None:
        for flag, value in (("--burstiness", args.burstiness), ("--max-concurrency", args.max_concurrency)):
            if value is not None:
                raise BadArguments(f"{flag} shapes open-loop arrivals: give --request-rate too")
        return None
    if args.concurrency is not None:
        raise BadArguments(
            "--concurrency (closed loop: a fixed number of requests in flight) and --request-rate (open loop: "
            "requests sent at a rate) measure different things: give one of them"
        )
    rates = []
    for part in (part.strip() for part in args.request_rate.split(",")):
        try:
            rate = float(part)
        except ValueError:
            rate = math.nan
        if not rate > 0:  # also NaN, and what float() refused
            raise BadArguments(
                f"--request-rate takes comma-separated request rates above 0 (requests/s) or 'inf', got "
                f"{args.request_rate!r} ({part!r})"
            )
        rates.append(rate)
    burstiness = 1.0 if args.burstiness is None else args.burstiness
    if not burstiness > 0:
        raise BadArguments(f"--burstiness must be above 0 (1 is Poisson), got {args.burstiness:g}")
    if args.max_concurrency is not None and args.max_concurrency < 1:
        raise BadArguments(f"--max-concurrency must be >= 1, got {args.max_concurrency}")
    return OpenLoopSettings(
        request_rates=rates, burstiness=burstiness, max_concurrency=args.max_concurrency, seed=args.seed
    )


def _describe_open_loop(open_loop) -> str:
    rates = ",".join("inf" if math.isinf(rate) else f"{rate:g}" for rate in open_loop.request_rates)
    arrivals = "Poisson" if open_loop.burstiness == 1 else f"gamma, burstiness {open_loop.burstiness:g}"
    cap = f"max concurrency {open_loop.max_concurrency}" if open_loop.max_concurrency else "no concurrency cap"
    return f"open loop at {rates} req/s, {arrivals} arrivals (seed {open_loop.seed}), {cap}"


def _slo(args: argparse.Namespace):
    """The SLO each level is judged against and where it came from: --slo/--attainment over the profile's."""
    from peagle.catalog import ProfileName, load_catalog
    from peagle.slo import SloError, slo_over

    profile = args.profile or MEASURED_PROFILE_DEFAULT
    try:
        return slo_over(
            load_catalog().profiles[ProfileName(profile)].slo, f"profile {profile}", args.slo, args.attainment
        )
    except SloError as error:
        raise BadArguments(f"--slo/--attainment: {error}") from error


def _request_template(args: argparse.Namespace):
    """Every request is sampled as the profile deploys (--profile, default chatbot): acceptance, and so
    the speed-up, depends on the temperature, and greedy overstates what a real drafter gets at the
    temperature users are served. --temperature 0 still measures greedy, labelled as a comparison."""
    from peagle.client.cli import build_request

    extra = {"ignore_eos": True} if args.ignore_eos else {}
    return build_request(
        args,
        default_profile=MEASURED_PROFILE_DEFAULT,
        default_max_tokens=DEFAULT_MAX_TOKENS,
        prompt="",
        extra=extra,
    )


def _max_tokens_source(args: argparse.Namespace) -> str:
    if args.max_tokens is not None:
        return "--max-tokens"
    if args.profile:
        return f"profile {args.profile}"
    return "bench's default, so local runs stay short; --max-tokens or --profile to change"


def _price(args: argparse.Namespace) -> tuple[float | None, str | None]:
    try:
        return instance_price(args)
    except ValueError as error:
        raise BadArguments(str(error)) from None


def _run_targets(targets, settings, args: argparse.Namespace):
    from peagle.bench.runner import run_target
    from peagle.client.cli import build_client
    from peagle.progress import progress_bar

    total = len(targets) * settings.level_count * settings.requests_per_level
    with progress_bar(total=total, unit="req") as progress:  # on stderr, only on a terminal
        runs = []
        for target in targets:

            def on_done(load, record, label=target.label):
                progress.set_postfix_str(f"{label} {load}", refresh=False)
                progress.update(1)

            with build_client(
                target.url,
                target.endpoint,
                args,
                target_variant=target.target_variant,
                inference_component=target.inference_component,
            ) as client:
                runs.append(run_target(target, settings, client, on_request_done=on_done))
    return runs


def _environment(args: argparse.Namespace) -> dict:
    from peagle.bench.environment import describe_machine

    environment = describe_machine()
    if args.server_note:
        environment["server"] = args.server_note
    return environment


def _one_line(values: dict) -> str:
    return "; ".join(f"{key}={value}" for key, value in values.items())


def _print_summary(results, out_dir: Path) -> None:
    from peagle.bench.report_md import sampling_lines

    print(f"Report: {out_dir / 'report.md'}")
    for line in sampling_lines(results):
        print(f"  {line}")
    for run in results.runs:
        for level in run.levels:
            tpot = f"{level.tpot_s.p50 * 1000:.1f} ms" if level.tpot_s else "n/a"
            spec = level.acceptance
            accept = (
                f", acceptance length {spec.mean_acceptance_length:.2f} (from {spec.source})"
                if spec and spec.mean_acceptance_length
                else ""
            )
            print(
                f"  {run.label} {level.load_label}: {level.output_tokens_per_s:.1f} output tok/s, "
                f"TPOT p50 {tpot}, errors {level.failed}/{level.requests}{accept}{_slo_summary(level)}"
                + _noisy_summary(level)
            )
    noisy = sum(level.noisy for run in results.runs for level in run.levels)
    if noisy:
        print(
            _red(
                f"  {noisy} level(s) measured on a busy machine: do not compare or publish them; rerun when the "
                "machine is quiet (report.md, 'Machine during each level')"
            )
        )


def _noisy_summary(level) -> str:
    if level.host is None:
        return ""
    if not level.noisy:
        return f", machine quiet ({level.host.summary()})"
    return ", " + _red("NOISY: " + "; ".join(level.host.busy))


def _red(text: str) -> str:
    """ANSI red on a terminal (NO_COLOR, https://no-color.org, turns it off); plain text otherwise."""
    import os

    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        return f"\033[31m{text}\033[0m"
    return text


def _slo_summary(level) -> str:
    parts = []
    if level.open_loop:
        parts.append(f"sent at {level.open_loop.achieved_request_rate:.2f} req/s")
    if level.slo:
        parts.append(
            f"SLO attainment {level.slo.all_bounds:.0%} (target {level.slo.target_attainment:.0%}), "
            f"goodput {level.slo.goodput_requests_per_s:.2f} req/s"
        )
    return "".join(f", {part}" for part in parts)
