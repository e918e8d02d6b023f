"""How long the CLIs wait for an inference component scaled to zero: its own start-up budgets.

A copy started from zero is an instance (when none runs), then the model download and the
container's start-up, each bounded by a timeout the component carries
(``Specification.StartupParameters``: ``ModelDataDownloadTimeoutInSeconds`` and
``ContainerStartupHealthCheckTimeoutInSeconds``, 60-3600 s each; DescribeInferenceComponent,
botocore 1.44.5 SageMaker model). Past their sum SageMaker has given up on the copy, so that sum
is the longest wait that can still end in an answer. The instance's launch comes on top: the
developer guide ("Scale an endpoint to zero instances") says only that "the provisioning process
takes several minutes"; ``INSTANCE_LAUNCH_ALLOWANCE_S`` is our allowance for it, not an AWS figure.

The CLIs read the budgets once, before the first request, when ``--cold-start-wait`` is not given
(`peagle invoke`, `bench`, `smoke` and `tune --endpoint` with ``--inference-component``). When they
cannot (no ``sagemaker:DescribeInferenceComponent``, no start-up parameters), the wait is
``DEFAULT_COLD_START_WAIT_S`` and the notice of a cold start says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from peagle.aws import AwsCallError, aws_call, aws_client, aws_session
from peagle.planning.planner import INSTANCE_LAUNCH_ALLOWANCE_S, WAKE_UP_ALLOWANCE_S

# Our choice: covers AWS's measured cold starts from zero (about 5-6 minutes for an 8B and a 70B model:
# "Unlock cost savings with the new scale down to zero feature in SageMaker Inference", AWS Machine
# Learning Blog, 2024-12-03) with room to spare.
DEFAULT_COLD_START_WAIT_S = 900.0
DESCRIBE_PERMISSION = "sagemaker:DescribeInferenceComponent"
COLD_START_DEFAULT_HELP = (
    f"the component's own model download + container start-up timeouts + {INSTANCE_LAUNCH_ALLOWANCE_S:.0f} s for "
    f"an instance + {WAKE_UP_ALLOWANCE_S:.0f} s for the wake-up alarm to act, read with DescribeInferenceComponent; "
    f"{DEFAULT_COLD_START_WAIT_S:.0f} when they cannot be read"
)


@dataclass(frozen=True)
class ColdStartWait:
    """How long to wait for a copy, and why that long (shown when a cold start is waited for)."""

    seconds: float
    basis: str


def given_wait(seconds: float) -> ColdStartWait:
    return ColdStartWait(seconds, "--cold-start-wait")


def component_cold_start_wait(component: str, *, region: str | None, sagemaker: Any = None) -> ColdStartWait:
    """The component's download + start-up budgets plus the instance and wake-up allowances (the planner's
    ``Plan.cold_start_wait_seconds``); the default, with the reason, when they cannot be read. ``sagemaker``: a SageMaker client (made here if None)."""
    from botocore.exceptions import BotoCoreError

    try:
        with aws_call(f"reading {component}'s start-up timeouts", permission=DESCRIBE_PERMISSION):
            client = sagemaker if sagemaker is not None else make_sagemaker_client(region)
            described = client.describe_inference_component(InferenceComponentName=component)
    except (AwsCallError, BotoCoreError) as error:  # BotoCoreError: e.g. ProfileNotFound
        return _default_because(str(error))
    startup = (described.get("Specification") or {}).get("StartupParameters") or {}
    download = startup.get("ModelDataDownloadTimeoutInSeconds")
    start = startup.get("ContainerStartupHealthCheckTimeoutInSeconds")
    if download is None or start is None:
        return _default_because(f"{component} sets no model download and container start-up timeouts")
    return ColdStartWait(
        float(download + start + INSTANCE_LAUNCH_ALLOWANCE_S + WAKE_UP_ALLOWANCE_S),
        f"{component}'s model download {download} s + container start-up {start} s timeouts + "
        f"{INSTANCE_LAUNCH_ALLOWANCE_S:.0f} s for an instance to launch + {WAKE_UP_ALLOWANCE_S:.0f} s for the "
        "wake-up alarm to act; --cold-start-wait to change",
    )


def make_sagemaker_client(region: str | None) -> Any:
    """The SageMaker (control plane) client the budgets are read with."""
    return aws_client(aws_session(region), "sagemaker")


def _default_because(reason: str) -> ColdStartWait:
    return ColdStartWait(
        DEFAULT_COLD_START_WAIT_S,
        f"the default, as the component's own budgets were not read: {reason}; --cold-start-wait to change",
    )
