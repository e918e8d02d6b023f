"""Warm-up requests and speculation self-check, run once after vLLM is healthy.

"Speculation configured but silently off" is a known field failure (a drafter that
never runs still lets the endpoint answer, just slower). With speculation
configured, the greedy warm-up request must move ``vllm:spec_decode_num_drafts_total``
and get at least one draft token accepted; otherwise the start fails, so SageMaker
marks the deployment failed instead of serving without its drafter.

Then a second warm-up at the sampling the server applies by default (the profile's,
``--override-generation-config``), because that is what requests get: its acceptance
rate is compared with the greedy one's, and a collapse (a fault in sampled
verification, as vLLM's CPU build had, or a drafter that only guesses the greedy path)
is logged loudly or fails the start (``PEAGLE_SELF_CHECK_SAMPLED_COLLAPSE``).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

from . import vllm_args
from .contract import VllmMetric
from .errors import SelfCheckError
from .launch_plan import LaunchPlan
from .local_http import get_text, post_json
from .metrics import MetricsSnapshot, fetch_metrics
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
    greedy = _warm_up(base, model_name, settings, {"temperature": 0.0}, "greedy", before, deadline=deadline, plan=plan)
    if plan.speculation is None:
        return
    drafter = plan.speculation.config.get("model")
    if greedy.drafts <= 0:
        raise SelfCheckError(
            f"speculation is configured (K={plan.speculative_tokens}, drafter {drafter}) but the "
            f"warm-up request made no drafts ({VllmMetric.SPEC_DRAFTS} did not move): the drafter is not "
            "in use. Check vLLM's log above for why"
        )
    if greedy.accepted <= 0:
        # vLLM still counts drafts when it skips the drafter (e.g. the sequence is
        # longer than the drafter's context) or when the drafter belongs to another
        # target: they are all rejected. A matched drafter accepts some of ~K x 16
        # draft tokens with near certainty.
        raise SelfCheckError(
            f"speculation is configured (K={plan.speculative_tokens}, drafter {drafter}) but none "
            f"of the warm-up request's {int(greedy.drafts)} drafts was accepted: the drafter is not in "
            "use (e.g. its context is shorter than the prompt) or was not trained for this "
            "target. Check the model pair and the launcher warnings above"
        )
    summary = f"greedy: {int(greedy.drafts)} drafts, mean acceptance length {greedy.mean_acceptance_length:.2f}"
    sampling = served_sampling(plan)
    if settings.self_check_sampled_min_ratio > 0 and sampling.get("temperature", 1.0) > 0:
        # No sampling fields: the server's defaults apply, as for a client that leaves them to the endpoint.
        label = describe_sampling(sampling)
        sampled = _warm_up(base, model_name, settings, {}, label, greedy.after, deadline=deadline, plan=plan)
        summary += "; " + _judge_sampled(sampled, greedy, label, settings)
    log.info("speculation self-check passed on the warm-up requests: %s", summary)


@dataclass(frozen=True)
class WarmUp:
    """One warm-up request's share of vLLM's spec-decode counters, and the counters after it."""

    drafts: float
    draft_tokens: float
    accepted: float
    after: MetricsSnapshot

    @property
    def mean_acceptance_length(self) -> float:
        return 1.0 + self.accepted / self.drafts if self.drafts else 1.0

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.draft_tokens if self.draft_tokens else 0.0


def _warm_up(
    base: str,
    model_name: str,
    settings: LauncherSettings,
    sampling: dict,
    label: str,
    before: MetricsSnapshot,
    *,
    deadline: float,
    plan: LaunchPlan,
) -> WarmUp:
    started = time.monotonic()
    timeout = _time_left(deadline, settings.self_check_timeout_seconds)
    body = {"model": model_name, "prompt": settings.self_check_prompt, "max_tokens": settings.self_check_max_tokens}
    try:
        status, answer = post_json(base + "/v1/completions", {**body, **sampling}, timeout=timeout)
    except OSError as error:
        if not isinstance(getattr(error, "reason", error), TimeoutError):
            raise
        raise SelfCheckError(
            f"the warm-up request did not answer within {timeout:.0f} s (what was left of "
            "PEAGLE_SELF_CHECK_TIMEOUT_SECONDS and the PEAGLE_STARTUP_TIMEOUT_SECONDS budget)"
        ) from None
    if status != 200:
        raise SelfCheckError(f"warm-up request failed with HTTP {status}: {str(answer)[:500]}")
    log.info("warm-up request (%s) answered in %.2f s", label, time.monotonic() - started)
    if plan.speculation is None:
        return WarmUp(0, 0, 0, before)
    settle_until = time.monotonic() + _COUNTER_SETTLE_SECONDS
    while True:
        after = fetch_metrics(base, timeout=_time_left(deadline, 5.0))
        drafts = after.total(VllmMetric.SPEC_DRAFTS) - before.total(VllmMetric.SPEC_DRAFTS)
        if drafts > 0 or time.monotonic() > min(settle_until, deadline):
            break
        time.sleep(0.25)
    return WarmUp(
        drafts=drafts,
        draft_tokens=after.total(VllmMetric.SPEC_DRAFT_TOKENS) - before.total(VllmMetric.SPEC_DRAFT_TOKENS),
        accepted=after.total(VllmMetric.SPEC_ACCEPTED) - before.total(VllmMetric.SPEC_ACCEPTED),
        after=after,
    )


def _judge_sampled(sampled: WarmUp, greedy: WarmUp, sampling: str, settings: LauncherSettings) -> str:
    """The sampled warm-up's line; a collapse is logged loudly, or raised with ``fail``."""
    ratio = sampled.acceptance_rate / greedy.acceptance_rate
    line = (
        f"{sampling}: mean acceptance length {sampled.mean_acceptance_length:.2f}, acceptance rate "
        f"{sampled.acceptance_rate:.2f} = {ratio:.2f} x greedy's {greedy.acceptance_rate:.2f}"
    )
    if ratio >= settings.self_check_sampled_min_ratio:
        return line
    message = (
        f"PEAGLE SAMPLED ACCEPTANCE COLLAPSED: {line}, below PEAGLE_SELF_CHECK_SAMPLED_MIN_RATIO="
        f"{settings.self_check_sampled_min_ratio:g}. Requests that sample (the profile's temperature) get little "
        "from speculation and may pay for it. Likely causes: a vLLM fault in sampled verification (on vLLM's CPU "
        "build: PEAGLE_VLLM_CPU_CORRECTIONS=false, or a vLLM version the corrections do not cover; see the "
        "launcher's start-up lines); a drafter trained for another target, tokenizer or chat template, which "
        "guesses the greedy path only; a temperature far above what the drafter was trained at"
    )
    if settings.self_check_sampled_collapse == "fail":
        raise SelfCheckError(message + " (PEAGLE_SELF_CHECK_SAMPLED_COLLAPSE=fail)")
    log.error("%s (PEAGLE_SELF_CHECK_SAMPLED_COLLAPSE=warn: serving on)", message)
    return line + " (COLLAPSED, see above)"


def served_sampling(plan: LaunchPlan) -> dict:
    """The server's default sampling: vLLM's ``--override-generation-config`` ({} when not set or unreadable)."""
    raw = vllm_args.option_value(plan.argv, "--override-generation-config")
    try:
        values = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return {}
    return values if isinstance(values, dict) else {}


def describe_sampling(served: dict) -> str:
    """The served default sampling, for the log."""
    if not served:
        return "sampled at the model's defaults (no --override-generation-config)"
    return "sampled at the served defaults, " + ", ".join(f"{name} {value}" for name, value in sorted(served.items()))


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
    status, body = get_text(base + "/v1/models", timeout=timeout)
    if status == 200:
        try:
            return json.loads(body)["data"][0]["id"]
        except (ValueError, KeyError, IndexError):
            pass
    return plan.served_model_name
