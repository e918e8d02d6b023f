"""`peagle simulate` as a user runs it: on cdk.out, with built-in and CSV traffic, and with bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3

from peagle.catalog import load_catalog
from peagle.cli import main
from peagle.planning.plan_record import METADATA_KEY
from peagle.settings.refs import CLOSE, OPEN, Door
from peagle.simulate.scenarios import SETTING_KEYS
from peagle_cdk import Autoscaling, ModelWeights, PeagleEndpoint


def _base(found, out) -> list[str]:
    return ["simulate", "--deployment", str(found.deployment_file), "--cdk-out", str(found.cdk_out), "--out", str(out)]


def test_simulate_writes_the_summary_table_first_then_timelines_and_plots(synthesized, tmp_path, capsys):
    found = synthesized("default")
    trace = tmp_path / "office-hours.csv"
    trace.write_text("minute,requests\n" + "".join(f"{m},{0 if m < 20 else 300}\n" for m in range(90)))
    out = tmp_path / "report"
    code = main([*_base(found, out), "--traffic", "surge", "--traffic", str(trace)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    header, *rows = printed.splitlines()
    assert header.split()[:4] == ["target", "traffic", "readings", "answered"]
    (surge,) = [row for row in rows if row.split()[:2] == ["peagle-endpoint/Primary", "surge"]]
    assert surge.split()[2:4] == ["every", "reading"] and "PASS" in surge and "$" in surge
    summary = (out / "simulation.md").read_text()
    lines = summary.splitlines()
    assert lines[0].startswith("# Scaling simulation of") and lines[4].startswith("| target | traffic | readings |")
    assert "## What to change" not in summary and "## Assumptions" in summary
    assert (
        "refused requests do not count in Invocations" not in summary.split("## Scenarios")[0].split("| verdict |")[0]
    )
    assert "on-demand, $2.34 per instance-hour" in summary
    (table,) = out.glob("peagle-endpoint-primary-office-hours-*.csv")
    rows = list(csv.DictReader(table.open()))
    assert len(rows) == 90 and {"desired", "serving", "refused", "timed_out", "answered_late", "actions"} <= set(
        rows[0]
    )
    assert max(int(row["desired"]) for row in rows) == 2  # scaled out to the variant's maximum
    assert any("ConcurrencyPerInstance" in row["actions"] for row in rows)
    assert (out / f"{table.stem}.png").stat().st_size > 10_000


def test_a_failing_run_exits_1_and_says_what_to_change_with_its_cost(synthesized, tmp_path, capsys):
    found = synthesized("default")
    out = tmp_path / "report"
    code = main([*_base(found, out), "--traffic", "spike", "--conflicts", "largest", "--no-plots"])
    printed = capsys.readouterr().out
    assert code == 1
    assert "FAIL peagle-endpoint/Primary spike" in printed
    assert (
        "change: " in printed
        and "set `autoscaling.min_capacity: 2` and `instance.count: 2`; simulated with it: answered 100.0%" in printed
    )
    summary = (out / "simulation.md").read_text()
    assert "**Change:**" in summary and "set `autoscaling.min_capacity: 2` and `instance.count: 2`" in summary
    assert OPEN not in printed + summary and CLOSE not in printed + summary  # every setting spelled
    assert summary.index("| target |") < summary.index("## What to change") < summary.index("## Assumptions")
    assert "(8 of 8)" not in summary and "every reading" in summary  # 8 readings run, all one timeline
    assert not list(out.glob("*.png"))


def test_the_readings_can_be_pinned_and_the_budget_start_chosen(synthesized, tmp_path, capsys):
    found = synthesized("scale-to-zero")
    out = tmp_path / "report"
    arguments = ["--traffic", "sparse", "--refused-counted", "no", "--conflicts", "in-turn", "--cooldown", "blocked"]
    arguments += [
        "--updates",
        "after-update",
        "--data-cache",
        "on-instance",
        "--startup",
        "budget",
        "--clients",
        "once",
    ]
    main([*_base(found, out), *arguments, "--no-plots"])
    printed = capsys.readouterr().out
    summary = (out / "simulation.md").read_text()
    # One reading: its label, not "every reading".
    label = "refused not counted, conflicts in-turn, cooldown blocked, updates after-update, data cache on-instance"
    assert f"| {label} |" in summary
    assert "a new unit serves after 1653 s of download + start-up (the plan's download and start-up timeouts" in summary
    assert "clients send each request once" in summary
    # The data cache (on by default, read from the template's DataCacheConfig): the question, and the cached start
    # (the budget's start-up timeout alone) with its source, in the report and in what the command prints.
    assert "- A component whose template caches its data (DataCacheConfig.EnableCaching" in summary
    for text in (summary, printed):
        assert (
            "a copy added on an instance that has hosted one serves after 1053 s (the model download skipped)" in text
        )
        assert "instance-store-based caching couldn't help" in text


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--traffic", "tsunami"],
            "neither a built-in shape (idle-burst, surge, daily, sparse, ramp, sawtooth, spike,",
        ),
        (["--request-seconds", "0"], "--request-seconds must be a number above 0"),
        (["--startup", "soon"], "--startup is typical, budget or a number of seconds above 0, not 'soon'"),
        (["--attainment", "1.5"], "--attainment is a share of requests, above 0 and at most 1, not 1.5"),
        (["--cdk-out", "{tmp}/nowhere"], "(or `make synth`), or your own app's `cdk synth`, first, or pass --template"),
        (["--traffic", "{tmp}/bad.csv"], "bad.csv:3: 'x' is not a number of requests"),
        (["--traffic", "{tmp}/unsorted.csv"], "unsorted.csv:3: minute 2 comes after minute 5"),
        (["--traffic", "{tmp}/latin1.csv"], "latin1.csv:2: not UTF-8 text"),
        (["--service-curve", "{tmp}/bad.csv"], "not a service curve (schema peagle-service-curve/1"),
        (["--service-curve", "chat={tmp}/bad.csv"], "no endpoint 'chat' in the template"),
    ],
    ids=[
        "unknown shape",
        "zero request time",
        "bad startup",
        "attainment",
        "no cdk.out",
        "bad csv row",
        "unsorted",
        "latin-1",
        "not a curve",
        "curve for an unknown endpoint",
    ],
)
def test_bad_input_exits_2_with_what_to_do(synthesized, tmp_path, capsys, arguments, message):
    found = synthesized("default")
    (tmp_path / "bad.csv").write_text("requests\n5\nx\n")
    (tmp_path / "unsorted.csv").write_text("minute,requests\n5,1\n2,1\n")
    (tmp_path / "latin1.csv").write_bytes("requests\ncafé\n".encode("latin-1"))
    arguments = [argument.replace("{tmp}", str(tmp_path)) for argument in arguments]
    base = ["simulate", "--deployment", str(found.deployment_file), "--out", str(tmp_path / "out")]
    if "--cdk-out" not in arguments:
        base += ["--cdk-out", str(found.cdk_out)]
    assert main(base + arguments) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err


# --- any app's template: the plan it records ------------------------------------------------------------------


def _without_recorded_plans(template: Path, copy: Path) -> Path:
    body = json.loads(template.read_text())
    for resource in body["Resources"].values():
        (resource.get("Metadata") or {}).pop(METADATA_KEY, None)
    copy.write_text(json.dumps(body))
    return copy


def test_a_template_without_a_recorded_plan_is_refused_not_given_defaults(synthesized, tmp_path, capsys):
    """An earlier peagle's template records no plan: simulate says what to do instead of simulating the default
    deployment's pair and instance as it did."""
    bare = _without_recorded_plans(synthesized("default").template, tmp_path / "old.template.json")
    out = ["--out", str(tmp_path / "out"), "--no-plots"]
    assert main(["simulate", "--template", str(bare), *out]) == 2
    error = capsys.readouterr().err
    assert "records no P-EAGLE plan" in error and "pass --deployment FILE" in error and "nothing is assumed" in error
    assert main(["simulate", "--template", str(bare), "--deployment", str(tmp_path / "nope.yaml"), *out]) == 2
    assert "nope.yaml' not found; pass an existing file with --deployment <path>" in capsys.readouterr().err
    found = synthesized("default")
    assert main(["simulate", "--template", str(bare), "--deployment", str(found.deployment_file), *out]) == 0


def test_a_library_apps_template_is_simulated_with_its_own_plan_and_advised_in_props(tmp_path, capsys):
    """gpt-oss-120b on ml.g6e.12xlarge from the construct's props, no deployment file anywhere: the simulation
    prices that instance ($13.12 an hour, not the default pair's ml.g6e.xlarge at $2.34) and names the props to
    change."""
    app = App(outdir=str(tmp_path / "cdk.out"))
    stack = Stack(app, "Service")
    PeagleEndpoint(
        stack,
        "Big",
        name="big",
        model="gpt-oss-120b",
        instance_type="ml.g6e.12xlarge",
        weights=ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-120b/"),
        autoscaling=Autoscaling(min_capacity=1, max_capacity=1),
    )
    app.synth()
    out = tmp_path / "report"
    code = main(["simulate", "--cdk-out", str(tmp_path / "cdk.out"), "--traffic", "surge", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 1, printed  # one instance at most cannot carry a surge
    summary = (out / "simulation.md").read_text()
    price = load_catalog().instances["ml.g6e.12xlarge"].price_per_hour_usd
    assert f"on-demand, ${price:,.2f} per instance-hour" in summary
    # The whole prop, the app's other settings kept (tests/simulate/test_printed_snippets_run.py pastes each one).
    assert "the peak asks for 614: raise the maximum to 3" in printed
    assert (
        "keep headroom: set `autoscaling=Autoscaling(min_capacity=2, max_capacity=3)` and `instance_count=2`" in printed
    )
    assert "or lower target_concurrency of Autoscaling so scale-out starts earlier" in printed
    assert "`autoscaling=Autoscaling(min_capacity=2, max_capacity=3)`" in summary
    assert "autoscaling.max_capacity" not in printed + summary
    assert OPEN not in printed + summary and CLOSE not in printed + summary  # every setting spelled


@pytest.mark.parametrize(
    ("kind", "key", "value", "file", "props"),
    [
        ("copies", "min_units", (1,), "`autoscaling.min_capacity: 1`", "`Autoscaling(min_capacity=1)`"),
        (
            "copies",
            "idle_minutes",
            (40,),
            "`endpoint.inference_components.scale_to_zero_after_idle_minutes: 40`",
            "`EndpointMode.inference_components(scale_to_zero_after=Duration.minutes(40))`",
        ),
        (
            "copies",
            "max_instances",
            (3,),
            "`endpoint.inference_components.max_instances: 3`",
            "`EndpointMode.inference_components(max_instances=3)`",
        ),
        (
            "async",
            "min_units",
            (1,),
            "`async_inference.min_instances: 1`",
            "`min_instances=1` in the `add_async_endpoint` call (its other arguments kept)",
        ),
        (
            "async",
            "target",
            (),
            "`async_inference.target_backlog_per_instance`",
            "target_backlog_per_instance of add_async_endpoint",
        ),
        (
            "instances",
            "scale_in_cooldown",
            (),
            "`autoscaling.scale_in_cooldown_seconds`",
            "scale_in_cooldown of Autoscaling",
        ),
        (
            "async",
            "scale_in_cooldown",
            (),
            "`autoscaling.scale_in_cooldown_seconds`",
            "scale_in_cooldown of add_async_endpoint",
        ),
        (
            "async",
            "scale_in_cooldown",
            (300,),
            "`autoscaling.scale_in_cooldown_seconds: 300`",
            "`scale_in_cooldown=Duration.seconds(300)` in the `add_async_endpoint` call (its other arguments kept)",
        ),
    ],
)
def test_the_advice_names_each_setting_as_the_door_that_made_the_endpoint_does(kind, key, value, file, props):
    """The file's key, spelled for the props from the settings model's metadata (peagle/settings/words.py); a setting
    named without a value is words, not code with a `...` to fill in. (With the app's recorded plan, a props value is
    the whole prop: tests/simulate/test_printed_snippets_run.py.)"""
    keys = SETTING_KEYS[kind]
    assert keys.spell(key, Door.FILE, *value) == file
    assert keys.spell(key, Door.PROPS, *value) == props


def test_each_endpoint_of_a_template_is_simulated_with_its_own_plan(tmp_path, capsys):
    app = App(outdir=str(tmp_path / "cdk.out"))
    stack = Stack(app, "Service")
    bucket = s3.Bucket(stack, "Weights")
    for id, model, instance in (("Chat", "gpt-oss-20b", "ml.g6e.xlarge"), ("Big", "gpt-oss-120b", "ml.g6e.12xlarge")):
        PeagleEndpoint(
            stack,
            id,
            name=id.lower(),
            model=model,
            instance_type=instance,
            weights=ModelWeights.from_bucket(bucket, f"models/{model}/"),
        )
    app.synth()
    out = tmp_path / "report"
    main(["simulate", "--cdk-out", str(tmp_path / "cdk.out"), "--traffic", "surge", "--out", str(out), "--no-plots"])
    printed = capsys.readouterr().out
    targets = {row.split()[0] for row in printed.splitlines()[1:] if row.split() and row.split()[1] == "surge"}
    assert targets == {"chat-endpoint/Primary", "big-endpoint/Primary"}
    assert "assumptions (chat-endpoint):" in printed and "assumptions (big-endpoint):" in printed
    code = main(
        ["simulate", "--cdk-out", str(tmp_path / "cdk.out"), "--endpoint", "nope", "--out", str(out), "--no-plots"]
    )
    assert code == 2 and "--endpoint 'nope' is not in" in capsys.readouterr().err
