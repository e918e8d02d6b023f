"""Start a transform job and follow it to the end, and find the endpoint stack's Model.

Following polls DescribeTransformJob with a growing interval (GPU jobs take
minutes to start and hours to run; a fixed short interval would only burn API
quota), prints each status change once, and classifies the end: Completed is a
success; Failed (with SageMaker's FailureReason) and Stopped are not.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from peagle.aws import aws_call
from peagle.progress import progress_bar, write_line
from peagle.settings.errors import PeagleError

TERMINAL_STATUSES = frozenset({"Completed", "Failed", "Stopped"})
FIRST_POLL_SECONDS = 5.0
MAX_POLL_SECONDS = 60.0
HEARTBEAT_SECONDS = 1.0
MODEL_NAME_OUTPUT = "ModelName"


@dataclass(frozen=True)
class JobOutcome:
    status: str
    succeeded: bool
    message: str


def start_transform_job(sagemaker: Any, request: dict) -> str:
    """CreateTransformJob; the job's ARN."""
    with aws_call(
        f"creating transform job {request['TransformJobName']}",
        permission="sagemaker:CreateTransformJob (and sagemaker:AddTags) on "
        f"arn:aws:sagemaker:<region>:<account>:transform-job/{request['TransformJobName']}",
    ):
        return sagemaker.create_transform_job(**request)["TransformJobArn"]


def model_environment(sagemaker: Any, model_name: str) -> dict[str, str]:
    """The deployed Model's container environment (what the job's Environment is laid over)."""
    with aws_call(f"reading model {model_name}", permission=f"sagemaker:DescribeModel on model/{model_name}"):
        description = sagemaker.describe_model(ModelName=model_name)
    container = description.get("PrimaryContainer") or (description.get("Containers") or [{}])[0]
    return dict(container.get("Environment") or {})


def model_name_from_stack(cloudformation: Any, stack_name: str) -> str:
    """The ``ModelName`` output of the endpoint stack."""
    with aws_call(f"reading stack {stack_name}", permission=f"cloudformation:DescribeStacks on stack/{stack_name}/*"):
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    outputs = {output["OutputKey"]: output.get("OutputValue", "") for output in stacks[0].get("Outputs", [])}
    if not outputs.get(MODEL_NAME_OUTPUT):
        raise PeagleError(
            f"stack {stack_name} has no {MODEL_NAME_OUTPUT} output (outputs: {', '.join(sorted(outputs)) or 'none'}); "
            "deploy the current endpoint stack, or pass --model-name"
        )
    return outputs[MODEL_NAME_OUTPUT]


def follow_transform_job(
    sagemaker: Any,
    job_name: str,
    *,
    emit: Callable[[str], None] = write_line,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    first_poll_seconds: float = FIRST_POLL_SECONDS,
    max_poll_seconds: float = MAX_POLL_SECONDS,
    heartbeat: bool | None = None,
) -> JobOutcome:
    """Poll until the job ends; print each status change with the elapsed time.

    ``heartbeat`` (default: when stderr is a terminal) keeps one line on stderr ticking
    between polls: the elapsed time, the status, and since when the job runs on its instances.
    Records processed are not in it, as no API counts them while the job runs:
    DescribeTransformJob has no count, and the ``/aws/sagemaker/TransformJobs`` metrics
    are CPU, memory, GPU and disk utilization per instance ("SageMaker AI job metrics",
    https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html). The
    launcher's KPI lines in the job's log streams carry requests finished per interval.
    """
    started = clock()
    interval = first_poll_seconds
    last_status = None
    with progress_bar(total=None, unit="", bar_format="{desc}", enabled=heartbeat, leave=False) as line:
        while True:
            with aws_call(
                f"reading transform job {job_name}",
                permission=f"sagemaker:DescribeTransformJob on transform-job/{job_name}",
            ):
                description = sagemaker.describe_transform_job(TransformJobName=job_name)
            status = description["TransformJobStatus"]
            if status != last_status:
                emit(f"[{_elapsed(clock() - started)}] {job_name}: {status}")
                last_status = status
            if status in TERMINAL_STATUSES:
                return job_outcome(description)

            def beat(description: dict = description) -> None:
                line.set_description_str(_heartbeat(job_name, description, clock() - started))

            _wait(interval, sleep, beat if not line.disable else None)
            interval = min(max_poll_seconds, interval * 2)


def _wait(seconds: float, sleep: Callable[[float], None], beat: Callable[[], None] | None) -> None:
    """Sleep ``seconds``; with a heartbeat, in steps of a second, redrawing it before each."""
    if beat is None:
        sleep(seconds)
        return
    remaining = seconds
    while remaining > 0:
        beat()
        step = min(HEARTBEAT_SECONDS, remaining)
        sleep(step)
        remaining -= step


def _heartbeat(job_name: str, description: dict, elapsed_seconds: float) -> str:
    text = f"[{_elapsed(elapsed_seconds)}] {job_name}: {description['TransformJobStatus']}"
    on_instances = description.get("TransformStartTime")
    if isinstance(on_instances, datetime):
        text += f", on its instances since {on_instances.astimezone(UTC):%H:%M:%S} UTC"
    else:
        text += ", waiting for its instances"
    return text


def job_outcome(description: dict) -> JobOutcome:
    status = description["TransformJobStatus"]
    name = description.get("TransformJobName", "")
    logs = f"logs: CloudWatch log group /aws/sagemaker/TransformJobs, streams {name}/*"
    if status == "Completed":
        output = description.get("TransformOutput", {}).get("S3OutputPath", "")
        return JobOutcome(status, True, f"completed; output (one line per record, <input file>.out): {output}")
    if status == "Failed":
        reason = description.get("FailureReason") or "no FailureReason given"
        return JobOutcome(status, False, f"failed: {reason} ({logs})")
    if status == "Stopped":
        return JobOutcome(status, False, f"was stopped before finishing ({logs})")
    return JobOutcome(status, False, f"is {status}")


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:d}:{minutes:02d}:{secs:02d}"
