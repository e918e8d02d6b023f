"""The setting `peagle tune` recommends, in both doors' words, deploys as written: deployment-snippet.yaml loads
through the settings model and synthesizes in the real app for a catalog pair, and library-snippet.py's
`Speculation` synthesizes in a bare Stack. The local pairs are not catalog pairs, so the snippets carry only the
speculation; here they are added to a gpt-oss-20b deployment (trained K 10: the local K values fit)."""

from __future__ import annotations

import json

from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template
from test_tune_intervals import FALLS, HOLDS, PROPOSED, ROUNDS, _tune

from peagle.settings import load_deployment_config
from peagle.tune.doors import largest_max_num_seqs

DEPLOYMENT = "name: tuned\nmodel: gpt-oss-20b\ninstance: {type: ml.g6e.xlarge, count: 1}\nprofile: chatbot\n"
SCHEDULE = [[1, 4, 4], [5, 1024, 0]]  # the proposal's last band carried to the largest max_num_seqs


def _snippets(tmp_path, schedule) -> tuple[str, str]:
    _tune(tmp_path, {**ROUNDS, PROPOSED: schedule})
    out = tmp_path / "tune"
    return (out / "deployment-snippet.yaml").read_text(), (out / "library-snippet.py").read_text()


def test_the_largest_max_num_seqs_is_the_settings_bound():
    assert largest_max_num_seqs() == 1024  # profile_overrides.max_num_seqs: le=1024 (peagle/settings/profile.py)


def test_the_yaml_schedule_loads_and_synthesizes_in_the_app(tmp_path, capsys, cdk_synthesized):
    snippet, _ = _snippets(tmp_path, HOLDS)
    path = tmp_path / "deployment.yaml"
    path.write_text(DEPLOYMENT + snippet)
    config = load_deployment_config(path)
    assert [band.as_tuple() for band in config.speculation.schedule or []] == [tuple(b) for b in SCHEDULE]
    environment = cdk_synthesized(deployment=str(path)).container_environment()
    speculative = json.loads(environment["SM_VLLM_SPECULATIVE_CONFIG"])
    assert speculative["num_speculative_tokens"] == 4
    assert speculative["num_speculative_tokens_per_batch_size"] == SCHEDULE


def test_the_yaml_static_k_loads_as_that_k(tmp_path, capsys):
    snippet, _ = _snippets(tmp_path, FALLS)
    path = tmp_path / "deployment.yaml"
    path.write_text(DEPLOYMENT + snippet)
    config = load_deployment_config(path)
    assert config.speculation.speculative_tokens == 4 and config.speculation.schedule is None


def _library_speculation(text: str):
    namespace: dict = {}
    exec(compile(text, "library-snippet.py", "exec"), namespace)  # the file a user copies into their app
    return namespace["speculation"]


def test_the_library_line_synthesizes_in_a_bare_stack(tmp_path, capsys):
    from peagle_cdk import ModelWeights, PeagleEndpoint

    _, library = _snippets(tmp_path, HOLDS)
    stack = Stack(App(), "Consumer")
    bucket = s3.Bucket(stack, "Weights")
    weights = ModelWeights.from_bucket(bucket, "models/gpt-oss-20b/")
    endpoint = PeagleEndpoint(stack, "Chat", name="chat", weights=weights, speculation=_library_speculation(library))
    assert endpoint.plan.speculative_schedule == tuple(tuple(band) for band in SCHEDULE)
    (model,) = Template.from_stack(stack).find_resources("AWS::SageMaker::Model").values()
    speculative = json.loads(model["Properties"]["PrimaryContainer"]["Environment"]["SM_VLLM_SPECULATIVE_CONFIG"])
    assert speculative["num_speculative_tokens_per_batch_size"] == SCHEDULE
