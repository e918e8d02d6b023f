"""`peagle capacity`: the highest request rate one instance (or copy) serves within the SLO.

Against a running server (--url), a SageMaker endpoint (--endpoint, with --target-variant and
--inference-component) or a local pair it serves itself (--pair, through `peagle local`, as peagle
tune does), it sends open-loop load (peagle/bench/open_loop.py) at rising request rates, judges each
level against the SLO (peagle/slo.py, vllm bench serve's definitions) and searches for the knee
(peagle/capacity/search.py). Writes capacity.json, capacity.md, knee.png and capacity-snippet.yaml
to --out.

Exit 0 with a capacity; 1 when the target could not be served or no rate met the SLO; 2 bad
arguments; 3 AWS refused a call (the SageMaker benchmark job's, --sagemaker-benchmark --submit and
--sagemaker-results: peagle/capacity/sagemaker_benchmark*.py); 130 interrupted (Ctrl-C), after writing what
was measured.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from peagle.bench.host_conditions import add_busy_limit_argument
from peagle.bench.intervals import CONFIDENCE
from peagle.bench.prompts import BUCKET_WORDS
from peagle.capacity.local_pair import k_text, served_pair, speculation_refusal
from peagle.capacity.sagemaker_benchmark import OPTIONS as SAGEMAKER_BENCHMARK_OPTIONS
from peagle.capacity.seeds import prompts_by_repeat, seeds_note
from peagle.cli_errors import ExitCode
from peagle.cli_options import add_command, added_by, exclusive, option
from peagle.client.cli import (
    MEASURED_PROFILE_DEFAULT,
    add_inference_component_argument,
    add_price_arguments,
    add_sampling_arguments,
    add_target_variant_argument,
    instance_price,
    sampling_error,
)
from peagle.local.served import LocalServerFailed
from peagle.local.tiny_pair import PAIRS
from peagle.settings import DEFAULT_HEADROOM
from peagle.simulate.service_curve import FILE_NAME as SERVICE_CURVE_FILE
from peagle.slo import add_slo_arguments

DEFAULT_MAX_TOKENS = 64
DEFAULT_BUCKETS = "short"
# About 10 minutes in all for a local pair on a 2-core machine: the engine's ~30-60 s start,
# nine minutes of levels, the server's drain.
DEFAULT_TIME_BUDGET_SECONDS = 540.0
DEFAULT_MIN_LEVEL_SECONDS = 15.0
# The ramp, in unloaded request latencies: in flight climbs to its steady count over about one loaded
# latency, which is longer than an unloaded one.
RAMP_LATENCIES = 1.5
# Each deciding rate's levels, each on its own seed: at 2 the 95% t quantile is 12.706 (one degree of freedom),
# so any two levels that differ at all cannot tell; at 3 it is 4.303 (NIST/SEMATECH e-Handbook of Statistical
# Methods, 1.3.6.7.2, https://www.itl.nist.gov/div898/handbook/eda/section3/eda3672.htm, the "0.975" column;
# peagle/bench/intervals.py computes them).
DEFAULT_REPEATS = 3


class BadArguments(ValueError):
    pass


class CapacityFailed(RuntimeError):
    """The target could not be served or measured."""


_OPTIONS = (
    exclusive(
        option("--url", help="a server speaking the container contract, e.g. http://127.0.0.1:8080"),
        option("--endpoint", help="a SageMaker endpoint name"),
        option("--pair", choices=sorted(PAIRS), help="serve this local pair with `peagle local` and measure it"),
    ),
    option("--region", help="with --endpoint: its AWS region"),
    added_by(
        add_target_variant_argument,
        repeatable=False,
        help_text="with --endpoint: measure this production variant alone (InvokeEndpoint TargetVariant)",
    ),
    added_by(
        add_inference_component_argument,
        repeatable=False,
        help_text="with --endpoint: measure this inference component (InvokeEndpoint InferenceComponentName); the "
        "rate is then per copy and the snippet's autoscaling.target_concurrency is per copy",
    ),
    option(
        "--instances",
        type=int,
        default=1,
        help="with --endpoint: instances (or copies) serving it while measured; the rate is divided by this "
        "to give one instance's (default 1)",
    ),
    option(
        "--speculative-tokens",
        "-k",
        type=int,
        default=None,
        metavar="K",
        help="with --pair: draft tokens per step (default: the pair's measured default, `peagle local --help`; 0: off)",
    ),
    option(
        "--speculative-schedule",
        metavar="LO-HI:K,...",
        help="with --pair: K by batch size instead of one K, e.g. 1-2:4,3-16:0 (`peagle local --speculative-schedule`, "
        "vLLM's num_speculative_tokens_per_batch_size); measured as a K is, and recorded where K is",
    ),
    option(
        "--deployment",
        type=Path,
        metavar="FILE",
        help="a deployment file whose plan gives the profile (sampling) and the SLO",
    ),
    added_by(
        add_sampling_arguments,
        default_profile=MEASURED_PROFILE_DEFAULT,
        max_tokens_help=f"output tokens per request (default {DEFAULT_MAX_TOKENS}, so local levels stay short)",
    ),
    added_by(add_slo_arguments, default="the profile's SLO, or the --deployment plan's"),
    option("--start-rate", type=float, default=0.5, help="first offered rate, requests/s (default 0.5)"),
    option("--max-rate", type=float, default=100.0, help="highest rate tried (default 100)"),
    option("--growth", type=float, default=2.0, help="rate factor while growing (default 2)"),
    option(
        "--tolerance",
        type=float,
        default=0.10,
        help="stop bisecting once first fail / last pass <= 1 + this (default 0.10)",
    ),
    option(
        "--repeats",
        type=int,
        default=None,
        help="levels at each deciding rate (with --sweep: at each rate), repeat i on seed + i (synthetic prompts and "
        f"arrivals; a --prompts-file's arrivals only), pooled and judged by their {CONFIDENCE:.0%}% interval "
        f"(default {DEFAULT_REPEATS}; with --sweep 1)",
    ),
    option("--requests-per-level", type=int, default=24, help="requests per level, at least (default 24)"),
    option(
        "--min-level-seconds",
        type=float,
        default=DEFAULT_MIN_LEVEL_SECONDS,
        metavar="SECONDS",
        help="a level sends requests for at least this long: more than --requests-per-level at high rates "
        f"(default {DEFAULT_MIN_LEVEL_SECONDS:.0f}; a few seconds of arrivals are one burst or lull)",
    ),
    option(
        "--time-budget",
        type=float,
        default=DEFAULT_TIME_BUDGET_SECONDS,
        metavar="SECONDS",
        help=f"no level starts that would end after this (default {DEFAULT_TIME_BUDGET_SECONDS:.0f}: about 10 "
        "minutes in all for a local pair on 2 cores)",
    ),
    option("--burstiness", type=float, default=1.0, help="gamma shape of the arrivals (default 1: Poisson)"),
    option("--warmup", type=int, default=2, help="unmeasured requests first (default 2)"),
    option(
        "--ramp-seconds",
        type=float,
        metavar="SECONDS",
        help="each level first sends this long of arrivals it does not judge, while the server fills up from "
        f"idle (default {RAMP_LATENCIES:g} x the warm-up's median end-to-end latency)",
    ),
    option(
        "--buckets",
        help=f"synthetic prompt length buckets from {', '.join(BUCKET_WORDS)} (default {DEFAULT_BUCKETS}); not "
        "with --prompts-file",
    ),
    option(
        "--prompts-file",
        type=Path,
        metavar="JSONL",
        help="send these prompts instead of synthetic ones, e.g. production's from `peagle prompts` (bench's "
        "format: one {'prompt': ...} or {'messages': [...]} per line; a line's max_tokens and sampling keys "
        "override the run's); the report names the file and a sha256 of its content",
    ),
    option(
        "--seed",
        type=int,
        default=0,
        help="seed of the prompts and arrivals (default 0); a rate's repeat i uses seed + i, so two runs with the "
        "same seed compare level by level",
    ),
    option(
        "--no-ignore-eos",
        dest="ignore_eos",
        action="store_false",
        help="let generations stop at EOS (default: run to max_tokens, so levels compare)",
    ),
    option(
        "--headroom",
        type=float,
        default=DEFAULT_HEADROOM,
        help=f"share of the measured capacity the scaling targets aim at, 0 < h <= 1 (default {DEFAULT_HEADROOM})",
    ),
    option("--peak-rps", type=float, help="the peak request rate to carry: the snippet adds min/max instances for it"),
    added_by(add_price_arguments, costs="cost per hour and per 1M output tokens"),
    added_by(add_busy_limit_argument),
    option(
        "--busy-retries",
        type=int,
        default=2,
        help="measure a noisy level again this many times, 15 s apart, before stopping with 'machine busy' (default 2)",
    ),
    option("--max-attempts", type=int, default=1, help="client attempts per request (default 1)"),
    option(
        "--sweep",
        metavar="RATES",
        help="measure these request rates (comma-separated, requests/s, in that order) once each (--repeats times "
        "each, on seed + i, when given) instead of searching: the levels a service curve needs across the load, below "
        "and past the knee, or the levels two settings are compared at (--compare)",
    ),
    option(
        "--replay",
        action="append",
        type=Path,
        metavar="CSV",
        help="after the search (or with --service-curve instead of it), replay this trace of requests per minute "
        "(`peagle simulate --traffic`'s CSV) against the same target, open loop, and compare minute by minute "
        "what it did with what `peagle simulate` predicts from the service curve: replay.md and replay.json "
        "(repeatable; docs/simulate.md, 'How far off the simulator is')",
    ),
    option(
        "--service-curve",
        type=Path,
        metavar="FILE",
        help="with --replay: predict from this service-curve.json (an earlier `peagle capacity --out`'s) instead of "
        "searching first",
    ),
    option(
        "--compare",
        nargs=2,
        type=Path,
        metavar=("FIRST", "SECOND"),
        help="serve nothing: compare two earlier runs' capacity.json (or their --out folders) measured on the same "
        "seeds, prompts, sampling and SLO, rate by rate and paired by seed: each figure's difference with its "
        "interval, and 'cannot tell' where the interval includes zero (comparison.md and comparison.json in --out)",
    ),
    SAGEMAKER_BENCHMARK_OPTIONS,
    option("--out", type=Path, required=True, help="output folder (created)"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers,
        "capacity",
        run_capacity,
        _OPTIONS,
        help="find the highest request rate per instance that meets the SLO, and the scaling targets from it",
        description="Send open-loop load (Poisson arrivals) at rising request rates to one target (--url, "
        "--endpoint or a local --pair), judge each level against the SLO (the profile's, or --slo), grow "
        "the rate until the SLO breaks, bisect, and repeat the deciding levels. Writes capacity.json, capacity.md, "
        "knee.png and capacity-snippet.yaml (autoscaling targets at --headroom) to --out. Progress on stderr; "
        "Ctrl-C writes what was measured. A level measured on a busy machine (--busy-limit) is measured again, "
        "and when it stays noisy the search stops without a capacity. Exit 0 ok, 1 target failed, no rate met "
        "the SLO or the machine was busy, 2 bad arguments, 3 AWS refused a call, 130 interrupted. "
        "--sagemaker-benchmark writes (and --submit sends) a SageMaker AI benchmark job for the endpoint instead; "
        "--sagemaker-results reads a finished one beside a local run.",
    )


def run_capacity(args: argparse.Namespace) -> int:
    from peagle.aws import AwsCallError
    from peagle.cli_errors import run_reporting_errors
    from peagle.settings.errors import PeagleError

    return run_reporting_errors(
        _capacity,
        args,
        [
            (AwsCallError, ExitCode.AWS),
            ((CapacityFailed, LocalServerFailed), ExitCode.FAILED),
            ((BadArguments, PeagleError, ValueError), ExitCode.BAD_INPUT),
        ],
    )


def _capacity(args: argparse.Namespace) -> int:
    if args.sagemaker_benchmark or args.sagemaker_results:  # a job SageMaker runs: nothing served here
        from peagle.capacity.sagemaker_benchmark_results import read_job_results, write_job_requests

        slo, slo_source, profile, sampling = _slo_and_sampling(args)
        if args.sagemaker_results:
            return read_job_results(args, slo, slo_source)
        return write_job_requests(
            args, slo, _request_template(args, profile, sampling).max_tokens or DEFAULT_MAX_TOKENS
        )
    if args.compare:
        return _compare_only(args)
    _check_target(args)
    slo, slo_source, profile, sampling = _slo_and_sampling(args)
    template = _request_template(args, profile, sampling)
    settings, busy_limit = _checked_settings(args, slo)
    price, price_source = instance_price(args)  # ValueError: exit 2
    prompts, prompts_source, prompts_notes = _prompts(args)

    with _target(args) as (client, metrics_url, description):
        if args.service_curve is not None:
            return _replay_only(client, metrics_url, prompts, template, slo, args, busy_limit)
        search = _search(client, metrics_url, prompts, template, slo, settings, args, busy_limit)
        from peagle.capacity.report import Context, write_report
        from peagle.planning.planner import describe_slo

        context = Context(
            date=datetime.now(UTC).strftime("%Y-%m-%d"),
            target=description,
            speculative_tokens=_k_found(args, search),
            speculative_schedule=args.speculative_schedule,
            slo_text=describe_slo(slo),
            slo_source=slo_source,
            sampling=template_description(template, profile),
            settings=_report_settings(args, search, template, prompts_source, busy_limit),
            headroom=args.headroom,
            instances=args.instances,
            inference_component=args.inference_component,
            peak_rps=args.peak_rps,
            price_per_hour_usd=price,
            price_source=price_source,
            notes=(
                [f"the rate is per instance: measured against {args.instances} instances and divided by that"]
                if args.instances > 1
                else []
            )
            + prompts_notes
            + [seeds_note(from_file=args.prompts_file is not None, seed=args.seed)],
            prompts=prompts_source,
        )
        paths = write_report(search, context, args.out)
        curve = _write_service_curve(search, context, slo, template, args)
        if curve is not None:
            paths.append(args.out / SERVICE_CURVE_FILE)
        if args.replay and curve is not None:
            paths += _replay_all(client, metrics_url, prompts, template, slo, curve, args, busy_limit)
        elif args.replay:
            print("capacity: no level is usable as a service curve: nothing to replay against", file=sys.stderr)
        return _print_answer(search, context, args, paths)


def _compare_only(args: argparse.Namespace) -> int:
    """--compare: two stored runs compared level by level, paired by seed; nothing is served."""
    from peagle.capacity.compare import load_run, workload_problems, write_comparison

    given = [
        flag for flag, value in (("--url", args.url), ("--endpoint", args.endpoint), ("--pair", args.pair)) if value
    ]
    if given:
        raise BadArguments(f"--compare reads two stored runs and serves nothing: drop {', '.join(given)}")
    first, second = (load_run(path) for path in args.compare)
    problems = workload_problems(first, second)
    if problems:
        raise BadArguments("; ".join(problems))
    paths, lines = write_comparison(first, second, args.out)
    print("\n".join(f"capacity: {line}" for line in lines))
    print("written: " + ", ".join(str(path) for path in paths))
    return ExitCode.OK


def _checked_settings(args: argparse.Namespace, slo):
    """(SearchSettings, busy limit) from the options, every problem with them at once (BadArguments)."""
    from peagle.bench.host_conditions import busy_limit_from
    from peagle.capacity.search import SearchSettings

    settings = SearchSettings(
        target_attainment=slo.attainment,
        requests_per_level=args.requests_per_level,
        time_budget_seconds=args.time_budget,
        start_rate=args.start_rate,
        growth=args.growth,
        tolerance=args.tolerance,
        repeats=_repeats(args),
        max_rate=args.max_rate,
        min_rate=min(args.start_rate, 0.01) if args.start_rate > 0 else 0.01,
        min_level_seconds=args.min_level_seconds,
        busy_retries=args.busy_retries,
    )
    problems = settings.problems()
    if not 0 < args.headroom <= 1:
        problems.append(f"--headroom {args.headroom:g}: above 0 and at most 1")
    if args.peak_rps is not None and not args.peak_rps > 0:
        problems.append(f"--peak-rps {args.peak_rps:g}: above 0 requests/s")
    if args.burstiness <= 0:
        problems.append(f"--burstiness {args.burstiness:g}: above 0 (1 is Poisson)")
    if args.warmup < 0:
        problems.append(f"--warmup {args.warmup}: 0 or more")
    if args.ramp_seconds is None and args.warmup < 1:
        problems.append("--warmup 0 leaves nothing to size the ramp from: give --ramp-seconds too")
    if args.ramp_seconds is not None and args.ramp_seconds < 0:
        problems.append(f"--ramp-seconds {args.ramp_seconds:g}: 0 or more")
    busy_limit = None
    try:
        busy_limit = busy_limit_from(args)
    except ValueError as error:
        problems.append(str(error))
    try:
        _sweep_rates(args)
    except BadArguments as error:
        problems.append(str(error))
    problems += _replay_problems(args)
    if problems or busy_limit is None:
        raise BadArguments("; ".join(problems))
    return settings, busy_limit


def _repeats(args: argparse.Namespace) -> int:
    """--repeats, else 3 for a search and 1 for a --sweep (a service curve's levels across the load, once each)."""
    if args.repeats is not None:
        return args.repeats
    return 1 if args.sweep else DEFAULT_REPEATS


def _k_found(args: argparse.Namespace, search) -> str:
    """K in words: a local --pair's, else the largest the server reported."""
    k = k_text(args)
    if k is not None:
        return k
    observed = {step.measured.detail.speculative_tokens for step in search.steps} - {None}
    return str(max(observed)) if observed else "not reported (off, or answers without spec-decode metrics)"


def _report_settings(args: argparse.Namespace, search, template, prompts_source: str, busy_limit) -> dict:
    """The settings capacity.md lists."""
    return {
        "requests per level": f"{args.requests_per_level} judged, or {args.min_level_seconds:g} s of arrivals if "
        "more, after a ramp not judged (capacity.json: ramp_seconds)",
        "max_tokens": template.max_tokens,
        "prompts": prompts_source,
        "arrivals": "Poisson" if args.burstiness == 1 else f"gamma, burstiness {args.burstiness:g}",
        "start rate": args.start_rate,
        "growth": args.growth,
        "tolerance": args.tolerance,
        "repeats": search.settings.repeats,
        "time budget s": args.time_budget,
        "ramp s": search.settings.ramp_seconds,
        "ignore_eos": args.ignore_eos,
        "noisy when": busy_limit.describe(),
    }


def _print_answer(search, context, args: argparse.Namespace, paths: list[Path]) -> int:
    """The capacity found (or why none was), the files written, and the exit code."""
    from peagle.capacity.report import answer
    from peagle.capacity.search import INTERRUPTED, MACHINE_BUSY

    found = answer(search, args.instances)
    if search.stop_reason == MACHINE_BUSY:
        reasons = "; ".join(search.noisy[-1].measured.busy)
        print(
            f"capacity: machine busy ({reasons}): no capacity published; {len(search.noisy)} noisy level(s) are in "
            "capacity.json. Stop the other work (a second engine, a test suite) and run again, or raise --busy-limit "
            "if this machine is always this busy",
            file=sys.stderr,
        )
    elif found is None:
        print(f"capacity: no measured rate met the SLO ({context.slo_text})", file=sys.stderr)
    else:
        attained = found.spread["attainment"]
        spread = (
            f", mean {attained['mean']:.1%} ± {(attained['high'] - attained['low']) / 2:.1%} over {found.levels} levels"
            if attained["low"] is not None
            else ", one level: no interval"
        )
        print(
            f"capacity: {found.rate_per_instance:.3f} requests/s per {'copy' if args.inference_component else 'instance'} "
            f"at {context.slo_text} (attainment {found.attainment:.1%}{spread}, {found.concurrency_per_instance:.2f} "
            "in flight)"
            + (
                f"; could not tell at {', '.join(f'{rate:g}' for rate in search.cannot_tell)} req/s"
                if search.cannot_tell
                else ""
            )
        )
    print("written: " + ", ".join(str(path) for path in paths))
    if search.stop_reason == INTERRUPTED:
        print("interrupted: peagle capacity stopped (Ctrl-C); the report holds the levels measured", file=sys.stderr)
        return ExitCode.INTERRUPTED
    return ExitCode.OK if found is not None else ExitCode.FAILED


def _check_target(args: argparse.Namespace) -> None:
    from peagle.capacity.sagemaker_benchmark import stray_options

    if stray_options(args):
        raise BadArguments("; ".join(stray_options(args)))
    if not (args.url or args.endpoint or args.pair):
        raise BadArguments(
            "no target: give --url URL, --endpoint NAME or --pair PAIR (" + ", ".join(sorted(PAIRS)) + ")"
        )
    if not args.endpoint:
        for flag, value in (
            ("--target-variant", args.target_variant),
            ("--inference-component", args.inference_component),
            ("--region", args.region),
        ):
            if value:
                raise BadArguments(f"{flag} goes with --endpoint; a --url server or a local --pair has none")
        if args.instances != 1:
            raise BadArguments("--instances counts an --endpoint's instances; a --url server or --pair is one")
    if args.instances < 1:
        raise BadArguments(f"--instances {args.instances}: at least 1")
    refused = speculation_refusal(args)
    if refused:
        raise BadArguments(refused)
    if args.deployment and args.profile:
        raise BadArguments("--deployment gives the profile; drop --profile or --deployment")


def _slo_and_sampling(args: argparse.Namespace):
    """(SLO, where it came from, profile name, the profile's sampling): from --deployment's plan or the
    profile, with --slo / --attainment in place of their parts."""
    from peagle.catalog import ProfileName, load_catalog
    from peagle.slo import SloError, slo_over

    if args.deployment:
        from peagle.planning.planner import plan_deployment
        from peagle.settings import load_deployment_config

        plan = plan_deployment(load_deployment_config(args.deployment))
        profile_name, profile = plan.profile_name.value, plan.profile
        source = f"plan of {args.deployment}"
    else:
        profile_name = args.profile or MEASURED_PROFILE_DEFAULT
        profile = load_catalog().profiles[ProfileName(profile_name)]
        source = f"profile {profile_name}"
    try:
        slo, source = slo_over(profile.slo, source, args.slo, args.attainment)
    except SloError as error:
        raise BadArguments(str(error)) from error
    return slo, source, profile_name, profile.sampling


def _request_template(args: argparse.Namespace, profile: str, sampling):
    from peagle.client.request import GenerationRequest

    refused = sampling_error(args.temperature, args.top_p)
    if refused:
        raise BadArguments(refused)
    if args.max_tokens is not None and args.max_tokens < 1:
        raise BadArguments(f"--max-tokens {args.max_tokens}: at least 1")
    return GenerationRequest(
        prompt="",
        max_tokens=args.max_tokens or DEFAULT_MAX_TOKENS,
        temperature=sampling.temperature if args.temperature is None else args.temperature,
        top_p=sampling.top_p if args.top_p is None else args.top_p,
        extra={"ignore_eos": True} if args.ignore_eos else {},
    )


def template_description(template, profile: str) -> str:
    return f"temperature {template.temperature:g}, top_p {template.top_p:g} (profile {profile}), max_tokens {template.max_tokens}"


def _prompts(args: argparse.Namespace):
    """(prompts, which prompts in words, notes for the report): --prompts-file, else synthetic --buckets;
    a note for synthetic prompts (printed now), and one when the file's lines set their own sampling."""
    from peagle.bench.prompts import (
        SYNTHETIC_PROMPTS_NOTE,
        describe_prompts_file,
        describe_synthetic_prompts,
        load_prompt_file,
        sampling_overrides,
        synthetic_prompts,
    )

    if args.prompts_file is not None:
        if args.buckets is not None:
            raise BadArguments("--buckets picks synthetic prompts and --prompts-file replaces them: give one of them")
        try:
            prompts = load_prompt_file(args.prompts_file)
        except (ValueError, OSError) as error:
            raise BadArguments(f"--prompts-file: {error}") from None
        overrides = sampling_overrides(prompts)
        notes = (
            [
                "prompts that set their own sampling or length keep it (the capture's): "
                + ", ".join(f"{name} on {count} of {len(prompts)}" for name, count in overrides.items())
                + "; the sampling above applies to the others"
            ]
            if overrides
            else []
        )
        return prompts, describe_prompts_file(args.prompts_file, prompts), notes
    buckets = _buckets(args)
    try:
        prompts = synthetic_prompts(buckets, seed=args.seed)
    except ValueError as error:
        raise BadArguments(str(error)) from None
    print(f"capacity: note: {SYNTHETIC_PROMPTS_NOTE}", file=sys.stderr)
    return prompts, describe_synthetic_prompts(buckets, args.seed), [SYNTHETIC_PROMPTS_NOTE]


def _buckets(args: argparse.Namespace) -> list[str]:
    return [bucket.strip() for bucket in (args.buckets or DEFAULT_BUCKETS).split(",") if bucket.strip()]


@contextmanager
def _target(args: argparse.Namespace):
    """(client, the /metrics base URL or None, a description) for the target, a local pair served meanwhile."""
    from peagle.client.cli import build_client

    if args.pair:
        with served_pair(args) as url, build_client(url, None, args) as client:
            yield client, url, f"local pair {args.pair} (peagle local)"
        return
    if args.url:
        with build_client(args.url, None, args) as client:
            yield client, args.url, args.url
        return
    description = f"endpoint {args.endpoint}" + "".join(
        f" {word} {value}"
        for word, value in (("variant", args.target_variant), ("component", args.inference_component))
        if value
    )
    with build_client(
        None, args.endpoint, args, target_variant=args.target_variant, inference_component=args.inference_component
    ) as client:
        yield client, None, description


def _search(client, metrics_url, prompts, template, slo, settings, args, busy_limit):
    from dataclasses import replace
    from statistics import median

    from peagle.bench.runner import BenchSettings, build_requests
    from peagle.capacity.levels import measure_level
    from peagle.capacity.search import find_capacity

    latencies = _warm_up(client, prompts, template, args.warmup)
    ramp = args.ramp_seconds if args.ramp_seconds is not None else RAMP_LATENCIES * median(latencies)
    settings = replace(settings, ramp_seconds=round(ramp, 1))
    prompts_at = prompts_by_repeat(prompts, buckets=None if args.prompts_file else _buckets(args), seed=args.seed)

    def measure(rate: float, repeat: int):
        cases, prompts_seed = prompts_at(repeat)
        bench = BenchSettings(concurrency=[1], requests_per_level=1, prompts=cases, request_template=template)
        return measure_level(
            client,
            build_requests(bench, settings.requests_at(rate)),
            slo,
            rate=rate,
            repeat=repeat,
            seed=args.seed,
            burstiness=args.burstiness,
            metrics_url=metrics_url,
            ramp_seconds=settings.ramp_seconds,
            busy_limit=busy_limit,
            prompts_seed=prompts_seed,
        )

    def progress(line: str) -> None:
        print(f"capacity: {line}", file=sys.stderr, flush=True)

    rates = _sweep_rates(args)
    what = (
        f"sweeping {', '.join(f'{rate:g}' for rate in rates)} req/s"
        if rates
        else f"searching from {settings.start_rate:g} req/s"
    )
    progress(
        f"{what}, {settings.requests_per_level} requests per level "
        f"(or {settings.min_level_seconds:g} s of arrivals) after a {settings.ramp_seconds:g} s ramp not judged, "
        f"budget {settings.time_budget_seconds:.0f} s, target attainment {settings.target_attainment:.0%}"
    )
    return find_capacity(measure, settings, progress=progress, rates=rates)


def _sweep_rates(args: argparse.Namespace) -> list[float] | None:
    if not args.sweep:
        return None
    try:
        rates = [float(word) for word in args.sweep.split(",") if word.strip()]
    except ValueError:
        raise BadArguments(f"--sweep {args.sweep}: request rates separated by commas, e.g. 0.2,0.5,1") from None
    if not rates or any(rate <= 0 for rate in rates):
        raise BadArguments(f"--sweep {args.sweep}: one or more request rates above 0, e.g. 0.2,0.5,1")
    return rates


def _write_service_curve(search, context, slo, template, args: argparse.Namespace):
    """The judged levels as a service curve (peagle/simulate/service_curve.py), per instance or copy: what
    `peagle simulate --service-curve` serves each unit by. None when no level is usable."""
    from dataclasses import replace

    from peagle.simulate.service_curve import curve_from_levels

    per_unit = []
    for step in search.steps:
        level = step.measured.detail.as_dict()
        for key in ("completed_rate", "achieved_rate", "offered_rate"):  # per instance (or copy)
            level[key] = level[key] / args.instances
        per_unit.append(level)
    hosts = [step.measured.detail.host for step in search.steps if step.measured.detail.host is not None]
    curve = curve_from_levels(
        per_unit,
        slo=slo,
        output_tokens=template.max_tokens,
        source=f"peagle capacity, {context.target}, K={context.speculative_tokens}, {context.date}, "
        f"{context.sampling}, {context.prompts}",
        host=hosts[0].cpu_description() if hosts else "",
    )
    if curve is None:
        return None
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / SERVICE_CURVE_FILE).write_text(curve.to_json(), encoding="utf-8")
    return replace(curve, path=str(args.out / SERVICE_CURVE_FILE))


def _replay_only(client, metrics_url, prompts, template, slo, args: argparse.Namespace, busy_limit) -> int:
    """--service-curve: replay the traces against the target and that curve, without a search."""
    from peagle.simulate.service_curve import ServiceCurveError, load_curve

    try:
        curve = load_curve(args.service_curve)
    except ServiceCurveError as error:
        raise BadArguments(str(error)) from None
    _warm_up(client, prompts, template, args.warmup)
    paths = _replay_all(client, metrics_url, prompts, template, slo, curve, args, busy_limit)
    print("written: " + ", ".join(str(path) for path in paths))
    return ExitCode.OK


def _warm_up(client, prompts, template, count: int) -> list[float]:
    """``count`` unmeasured requests one at a time: their end-to-end seconds."""
    from peagle.bench.runner import BenchSettings, build_requests
    from peagle.client import PeagleClientError

    bench = BenchSettings(concurrency=[1], requests_per_level=1, prompts=prompts, request_template=template)
    latencies = []
    for request in build_requests(bench, count):
        try:
            latencies.append(client.generate(request).timings.e2e_s)
        except PeagleClientError as error:
            raise CapacityFailed(f"warm-up request failed: {type(error).__name__}: {error}") from None
    return latencies


def _replay_all(client, metrics_url, prompts, template, slo, curve, args: argparse.Namespace, busy_limit) -> list:
    """Each --replay trace sent open loop to the target and compared with the simulator's unit on ``curve``
    (peagle/capacity/replay.py); replay.json and replay.md in --out."""
    from dataclasses import asdict, replace

    from peagle.bench.host_conditions import HostWatch
    from peagle.bench.open_loop import run_open_loop
    from peagle.bench.runner import BenchSettings, build_requests
    from peagle.capacity.levels import GaugeSampler
    from peagle.capacity.replay import replay_trace
    from peagle.capacity.replay_report import write_replay
    from peagle.simulate.traffic import TrafficError, from_csv

    bench = BenchSettings(concurrency=[1], requests_per_level=1, prompts=prompts, request_template=template)
    comparisons = []
    for path in args.replay:
        try:
            trace = from_csv(path)
        except TrafficError as error:
            raise BadArguments(f"--replay {path}: {error}") from None
        print(f"capacity: replaying {path} ({len(trace.requests_per_minute)} min)", file=sys.stderr, flush=True)

        def send(offsets: list[float]):
            requests = build_requests(bench, len(offsets))
            return run_open_loop(client, requests, rate=1.0, seed=args.seed, offsets=offsets).records

        # The levels' own watch and gauges, so the server is observed as it was while the curve was measured.
        with HostWatch(metrics_url) as watch, GaugeSampler(metrics_url) as gauges:
            comparison = replay_trace(send, trace, curve, slo, seed=args.seed)
        host = asdict(watch.conditions(busy_limit, send_lag_p99_s=0.0)) | gauges.summary()
        comparisons.append(replace(comparison, host=host))
        print(f"capacity: {path}: {comparisons[-1].summary()}", file=sys.stderr, flush=True)
    return write_replay(comparisons, curve, slo, args.out)


def _replay_problems(args: argparse.Namespace) -> list[str]:
    """--replay traces and --service-curve read before a server starts: what is wrong with them."""
    from peagle.simulate.service_curve import ServiceCurveError, load_curve
    from peagle.simulate.traffic import TrafficError, from_csv

    problems = []
    if args.service_curve is not None and not args.replay:
        problems.append("--service-curve goes with --replay CSV: the traces to replay against that curve")
    if args.service_curve is not None:
        try:
            load_curve(args.service_curve)
        except ServiceCurveError as error:
            problems.append(str(error))
    for path in args.replay or []:
        try:
            from_csv(path)
        except TrafficError as error:
            problems.append(f"--replay {path}: {error}")
    return problems
