"""`peagle smoke` checks speculation at the sampling the deployment serves: the streamed request goes out
at the profile's temperature and top_p (the --deployment's, else --profile, else chatbot), the plain one
stays greedy, and speculation-on reports both answers' acceptance and fails when the sampled answer
accepted none of its drafts. Real boto3 clients under botocore's Stubber; no engine."""

from __future__ import annotations

import json

import pytest
from aws_stubs import ENDPOINT, STACK, FakeClock, StubbedAws, step_lines

from peagle.bench.results import Sampling
from peagle.cli import build_parser
from peagle.smoke.cli import execute
from peagle.smoke.invocations import judged_at_deployed_sampling
from peagle.smoke.step import PLAIN_INVOCATION, SPECULATION_ON, STREAMED_INVOCATION, StepStatus, fail, ok

HEALTHY_ALARMS = {"P-EAGLE demo ModelLatencyP90High": "OK"}


def spec_decode(histogram: list[int], k: int = 4) -> dict:
    """An answer's metrics.speculative_decoding as vLLM 0.32 computes it from its acceptance histogram."""
    steps = sum(histogram)
    accepted = sum(j * count for j, count in enumerate(histogram))
    return {
        "mean_acceptance_length": 1 + accepted / steps,
        "draft_acceptance_rate": accepted / (steps * k),
        "acceptance_histogram": histogram,
        "num_spec_steps": steps,
        "num_accepted_draft_tokens": accepted,
        "num_draft_tokens": steps * k,
        "num_spec_tokens": k,
    }


ALL_ACCEPTED = spec_decode([0, 0, 0, 0, 6])  # mean acceptance length 5.00
ONE_IN_FOUR = spec_decode([0, 8, 0, 0, 0])  # 2.00
NONE_ACCEPTED = spec_decode([8, 0, 0, 0, 0])  # 1.00


@pytest.fixture
def aws():
    stubbed = StubbedAws()
    yield stubbed
    stubbed.assert_all_answers_used()


def smoke(aws: StubbedAws, *args: str, plain=None, streamed=None) -> tuple[int, list[dict]]:
    """One healthy endpoint's run; the two answers carry ``plain`` / ``streamed`` acceptance. Returns the
    exit code and the parameters of the two sends (plain, then streamed)."""
    aws.describe_endpoint("InService")
    aws.plain_completion(spec_decode=plain)
    aws.streamed_completion(spec_decode=streamed)
    aws.acceptance([0.6])
    aws.kpi_reports([1.0])
    aws.alarms(HEALTHY_ALARMS)
    sends = aws.endpoint.record_sends()
    arguments = build_parser().parse_args(["smoke", "--endpoint", ENDPOINT, "--stack", STACK, *args])
    exit_code = execute(arguments, aws=aws.clients(), timing=FakeClock().timing())
    return exit_code, sends


def sampling_sent(body: bytes) -> tuple:
    sent = json.loads(body)
    return sent.get("temperature"), sent.get("top_p")


def deployment(tmp_path, text: str) -> str:
    path = tmp_path / "deployment.yaml"
    path.write_text("name: demo\n" + text)
    return str(path)


@pytest.mark.parametrize(
    ("arguments", "streamed_at"),
    [
        ([], (0.7, 0.9)),  # chatbot, the default deployment's profile
        (["--profile", "codegen"], (0.2, 0.95)),
        (["--deployment", "DEPLOYMENT: profile: batch\n"], (0.3, 0.9)),
        (["--deployment", "DEPLOYMENT: profile: codegen\nprofile_overrides:\n  temperature: 0.5\n"], (0.5, 0.95)),
        (["--deployment", "DEPLOYMENT: profile: batch\n", "--profile", "codegen"], (0.2, 0.95)),  # --profile wins
    ],
    ids=["default", "profile", "deployment", "deployment-overrides", "profile-over-deployment"],
)
def test_the_streamed_request_is_sampled_as_deployed_and_the_plain_one_greedy(
    aws, tmp_path, capsys, arguments, streamed_at
):
    arguments = [
        deployment(tmp_path, argument.removeprefix("DEPLOYMENT: ")) if argument.startswith("DEPLOYMENT: ") else argument
        for argument in arguments
    ]

    exit_code, sends = smoke(aws, *arguments)

    assert exit_code == 0, capsys.readouterr()
    plain, streamed = (send["Body"] for send in sends)
    assert sampling_sent(plain) == (0.0, None)
    assert sampling_sent(streamed) == streamed_at


def test_the_step_lines_name_each_requests_sampling(aws, capsys):
    smoke(aws)

    steps = step_lines(capsys.readouterr().out)
    assert ", greedy: " in steps[PLAIN_INVOCATION][1]
    assert ", temperature 0.7, top_p 0.9 (profile chatbot): " in steps[STREAMED_INVOCATION][1]


def test_a_deployments_profile_overrides_are_named_as_what_it_serves(aws, tmp_path, capsys):
    greedy = deployment(tmp_path, "profile: codegen\nprofile_overrides:\n  temperature: 0\n")
    smoke(aws, "--deployment", greedy)

    streamed = step_lines(capsys.readouterr().out)[STREAMED_INVOCATION][1]
    assert ", greedy (temperature 0, profile codegen with profile_overrides): " in streamed


def test_speculation_on_reports_acceptance_at_the_deployed_temperature_and_greedy_beside_it(aws, capsys):
    exit_code, _ = smoke(aws, plain=ALL_ACCEPTED, streamed=ONE_IN_FOUR)

    status, detail = step_lines(capsys.readouterr().out)[SPECULATION_ON]
    assert exit_code == 0 and status == "ok"
    assert detail.startswith("SpecAcceptanceRate up to 0.60")  # CloudWatch's KPI datapoint, as before
    assert detail.endswith("; mean acceptance length 2.00 at temperature 0.7, top_p 0.9 (profile chatbot); 5.00 greedy")


def test_a_sampled_answer_that_accepted_no_draft_fails_speculation_on_even_when_greedy_accepts_all(aws, capsys):
    exit_code, _ = smoke(aws, "--profile", "codegen", plain=ALL_ACCEPTED, streamed=NONE_ACCEPTED)

    out, err = capsys.readouterr()
    status, detail = step_lines(out)[SPECULATION_ON]
    assert exit_code == 1 and status == "FAIL"
    assert (
        "at temperature 0.2, top_p 0.95 (profile codegen) the answer accepted none of its 32 drafted token(s)" in detail
    )
    assert "(mean acceptance length 1.00 at temperature 0.2, top_p 0.95 (profile codegen); 5.00 greedy)" in detail
    assert "FAILED at: speculation-on" in err


def test_answers_without_per_request_metrics_say_the_sampled_acceptance_is_not_known(aws, capsys):
    exit_code, _ = smoke(aws)

    status, detail = step_lines(capsys.readouterr().out)[SPECULATION_ON]
    assert exit_code == 0 and status == "ok"
    assert detail.endswith(
        "; acceptance at temperature 0.7, top_p 0.9 (profile chatbot) not known: its answer carried no "
        "metrics.speculative_decoding"
    )


# -- the judgement itself, as the --url path uses it after the /metrics counters ----------------------------

CHATBOT = Sampling(0.7, 0.9, profile="chatbot")


def answered(name: str, histogram: list[int] | None):
    from peagle.client.stream_chunks import spec_decode_metrics_in

    metrics = (
        spec_decode_metrics_in({"metrics": {"speculative_decoding": spec_decode(histogram)}}) if histogram else None
    )
    return ok(name, "answered", acceptance=metrics)


def test_a_failed_counter_check_is_kept_as_it_is():
    counted = fail(SPECULATION_ON, "no drafts were made")
    judged = judged_at_deployed_sampling(
        counted, answered(PLAIN_INVOCATION, None), answered(STREAMED_INVOCATION, [0, 8, 0, 0, 0]), CHATBOT
    )
    assert judged == counted


def test_a_greedy_deployment_reports_one_figure():
    greedy_profile = Sampling(0.0, 0.9, profile="chatbot with profile_overrides")
    judged = judged_at_deployed_sampling(
        ok(SPECULATION_ON, "8 drafts"),
        answered(PLAIN_INVOCATION, [0, 0, 0, 0, 6]),
        answered(STREAMED_INVOCATION, [0, 0, 0, 0, 6]),
        greedy_profile,
    )
    assert judged.status is StepStatus.OK
    assert judged.detail == (
        "8 drafts; mean acceptance length 5.00 at greedy (temperature 0, profile chatbot with profile_overrides)"
    )


def test_a_failed_sampled_request_leaves_its_acceptance_unknown():
    judged = judged_at_deployed_sampling(
        ok(SPECULATION_ON, "8 drafts"),
        answered(PLAIN_INVOCATION, [0, 0, 0, 0, 6]),
        fail(STREAMED_INVOCATION, "StreamInterruptedError"),
        CHATBOT,
    )
    assert judged.status is StepStatus.OK
    assert judged.detail.endswith("not known: the sampled request failed")
