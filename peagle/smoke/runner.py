"""Runs the smoke steps in order and reports each as it finishes.

Over SageMaker every step runs; with ``--url`` (a local server) only the HTTP ones, and
speculation is read from the server's own /metrics counters instead of CloudWatch. Either way
the speculation step is judged at the deployed sampling too: the streamed request is sent at it,
and its answer's acceptance is reported beside the greedy plain request's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from peagle.bench.results import Sampling
from peagle.client.cold_start import ColdStartWait
from peagle.smoke.step import (
    ALARMS_OK,
    ENDPOINT_IN_SERVICE,
    KPI_METRICS,
    PLAIN_INVOCATION,
    SPECULATION_ON,
    STREAMED_INVOCATION,
    StepResult,
    StepStatus,
    Timing,
    fail,
    skip,
)


@dataclass(frozen=True)
class SmokeOptions:
    """What to check and how long to wait; ``url`` set means a local server (HTTP steps only)."""

    endpoint_name: str | None
    url: str | None
    variant_name: str
    stack_name: str
    expect_speculation: bool
    speculation_source: str  # why speculation is expected on/off, for the skip line
    wait_seconds: float
    kpi_wait_seconds: float
    metrics_window_minutes: int
    max_tokens: int
    max_attempts: int
    sampling: Sampling  # what the deployment serves (its profile's): the streamed request is sent at it
    # InvokeEndpoint InferenceComponentName (component mode). The component then picks the model: no
    # TargetVariant is sent (the endpoint's one variant is the instance pool) and its KPI lines carry the
    # component's name as their VariantName (stacks/endpoint_stack.py, "the KPI lines name the component").
    inference_component: str | None = None
    # How long the invocations wait for a component scaled to zero; None: the component's own start-up
    # budgets, read from SageMaker (peagle/client/cold_start.py).
    cold_start_wait_seconds: float | None = 0.0


@dataclass(frozen=True)
class AwsClients:
    sagemaker: Any
    runtime: Any  # sagemaker-runtime
    cloudwatch: Any
    cloudformation: Any


def run_smoke(
    options: SmokeOptions,
    *,
    aws: AwsClients | None,
    timing: Timing,
    report: Callable[[StepResult], None],
) -> list[StepResult]:
    results: list[StepResult] = []

    def record(result: StepResult) -> StepResult:
        results.append(result)
        report(result)
        return result

    if options.url is not None:
        _smoke_over_url(options, options.url, timing, record)
    else:
        # resolve_options (peagle/smoke/cli.py) names an endpoint whenever there is no --url, and execute connects
        # the AWS clients then.
        assert options.endpoint_name is not None and aws is not None, "a SageMaker smoke run needs endpoint and AWS"
        _smoke_over_sagemaker(options, options.endpoint_name, aws, timing, record)
    return results


def _smoke_over_url(
    options: SmokeOptions, url: str, timing: Timing, record: Callable[[StepResult], StepResult]
) -> None:
    record(skip(ENDPOINT_IN_SERVICE, "--url: a local server, no SageMaker endpoint to describe"))
    _run_url_steps(options, url, timing, record)
    record(skip(ALARMS_OK, "--url: a local server has no CloudFormation stack"))


def _smoke_over_sagemaker(
    options: SmokeOptions,
    endpoint_name: str,
    aws: AwsClients,
    timing: Timing,
    record: Callable[[StepResult], StepResult],
) -> None:
    from peagle.smoke.cloud import check_alarms, check_endpoint_in_service

    in_service = record(
        _reporting_aws_failures(
            ENDPOINT_IN_SERVICE,
            lambda: check_endpoint_in_service(
                aws.sagemaker,
                endpoint_name,
                None if options.inference_component else options.variant_name,
                wait_seconds=options.wait_seconds,
                component=options.inference_component,
                timing=timing,
            ),
        )
    )
    if in_service.status is StepStatus.FAIL:
        for name in (PLAIN_INVOCATION, STREAMED_INVOCATION, SPECULATION_ON, KPI_METRICS):
            record(skip(name, f"{ENDPOINT_IN_SERVICE} failed"))
    else:
        _run_endpoint_steps(options, endpoint_name, aws, timing, record)
    record(
        _reporting_aws_failures(
            ALARMS_OK,
            lambda: check_alarms(aws.cloudformation, aws.cloudwatch, options.stack_name, endpoint_name),
        )
    )


def _run_url_steps(options: SmokeOptions, url: str, timing: Timing, record: Callable[[StepResult], StepResult]) -> None:
    from peagle.bench.server_probe import scrape_metrics
    from peagle.client.http_transport import HttpTransport
    from peagle.smoke.invocations import (
        check_plain_invocation,
        check_speculation_from_counters,
        check_streamed_invocation,
        invoke_plain_url,
        judged_at_deployed_sampling,
        sampling_phrase,
        smoke_request,
    )

    before = scrape_metrics(url) if options.expect_speculation else None
    plain = record(check_plain_invocation(invoke_plain_url(url), smoke_request(options.max_tokens), timing))
    with _client(HttpTransport(url), options, timing, ColdStartWait(0.0, "a --url server")) as client:
        sampled = smoke_request(options.max_tokens, options.sampling)
        streamed = record(check_streamed_invocation(client, sampled, sampling=sampling_phrase(options.sampling)))
    if not options.expect_speculation:
        record(skip(SPECULATION_ON, f"speculation expected off ({options.speculation_source})"))
    elif plain.status is StepStatus.FAIL and streamed.status is StepStatus.FAIL:
        record(skip(SPECULATION_ON, "no smoke request succeeded, so no drafts to count"))
    else:
        counted = check_speculation_from_counters(before, scrape_metrics(url), url)
        record(judged_at_deployed_sampling(counted, plain, streamed, options.sampling))
    record(
        skip(KPI_METRICS, "--url: KPI metrics live in CloudWatch; a local server prints its peagle_kpi lines on stdout")
    )


def _run_endpoint_steps(
    options: SmokeOptions,
    endpoint_name: str,
    aws: AwsClients,
    timing: Timing,
    record: Callable[[StepResult], StepResult],
) -> None:
    from peagle.client.cli import print_notice, resolve_cold_start_wait
    from peagle.client.errors import NoCapacityError
    from peagle.client.retry import RetryPolicy
    from peagle.client.sagemaker_transport import SageMakerTransport
    from peagle.smoke.cloud import KpiMetricReader, check_acceptance_in_cloudwatch, check_kpi_reports
    from peagle.smoke.invocations import (
        check_plain_invocation,
        check_streamed_invocation,
        invoke_plain_sagemaker,
        judged_at_deployed_sampling,
        sampling_phrase,
        smoke_request,
    )

    component = options.inference_component
    wait = resolve_cold_start_wait(
        options.cold_start_wait_seconds, endpoint_name, component, None, sagemaker=aws.sagemaker
    )
    target_variant = None if component else options.variant_name
    invoke = invoke_plain_sagemaker(aws.runtime, endpoint_name, target_variant, inference_component=component)
    # One send, as before, except that a component scaled to zero is waited for (the first invocation
    # is the one that finds it cold, so the streamed one after it normally finds the copy ready).
    plain_policy = RetryPolicy(max_attempts=1, cold_start_wait_s=wait.seconds, cold_start_basis=wait.basis)
    plain = record(
        check_plain_invocation(
            invoke, smoke_request(options.max_tokens), timing, policy=plain_policy, notify=print_notice
        )
    )
    transport = SageMakerTransport(
        endpoint_name,
        runtime_client=aws.runtime,
        target_variant=target_variant,
        inference_component=component,
    )
    if isinstance(plain.error, NoCapacityError):
        # The plain request already waited the whole --cold-start-wait: a second wait would see the same.
        streamed = record(skip(STREAMED_INVOCATION, f"{PLAIN_INVOCATION} found no copy of the inference component"))
    else:
        # Not closed: the runtime client is the caller's (the transport's close would close it).
        streamed = record(
            check_streamed_invocation(
                _client(transport, options, timing, wait),
                smoke_request(options.max_tokens, options.sampling),
                sampling=sampling_phrase(options.sampling),
            )
        )

    reader = KpiMetricReader(
        aws.cloudwatch,
        endpoint_name=endpoint_name,
        variant_name=component or options.variant_name,
        window_minutes=options.metrics_window_minutes,
        # peagle_cdk/endpoint_logs.py: an endpoint's log group, or a component's.
        log_group=f"/aws/sagemaker/InferenceComponents/{component}" if component else None,
        timing=timing,
    )
    # One budget for both metric steps: the KPI line that carries this run's acceptance is the one
    # that proves KPI reporting too, so waiting for it twice would only double a failure's wait.
    deadline = timing.monotonic() + options.kpi_wait_seconds
    if options.expect_speculation:
        in_cloudwatch = _reporting_aws_failures(
            SPECULATION_ON, lambda: check_acceptance_in_cloudwatch(reader, deadline=deadline, timing=timing)
        )
        record(judged_at_deployed_sampling(in_cloudwatch, plain, streamed, options.sampling))
    else:
        record(skip(SPECULATION_ON, f"speculation expected off ({options.speculation_source})"))
    record(_reporting_aws_failures(KPI_METRICS, lambda: check_kpi_reports(reader, deadline=deadline, timing=timing)))


def _client(transport: Any, options: SmokeOptions, timing: Timing, wait: ColdStartWait):
    from peagle.client.cli import print_notice
    from peagle.client.client import PeagleClient
    from peagle.client.retry import RetryPolicy

    policy = RetryPolicy(max_attempts=options.max_attempts, cold_start_wait_s=wait.seconds, cold_start_basis=wait.basis)
    return PeagleClient(
        transport,
        retry_policy=policy,
        sleep=timing.sleep,
        clock=timing.monotonic,
        random=timing.random,
        notify=print_notice,
    )


def _reporting_aws_failures(name: str, check: Callable[[], StepResult]) -> StepResult:
    """A fixable AWS failure (permissions, not found, throttled) fails this step only."""
    from peagle.aws import AwsCallError

    try:
        return check()
    except AwsCallError as error:
        return fail(name, str(error))
