"""`peagle simulate` on an instance pool (issue 47): the type of priority 1 is the main reading, and every unit on
each fallback type a named reading of its own, with that type's units and price (peagle/simulate/pool_fallback.py)."""

from __future__ import annotations

from dataclasses import replace

from peagle.cli import main
from peagle.planning.planner import plan_deployment
from peagle.settings import load_deployment_config
from peagle.simulate.pool_fallback import fallback_plans


def _simulate(found, tmp_path, capsys) -> tuple[int, str, str]:
    out = tmp_path / "report"
    argv = ["simulate", "--cdk-out", str(found.cdk_out), "--out", str(out), "--traffic", "surge", "--no-plots"]
    code = main([*argv, "--refused-counted", "no", "--conflicts", "largest", "--cooldown", "counted"])
    code = code if code is not None else 0
    return code, capsys.readouterr().out, (out / "simulation.md").read_text()


def test_the_pool_is_priced_on_its_first_type_and_on_its_fallback_as_a_named_reading(synthesized, tmp_path, capsys):
    found = synthesized("instance-pool")
    plan = plan_deployment(load_deployment_config(str(found.deployment_file)))
    readings = fallback_plans(plan)
    assert [each.instance_type for each in readings] == ["ml.g6e.xlarge", "ml.g6.xlarge"]

    code, printed, summary = _simulate(found, tmp_path, capsys)

    assert code in (0, 1), printed
    rows = [line for line in printed.splitlines() if line.startswith("peagle-pool-endpoint/Primary")]
    first = [row for row in rows if " (pool fallback" not in row]
    assert first, printed
    for after in readings:
        assert any(f"Primary on {after.instance_type} (pool fallback, every unit)" in row for row in rows), printed
    # Each priced at its own type's instance-hour.
    for each in (plan, *readings):
        assert f"${each.price_per_hour_usd:,.2f}" in summary


def test_a_fallback_that_serves_and_costs_alike_is_no_reading_of_its_own():
    plan = plan_deployment(load_deployment_config("deployments/instance-pool.yaml"))
    assert fallback_plans(replace(plan, fallbacks=())) == []
    alike = replace(plan, fallbacks=(replace(plan, instance_type="ml.g7e.4xlarge"),))
    assert fallback_plans(alike) == []
    twice = replace(plan, fallbacks=(plan.fallbacks[0], replace(plan.fallbacks[0], instance_type="ml.g6e.2xlarge")))
    assert [each.instance_type for each in fallback_plans(twice)] == ["ml.g6e.xlarge"]
