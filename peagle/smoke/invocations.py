"""The smoke steps that talk to the model: one plain and one streamed completion, and, for a
server whose /metrics is reachable (``--url``), whether its drafts were accepted meanwhile.

The plain request is greedy (reproducible, and never empty by sampling a special token); the
streamed one is sampled as the deployment serves (its profile's temperature and top_p), since
that is what users get and what acceptance must hold at: a drafter's guesses match greedy
decoding more often than a sample. Each answer's own acceptance (``metrics.speculative_decoding``)
goes to the speculation step, which is judged at the deployed sampling.

The streamed request goes through ``PeagleClient`` exactly as `peagle invoke` sends it. The
client only streams, so the plain request is sent here: the same body with ``stream: false``,
over InvokeEndpoint or ``POST /invocations``, with failures mapped by the client's own
classifiers so the messages match.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from peagle.bench.results import Sampling
from peagle.client.errors import ConnectionFailedError, PeagleClientError
from peagle.client.request import GenerationRequest
from peagle.client.retry import RetryPolicy, send_with_retries
from peagle.client.stream_chunks import spec_decode_metrics_in
from peagle.smoke.step import (
    PLAIN_INVOCATION,
    SPECULATION_ON,
    STREAMED_INVOCATION,
    StepResult,
    StepStatus,
    Timing,
    fail,
    ok,
)

SMOKE_PROMPT = "Explain speculative decoding in one sentence."
PLAIN_READ_TIMEOUT_S = 75.0  # above SageMaker's 60 s invocation limit, as the client's transports


GREEDY = Sampling(temperature=0.0, top_p=None)


def smoke_request(max_tokens: int, sampling: Sampling = GREEDY) -> GenerationRequest:
    """The smoke prompt at ``sampling``: greedy unless told (the plain request), or the deployed sampling."""
    return GenerationRequest(
        prompt=SMOKE_PROMPT, max_tokens=max_tokens, temperature=sampling.temperature, top_p=sampling.top_p
    )


def sampling_phrase(sampling: Sampling) -> str:
    """How a step line names a request's sampling: "greedy", or e.g. "temperature 0.7, top_p 0.9 (profile chatbot)"."""
    return "greedy" if sampling == GREEDY else sampling.describe()


def plain_body(request: GenerationRequest) -> bytes:
    """The request's body, not streamed (``to_body`` always asks for a stream)."""
    body = request.to_body()
    body["stream"] = False
    body.pop("stream_options", None)
    return json.dumps(body).encode("utf-8")


def invoke_plain_sagemaker(
    runtime: Any, endpoint_name: str, variant_name: str | None, *, inference_component: str | None = None
) -> Callable[[bytes], dict]:
    """InvokeEndpoint on one variant and/or inference component; the parsed JSON answer."""

    def invoke(body: bytes) -> dict:
        from botocore.exceptions import BotoCoreError, ClientError

        from peagle.client.sagemaker_transport import error_from_client_error, routing_parameters

        try:
            # TargetVariant: "Specify the production variant to send the inference request to when invoking
            # an endpoint that is running two or more variants"
            # (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpoint.html),
            # so the answer and the KPI metrics read later are the same variant's. InferenceComponentName:
            # see routing_parameters.
            response = runtime.invoke_endpoint(
                EndpointName=endpoint_name,
                Body=body,
                ContentType="application/json",
                Accept="application/json",
                CustomAttributes="peagle-request-id=smoke-plain",
                **routing_parameters(target_variant=variant_name, inference_component=inference_component),
            )
            return json.loads(response["Body"].read())
        except ClientError as error:
            raise error_from_client_error(error, inference_component=inference_component) from error
        except BotoCoreError as error:
            raise ConnectionFailedError(f"InvokeEndpoint on {endpoint_name} failed: {error}") from error

    return invoke


def invoke_plain_url(base_url: str) -> Callable[[bytes], dict]:
    """POST /invocations on a server speaking the container contract; the parsed JSON answer."""

    def invoke(body: bytes) -> dict:
        import httpx

        from peagle.client.retry import error_for_http_status

        url = base_url.rstrip("/") + "/invocations"
        try:
            response = httpx.post(
                url,
                content=body,
                headers={"Content-Type": "application/json", "Accept": "application/json"},
                timeout=httpx.Timeout(PLAIN_READ_TIMEOUT_S, connect=5.0),
            )
        except httpx.HTTPError as error:
            raise ConnectionFailedError(
                f"POST {url} failed: {error!r}. Is the server running (`make local`)?"
            ) from error
        if response.status_code != 200:
            raise error_for_http_status(response.status_code, response.text[:300])
        return response.json()

    return invoke


def check_plain_invocation(
    invoke: Callable[[bytes], dict],
    request: GenerationRequest,
    timing: Timing,
    *,
    sampling: str = "greedy",
    policy: RetryPolicy | None = None,
    notify: Callable[[str], None] | None = None,
) -> StepResult:
    """One non-streamed request through the client's retry loop: ``policy`` defaults to one send and no
    cold-start wait; with ``cold_start_wait_s`` a component scaled to zero is waited for (``notify`` says so).
    ``sampling`` names the request's sampling in the step line."""
    body = plain_body(request)
    started = timing.monotonic()
    try:
        sent = send_with_retries(
            lambda: invoke(body),
            policy or RetryPolicy(max_attempts=1),
            sleep=timing.sleep,
            clock=timing.monotonic,
            random=timing.random,
            notify=notify,
        )
    except PeagleClientError as error:
        return fail(PLAIN_INVOCATION, str(error), error)
    except ValueError as error:  # the 200 body was not JSON
        return fail(PLAIN_INVOCATION, f"the answer is not JSON: {error}")
    answer = sent.value
    if sent.cold_start_ended_at is not None:  # the wait for a copy is not the answer's time
        started = sent.cold_start_ended_at
    elapsed = timing.monotonic() - started
    if not isinstance(answer, dict):
        return fail(PLAIN_INVOCATION, f"the answer is not a completion object: {json.dumps(answer)[:200]}")
    choice = (answer.get("choices") or [{}])[0]
    text = choice.get("text") or (choice.get("message") or {}).get("content") or ""
    if not text:
        return fail(PLAIN_INVOCATION, f"200 but no text in the answer: {json.dumps(answer)[:200]}")
    tokens = (answer.get("usage") or {}).get("completion_tokens")
    cold = f" after a {sent.cold_start_wait_s:.0f} s cold start" if sent.cold_start_wait_s else ""
    return ok(
        PLAIN_INVOCATION,
        f"200, {tokens} token(s) in {elapsed:.1f} s{cold}, {sampling}: {_preview(text)}",
        acceptance=spec_decode_metrics_in(answer),
    )


def check_streamed_invocation(client: Any, request: GenerationRequest, *, sampling: str) -> StepResult:
    """``client`` is a ``PeagleClient`` (streams through InvokeEndpointWithResponseStream or /invocations);
    ``sampling`` names the request's sampling in the step line."""
    try:
        result = client.generate(request)
    except PeagleClientError as error:
        return fail(STREAMED_INVOCATION, f"{type(error).__name__}: {error}")
    if not result.text:
        return fail(STREAMED_INVOCATION, f"the stream finished ({result.finish_reason}) without any text")
    tokens = result.usage.completion_tokens if result.usage else "?"
    ttft = f"TTFT {result.timings.ttft_s * 1000:.0f} ms, " if result.timings.ttft_s is not None else ""
    cold = f" after a {result.cold_start_wait_s:.0f} s cold start" if result.cold_start_wait_s else ""
    return ok(
        STREAMED_INVOCATION,
        f"{tokens} token(s) in {len(result.timings.chunk_times_s)} chunk(s), {ttft}e2e {result.timings.e2e_s:.1f} s"
        f"{cold}, {sampling}: {_preview(result.text)}",
        acceptance=result.spec_decode_metrics,
    )


def check_speculation_from_counters(before: Any, after: Any, base_url: str) -> StepResult:
    """vLLM's spec-decode counters (``MetricsSnapshot`` before and after the invocations, or None
    when /metrics was unreachable) must show drafts and accepted tokens."""
    from peagle.bench.vllm_counters import speculation_between
    from peagle_serve.contract import VllmMetric

    if before is None or after is None:
        return fail(
            SPECULATION_ON, f"GET {base_url.rstrip('/')}/metrics failed: vLLM's spec-decode counters cannot be read"
        )
    speculation = speculation_between(before, after)
    if speculation is None:
        return fail(
            SPECULATION_ON,
            f"the server exports no {VllmMetric.SPEC_DRAFTS}: speculation is off (vLLM registers the spec-decode "
            "counters only with a speculative config). If K=0 is intended pass --expect-speculation off",
        )
    if speculation.drafts == 0:
        return fail(
            SPECULATION_ON, f"{VllmMetric.SPEC_DRAFTS} did not grow during the smoke requests: no drafts were made"
        )
    if speculation.accepted_tokens == 0:
        return fail(
            SPECULATION_ON,
            f"{speculation.drafts} drafts, 0 accepted tokens ({VllmMetric.SPEC_ACCEPTED}): the drafter's guesses "
            "never match the target; is it the drafter trained for this target?",
        )
    return ok(
        SPECULATION_ON,
        f"{speculation.drafts} drafts, {speculation.accepted_tokens} accepted tokens during the smoke requests "
        f"(acceptance rate {_number(speculation.acceptance_rate)}, mean acceptance length "
        f"{_number(speculation.mean_acceptance_length)})",
    )


def judged_at_deployed_sampling(
    step: StepResult, greedy: StepResult, sampled: StepResult, sampling: Sampling
) -> StepResult:
    """The speculation step (from /metrics or CloudWatch), with the acceptance of the two answers beside it:
    the sampled one (``sampling``, what the deployment serves) and the greedy one. A passing step fails when
    the sampled answer accepted none of its drafts: users, served at that sampling, would get no speed-up."""
    if step.status is not StepStatus.OK:
        return step
    at = sampling.describe()
    figures = sampled.acceptance
    if figures is None:
        why = (
            "the sampled request failed"
            if sampled.status is StepStatus.FAIL
            else "its answer carried no metrics.speculative_decoding"
        )
        return ok(step.name, f"{step.detail}; acceptance at {at} not known: {why}")
    beside = "" if sampling.is_greedy or greedy.acceptance is None else f"; {_length(greedy.acceptance)} greedy"
    measured = f"mean acceptance length {_length(figures)} at {at}{beside}"
    if figures.num_accepted_draft_tokens == 0:
        return fail(
            step.name,
            f"{step.detail}; but at {at} the answer accepted none of its {figures.num_draft_tokens} drafted token(s) "
            f"({measured}): users, served at this sampling, get no speed-up from the drafter",
        )
    return ok(step.name, f"{step.detail}; {measured}")


def _length(metrics: Any) -> str:
    return f"{metrics.mean_acceptance_length:.2f}"


def _preview(text: str, limit: int = 40) -> str:
    shown = text if len(text) <= limit else text[: limit - 3] + "..."
    return json.dumps(shown, ensure_ascii=False)


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
