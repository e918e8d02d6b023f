"""cdk-nag (AwsSolutions + NIST 800-53 R5) and cfn-lint on every synthesized template."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cdk_synth import REPO_ROOT

VARIANTS = {
    "default": {},
    "speculation-off": {"speculativeTokens": "0"},
    "multi-gpu": {"model": "gpt-oss-120b", "instanceType": "ml.p5.48xlarge"},
    "ab-test": {"deployment": str(REPO_ROOT / "deployments" / "ab-test.yaml")},
    "async-summarization": {"deployment": str(REPO_ROOT / "deployments" / "async-summarization.yaml")},
    "private-vpc": {"deployment": str(REPO_ROOT / "deployments" / "private-vpc.yaml")},
    "scale-to-zero": {"deployment": str(REPO_ROOT / "deployments" / "scale-to-zero.yaml")},
    # Blackwell instances with prefix-aware routing (RoutingConfig.PrefixAwareRoutingConfig) and prefix caching on.
    "prefix-aware": {"deployment": str(REPO_ROOT / "deployments" / "prefix-aware.yaml")},
    # SageMaker Data Capture on (off in every example): its bucket, key and grants go through cdk-nag and cfn-lint too.
    "data-capture": {"deployment": str(REPO_ROOT / "tests" / "infra" / "deployments" / "data-capture.yaml")},
    # An instance pool (InstancePools, a Model per differing type) and an ML capacity reservation (issue 47).
    "instance-pool": {"deployment": str(REPO_ROOT / "deployments" / "instance-pool.yaml")},
    "capacity-reservation": {
        "deployment": str(REPO_ROOT / "tests" / "infra" / "deployments" / "capacity-reservation.yaml")
    },
}


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def synthesized(request, synth):
    # The session's synth cache; synthesis raises on any unacknowledged finding.
    return synth(**VARIANTS[request.param]).outdir


def test_cdk_nag_reports_no_unacknowledged_findings(synthesized):
    report = json.loads((synthesized / "validation-report.json").read_text())
    failures = [violation for plugin in report.get("pluginReports", []) for violation in plugin.get("violations", [])]
    assert failures == []


def test_synthesis_prints_no_warning(synthesized):
    """A warning on every synth trains users to skip the ones that matter. CDK records each as
    metadata of type aws:cdk:warning, in the manifest or in the stack's ``additionalMetadataFile``."""
    manifest = json.loads((synthesized / "manifest.json").read_text())
    metadata = {}
    for artifact in manifest["artifacts"].values():
        metadata.update(artifact.get("metadata", {}))
        if "additionalMetadataFile" in artifact:
            metadata.update(json.loads((synthesized / artifact["additionalMetadataFile"]).read_text()))
    warnings = [
        f"{path}: {entry['data']}"
        for path, entries in metadata.items()
        for entry in entries
        if entry["type"] == "aws:cdk:warning"
    ]
    assert warnings == []


def test_acknowledgements_go_through_one_helper_and_never_cover_a_whole_stack():
    sources = [*REPO_ROOT.glob("peagle_cdk/*.py"), *REPO_ROOT.glob("stacks/*.py"), REPO_ROOT / "app.py"]
    for path in sources:
        text = path.read_text()
        if path.name != "nag.py":
            assert "Validations.of(" not in text or ".add_plugins(" in text, f"{path}: use peagle_cdk.nag.acknowledge"
        assert "NagSuppressions" not in text  # the cdk-nag 2.x API is gone in 3.x
        if path.parent.name == "stacks":
            # a stack-scoped acknowledgement would also hide findings on resources added later
            assert "acknowledge(self," not in text, f"{path}: acknowledge on the resource, not the stack"


def test_cfn_lint_passes_on_every_template(synthesized):
    templates = sorted(str(path) for path in synthesized.glob("*.template.json"))
    assert templates
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), *templates], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
