"""The CDK app the access tests read: the session's shared synth cache (tests/conftest.py), and tests/infra's helper
on the path (as tests/preflight does)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "infra"))


@pytest.fixture(scope="session")
def synth(cdk_synthesized):
    """``synth(**context)`` -> cdk_synth.SynthResult (context keys as under `cdk synth -c`)."""
    return cdk_synthesized
