"""The serving image's in-account build, as a CloudFormation custom resource (peagle_cdk/serving_image_build.py says
why it is built this way, with its sources). Runs in AWS Lambda's Python runtime: stdlib and the runtime's boto3.

A ``Custom::PeagleServingImageBuild`` request (Create or Update; Delete does nothing: images outlive the resource
that asked for them):

1. the repository holds the tag (a redeploy, a second endpoint on the same context, the **rollback** of a failed
   update, a redeploy after a build CloudFormation gave up on): SUCCESS at once, nothing built;
2. else a build of the same image still running is watched, or one is started with the request's idempotency token
   (a duplicate delivery of the request is the same build);
3. the build is **watched by polling CodeBuild** (no build-ended event is needed): this invocation polls until a
   minute before its own timeout, then hands the watch to a new invocation of this function (the request travels in
   the event, the only place it lives); two such watch chains run, so one lost event breaks neither answer;
4. **every answer checks the tag first**: a build that failed because another build pushed the tag first
   (ImageTagAlreadyExistsException in an immutable repository) is a SUCCESS; a build that failed while another of
   the same image still runs hands the watch to that one; past the watch's deadline the tag decides.

Every request gets an answer or is retried by Lambda, never dropped silently: "If the custom resource provider does
not respond, the stack operation waits until the timeout ... expires" (CloudFormation User Guide, "Custom
resources").
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
import cfn_answer
import image_builds
from botocore.config import Config
from cfn_answer import Request
from image_builds import Image

# The key under which a continuation event carries the watch (the build, the deadline, the hop, the chain).
WATCH_KEY = "PeagleBuildWatch"
# Set on the function by peagle_cdk/serving_image_build.py (WATCH_BUDGET, POLL_INTERVAL).
WATCH_SECONDS_VARIABLE = "PEAGLE_BUILD_WATCH_SECONDS"
POLL_SECONDS_VARIABLE = "PEAGLE_BUILD_POLL_SECONDS"
# Time left in an invocation when it hands the watch on: a poll, the hand-off call and the answer fit in it.
HANDOFF_MARGIN_SECONDS = 60
# The watch chains started per request: each hands off to one successor, so losing one event ends one chain only.
WATCHERS = ("A", "B")
# A chain hands off at most this often (about 4 hops fill the 57-minute budget with 14-minute invocations). Lambda
# stops a chain of invocations caused by one event after 16 ("If a function is invoked by the same triggering event
# more than 16 times, Lambda will stop the next invocation", AWS What's New, 2023-07-13, "AWS Lambda can now detect
# and stop recursive loops in Lambda functions").
MAX_HOPS = 12
# Standard retries with bounded timeouts: an SDK call that hangs must not outlast the hand-off margin.
SDK_CONFIG = Config(retries={"mode": "standard", "max_attempts": 4}, connect_timeout=5, read_timeout=20)


@dataclass
class Clients:
    ecr: Any
    codebuild: Any
    lambda_: Any

    @classmethod
    def default(cls) -> Clients:
        return cls(*(boto3.client(name, config=SDK_CONFIG) for name in ("ecr", "codebuild", "lambda")))


@dataclass(frozen=True)
class Timing:
    watch_seconds: float
    poll_seconds: float
    now: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep

    @classmethod
    def from_environment(cls) -> Timing:
        return cls(float(os.environ[WATCH_SECONDS_VARIABLE]), float(os.environ[POLL_SECONDS_VARIABLE]))


def handler(event: dict[str, Any], context: Any) -> None:
    clients, timing = Clients.default(), Timing.from_environment()
    if WATCH_KEY in event:
        watch_build(event, context, clients, timing)
    else:
        on_stack_event(event, context, clients, timing)


# --- a CloudFormation request --------------------------------------------------------------------------------------


def on_stack_event(event: dict[str, Any], context: Any, clients: Clients, timing: Timing) -> None:
    """Answer at once (Delete, or the tag exists), or find or start the build and watch it."""
    request = Request.from_event(event)
    if event["RequestType"] == "Delete":
        cfn_answer.respond(request, "SUCCESS", "Nothing to delete: the image stays in its repository.")
        return
    image = Image.from_properties(event["ResourceProperties"])
    request = request.naming(image.name)
    running = build_id = None
    try:
        if not image_builds.image_exists(clients.ecr, image):
            running = _other_running_build(clients, image, ended="")
            token = image_builds.idempotency_token(event)
            build_id = running or image_builds.start_build(clients.codebuild, image, token, sleep=timing.sleep)
    except Exception as error:  # an answer, after the tag is checked once more
        print(json.dumps({"error": repr(error)}))
        answer(clients, request, image, f"{type(error).__name__}: {error}")
        return
    if build_id is None:  # the repository holds the tag
        answer(clients, request, image, "")
        return
    print(json.dumps({"watching": build_id, "adopted": running is not None, "image": image.name}))
    first = {"BuildId": build_id, "Deadline": timing.now() + timing.watch_seconds, "Hop": 0}
    for watcher in WATCHERS[1:]:
        try:
            hand_off(clients, context, event, {**first, "Watcher": watcher})
        except Exception as error:  # the first chain still watches
            print(json.dumps({"watcher": watcher, "not started": repr(error)}))
    watch_build({**event, WATCH_KEY: {**first, "Watcher": WATCHERS[0]}}, context, clients, timing)


# --- the watch -------------------------------------------------------------------------------------------------------


def watch_build(event: dict[str, Any], context: Any, clients: Clients, timing: Timing) -> None:
    """Poll the build until it ends (then answer), the deadline passes (then the tag decides), or this invocation
    is nearly out of time (then a new invocation takes the watch over)."""
    image = Image.from_properties(event["ResourceProperties"])
    request = Request.from_event(event).naming(image.name)
    watch = dict(event[WATCH_KEY])
    while True:
        state = image_builds.build_state(clients.codebuild, watch["BuildId"])
        if state is not None and state.ended:
            other = None if _tag_exists(clients, image) else _other_running_build(clients, image, watch["BuildId"])
            if other is not None:
                print(json.dumps({"ended": watch["BuildId"], "status": state.status, "watching": other}))
                watch["BuildId"] = other
                continue
            reason = f"the serving image build {watch['BuildId']} ended {state.status}; its log: {state.log_link}"
            answer(clients, request, image, reason)
            return
        if timing.now() >= watch["Deadline"] or watch["Hop"] > MAX_HOPS:
            status = state.status if state is not None else "unknown"
            reason = f"the serving image build {watch['BuildId']} was still {status} past its queue and build timeouts"
            answer(clients, request, image, reason)
            return
        if context.get_remaining_time_in_millis() / 1000 < timing.poll_seconds + HANDOFF_MARGIN_SECONDS:
            # A failed hand-off raises: Lambda runs this invocation again ("by default Lambda attempts to run it two
            # more times", Lambda Developer Guide, asynchronous invocation), resuming the watch from this event.
            hand_off(clients, context, event, {**watch, "Hop": watch["Hop"] + 1})
            return
        timing.sleep(timing.poll_seconds)


def hand_off(clients: Clients, context: Any, event: dict[str, Any], watch: dict[str, Any]) -> None:
    """Invoke this function asynchronously with the request and the watch (InvocationType "Event – Invoke the
    function asynchronously", botocore lambda service-2.json, InvocationRequest): the request goes from one
    invocation of this function to the next and nowhere else."""
    payload = json.dumps({**event, WATCH_KEY: watch}).encode()
    clients.lambda_.invoke(FunctionName=context.function_name, InvocationType="Event", Payload=payload)
    print(json.dumps({"handed off": watch["BuildId"], "watcher": watch.get("Watcher"), "hop": watch["Hop"]}))


def _tag_exists(clients: Clients, image: Image) -> bool:
    try:
        return image_builds.image_exists(clients.ecr, image)
    except Exception as error:
        print(json.dumps({"tag": "unknown", "error": repr(error)}))
        return False


def _other_running_build(clients: Clients, image: Image, ended: str) -> str | None:
    """A running build of the image other than ``ended``; None when CodeBuild cannot say (finding one is an
    optimisation: without it a build starts, and the tag still decides every answer)."""
    try:
        other = image_builds.running_build(clients.codebuild, image)
    except Exception as error:
        print(json.dumps({"running builds": "unknown", "error": repr(error)}))
        return None
    return other if other != ended else None


# --- the answer ------------------------------------------------------------------------------------------------------


def answer(clients: Clients, request: Request, image: Image, reason_if_missing: str) -> None:
    """SUCCESS when the repository holds the tag, whatever the build did; else FAILED with the reason."""
    try:
        exists = image_builds.image_exists(clients.ecr, image)
    except Exception as error:
        exists, reason_if_missing = False, f"{reason_if_missing} (ECR could not say whether the tag exists: {error})"
    if exists:
        cfn_answer.respond(request, "SUCCESS", f"{image.name} is in the repository", data={"ImageTag": image.tag})
    else:
        cfn_answer.respond(request, "FAILED", reason_if_missing or f"{image.name} is not in the repository")
