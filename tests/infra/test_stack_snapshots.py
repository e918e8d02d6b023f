"""One snapshot per stack, for refactors: a diff here means the deployed resources change.

The endpoint stack is kept twice: on the default image path (built in the account during `cdk deploy`), and on
the local-Docker path, whose snapshot is the one taken before the in-account path existed (so that a user who keeps
`image.build: local_docker` deploys exactly what they did).
Asset hashes are normalised so editing the Dockerfile or the launcher doesn't churn them.
Update deliberately with `.venv/bin/python -m pytest tests/infra --snapshot-update`.
"""

import pytest
from cdk_synth import normalise_template, write_deployment


@pytest.fixture(scope="module")
def local_docker_synth(synth, tmp_path_factory):
    return synth(deployment=write_deployment(tmp_path_factory.mktemp("local"), "image:\n  build: local_docker\n"))


@pytest.mark.parametrize("stack_id", ["PeagleArtifacts", "PeagleEndpoint"])
def test_stack_snapshot(local_docker_synth, snapshot, stack_id):
    assert normalise_template(local_docker_synth.templates[stack_id]) == snapshot


def test_stack_snapshot_in_account_image(default_synth, snapshot):
    assert normalise_template(default_synth.templates["PeagleEndpoint"]) == snapshot
