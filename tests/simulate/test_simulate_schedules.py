"""Scheduled actions: the simulator runs a template's at the times they name (Application Auto Scaling's
semantics, peagle/settings/schedules.py), and on a day-shaped trace proposes a schedule that meets the SLO for
less than a floor all day; the proposal, applied to the deployment file, passes `peagle simulate`."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from peagle.cli import main
from peagle.cloud_assembly import parse_template
from peagle.planning.planner import plan_deployment
from peagle.settings import load_deployment_config
from peagle.settings.schedules import ScheduledAction, ScheduleError
from peagle.simulate.scaling_template import SCALABLE_TARGET, SimulationInputError, scaling_of
from peagle.simulate.scenarios import run
from peagle.simulate.traffic import DEFAULT_START, Trace, TrafficError, from_csv

ONE_READING = ["--conflicts", "largest", "--cooldown", "counted", "--updates", "at-once", "--refused-counted", "yes"]


def _with_actions(found, actions):
    body = copy.deepcopy(json.loads(found.template.read_text()))
    for resource in body["Resources"].values():
        if resource["Type"] == SCALABLE_TARGET:
            resource["Properties"]["ScheduledActions"] = actions
    return parse_template(body, source=str(found.template))


def _action(name, schedule, low, high, **more):
    return {
        "ScheduledActionName": name,
        "Schedule": schedule,
        "ScalableTargetAction": {"MinCapacity": low, "MaxCapacity": high},
        **more,
    }


def _timeline(found, template, trace):
    plan = plan_deployment(load_deployment_config(str(found.deployment_file), {}))
    return run(template, plan, traces=[trace], readings=[{}])[0].timeline


def test_a_templates_scheduled_action_moves_the_bounds_at_its_time_and_the_policies_act_within_them(synthesized):
    found = synthesized("default")
    template = _with_actions(
        found,
        [_action("MorningFloor", "cron(0 7 * * ? *)", 2, 2), _action("EveningFloor", "cron(0 9 * * ? *)", 1, 2)],
    )
    minutes = _timeline(found, template, Trace("quiet", (1.0,) * 720)).minutes
    assert [m.desired for m in minutes[418:421]] == [1, 1, 2]  # 07:00 UTC is minute 420
    assert minutes[420].actions == ["scheduled MorningFloor: bounds 2-2: 1 -> 2"]
    assert (minutes[430].floor, minutes[430].serving) == (2, 1)  # asked for at 07:00, still starting
    assert all(m.desired == 2 for m in minutes[420:540])  # the quiet load's scale-in is held by the floor
    assert minutes[540].floor == 1 and minutes[545].desired == 1  # back to the policies after 09:00


def test_a_schedule_in_a_time_zone_follows_its_daylight_saving():
    action = ScheduledAction("Open", "cron(0 7 * * ? *)", 2, 4, time_zone="Europe/Berlin")
    january, july = datetime(2026, 1, 5, tzinfo=UTC), datetime(2026, 7, 6, tzinfo=UTC)
    assert action.runs_at(january.replace(hour=6), january)  # CET, UTC+1
    assert not action.runs_at(january.replace(hour=5), january)
    assert action.runs_at(july.replace(hour=5), july)  # CEST, UTC+2


@pytest.mark.parametrize(
    ("schedule", "runs", "does_not"),
    [
        ("cron(*/15 9-17 ? * MON-FRI *)", datetime(2026, 1, 5, 9, 45), datetime(2026, 1, 10, 9, 45)),  # Mon / Sat
        ("cron(30 6 ? * 2 *)", datetime(2026, 1, 5, 6, 30), datetime(2026, 1, 6, 6, 30)),  # 2 = MON
        ("cron(0 0 1 JAN,JUL ? 2026)", datetime(2026, 7, 1), datetime(2027, 1, 1)),
        ("rate(2 hours)", datetime(2026, 1, 5, 4), datetime(2026, 1, 5, 3)),
        ("at(2026-01-05T12:30:00)", datetime(2026, 1, 5, 12, 30), datetime(2026, 1, 6, 12, 30)),
    ],
)
def test_cron_rate_and_at_expressions_run_when_aws_documents(schedule, runs, does_not):
    action = ScheduledAction("A", schedule, 1, 2)
    assert action.runs_at(runs.replace(tzinfo=UTC), DEFAULT_START)
    assert not action.runs_at(does_not.replace(tzinfo=UTC), DEFAULT_START)


@pytest.mark.parametrize(
    ("schedule", "time_zone", "message"),
    [
        ("cron(0 7 L * ? *)", "UTC", "L, W and # are not"),
        ("cron(0 7 * * * *)", "UTC", "one of them must be ?"),
        ("cron(0 7 * *)", "UTC", "has 4 fields"),
        ("cron(0 25 * * ? *)", "UTC", "hours '25' is outside 0-23"),
        ("rate(0 minutes)", "UTC", "whole value >= 1"),
        ("every day", "UTC", "is not at(yyyy-mm-ddThh:mm:ss)"),
        ("cron(0 7 * * ? *)", "Mars/Olympus", "not an IANA name"),
    ],
)
def test_a_schedule_the_simulator_cannot_evaluate_is_refused_naming_the_action(
    synthesized, schedule, time_zone, message
):
    with pytest.raises(ScheduleError, match=re.escape(message)):
        ScheduledAction("Odd", schedule, 1, 2, time_zone=time_zone).check()
    template = _with_actions(synthesized("default"), [_action("Odd", schedule, 1, 2, Timezone=time_zone)])
    with pytest.raises(SimulationInputError, match=r"ScheduledActions\[0\].*Odd|Odd.*" + re.escape(message)):
        scaling_of(template)


def test_a_trace_file_carries_its_start_and_a_bad_one_names_the_line(tmp_path):
    path = tmp_path / "day.csv"
    path.write_text("# start: 2026-11-30T06:00:00Z\n# from peagle traffic\nminute,requests\n0,1\n")
    assert from_csv(path).start == datetime(2026, 11, 30, 6, tzinfo=UTC)
    path.write_text("minute,requests\n0,1\n")
    assert from_csv(path).start == DEFAULT_START
    path.write_text("# start: 2026-11-30T06:00:30Z\n0,1\n")
    with pytest.raises(TrafficError, match=r"day.csv:1: .* not on a whole minute"):
        from_csv(path)


# The day (a quiet night, a morning ramp to 300 requests/minute, a 10-minute spike to 1,500 at 14:00), as
# the production loop's worked example ships it (written by examples/production-loop/make_example.py).
DAY = Path(__file__).resolve().parents[2] / "examples" / "production-loop" / "day.csv"


def test_on_a_day_shaped_trace_a_schedule_is_proposed_for_less_than_the_all_day_floor_and_passes_applied(
    synthesized, cdk_synthesized, tmp_path, capsys
):
    found = synthesized("default")
    trace = DAY
    argv = ["simulate", "--cdk-out", str(found.cdk_out), "--traffic", str(trace), "--no-plots", *ONE_READING]
    assert main([*argv, "--out", str(tmp_path / "before")]) == 1
    printed = capsys.readouterr().out
    change = next(line for line in printed.splitlines() if "change:" in line)
    floor_all_day = re.search(r"the floor (\d+) all day with the maximum \d+: answered [\d.]+%, \$([\d,.]+)", change)
    scheduled = re.search(r"UTC every day \(a schedule\) with the maximum \d+: answered ([\d.]+)%, \$([\d,.]+)", change)
    assert floor_all_day and scheduled, change
    assert float(scheduled.group(2).replace(",", "")) < float(floor_all_day.group(2).replace(",", ""))
    assert "in the props `autoscaling=Autoscaling(" in change and "ScheduledCapacity(name='RaiseFloor" in change
    assert (
        re.search(r"the maximum \d+ alone: answered", change)
        and "more headroom, `autoscaling.target_concurrency:" in change
    )
    assert "Cheapest that meets the SLO: a floor of" in change  # the schedule

    snippet = yaml.safe_load(re.search(r"in the deployment file `(.*?)`;", change).group(1))
    settings = yaml.safe_load(found.deployment_file.read_text())
    settings["autoscaling"] = {**settings.get("autoscaling", {}), **snippet["autoscaling"]}
    applied = tmp_path / "scheduled.yaml"
    applied.write_text(yaml.safe_dump(settings))
    cdk_out = cdk_synthesized(deployment=str(applied)).outdir
    body = json.loads((cdk_out / "PeagleEndpoint.template.json").read_text())
    targets = [r for r in body["Resources"].values() if r["Type"] == SCALABLE_TARGET]
    assert [a["ScheduledActionName"] for a in targets[0]["Properties"]["ScheduledActions"]][0].startswith("Raise")

    after = ["simulate", "--cdk-out", str(cdk_out), "--traffic", str(trace), "--no-plots", "--out", str(tmp_path / "a")]
    assert main(after) == 0, capsys.readouterr().out  # every reading, not only the one it was found under


@pytest.mark.parametrize(
    ("schedule", "time_zone", "message"),
    [
        ("cron(0 7 * * * *)", None, "one of them must be ?"),
        ("cron(0 7 * * ?)", None, "has 5 fields"),
        ("cron(0 7 * * ? *)", "Europe/Bonn", "not an IANA name"),
    ],
)
def test_a_schedule_aws_would_refuse_fails_the_deployment_file_with_what_to_write(
    tmp_path, schedule, time_zone, message
):
    from peagle.settings.errors import ConfigError

    settings = yaml.safe_load((Path(__file__).resolve().parents[2] / "deployments" / "default.yaml").read_text())
    floor = {"name": "Morning", "schedule": schedule, "min_capacity": 2, "max_capacity": 3}
    settings["autoscaling"] = {
        "max_capacity": 3,
        "schedules": [floor | ({"time_zone": time_zone} if time_zone else {})],
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(settings))
    with pytest.raises(ConfigError, match=r"autoscaling\.schedules.*Morning.*" + re.escape(message)):
        load_deployment_config(str(path), {})
    # L, W and # are AWS's own syntax: the file takes them, only the simulator declines to guess them
    settings["autoscaling"]["schedules"][0] = floor | {"schedule": "cron(0 7 L * ? *)"}
    path.write_text(yaml.safe_dump(settings))
    load_deployment_config(str(path), {})
