""" "never oscillates" judged by what reversals cost, whatever the load did: on the real default template, a working
day with +-15 % minute-to-minute noise (examples/traces/, as a user runs it) fails with a change that, applied to the
deployment file and synthesized, passes; the same day without noise passes; a scale-to-zero wake-up sized for the
requests that waited, then given back when they are gone, is no reversal."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import yaml

from peagle.cli import main
from peagle.cloud_assembly import parse_template
from peagle.planning.planner import plan_deployment
from peagle.settings import load_deployment_config
from peagle.simulate.oscillation import REVERSAL_COST_SHARE, reversal_cost_usd, reversals
from peagle.simulate.scenarios import base_assumptions, run, setups
from peagle.simulate.traffic import Trace, from_csv

TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"
NOISY_DAY, QUIET_DAY = TRACES / "noisy-working-day.csv", TRACES / "working-day.csv"
OSCILLATES = "never oscillates"
ONE_READING = ["--conflicts", "largest", "--cooldown", "counted", "--updates", "at-once", "--refused-counted", "no"]


def _results(found, traces, readings=None):
    plan = plan_deployment(load_deployment_config(str(found.deployment_file), {}))
    template = parse_template(json.loads(found.template.read_text()), source=str(found.template))
    return run(template, plan, traces=traces, readings=readings)


def _oscillation(result):
    return next(v for v in result.verdicts if v.name.startswith(OSCILLATES))


def test_the_committed_working_days_are_what_their_seeded_generator_writes():
    spec = importlib.util.spec_from_file_location("make_working_day", TRACES / "make_working_day.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    day = generator.working_day()
    assert from_csv(QUIET_DAY).requests_per_minute == tuple(round(rate, 1) for rate in day)
    noisy = from_csv(NOISY_DAY).requests_per_minute
    assert noisy == tuple(round(rate, 1) for rate in generator.noisy(day))
    drawn = [n / q - 1 for n, q in zip(generator.noisy(day), day, strict=True)]
    assert generator.NOISE == 0.15 and 0.14 < max(map(abs, drawn)) <= generator.NOISE  # +-15 % a minute


def test_the_noisy_working_day_fails_and_the_printed_change_passes_applied(
    synthesized, cdk_synthesized, tmp_path, capsys
):
    found = synthesized("default")
    argv = ["simulate", "--cdk-out", str(found.cdk_out), "--traffic", str(NOISY_DAY), "--no-plots", *ONE_READING]
    assert main([*argv, "--out", str(tmp_path / "before")]) == 1
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("FAIL") and OSCILLATES in line)
    detail, change = lines[at + 1].strip(), next(line for line in lines[at + 1 :] if "change:" in line)
    reversed_ = re.search(r"(\d+) reversal\(s\): (\d+) given back and asked for again within a start", detail)
    share = re.search(r"\$[\d,.]+, ([\d.]+)% of the trace's", detail)
    assert reversed_ and share, detail
    assert int(reversed_.group(2)) >= 9 and float(share.group(1)) / 100 > REVERSAL_COST_SHARE  # the nine
    # The change, spelled for the deployment file, with what the simulation of it showed.
    setting = re.search(r"set `(autoscaling\.[a-z_]+): ([\d.]+)`; simulated with it: (\d+) reversal", change)
    assert setting, change
    (result,) = _results(found, [from_csv(NOISY_DAY)], readings=[{}])
    assert len(reversals(result.timeline)) == int(reversed_.group(1))

    settings = yaml.safe_load(found.deployment_file.read_text())
    key = setting.group(1).split(".")[1]
    settings["autoscaling"] = {**(settings.get("autoscaling") or {}), key: yaml.safe_load(setting.group(2))}
    applied = tmp_path / "steadier.yaml"
    applied.write_text(yaml.safe_dump(settings))
    cdk_out = cdk_synthesized(deployment=str(applied)).outdir
    after = ["simulate", "--cdk-out", str(cdk_out), "--traffic", str(NOISY_DAY), "--no-plots", "--out", str(tmp_path)]
    assert main(after) == 0, capsys.readouterr().out  # under every reading, not only the one it was found under


def test_the_same_working_day_without_noise_passes_under_every_reading(synthesized):
    results = _results(synthesized("default"), [from_csv(QUIET_DAY)])
    assert len(results) == 16
    for result in results:
        assert _oscillation(result).passed, _oscillation(result).detail
        assert reversals(result.timeline) == [], result.timeline.assumptions.label()
    changes = [m.desired for m in results[0].timeline.minutes]
    assert max(changes) == 2 and min(changes) == 1  # it follows the day: out in the morning, in at night


def test_a_scale_to_zero_wake_up_given_back_when_its_requests_are_gone_is_no_reversal(synthesized):
    """Idle until the endpoint is at zero, half a copy's load for half an hour, then light: the wake-up asks for
    copies by the requests that waited through the cold start, and more in its first minutes of serving (their
    datapoints count that backlog); when it is answered, the copies not needed go."""
    found = synthesized("scale-to-zero")
    plan = plan_deployment(load_deployment_config(str(found.deployment_file), {}))
    (setup,) = setups(parse_template(json.loads(found.template.read_text()), source="t"), plan)
    unit_rpm = setup.unit_rpm(base_assumptions(plan))
    trace = Trace("wake-and-give-back", (0.0,) * 90 + (unit_rpm / 2,) * 30 + (unit_rpm / 20,) * 60 + (0.0,) * 120)
    results = _results(found, [trace])
    for result in results:
        desired = [m.desired for m in result.timeline.minutes]
        woke = next(minute for minute in range(desired.index(0), len(desired)) if desired[minute] > 0)
        assert woke == 91 and desired[-1] == 0  # woke from zero for the first request, back at zero in the end
        kept = [units for units in desired[woke:] if units > 0]
        assert max(kept) > 1 and any(later < earlier for earlier, later in zip(kept, kept[1:], strict=False))
        assert reversals(result.timeline) == [], result.timeline.assumptions.label()
        verdict = _oscillation(result)
        assert verdict.passed and "none reversed" in verdict.detail, verdict.detail


def test_a_reversal_is_priced_at_its_start(synthesized):
    """An instance given back and asked for again pays a whole start: its launch and start-up, at its price."""
    found = synthesized("default")
    (result,) = _results(found, [from_csv(NOISY_DAY)], readings=[{}])
    setup, assumptions = result.timeline.setup, result.timeline.assumptions
    found_reversals = reversals(result.timeline)
    start = (assumptions.startup_seconds + assumptions.instance_launch_seconds) / 60  # a variant's unit: an instance
    assert found_reversals and all(abs(reversal.start_minutes - start) < 1e-9 for reversal in found_reversals)
    expected = sum(r.units for r in found_reversals) * start / 60 * setup.price_per_instance_hour
    assert abs(reversal_cost_usd(result.timeline, found_reversals) - expected) < 1e-9
