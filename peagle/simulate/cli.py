"""`peagle simulate`: replay traffic through the scaling policies of the synthesized endpoint stack.

Exit codes: 0 every property holds under every assumption run; 1 a property fails; 2 bad input
(a template or trace that cannot be read, a deployment that does not plan).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from peagle.config import DEFAULT_DEPLOYMENT_FILE

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def register(subparsers: argparse._SubParsersAction) -> None:
    from peagle.simulate.traffic import SHAPES

    parser = subparsers.add_parser(
        "simulate",
        help="replay traffic through the synthesized scaling policies and alarms; verdicts per property",
        description="Read the endpoint stack's template (--template, default: the PeagleEndpoint stack in --cdk-out), "
        "find its scalable targets, step and target-tracking policies and alarms, and replay traffic through a "
        "model of what AWS documents (alarm evaluation, repeated Auto Scaling actions, cooldowns, bounds, start-up "
        "delays from the plan). The assumptions AWS leaves open that decide the outcome run both ways. Writes a "
        "timeline table and plot per scenario and simulation.md to --out. Exit 0 all properties hold, 1 one fails, "
        "2 bad input. docs/simulate.md explains the model.",
    )
    parser.add_argument(
        "--deployment",
        help=f"the deployment YAML the template was synthesized from (default {DEFAULT_DEPLOYMENT_FILE})",
    )
    parser.add_argument("--template", type=Path, help="the endpoint stack's template (JSON or YAML)")
    parser.add_argument("--cdk-out", type=Path, default=Path("cdk.out"), help="cdk synth's output (default cdk.out)")
    parser.add_argument(
        "--traffic",
        action="append",
        metavar="SHAPE|CSV",
        help=f"a built-in shape ({', '.join(SHAPES)}) or a CSV of requests per minute; repeatable "
        "(default: idle-burst and spike for targets that scale to zero, spike otherwise)",
    )
    parser.add_argument("--out", type=Path, default=Path("simulation"), help="report folder (default ./simulation)")
    parser.add_argument(
        "--refused-counted",
        choices=("both", "yes", "no"),
        default="both",
        help="whether a request refused for lack of capacity counts in Invocations (AWS does not say; default both)",
    )
    parser.add_argument(
        "--conflicts",
        choices=("both", "largest", "in-turn"),
        default="both",
        help="alarms acting in the same minute: AWS's largest-capacity rule, or one after another (default both)",
    )
    parser.add_argument(
        "--startup-seconds", type=float, help="a new unit's download + start-up (default: the plan's timeouts)"
    )
    parser.add_argument("--instance-launch-seconds", type=float, help="an instance's launch (default 300)")
    parser.add_argument(
        "--request-seconds",
        type=float,
        help="mean time a request holds a vLLM slot (default: half the profile's p90 SLA)",
    )
    parser.add_argument("--no-plots", action="store_true", help="tables and summary only")
    parser.set_defaults(handler=run_simulate)


def run_simulate(args: argparse.Namespace) -> int:
    from peagle.errors import PeagleError

    try:
        return _simulate(args)
    except PeagleError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _simulate(args: argparse.Namespace) -> int:
    from peagle.cli_config import load_cli_config
    from peagle.planner import plan_deployment
    from peagle.preflight.cli import _new_template
    from peagle.preflight.template import load_template_file
    from peagle.simulate import report, scenarios
    from peagle.simulate.traffic import SHAPES, TrafficError, from_csv

    for name, value in (
        ("--startup-seconds", args.startup_seconds),
        ("--instance-launch-seconds", args.instance_launch_seconds),
        ("--request-seconds", args.request_seconds),
    ):
        if value is not None and not value > 0:
            raise TrafficError(f"{name} must be a number of seconds above 0, not {value:g}")
    config = load_cli_config(args.deployment, {})
    plan = plan_deployment(config)
    template_path, _ = _new_template(
        argparse.Namespace(new=args.template, cdk_out=args.cdk_out, deployment=args.deployment), flag="--template"
    )
    template = load_template_file(template_path)
    shapes, traces = [], []
    for item in args.traffic or []:
        if item in SHAPES:
            shapes.append(item)
        elif Path(item).suffix.lower() == ".csv" or Path(item).exists():
            traces.append(from_csv(Path(item)))
        else:
            raise TrafficError(f"--traffic {item!r} is neither a built-in shape ({', '.join(SHAPES)}) nor a CSV file")
    base = scenarios.base_assumptions(
        plan,
        startup_seconds=args.startup_seconds,
        instance_launch_seconds=args.instance_launch_seconds,
        request_seconds=args.request_seconds,
    )
    counted = {"both": (False, True), "yes": (True,), "no": (False,)}[args.refused_counted]
    conflicts = {"both": ("largest", "in-turn"), "largest": ("largest",), "in-turn": ("in-turn",)}[args.conflicts]
    results = []
    for refused in counted:
        for conflict in conflicts:
            results += scenarios.run(
                template,
                plan,
                shapes=shapes if (shapes or traces) else None,
                traces=traces,
                assumptions=base.but(refused_count_as_invocations=refused, conflicts=conflict),
                both_ways=False,
            )
    results.sort(key=lambda r: (r.timeline.setup.target.name, r.timeline.trace.name, r.timeline.assumptions.label()))
    path = report.write(results, args.out, source=str(template_path), plots=not args.no_plots)
    for result in results:
        timeline = result.timeline
        failed = [v for v in result.verdicts if not v.passed]
        print(
            f"{'PASS' if not failed else 'FAIL'}  {timeline.setup.target.name}  {timeline.trace.name:<10}  "
            f"{timeline.assumptions.label()}"
        )
        for verdict in failed:
            print(f"      fails: {verdict.name}: {verdict.detail}")
    print(f"assumptions: {'; '.join(base.described()[2:])}")
    print(f"timelines, plots and the summary: {path}")
    return EXIT_OK if all(result.passed for result in results) else EXIT_FAILED
