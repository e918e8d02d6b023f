"""`peagle simulate`: replay traffic through the scaling policies of the synthesized endpoint stack.

Exit codes: 0 every verdict holds under every reading run; 1 a verdict fails (users turned away, or the
scaling misbehaves); 2 bad input (a template, trace or option that cannot be used, a deployment that does
not plan).
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from peagle.cli_errors import ExitCode
from peagle.cli_options import Option, add_command, option
from peagle.cli_table import table_lines
from peagle.client.cold_start import COLD_START_DEFAULT_HELP
from peagle.settings import DEFAULT_DEPLOYMENT_FILE
from peagle.simulate.service import READING_FIELDS, READINGS
from peagle.simulate.traffic import SHAPES

if TYPE_CHECKING:
    from peagle.planning.planner import Plan
    from peagle.simulate.report import EndpointResults
    from peagle.simulate.scenarios import Result


def _reading_option(reading) -> Option:
    """--<reading> both|<one of its values>: which readings of an assumption the simulation runs."""
    words = [word for _, word, _ in reading.values]
    return option(
        reading.flag,
        dest=reading.field,
        choices=("both", *words),
        default="both",
        help=f"{reading.question} (default both: {' / '.join(words)})",
    )


_OPTIONS = (
    option(
        "--deployment",
        help="only for a template that records no plan (synthesized by an earlier peagle): the deployment YAML it "
        f"was synthesized from (e.g. {DEFAULT_DEPLOYMENT_FILE}). A PeagleEndpoint records its plan in the template, "
        "whichever door made it, and simulate reads that",
    ),
    option(
        "--template",
        type=Path,
        help="the endpoint stack's template (JSON or YAML); default: the stack in --cdk-out that records a plan "
        "(the YAML app's PeagleEndpoint, or your app's)",
    ),
    option("--endpoint", help="with several endpoints in the template: simulate only this one (default: every one)"),
    option("--cdk-out", type=Path, default=Path("cdk.out"), help="cdk synth's output (default cdk.out)"),
    option(
        "--traffic",
        action="append",
        metavar="SHAPE|CSV",
        help=f"a built-in shape ({', '.join(SHAPES)}), `all` of them, or a CSV of requests per minute (rows "
        "`requests` or `minute,requests`); repeatable (default: idle-burst, sparse and surge for targets that scale "
        "to zero, surge otherwise)",
    ),
    option(
        "--trace-start",
        metavar="ISO-TIME",
        help="the wall-clock time of every trace's minute 0, e.g. 2026-11-30T00:00:00Z (scheduled actions run by "
        "it; default: a CSV's `# start:` line, else 00:00 UTC on Monday 2026-01-05)",
    ),
    option("--out", type=Path, default=Path("simulation"), help="report folder (default ./simulation)"),
    *(_reading_option(reading) for reading in READINGS),
    option(
        "--attainment",
        type=float,
        help="share of requests that must be answered (default: the profile's SLO attainment)",
    ),
    option(
        "--startup",
        default="typical",
        metavar="typical|budget|SECONDS",
        help="a new unit's download + start-up: typical (the weights at the planner's transfer rates plus vLLM's "
        "start), budget (the plan's timeouts and instance allowance: the slowest start SageMaker accepts), or "
        "seconds (default typical)",
    ),
    option("--instance-launch-seconds", type=float, help="an instance's launch (default 300; budget: 600)"),
    option(
        "--request-seconds",
        type=float,
        help="mean time a request holds a vLLM slot (default: half the profile's p90 SLA)",
    ),
    option(
        "--context-tokens",
        type=float,
        help="tokens each request holds in the KV cache (prompt + answer): a unit then runs at most the requests its "
        "KV cache holds (the plan's KV-cache tokens over this), the rest wait in vLLM's queue; long prompts make "
        "that fewer than max_num_seqs (default: max_num_seqs whatever the length)",
    ),
    option(
        "--service-curve",
        action="append",
        metavar="[ENDPOINT=]FILE",
        help="serve each real-time unit as this measured service curve says (service-curve.json, written by `peagle "
        "capacity --out DIR` for the pair, instance and K it measured): each minute at its load's time per request, "
        "and each request judged against the SLO's TTFT and TPOT; ENDPOINT= gives one endpoint its own (repeatable). "
        "Without one, a unit holds each request --request-seconds and the SLO's bounds are reported not checked",
    ),
    option(
        "--output-tokens",
        type=float,
        help="output tokens per answered request, for cost per 1M (default: half max_tokens)",
    ),
    option(
        "--clients",
        choices=("retry", "once"),
        default="retry",
        help="retry: clients refused 'no capacity' retry as peagle.client does until their cold-start wait is over "
        "(default); once: each request is sent once",
    ),
    option(
        "--cold-start-wait",
        type=float,
        help="how long a retrying client waits for a copy, seconds (default: as peagle.client, "
        + COLD_START_DEFAULT_HELP
        + ")",
    ),
    option("--no-plots", action="store_true", help="tables and summary only"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers,
        "simulate",
        run_simulate,
        _OPTIONS,
        help="replay traffic through the synthesized scaling policies and alarms: requests answered, lost and "
        "paid for, with what to change",
        description="Read the endpoint stack's template (--template, default: the PeagleEndpoint stack in --cdk-out), "
        "find its scalable targets, step and target-tracking policies and alarms, and replay traffic through a "
        "model of what AWS documents (alarm evaluation, repeated Auto Scaling actions, cooldowns, bounds, start-up "
        "delays) with clients that retry during a cold start. Verdicts judge what users got (requests answered, "
        "timed out, refused, expired, the longest wait) against the SLO, then the scaling itself; cost is "
        "instance-hours at the plan's price. Every reading of the rules AWS leaves open runs. Writes simulation.md "
        "(a summary table first, then what to change) and a timeline table and plot per scenario to --out. Exit 0 "
        "every verdict holds, 1 one fails, 2 bad input. docs/simulate.md explains the model.",
    )


def run_simulate(args: argparse.Namespace) -> int:
    from peagle.cli_errors import run_reporting_errors
    from peagle.settings.errors import PeagleError

    return run_reporting_errors(_simulate, args, [(PeagleError, ExitCode.BAD_INPUT)])


def _readings(args: argparse.Namespace) -> list[dict]:
    chosen = []
    for reading in READINGS:
        given = getattr(args, reading.field)
        chosen.append([value for value, _, _ in reading.values] if given == "both" else [reading.value_of(given)])
    return [dict(zip(READING_FIELDS, values, strict=True)) for values in itertools.product(*chosen)]


def _simulate(args: argparse.Namespace) -> int:
    from peagle.cloud_assembly import load_template_file, template_to_deploy
    from peagle.simulate import report, scenarios
    from peagle.simulate.pool_fallback import with_fallbacks
    from peagle.simulate.traffic import SHAPES, TrafficError, from_csv, parse_start

    for name, value in (
        ("--instance-launch-seconds", args.instance_launch_seconds),
        ("--request-seconds", args.request_seconds),
        ("--context-tokens", args.context_tokens),
        ("--output-tokens", args.output_tokens),
        ("--cold-start-wait", args.cold_start_wait),
    ):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise TrafficError(f"{name} must be a number above 0, not {value:g}")
    if args.attainment is not None and not 0 < args.attainment <= 1:
        raise TrafficError(f"--attainment is a share of requests, above 0 and at most 1, not {args.attainment:g}")
    startup, startup_seconds = _startup(args.startup)
    template_path = (
        args.template
        or _template_with_plan(args.cdk_out)
        or template_to_deploy(args.cdk_out, deployment=args.deployment, flag="--template").path
    )
    template = load_template_file(template_path)
    planned = _plans(template, args)
    shapes, traces = [], []
    for item in args.traffic or []:
        if item == "all":
            shapes += [shape for shape in SHAPES if shape not in shapes]
        elif item in SHAPES:
            shapes.append(item)
        elif Path(item).suffix.lower() == ".csv" or Path(item).exists():
            traces.append(from_csv(Path(item)))
        else:
            raise TrafficError(
                f"--traffic {item!r} is neither a built-in shape ({', '.join(SHAPES)}), `all`, nor a CSV file"
            )
    start = parse_start(args.trace_start, "--trace-start") if args.trace_start else None
    if start is not None:
        traces = [replace(trace, start=start) for trace in traces]
    curves = _service_curves(args.service_curve or [], [endpoint for _, _, endpoint in planned])
    results, endpoints = [], []
    # An instance pool's fallback types are named readings of their own (peagle/simulate/pool_fallback.py).
    for plan, door, endpoint, suffix in with_fallbacks(planned):
        before = len(results)
        base = scenarios.base_assumptions(
            plan,
            startup=startup,
            startup_seconds=startup_seconds,
            startup_basis="--startup" if startup_seconds is not None else None,
            instance_launch_seconds=args.instance_launch_seconds,
            request_seconds=args.request_seconds,
            context_tokens=args.context_tokens,
            output_tokens=args.output_tokens,
            clients=args.clients,
            cold_start_wait_seconds=args.cold_start_wait,
            # A measured curve is the measured type's: a fallback reading runs on its own type's estimate.
            service=None if suffix else curves.get(endpoint, curves.get(None)),
        )
        results += scenarios.run(
            template,
            plan,
            door=door,
            endpoint=endpoint,
            shapes=shapes if (shapes or traces) else None,
            traces=traces,
            assumptions=base,
            readings=_readings(args),
            attainment=args.attainment,
            start=start,
            name_suffix=suffix,
        )
        # Each endpoint's section of the report states its own SLO, price and assumptions (report.EndpointResults).
        endpoints.append(report.EndpointResults(endpoint and endpoint + suffix, results[before:]))
    path = report.write(results, args.out, source=str(template_path), plots=not args.no_plots, endpoints=endpoints)
    _print_results(results, endpoints)
    print(f"timelines, plots and the summary: {path}")
    return ExitCode.OK if all(result.passed for result in results) else ExitCode.FAILED


def _print_results(results: list[Result], endpoints: list[EndpointResults]) -> None:
    """The scenario table, the endpoints side by side, every failing verdict with its change, and each endpoint's
    fixed assumptions and what was read from its template."""
    from peagle.simulate import report

    found = report.scenarios(results)
    print("\n".join(table_lines(report.SUMMARY_HEADER, report.summary_rows(found))))
    print()
    print("\n".join(table_lines(report.ENDPOINTS_HEADER, report.endpoint_rows(endpoints, found))))
    for scenario in found:
        for verdict in scenario.first.verdicts:
            if not verdict.passed:
                timeline = scenario.first.timeline
                print(f"FAIL {timeline.setup.name} {timeline.trace.name} ({scenario.readings()}): {verdict.name}")
                print(f"     {verdict.detail}")
                if verdict.fix:
                    print(f"     change: {verdict.fix}")
    for section in endpoints:
        named = f" ({section.name})" if section.name and len(endpoints) > 1 else ""
        print(f"assumptions{named}: {'; '.join(section.assumptions.fixed())}")
        for name, text in report.template_assumptions(section.results):
            print(f"from the template ({name}): {text}")


def _template_with_plan(cdk_out: Path) -> Path | None:
    """The template in ``cdk_out`` that records a P-EAGLE plan (peagle.cloud_assembly.recorded_stack); None when none
    does (an assembly of an earlier peagle, or no assembly: template_to_deploy says what is wrong with cdk_out)."""
    from peagle.cloud_assembly import AssemblyError, recorded_stack
    from peagle.planning.plan_record import PlanRecordError
    from peagle.simulate.scaling_template import SimulationInputError

    try:
        stack = recorded_stack(cdk_out, flag="--template")
    except AssemblyError:
        return None
    except PlanRecordError as error:
        raise SimulationInputError(str(error)) from None
    return stack.path if stack is not None else None


def _plans(template, args: argparse.Namespace) -> list[tuple[Plan, str, str | None]]:
    """(plan, door, endpoint name) of each endpoint to simulate: the plans the template records (every endpoint, or
    --endpoint's), else, for a template of an earlier peagle, the plan of --deployment."""
    from peagle.cli_config import load_cli_config
    from peagle.planning.plan_record import read_records
    from peagle.planning.planner import plan_deployment
    from peagle.simulate.scaling_template import SimulationInputError

    records = read_records(template.body, source=template.source)
    if records:
        if args.deployment:
            print(
                f"note: {template.source} records the plan it was built from; --deployment is not read", file=sys.stderr
            )
        chosen = [record for record in records if args.endpoint in (None, record.endpoint_name)]
        if not chosen:
            names = ", ".join(record.endpoint_name for record in records)
            raise SimulationInputError(f"--endpoint {args.endpoint!r} is not in {template.source} (it has: {names})")
        return [(record.primary, record.door, record.endpoint_name) for record in chosen]
    if args.deployment:
        return [(plan_deployment(load_cli_config(args.deployment, {})), "file", None)]
    raise SimulationInputError(
        f"{template.source} records no P-EAGLE plan (a PeagleEndpoint records the plan it was built from in its "
        "endpoint's Metadata, peagle:plan): synthesize the app again with this peagle, or pass --deployment FILE, "
        "the deployment file an earlier peagle synthesized it from; nothing is assumed in their place"
    )


def _startup(value: str) -> tuple[str, float | None]:
    from peagle.simulate.traffic import TrafficError

    if value in ("typical", "budget"):
        return value, None
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise TrafficError(f"--startup is typical, budget or a number of seconds above 0, not {value!r}")
    return "typical", seconds


def _service_curves(given: list[str], endpoints: list[str | None]) -> dict:
    """--service-curve [ENDPOINT=]FILE values -> {endpoint name (None: every endpoint): ServiceCurve}."""
    from peagle.simulate.service_curve import ServiceCurveError, load_curve
    from peagle.simulate.traffic import TrafficError

    curves = {}
    for item in given:
        name, _, path = item.rpartition("=") if "=" in item and not Path(item).exists() else ("", "", item)
        if name and name not in endpoints:
            known = ", ".join(endpoint for endpoint in endpoints if endpoint) or "none named"
            raise TrafficError(f"--service-curve {item}: no endpoint {name!r} in the template (endpoints: {known})")
        try:
            curves[name or None] = load_curve(Path(path))
        except ServiceCurveError as error:
            raise TrafficError(str(error)) from None
    return curves
