"""Fixtures for the CDK tests. Each distinct set of context values is synthesized once
per session: jsii makes a synth cost seconds, and most tests only read templates."""

from __future__ import annotations

import json

import pytest
from cdk_synth import SynthResult, synthesize

_CACHE: dict[tuple, SynthResult] = {}


@pytest.fixture(scope="session")
def synth(tmp_path_factory):
    def _synth(**context: object) -> SynthResult:
        key = tuple(sorted((k, json.dumps(v)) for k, v in context.items()))
        if key not in _CACHE:
            _CACHE[key] = synthesize(tmp_path_factory.mktemp("cdk.out"), **context)
        return _CACHE[key]

    return _synth


@pytest.fixture(scope="session")
def default_synth(synth) -> SynthResult:
    return synth()
