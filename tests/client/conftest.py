"""Fixtures for the client tests (helpers live in sagemaker_wire.py)."""

import pytest
from sagemaker_wire import StubbedEndpoint


@pytest.fixture
def endpoint():
    """A real sagemaker-runtime client under botocore's Stubber; see StubbedEndpoint."""
    stubbed = StubbedEndpoint()
    with stubbed.stubber:
        yield stubbed
