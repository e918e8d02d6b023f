"""Every props snippet `peagle simulate` and `peagle preflight` print for an app made with props is pasted, as printed,
into that app and synthesized: the template has the changed value and every setting the app had (issue 44, item 5).

The apps are the construct's own (docs/library.md), each with settings of its own beside the bounds
(``headroom``, ``gpu_utilization_percent``) so a snippet that drops them is seen. A snippet is the text in
backticks that assigns one of PeagleEndpoint's keywords (``autoscaling=Autoscaling(...)``); it is evaluated with the
names docs/library.md imports, and replaces that keyword of the app.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from aws_cdk import App, Duration, Stack, TimeZone
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

import peagle_cdk
from peagle.cli import main
from peagle.settings import AutoscalingSettings, InferenceComponentSettings, MeasuredCapacity, ScheduledScaling
from peagle.settings.errors import ConfigError
from peagle.settings.props_values import autoscaling_value, components_value, rollout_value, routing_value
from peagle.settings.refs import Door
from peagle.simulate.scenarios import SETTING_KEYS
from peagle_cdk import Autoscaling, ModelWeights, PeagleEndpoint, ScheduledCapacity
from peagle_cdk.endpoint_props import Rollout, Routing

DAY = Path(__file__).resolve().parents[2] / "examples" / "production-loop" / "day.csv"
ONE_READING = ["--conflicts", "largest", "--cooldown", "counted", "--updates", "at-once", "--refused-counted", "yes"]
# The app's own settings that no suggestion changes: every snippet must keep them.
OWN = {"headroom": 0.7, "gpu_utilization_percent": 70}
SCALABLE_TARGET = "AWS::ApplicationAutoScaling::ScalableTarget"
# What a snippet is evaluated with: the library's names, as docs/library.md imports them.
NAMES = {**{name: getattr(peagle_cdk, name) for name in peagle_cdk.__all__}, "Duration": Duration, "TimeZone": TimeZone}
NAMES |= {"Rollout": Rollout, "Routing": Routing}
SNIPPET = re.compile(r"`([a-z_]+)=([^`]+)`")


def _props(stack: Stack, **props) -> dict:
    return {
        "name": "chat",
        "model": "gpt-oss-20b",
        "instance_type": "ml.g6e.xlarge",
        "weights": ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/"),
        **props,
    }


def _app(out: Path, **props) -> Path:
    app = App(outdir=str(out))
    stack = Stack(app, "Service")
    PeagleEndpoint(stack, "Chat", **_props(stack, **props))
    app.synth()
    return out


def _synthesized_with(pasted: dict[str, str], **props) -> Template:
    """The app with each ``keyword=code`` of ``pasted`` (one suggestion) pasted over its own ``keyword``."""
    stack = Stack(App(), "Pasted")
    values = {keyword: eval(code, dict(NAMES)) for keyword, code in pasted.items()}  # noqa: S307
    PeagleEndpoint(stack, "Chat", **_props(stack, **{**props, **values}))
    return Template.from_stack(stack)


def _suggestions(printed: str) -> list[dict[str, str]]:
    """Each suggestion's snippets: `keyword=code`, several joined by " and " pasted together."""
    found = []
    for run in re.findall(r"`[a-z_]+=[^`]+`(?: and `[a-z_]+=[^`]+`)*", printed):
        pasted = {keyword: code for keyword, code in SNIPPET.findall(run)}
        if pasted not in found:
            found.append(pasted)
    return found


def _assert_runs_and_keeps(
    printed: str, app: Autoscaling, own: dict = OWN, **props
) -> list[tuple[Autoscaling, Template]]:
    """Each suggestion printed synthesizes; an autoscaling one sets the bounds it says and keeps the app's ``own``
    settings."""
    assert "..." not in "".join(re.findall(r"`[^`]*`", printed)), printed  # nothing to fill in, in code
    found = _suggestions(printed)
    assert found, printed
    pasted = []
    for suggestion in found:
        template = _synthesized_with(suggestion, **{"autoscaling": app, **props})
        if "autoscaling" not in suggestion:
            continue
        value = eval(suggestion["autoscaling"], dict(NAMES))  # noqa: S307
        target = template.find_resources(SCALABLE_TARGET)
        if value is None:  # autoscaling off: nothing registered
            assert target == {}, suggestion
            continue
        pasted.append((value, template))
        (properties,) = [resource["Properties"] for resource in target.values()]
        assert (properties["MinCapacity"], properties["MaxCapacity"]) == (value.min_capacity, value.max_capacity)
        for name, kept in own.items():
            assert getattr(value, name) == kept, suggestion
    return pasted


@pytest.mark.parametrize("own", [{}, OWN], ids=["as-test_simulate_cli", "with-own-settings"])
def test_simulates_props_suggestions_for_a_library_app_synthesize_with_the_bounds_kept(tmp_path, capsys, own):
    """The library-app scenario of test_simulate_cli (one instance at most, a surge), as there and with settings of
    its own: each suggestion (a higher maximum, a floor with it, more headroom, a schedule) pasted into the app."""
    app = Autoscaling(min_capacity=1, max_capacity=1, **own)
    big = {"model": "gpt-oss-120b", "instance_type": "ml.g6e.12xlarge"}
    cdk_out = _app(tmp_path / "cdk.out", autoscaling=app, **big)
    argv = ["simulate", "--cdk-out", str(cdk_out), "--traffic", "surge", "--out", str(tmp_path / "r"), "--no-plots"]
    assert main(argv) == 1
    printed = capsys.readouterr().out
    pasted = _assert_runs_and_keeps(printed, app, own, **big)
    assert any(value.min_capacity == 1 and (value.max_capacity or 0) > 1 for value, _ in pasted), printed


def test_a_floor_and_a_maximum_are_one_whole_prop_with_the_instance_count_the_floor_needs():
    """Two settings of one prop are one snippet (two whole props would undo each other); a variant's floor above the
    instance count the deploy starts comes with that count, which the settings model requires."""
    stack = Stack(App(), "Recorded")
    app = Autoscaling(min_capacity=1, max_capacity=2, **OWN)
    keys = replace(
        SETTING_KEYS["instances"], recorded=PeagleEndpoint(stack, "Chat", **_props(stack, autoscaling=app)).plan
    )
    printed = keys.spell_changes(Door.PROPS, {"min_units": 3, "max_units": 5})
    assert printed.startswith(
        "`autoscaling=Autoscaling(min_capacity=3, max_capacity=5, headroom=0.7"
    ) and printed.endswith(" and `instance_count=3`"), printed
    assert keys.spell_changes(Door.FILE, {"min_units": 3, "max_units": 5}) == (
        "`autoscaling.min_capacity: 3` and `autoscaling.max_capacity: 5` and `instance.count: 3`"
    )
    assert keys.spell("target", Door.PROPS) == "target_concurrency of Autoscaling"  # named, not `...` to fill in
    (suggestion,) = _suggestions(printed)
    template = _synthesized_with(suggestion, autoscaling=app)
    template.has_resource_properties(SCALABLE_TARGET, {"MinCapacity": 3, "MaxCapacity": 5})
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig", {"ProductionVariants": [Match.object_like({"InitialInstanceCount": 3})]}
    )


def test_a_proposed_schedule_synthesizes_with_the_apps_maximum_kept(tmp_path, capsys):
    """The issue's case: an app with max_capacity=4 on a working day; the schedule simulate proposes, pasted as
    printed, keeps the maximum 4 (not the default 2) and registers the scheduled actions it names."""
    app = Autoscaling(min_capacity=1, max_capacity=4, **OWN)
    cdk_out = _app(tmp_path / "cdk.out", autoscaling=app)
    argv = ["simulate", "--cdk-out", str(cdk_out), "--traffic", str(DAY), "--no-plots", *ONE_READING]
    main([*argv, "--out", str(tmp_path / "r")])
    printed = capsys.readouterr().out
    pasted = _assert_runs_and_keeps(printed, app)
    scheduled = [(value, template) for value, template in pasted if value.schedules]
    assert scheduled, printed
    for value, template in scheduled:
        assert (value.max_capacity or 0) >= 4 and value.min_capacity == 1
        actions = [Match.object_like({"Schedule": schedule.settings().schedule}) for schedule in value.schedules]
        template.has_resource_properties(SCALABLE_TARGET, {"ScheduledActions": Match.array_with(actions)})


def test_preflights_props_steps_synthesize_with_the_apps_settings_kept(tmp_path, capsys):
    """test_preflight_library_app's change of instance type under autoscaling: step 3 re-enables autoscaling with the
    app's own bounds and settings, not `Autoscaling(...)`."""
    app = Autoscaling(min_capacity=1, max_capacity=3, **OWN)
    deployed = _app(tmp_path / "deployed", autoscaling=app) / "Service.template.json"
    new = _app(tmp_path / "new", autoscaling=app, instance_type="ml.g6e.12xlarge")
    assert main(["preflight", "--cdk-out", str(new), "--deployed-template", str(deployed)]) == 1
    printed = capsys.readouterr().out
    pasted = _assert_runs_and_keeps(printed, app)
    assert [(value.min_capacity, value.max_capacity) for value, _ in pasted] == [(1, 3)], printed


def test_preflight_names_a_changed_routing_by_the_apps_whole_routing_prop(tmp_path, capsys):
    """Routing changes replace the endpoint config (a note): named by the app's new prop, not `Routing...(...)`."""
    deployed = _app(tmp_path / "deployed") / "Service.template.json"
    new = _app(tmp_path / "new", routing=Routing.random())
    assert main(["preflight", "--cdk-out", str(new), "--deployed-template", str(deployed)]) == 0
    printed = capsys.readouterr().out
    assert "(routing=Routing.random())" in printed and "..." not in printed, printed


# --- the value types' writers, both ways --------------------------------------------------------------


@pytest.mark.parametrize(
    "section",
    [
        AutoscalingSettings(),
        AutoscalingSettings(
            min_capacity=2,
            max_capacity=4,
            target_concurrency=12.5,
            gpu_utilization_target_percent=None,
            latency_step_scaling=False,
            scale_in_cooldown_seconds=600,
            measured_capacity=MeasuredCapacity(
                requests_per_second=1.5, concurrency=6, headroom=0.8, slo="s", source="x"
            ),
            schedules=[
                ScheduledScaling(name="Night", schedule="cron(0 20 * * ? *)", min_capacity=1, max_capacity=2),
                ScheduledScaling(
                    name="Day", schedule="cron(0 7 * * ? *)", min_capacity=2, max_capacity=4, time_zone="Europe/Berlin"
                ),
            ],
        ),
        AutoscalingSettings(min_capacity=1, max_capacity=3, max_requests_per_second=2.0, target="invocations"),
    ],
)
def test_an_autoscaling_section_is_written_as_the_prop_that_makes_it(section):
    assert eval(autoscaling_value(section), dict(NAMES)).settings() == section  # noqa: S307


def test_the_other_props_are_written_as_the_values_that_make_them():
    components = InferenceComponentSettings(
        min_instances=1, max_instances=3, initial_copies=2, scale_to_zero_after_idle_minutes=40, placement="SPREAD"
    )
    assert eval(components_value(components), dict(NAMES)).section.inference_components == components  # noqa: S307
    for rollout in (
        Rollout.none(),
        Rollout.rolling(batch_percent=50, wait=Duration.minutes(5)),
        Rollout.blue_green(traffic="linear", max_execution=Duration.hours(3), auto_rollback=False),
    ):
        assert eval(rollout_value(rollout.settings()), dict(NAMES)).settings() == rollout.settings()  # noqa: S307
    for routing in (
        Routing.least_outstanding_requests(),
        Routing.random(),
        Routing.prefix_aware(prefix_length=2048, concurrency_threshold=8),
    ):
        assert eval(routing_value(routing.settings()), dict(NAMES)).settings() == routing.settings()  # noqa: S307


# --- ScheduledCapacity takes the expression it is given -----------------------------------------------


def test_the_issues_schedule_snippet_synthesizes():
    """As simulate printed it before: a cron string for ``schedule`` raised AttributeError inside the construct."""
    stack = Stack(App(), "Pasted")
    schedule = ScheduledCapacity(name="RaiseFloor1108", schedule="cron(38 11 * * ? *)", min_capacity=2, max_capacity=4)
    PeagleEndpoint(stack, "Chat", **_props(stack, autoscaling=Autoscaling(max_capacity=4, schedules=(schedule,))))
    Template.from_stack(stack).has_resource_properties(
        SCALABLE_TARGET,
        {
            "MaxCapacity": 4,
            "ScheduledActions": [
                Match.object_like(
                    {"Schedule": "cron(38 11 * * ? *)", "ScalableTargetAction": {"MinCapacity": 2, "MaxCapacity": 4}}
                )
            ],
        },
    )
    assert isinstance(schedule.schedule, appscaling.Schedule)


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {"schedule": 42},
            "ScheduledCapacity 'Night': schedule must be an appscaling.Schedule or its expression as a "
            "string, e.g. 'cron(0 20 * * ? *)'",
        ),
        ({"time_zone": "Europe/Berlin"}, "time_zone must be a TimeZone, e.g. TimeZone.EUROPE_BERLIN, not str"),
        ({"min_capacity": "1"}, "min_capacity must be a whole number, not str '1'"),
    ],
)
def test_a_schedule_prop_of_the_wrong_type_is_a_type_error_naming_it(props, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        ScheduledCapacity(
            **{"name": "Night", "schedule": "cron(0 20 * * ? *)", "min_capacity": 1, "max_capacity": 2, **props}
        )


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("every night", "ScheduledCapacity(schedule=...): String should match pattern"),
        ("cron(0 20 * * * *)", "gives both day-of-month and day-of-week; one of them must be ?"),
    ],
)
def test_a_schedule_string_application_auto_scaling_would_refuse_is_refused_on_its_line(schedule, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        ScheduledCapacity(name="Night", schedule=schedule, min_capacity=1, max_capacity=2)
