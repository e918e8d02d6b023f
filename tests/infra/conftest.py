"""Fixtures for the CDK tests. Each distinct set of context values is synthesized once
per session (tests/conftest.py's shared cache): jsii makes a synth cost seconds, and most tests
only read templates."""

from __future__ import annotations

import pytest
from cdk_synth import SynthResult


@pytest.fixture(scope="session")
def synth(cdk_synthesized):
    """``synth(**context)`` -> SynthResult (context keys as under `cdk synth -c`)."""
    return cdk_synthesized


@pytest.fixture(scope="session")
def default_synth(synth) -> SynthResult:
    return synth()
