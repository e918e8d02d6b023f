"""The queue policy (``autoscaling.scale_on_queue``) on the real synthesized template: long prompts whose KV cache holds
fewer requests than the concurrency target, where concurrency alone scales late (issue 47's "Done when").

The deployment: the default pair on one L40S with 32k-token requests and max_num_seqs 64. Its KV cache holds 24 such
requests, the planner's concurrency target is 48 (75 % of max_num_seqs), so a unit is full, and requests wait in vLLM's
queue, long before the concurrency metric reaches its target. The latency step and the GPU policy are off so that the two
timelines differ only by the queue policy: concurrency alone, or concurrency and the queue."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from peagle.cli import main
from peagle.cloud_assembly import parse_template
from peagle.planning.planner import plan_deployment
from peagle.settings.loading import load_deployment_config
from peagle.simulate.engine import Setup, Timeline, simulate
from peagle.simulate.scenarios import base_assumptions, setups
from peagle.simulate.service import running_slots, unit_rpm
from peagle.simulate.traffic import Trace

REPO_ROOT = Path(__file__).resolve().parents[2]
QUEUE_METRIC = "RequestsWaiting"


@pytest.fixture(scope="module")
def long_prompts(cdk_synthesized, tmp_path_factory):
    body = yaml.safe_load((REPO_ROOT / "deployments" / "default.yaml").read_text())
    body["profile_overrides"] = {"max_model_len": 32768, "min_model_len": 32768, "max_num_seqs": 64}
    body["autoscaling"] = {
        "scale_on_queue": True,
        "max_capacity": 8,
        "latency_step_scaling": False,
        "gpu_utilization_target_percent": None,
    }
    deployment = tmp_path_factory.mktemp("queue") / "long-prompts.yaml"
    deployment.write_text(yaml.safe_dump(body))
    result = cdk_synthesized(deployment=str(deployment))
    plan = plan_deployment(load_deployment_config(str(deployment), {}))
    template = parse_template(json.loads(json.dumps(result.templates["PeagleEndpoint"])), source=str(deployment))
    (setup,) = setups(template, plan)
    # Every request holds a full-length context: the KV cache, not max_num_seqs, bounds what a unit runs.
    assumptions = base_assumptions(plan, context_tokens=plan.max_model_len, clients="once")
    return setup, assumptions


@pytest.fixture(scope="module")
def long_prompts_template(long_prompts, cdk_synthesized, tmp_path_factory):
    """The same synthesis's template file (the shared cache returns it), for `peagle simulate`."""
    deployment = next(tmp_path_factory.getbasetemp().glob("queue*/long-prompts.yaml"))
    return cdk_synthesized(deployment=str(deployment)).outdir / "PeagleEndpoint.template.json"


def _policies(setup: Setup):
    by_metric = {policy.query.stat.name: policy for policy in setup.target.target_tracking if policy.query.stat}
    return by_metric["ConcurrentRequestsPerModel"], by_metric[QUEUE_METRIC]


def _concurrency_only(setup: Setup) -> Setup:
    concurrency, _ = _policies(setup)
    return replace(setup, target=replace(setup.target, target_tracking=(concurrency,)))


def _ramp(setup: Setup, assumptions) -> Trace:
    """From 90 % of one unit's capacity up by 2 requests a minute for 35 minutes, then held 15 minutes: a gentle
    overload, the queue growing a little every minute."""
    capacity = unit_rpm(setup.shape, assumptions)
    return Trace("long-prompt ramp", tuple(0.9 * capacity + 2.0 * m for m in range(35)) + (0.9 * capacity + 70,) * 15)


def _first_scale_out(timeline: Timeline) -> int | None:
    initial = timeline.setup.initial_units
    return next((m.minute for m in timeline.minutes if m.desired > initial), None)


def test_the_template_tracks_the_kpi_queue_per_unit_beside_concurrency(long_prompts):
    setup, assumptions = long_prompts
    concurrency, queue = _policies(setup)
    assert running_slots(setup.shape, assumptions) == 24 < concurrency.target_value == 48
    assert queue.query.stat is not None and queue.query.stat.statistic == "Average"
    assert queue.target_value == pytest.approx(64 * 1.0 / 5.0)  # max_num_seqs x TTFT 1 s / request time 5 s
    assert not queue.disable_scale_in and not concurrency.disable_scale_in


def test_the_queue_scales_out_earlier_than_concurrency_alone_and_loses_fewer_requests(long_prompts):
    """Concurrency alone waits until 24 requests wait on the unit (48 in flight); the queue policy acts at 12.8 waiting.
    Both units take the same start; the one asked for earlier serves earlier, and fewer requests time out meanwhile."""
    setup, assumptions = long_prompts
    trace = _ramp(setup, assumptions)
    with_queue = simulate(setup, trace, assumptions)
    alone = simulate(_concurrency_only(setup), trace, assumptions)
    queue_out, alone_out = _first_scale_out(with_queue), _first_scale_out(alone)
    assert queue_out is not None and alone_out is not None
    assert alone_out - queue_out >= 3, (queue_out, alone_out)
    acted = next(m for m in with_queue.minutes if m.minute == queue_out - 1).actions  # applies from the next minute
    assert any("RequestsWaiting" in action for action in acted)
    timed_out = [sum(m.timed_out for m in timeline.minutes) for timeline in (with_queue, alone)]
    assert timed_out[0] < 0.8 * timed_out[1], timed_out


def test_with_its_scale_in_off_the_queue_policys_unit_is_removed_by_concurrency_while_requests_wait(long_prompts):
    """Why the queue policy keeps its scale-in (peagle_cdk/endpoint_scaling.py, scale_on_requests_waiting): scale-in
    needs every policy whose scale-in is on ready for it. With the queue's off, the concurrency policy (its metric under
    90 % of its target for 15 minutes) takes back the unit the queue had just asked for, while requests still wait."""
    setup, assumptions = long_prompts
    trace = _ramp(setup, assumptions)
    concurrency, queue = _policies(setup)
    off = replace(
        setup, target=replace(setup.target, target_tracking=(concurrency, replace(queue, disable_scale_in=True)))
    )

    def removed_while_waiting(timeline: Timeline) -> list[int]:
        return [
            m.minute
            for before, m in zip(timeline.minutes, timeline.minutes[1:], strict=False)
            if m.desired < before.desired and (before.datapoints.get(QUEUE_METRIC) or 0) > queue.target_value
        ]

    assert removed_while_waiting(simulate(setup, trace, assumptions)) == []
    assert removed_while_waiting(simulate(off, trace, assumptions))


def test_peagle_simulate_runs_the_queue_policy_with_the_kv_cache_bound_and_refuses_a_bad_length(
    long_prompts_template, tmp_path, capsys
):
    base = ["simulate", "--template", str(long_prompts_template), "--out", str(tmp_path / "out"), "--no-plots"]
    readings = ["--refused-counted", "no", "--conflicts", "largest", "--cooldown", "counted", "--updates", "at-once"]
    assert main([*base, *readings, "--traffic", "surge", "--context-tokens", "32768", "--clients", "once"]) in (0, 1)
    assert "at most the requests its KV cache holds at 32768 tokens each" in capsys.readouterr().out
    (timeline,) = (tmp_path / "out").glob("*-surge-*.csv")
    assert "RequestsWaitingPerUnit-AlarmHigh" in timeline.read_text().splitlines()[0]  # the queue policy's alarms ran
    assert main([*base, "--context-tokens", "0"]) == 2
    assert "--context-tokens must be a number above 0" in capsys.readouterr().err
