"""Warm-up request and speculation self-check, run once after vLLM is healthy.

"Speculation configured but silently off" is a known field failure (a drafter that
never runs still lets the endpoint answer, just slower). With speculation
configured, the warm-up request must move ``vllm:spec_decode_num_drafts_total``
and get at least one draft token accepted; otherwise the start fails, so SageMaker
marks the deployment failed instead of serving without its drafter.
"""

from __future__ import annotations

import logging
import time

from .contract import VllmMetric
from .errors import SelfCheckError
from .launch_plan import LaunchPlan
from .local_http import get_text, post_json
from .metrics import fetch_metrics
from .settings import LauncherSettings

log = logging.getLogger("peagle_serve")

# Counters are updated by vLLM's output handler right after the response; allow
# a short grace period before concluding nothing moved.
_COUNTER_SETTLE_SECONDS = 5.0


def run_self_check(plan: LaunchPlan, settings: LauncherSettings, *, deadline: float) -> None:
    """Raise SelfCheckError (with the log line to print) when the engine is not serving as configured.

    Everything, the warm-up request included, ends by ``deadline`` (``time.monotonic()``):
    the launcher's share of the start-up budget for this check.
    """
    base = plan.local_url
    before = fetch_metrics(base, timeout=_time_left(deadline, 5.0))
    if plan.speculation is not None and not before.has(VllmMetric.SPEC_DRAFTS):
        raise SelfCheckError(
            f"speculation is configured (K={plan.speculative_tokens}) but vLLM exports no "
            f"{VllmMetric.SPEC_DRAFTS}: the engine runs without a drafter"
        )

    model_name = _served_model_name(base, plan, timeout=_time_left(deadline, 10.0))
    started = time.monotonic()
    timeout = _time_left(deadline, settings.self_check_timeout_seconds)
    try:
        status, body = post_json(
            base + "/v1/completions",
            {
                "model": model_name,
                "prompt": settings.self_check_prompt,
                "max_tokens": settings.self_check_max_tokens,
                "temperature": 0.0,
            },
            timeout=timeout,
        )
    except OSError as error:
        if not isinstance(getattr(error, "reason", error), TimeoutError):
            raise
        raise SelfCheckError(
            f"the warm-up request did not answer within {timeout:.0f} s (what was left of "
            "PEAGLE_SELF_CHECK_TIMEOUT_SECONDS and the PEAGLE_STARTUP_TIMEOUT_SECONDS budget)"
        ) from None
    if status != 200:
        raise SelfCheckError(f"warm-up request failed with HTTP {status}: {str(body)[:500]}")
    log.info("warm-up request answered in %.2f s", time.monotonic() - started)

    if plan.speculation is None:
        return
    settle_until = time.monotonic() + _COUNTER_SETTLE_SECONDS
    while True:
        after = fetch_metrics(base, timeout=_time_left(deadline, 5.0))
        drafts = after.total(VllmMetric.SPEC_DRAFTS) - before.total(VllmMetric.SPEC_DRAFTS)
        if drafts > 0 or time.monotonic() > min(settle_until, deadline):
            break
        time.sleep(0.25)
    accepted = after.total(VllmMetric.SPEC_ACCEPTED) - before.total(VllmMetric.SPEC_ACCEPTED)
    drafter = plan.speculation.config.get("model")
    if drafts <= 0:
        raise SelfCheckError(
            f"speculation is configured (K={plan.speculative_tokens}, drafter {drafter}) but the "
            f"warm-up request made no drafts ({VllmMetric.SPEC_DRAFTS} did not move): the drafter is not "
            "in use. Check vLLM's log above for why"
        )
    if accepted <= 0:
        # vLLM still counts drafts when it skips the drafter (e.g. the sequence is
        # longer than the drafter's context) or when the drafter belongs to another
        # target: they are all rejected. A matched drafter accepts some of ~K x 16
        # draft tokens with near certainty.
        raise SelfCheckError(
            f"speculation is configured (K={plan.speculative_tokens}, drafter {drafter}) but none "
            f"of the warm-up request's {int(drafts)} drafts was accepted: the drafter is not in "
            "use (e.g. its context is shorter than the prompt) or was not trained for this "
            "target. Check the model pair and the launcher warnings above"
        )
    log.info(
        "speculation self-check passed: %d drafts, mean acceptance length %.2f on the warm-up request",
        drafts,
        1.0 + accepted / drafts,
    )


def _time_left(deadline: float, at_most: float) -> float:
    """A timeout for the next step: at most ``at_most``, never past the deadline."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise SelfCheckError(
            "the start-up budget ran out during the self-check (PEAGLE_STARTUP_TIMEOUT_SECONDS; "
            "PEAGLE_SELF_CHECK_TIMEOUT_SECONDS)"
        )
    return min(at_most, left)


def _served_model_name(base: str, plan: LaunchPlan, *, timeout: float) -> str:
    import json

    status, body = get_text(base + "/v1/models", timeout=timeout)
    if status == 200:
        try:
            return json.loads(body)["data"][0]["id"]
        except (ValueError, KeyError, IndexError):
            pass
    return plan.served_model_name
