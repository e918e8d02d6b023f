"""One snapshot per stack, for refactors: a diff here means the deployed resources change.

Asset hashes are normalised so editing the Dockerfile or the launcher doesn't churn them.
Update deliberately with `.venv/bin/python -m pytest tests/infra --snapshot-update`.
"""

import pytest
from cdk_synth import normalise_template


@pytest.mark.parametrize("stack_id", ["PeagleArtifacts", "PeagleEndpoint"])
def test_stack_snapshot(default_synth, snapshot, stack_id):
    assert normalise_template(default_synth.templates[stack_id]) == snapshot
