"""Rule metrics-config: MetricsConfig is create-only on AWS::SageMaker::EndpointConfig (CloudFormation resource
schema), so a change, or a config that states it for the first time, replaces the endpoint config and updates the
endpoint onto it. Preflight says what that update does; on a component endpoint it warns."""

from __future__ import annotations

import json

from test_preflight_component_transitions import findings
from test_preflight_transitions import compare, preflight


def _edited(synthesized, name: str, tmp_path, edit) -> str:
    """``name``'s template with ``edit`` applied to each endpoint config, written to a file."""
    body = json.loads(synthesized(name).template.read_text())
    for resource in body["Resources"].values():
        if resource["Type"] == "AWS::SageMaker::EndpointConfig":
            edit(resource["Properties"])
    path = tmp_path / f"{name}-edited.json"
    path.write_text(json.dumps(body))
    return str(path)


def test_turning_detailed_observability_off_is_noted_with_the_update_it_starts(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "default", "no-detailed-observability")

    assert code == 0, out
    (line,) = findings(out, "metrics-config")
    assert line.startswith("note [metrics-config] endpoint peagle-endpoint: MetricsConfig ")
    assert "EnableDetailedObservability true" in line and "-> EnableDetailedObservability false" in line
    assert "create-only on AWS::SageMaker::EndpointConfig" in out and "blue/green" in out
    assert "REFUSED" not in out


def test_an_asynchronous_config_that_stated_none_is_noted_as_maybe_billed_until_now(capsys, synthesized, tmp_path):
    """The upgrade from a release whose asynchronous endpoint config left MetricsConfig out (SageMaker's default: on)."""

    def unstated(config: dict) -> None:
        if "AsyncInferenceConfig" in config:
            config.pop("MetricsConfig")

    deployed = _edited(synthesized, "async", tmp_path, unstated)
    code, out, _ = preflight(capsys, "--new", str(synthesized("async").template), "--deployed-template", deployed)

    assert code == 0, out
    (line,) = findings(out, "metrics-config")
    assert "endpoint peagle-summaries-async: MetricsConfig not stated (SageMaker's default) -> " in line
    assert "EnableDetailedObservability true" in line
    assert "The deployed config stated none" in out and "SageMaker's plain update" in out


def test_an_unchanged_metrics_config_says_nothing(capsys, synthesized):
    code, out, _ = compare(capsys, synthesized, "async", "async")

    assert code == 0, out
    assert not findings(out, "metrics-config")


def test_on_a_component_endpoint_it_is_a_warning(capsys, synthesized, tmp_path):
    def off(config: dict) -> None:
        config["MetricsConfig"]["EnableDetailedObservability"] = False

    new = _edited(synthesized, "s2z", tmp_path, off)
    code, out, _ = preflight(capsys, "--new", new, "--deployed-template", str(synthesized("s2z").template))

    assert code == 0, out
    (line,) = findings(out, "metrics-config")
    assert line.startswith("WARNING [metrics-config] endpoint peagle-s2z-endpoint:")
    assert "no AWS page says what that update does to their running copies" in out
