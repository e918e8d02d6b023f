"""`peagle invoke --inference-component` and the cold start of a component scaled to zero, through the real
CLI (`peagle.cli.main`) and a real sagemaker-runtime client under botocore's Stubber; a fake clock stands in
for `time` in the client, so a 15-minute wait takes no time."""

from __future__ import annotations

import pytest
from botocore.stub import ANY
from sagemaker_wire import NO_CAPACITY_MESSAGE, FakeClock, StubbedEndpoint, payload_part, vllm_sse_stream

from peagle.cli import main
from peagle.client import GenerationRequest, NoCapacityError, PeagleClient, RetryPolicy, ThrottledError
from peagle.client.sagemaker_transport import SageMakerTransport

ENDPOINT, COMPONENT = "peagle-test", "peagle-primary"
OK_STREAM = [payload_part(vllm_sse_stream(["Hi", " there"]))]
INVOKE = ["invoke", "--endpoint", ENDPOINT, "--region", "us-east-1", "--prompt", "hello", "--max-tokens", "8"]
EXPLANATION = f"cold start: Inference component {COMPONENT} has no copy to serve the request: it is scaled to zero"


def streamed_params(**routing) -> dict:
    """InvokeEndpointWithResponseStream's parameters as the client sends them, with ``routing`` headers."""
    return {
        "EndpointName": ENDPOINT,
        "Body": ANY,
        "ContentType": "application/json",
        "Accept": "text/event-stream",
        "CustomAttributes": ANY,
        **routing,
    }


@pytest.fixture
def endpoint(monkeypatch):
    """The Stubber-ed runtime client, handed to every client the CLI builds."""
    stubbed = StubbedEndpoint()
    stubbed.patch_clients(monkeypatch)
    with stubbed.stubber, stubbed.control_stubber:
        yield stubbed
        stubbed.control_stubber.assert_no_pending_responses()


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr("peagle.client.client.time", fake.as_time_module())
    return fake


# -- the parameter on the wire -------------------------------------------------------------------


def test_inference_component_is_sent_as_inference_component_name(endpoint, clock, capsys):
    endpoint.add_component_budgets(COMPONENT, download_s=600, startup_s=1053)  # the default wait
    endpoint.add_stream(OK_STREAM, expected_params=streamed_params(InferenceComponentName=COMPONENT))

    assert main([*INVOKE, "--inference-component", COMPONENT]) == 0

    assert capsys.readouterr().out == "Hi there\n"
    endpoint.stubber.assert_no_pending_responses()


def test_inference_component_and_target_variant_are_both_sent(endpoint, clock, capsys):
    endpoint.add_component_budgets(COMPONENT, download_s=600, startup_s=1053)  # the default wait
    endpoint.add_stream(
        OK_STREAM, expected_params=streamed_params(TargetVariant="Primary", InferenceComponentName=COMPONENT)
    )

    assert main([*INVOKE, "--inference-component", COMPONENT, "--target-variant", "Primary"]) == 0
    endpoint.stubber.assert_no_pending_responses()


def test_without_inference_component_no_component_is_sent(endpoint, clock, capsys):
    endpoint.add_stream(OK_STREAM, expected_params=streamed_params())  # the Stubber refuses extra parameters

    assert main(INVOKE) == 0


# -- what cannot be combined ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["invoke", "--url", "http://127.0.0.1:1", "--prompt", "hi", "--inference-component", COMPONENT],
            "--inference-component names an inference component of an --endpoint (InvokeEndpoint "
            "InferenceComponentName); a --url server has none",
        ),
        ([*INVOKE, "--inference-component", COMPONENT, "--cold-start-wait", "-5"], "a finite number >= 0, got -5"),
        ([*INVOKE, "--inference-component", COMPONENT, "--cold-start-wait", "inf"], "a finite number >= 0, got inf"),
        ([*INVOKE, "--inference-component", COMPONENT, "--cold-start-wait", "nan"], "a finite number >= 0, got nan"),
    ],
    ids=["with-url", "negative-wait", "endless-wait", "nan-wait"],
)
def test_refused_combinations_exit_2_with_one_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


# -- cold start ------------------------------------------------------------------------------------


def test_a_cold_start_is_explained_once_waited_for_and_then_answered(endpoint, clock, capsys):
    endpoint.add_component_budgets(COMPONENT, download_s=600, startup_s=1053)
    endpoint.add_no_capacity(3)
    endpoint.add_stream(OK_STREAM)
    sends = endpoint.record_sends()

    exit_code = main([*INVOKE, "--inference-component", COMPONENT])

    out, err = capsys.readouterr()
    assert exit_code == 0, err
    assert out == "Hi there\n"
    assert err.count(EXPLANATION) == 1
    assert (
        "Retrying with backoff for up to 2373 s (peagle-primary's model download 600 s + container start-up "
        "1053 s timeouts + 600 s for an instance to launch + 120 s for the wake-up alarm to act; --cold-start-wait "
        "to change)" in err
    )
    assert err.count("cold start over: a copy answered after") == 1
    assert len(sends) == 4 and all(send["InferenceComponentName"] == COMPONENT for send in sends)
    # Backoff with equal jitter: before cold-start retry n, between half and all of min(30, 5 * 2**(n-1)) s.
    assert len(clock.sleeps) == 3
    for delay, ceiling in zip(clock.sleeps, (5, 10, 20), strict=True):
        assert ceiling / 2 <= delay <= ceiling
    assert f"after a {sum(clock.sleeps):.0f} s cold start (not in the timings)" in err
    endpoint.stubber.assert_no_pending_responses()


def test_a_cold_start_that_outlasts_the_wait_says_what_to_do(endpoint, clock, capsys):
    endpoint.add_no_capacity(12)  # more than the wait can use up
    sends = endpoint.record_sends()

    exit_code = main([*INVOKE, "--inference-component", COMPONENT, "--cold-start-wait", "60"])

    out, err = capsys.readouterr()
    assert exit_code == 1
    assert "Traceback" not in err and out == ""
    assert err.count(EXPLANATION) == 1
    assert "cold start over" not in err
    assert "error: NoCapacityError: Inference component peagle-primary has no copy" in err
    assert "No copy was ready after 60 s (cold-start wait 60 s)." in err
    assert "run again with a longer --cold-start-wait" in err
    assert (
        "aws sagemaker update-inference-component-runtime-config --inference-component-name peagle-primary "
        "--desired-runtime-config CopyCount=1" in err
    )
    # Bounded by the wait: the last sleep is cut at the deadline, and one send follows every sleep.
    assert sum(clock.sleeps) == pytest.approx(60.0)
    assert len(sends) == len(clock.sleeps) + 1
    assert 5 <= len(sends) <= 7  # 5 with the longest jittered waits (5+10+20+25), 7 with the shortest


def test_the_default_wait_is_the_components_own_budgets_and_bounds_the_retries(endpoint, clock, capsys):
    # Past its download and start-up timeouts SageMaker has given up on the copy: no point waiting longer.
    endpoint.add_component_budgets(COMPONENT, download_s=300, startup_s=400)
    endpoint.add_no_capacity(150)  # more than the wait can use up (sleeps of 15-30 s once at the cap)

    assert main([*INVOKE, "--inference-component", COMPONENT]) == 1

    assert "No copy was ready after 1420 s (cold-start wait 1420 s)." in capsys.readouterr().err
    assert sum(clock.sleeps) == pytest.approx(300 + 400 + 600 + 120)


@pytest.mark.parametrize(
    ("describe", "reason"),
    [
        (
            "AccessDeniedException",
            "access denied while reading peagle-primary's start-up timeouts: the caller needs "
            "sagemaker:DescribeInferenceComponent",
        ),
        ("no timeouts", "peagle-primary sets no model download and container start-up timeouts"),
    ],
)
def test_budgets_that_cannot_be_read_leave_the_default_and_say_why(endpoint, clock, capsys, describe, reason):
    if describe == "no timeouts":
        endpoint.add_component_budgets(COMPONENT, download_s=None, startup_s=None)
    else:
        endpoint.control_stubber.add_client_error(
            "describe_inference_component", service_error_code=describe, http_status_code=400
        )
    endpoint.add_no_capacity(1)
    endpoint.add_stream(OK_STREAM)

    assert main([*INVOKE, "--inference-component", COMPONENT]) == 0

    err = capsys.readouterr().err
    assert "Retrying with backoff for up to 900 s (the default, as the component's own budgets were not read: " in err
    assert reason in err


def test_a_given_wait_reads_no_budgets(endpoint, clock, capsys):
    endpoint.add_no_capacity(1)
    endpoint.add_stream(OK_STREAM)

    assert main([*INVOKE, "--inference-component", COMPONENT, "--cold-start-wait", "120"]) == 0

    # No DescribeInferenceComponent was queued: had one been sent, the notice would name the default.
    assert "Retrying with backoff for up to 120 s (--cold-start-wait)" in capsys.readouterr().err


def test_no_cold_start_wait_fails_at_the_first_answer(endpoint, clock, capsys):
    endpoint.add_no_capacity(1)
    sends = endpoint.record_sends()

    exit_code = main([*INVOKE, "--inference-component", COMPONENT, "--cold-start-wait", "0"])

    err = capsys.readouterr().err
    assert exit_code == 1
    assert len(sends) == 1 and clock.sleeps == []
    assert "cold start:" not in err  # nothing is waited for, so nothing to explain
    assert "Not waited for (cold-start wait 0 s): pass --cold-start-wait SECONDS" in err
    endpoint.stubber.assert_no_pending_responses()


# -- the loop's rules, on the library ---------------------------------------------------------------


def _client(endpoint: StubbedEndpoint, clock: FakeClock, **policy) -> PeagleClient:
    transport = SageMakerTransport(ENDPOINT, runtime_client=endpoint.runtime, inference_component=COMPONENT)
    return PeagleClient(
        transport, retry_policy=RetryPolicy(**policy), sleep=clock.sleep, clock=clock.read, random=lambda: 1.0
    )


def test_cold_start_sends_do_not_use_up_max_attempts_and_are_not_latency(endpoint, clock):
    endpoint.add_no_capacity(3)
    endpoint.add_error("ThrottlingException", 400)  # the copy is up; then one ordinary retry
    endpoint.add_stream(OK_STREAM)

    result = _client(endpoint, clock, max_attempts=2, cold_start_wait_s=900).generate(
        GenerationRequest(prompt="hello", max_tokens=8)
    )

    assert result.text == "Hi there"
    assert result.attempts == 5
    assert clock.sleeps == [5.0, 10.0, 20.0, 0.5]  # random() = 1.0: the ceilings
    assert result.cold_start_wait_s == 35.0
    # Timings start at the send that found the copy: the throttling backoff after it counts, the cold start not.
    assert result.timings.ttft_s == 0.5 and result.timings.e2e_s == 0.5


def test_max_attempts_still_bounds_other_failures_after_a_cold_start(endpoint, clock):
    endpoint.add_no_capacity(1)
    endpoint.add_error("ThrottlingException", 400)
    endpoint.add_error("ThrottlingException", 400)

    with pytest.raises(ThrottledError) as raised:
        _client(endpoint, clock, max_attempts=2, cold_start_wait_s=900).generate(GenerationRequest(prompt="hi"))

    assert raised.value.attempts == 3  # 1 cold-start send + max_attempts
    endpoint.stubber.assert_no_pending_responses()


def test_a_library_client_does_not_wait_unless_asked(endpoint, clock):
    endpoint.add_no_capacity(1)

    with pytest.raises(NoCapacityError, match="Not waited for") as raised:
        _client(endpoint, clock).generate(GenerationRequest(prompt="hi"))

    assert raised.value.component == COMPONENT and raised.value.attempts == 1
    assert clock.sleeps == []


def test_only_the_no_capacity_validation_error_is_waited_for(endpoint, clock):
    endpoint.add_error("ValidationError", 400, message="Inference Component peagle-other not found")

    with pytest.raises(Exception, match="not found") as raised:
        _client(endpoint, clock, cold_start_wait_s=900).generate(GenerationRequest(prompt="hi"))

    assert not isinstance(raised.value, NoCapacityError)
    assert clock.sleeps == []


def test_the_recorded_message_is_the_one_recognised():
    from peagle.client.retry import error_for_sagemaker_failure

    error = error_for_sagemaker_failure("ValidationError", NO_CAPACITY_MESSAGE, http_status=400)

    assert isinstance(error, NoCapacityError)
