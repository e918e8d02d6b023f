"""Run one benchmark target through its levels: closed-loop concurrencies or open-loop request rates."""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from peagle.bench.host_conditions import DEFAULT_BUSY_LIMIT, BusyLimit, HostWatch
from peagle.bench.load import run_closed_loop
from peagle.bench.open_loop import run_open_loop, summarise_open_loop_level
from peagle.bench.prompts import PromptCase
from peagle.bench.results import LevelResult, RunResult, Sampling
from peagle.bench.server_probe import (
    ENDPOINT_METRICS_NOTE,
    ENDPOINT_RESPONSES_NOTE,
    ServerInfo,
    probe_url,
    scrape_metrics,
)
from peagle.bench.stats import RequestRecord, summarise_level
from peagle.bench.vllm_counters import server_latency_between, speculation_between
from peagle.catalog import Slo
from peagle.client import GenerationRequest, NoCapacityError, PeagleClient, PeagleClientError

NO_COPY_DURING_MEASUREMENT = (
    "requests found no copy of the inference component (scaled to zero) while being measured: bench waits for "
    "a cold start only during its warm-up (--warmup 1 or more, --cold-start-wait), so run with a warm-up, or "
    "keep a copy running (min copies >= 1) while benchmarking"
)


class WarmupFailedError(RuntimeError):
    """The target cannot serve the benchmark's requests at all."""


@dataclass(frozen=True)
class BenchTarget:
    label: str
    url: str | None = None
    endpoint: str | None = None
    region: str | None = None
    target_variant: str | None = None  # InvokeEndpoint TargetVariant: one A/B variant on its own
    inference_component: str | None = None  # InvokeEndpoint InferenceComponentName (component mode)

    @property
    def description(self) -> str:
        if self.url:
            return self.url
        return (
            f"sagemaker:{self.endpoint}"
            + (f" variant {self.target_variant}" if self.target_variant else "")
            + (f" component {self.inference_component}" if self.inference_component else "")
        )


@dataclass(frozen=True)
class OpenLoopSettings:
    """Open-loop levels (open_loop.py): one per request rate, arrivals as vllm bench serve draws them."""

    request_rates: Sequence[float]  # requests/s, math.inf for all at once
    burstiness: float = 1.0
    max_concurrency: int | None = None
    seed: int = 0


@dataclass(frozen=True)
class BenchSettings:
    concurrency: Sequence[int]  # closed-loop levels; ignored when ``open_loop`` is set
    requests_per_level: int
    prompts: Sequence[PromptCase]
    request_template: GenerationRequest  # sampling and body extras; the prompt is replaced
    sampling: Sampling | None = None  # the template's sampling and where it came from, recorded with each run
    warmup_requests: int = 1
    price_per_hour_usd: float | None = None
    price_source: str | None = None
    describe: dict[str, Any] = field(default_factory=dict)  # what results.json records as settings
    open_loop: OpenLoopSettings | None = None  # request-rate levels in place of the concurrency ones
    slo: Slo | None = None  # what each level's attainment and goodput are judged against
    slo_source: str = ""
    busy_limit: BusyLimit = DEFAULT_BUSY_LIMIT  # when a level counts as measured on a busy machine

    @property
    def level_count(self) -> int:
        return len(self.open_loop.request_rates) if self.open_loop else len(self.concurrency)


def build_requests(settings: BenchSettings, count: int) -> list[GenerationRequest]:
    """``count`` requests cycling through the prompt set, in a fixed order."""
    requests = []
    template = settings.request_template
    for case in itertools.islice(itertools.cycle(settings.prompts), count):
        requests.append(
            replace(
                template,
                prompt=case.prompt,
                messages=case.messages,
                max_tokens=case.max_tokens or template.max_tokens,
                extra={**template.extra, **case.extra},
            )
        )
    return requests


def run_target(
    target: BenchTarget,
    settings: BenchSettings,
    client: PeagleClient,
    on_request_done: Callable[[str, RequestRecord], None] = lambda load, record: None,
) -> RunResult:
    """Warm up, then send ``requests_per_level`` requests at each level (``on_request_done`` gets the
    level's ``load_label``, e.g. ``c=4`` or ``2 req/s``, and the record).

    Acceptance comes from the answers (their per-request metrics, summed over each
    level) and, for a URL target, also from the spec-decode counters scraped before
    and after each level; either covers that level's requests only (warm-up excluded).
    """
    info = probe_url(target.url) if target.url else ServerInfo()
    notes = [info.note] if info.note else []
    notes += _warm_up(target, settings, client)
    # Measured requests never wait for a cold start: one that finds no copy is an error of its level.
    client = client.with_retry_policy(replace(client.retry_policy, cold_start_wait_s=0.0))
    metrics_url = target.url if info.metrics_reachable else None

    levels: list[LevelResult] = []
    for load in _loads(settings):
        level, records = _measure_watched_level(target, settings, client, load, on_request_done, metrics_url)
        levels.append(level)
        notes.extend(_first_error_notes(level.load_phrase, records))
        if NO_COPY_DURING_MEASUREMENT not in notes and any(
            record.error_type == NoCapacityError.__name__ for record in records
        ):
            notes.append(NO_COPY_DURING_MEASUREMENT)

    answered_acceptance = any(level.speculation_from_responses for level in levels)
    if target.endpoint:
        notes.insert(0, ENDPOINT_RESPONSES_NOTE if answered_acceptance else ENDPOINT_METRICS_NOTE)
    return RunResult(
        label=target.label,
        target=target.description,
        model=info.model,
        server_version=info.server_version,
        max_model_len=info.max_model_len,
        # vLLM sends per-request acceptance only when it speculates (contract.py quotes the rule).
        speculation="on" if answered_acceptance else info.speculation,
        speculative_tokens=_observed_k(levels),
        price_per_hour_usd=settings.price_per_hour_usd,
        price_source=settings.price_source,
        notes=notes,
        levels=levels,
        sampling=settings.sampling,
    )


def _warm_up(target: BenchTarget, settings: BenchSettings, client: PeagleClient) -> list[str]:
    """Send the warm-up requests (not measured); the notes they leave. A failing one stops the run before a sweep
    of identical failures (wrong endpoint name, server down, request too long). An inference component scaled to
    zero gets its copy here: the client waits for it (its policy's cold_start_wait_s, explained on stderr), so no
    measured request pays for it."""
    notes = []
    for request in build_requests(settings, settings.warmup_requests):
        try:
            warmup = client.generate(request)
        except PeagleClientError as error:
            raise WarmupFailedError(
                f"{target.description}: warm-up request failed: {type(error).__name__}: {error}"
            ) from None
        if warmup.cold_start_wait_s:
            note = (
                f"cold start: the warm-up waited {warmup.cold_start_wait_s:.0f} s for a copy of the inference "
                "component; measuring began after it, so no figure includes it"
            )
            print(f"bench: {target.label}: {note}", file=sys.stderr, flush=True)
            notes.append(note)
    return notes


def _measure_watched_level(
    target: BenchTarget,
    settings: BenchSettings,
    client: PeagleClient,
    load: int | float,
    on_request_done: Callable[[str, RequestRecord], None],
    metrics_url: str | None,
) -> tuple[LevelResult, list[RequestRecord]]:
    """One level, with the machine watched meanwhile and, when ``metrics_url`` (a URL target whose /metrics
    answered) is given, the server's spec-decode counters and latency histograms read before and after it."""
    before = scrape_metrics(metrics_url) if metrics_url else None
    with HostWatch(target.url) as watch:
        level, records = _measure_level(client, settings, load, on_request_done)
    lag = level.open_loop.send_lag_p99_s if level.open_loop else None
    host = watch.conditions(settings.busy_limit, send_lag_p99_s=lag)
    level = replace(level, host=host)
    if host.noisy:
        print(
            f"bench: {target.label} {level.load_label}: measured on a busy machine: " + "; ".join(host.busy),
            file=sys.stderr,
            flush=True,
        )
    after = scrape_metrics(metrics_url) if metrics_url and before is not None else None
    if before is not None and after is not None:
        level = replace(
            level,
            speculation=speculation_between(before, after),
            server_latency=server_latency_between(before, after),
        )
    return level, records


def _loads(settings: BenchSettings) -> list[int | float]:
    """A closed-loop concurrency (int) or an open-loop request rate (float) per level."""
    if settings.open_loop is not None:
        return [float(rate) for rate in settings.open_loop.request_rates]
    return [int(concurrency) for concurrency in settings.concurrency]


def _measure_level(
    client: PeagleClient,
    settings: BenchSettings,
    load: int | float,
    on_request_done: Callable[[str, RequestRecord], None],
) -> tuple[LevelResult, list[RequestRecord]]:
    """One level's requests, sent closed loop at concurrency ``load`` or open loop at request rate ``load``."""
    requests = build_requests(settings, settings.requests_per_level)
    common = {"slo": settings.slo, "slo_source": settings.slo_source, "price_per_hour_usd": settings.price_per_hour_usd}
    if settings.open_loop is None:
        label = f"c={load}"
        records, duration_s = run_closed_loop(
            client, requests, int(load), on_done=lambda record: on_request_done(label, record)
        )
        return summarise_level(int(load), records, duration_s, speculation=None, **common), records
    open_loop = settings.open_loop
    label = f"{'inf' if math.isinf(load) else f'{load:g}'} req/s"
    run = run_open_loop(
        client,
        requests,
        rate=load,
        burstiness=open_loop.burstiness,
        max_concurrency=open_loop.max_concurrency,
        seed=open_loop.seed,
        on_done=lambda record: on_request_done(label, record),
    )
    return summarise_open_loop_level(run, **common), run.records


def _observed_k(levels: Sequence[LevelResult]) -> float | None:
    for level in levels:
        if level.acceptance and level.acceptance.drafts:
            return round(level.acceptance.draft_tokens / level.acceptance.drafts, 2)
    return None


def _first_error_notes(load_phrase: str, records: Sequence[RequestRecord]) -> list[str]:
    """One example message per error type, so a failed level explains itself."""
    seen: dict[str, str] = {}
    for record in records:
        kind = record.error_type or "unknown"  # a failed record always names it (load.py, send_one)
        if not record.ok and kind not in seen:
            seen[kind] = record.error_message or ""
    return [f"{load_phrase}: {kind}: {message}" for kind, message in seen.items()]
