"""The machine-readable benchmark results (``results.json``) and their schema.

Plain dataclasses, serialised with ``dataclasses.asdict``; ``load_results`` reads a
stored file back (for ``--compare-to`` and ``--from-results``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from peagle.bench.host_conditions import HostConditions

SCHEMA = "peagle-bench/1"
# Where acceptance figures come from: the change of the server's /metrics counters over a
# level (URL targets), or the sum of the responses' per-request metrics.speculative_decoding
# (any target whose server sends them, SageMaker endpoints included).
SOURCE_METRICS = "/metrics"
SOURCE_RESPONSES = "responses"


GREEDY_AS_COMPARISON = "greedy (temperature 0), a comparison: deployed profiles sample"


@dataclass(frozen=True)
class Sampling:
    """The sampling every request of a run was sent with.

    Acceptance, and so speed, depends on it: a drafter's guesses match the target's greedy choice more
    often than a sample at the temperature users get, so runs compare like for like only at one sampling.
    """

    temperature: float | None  # None: not sent, the server's default
    top_p: float | None  # None: not sent, the server's default
    profile: str | None = None  # the catalog profile the values came from
    overridden: bool = False  # --temperature / --top-p replaced the profile's values

    @classmethod
    def of_profile(cls, profile: str, *, temperature: float | None = None, top_p: float | None = None) -> Sampling:
        """Catalog profile ``profile``'s sampling, with the values given (not None) in place of its own."""
        from peagle.catalog import ProfileName, load_catalog

        own = load_catalog().profiles[ProfileName(profile)].sampling
        chosen = (own.temperature if temperature is None else temperature, own.top_p if top_p is None else top_p)
        return cls(*chosen, profile=profile, overridden=chosen != (own.temperature, own.top_p))

    @property
    def key(self) -> tuple[float | None, float | None]:
        """What two runs must share to have been sampled alike."""
        return (self.temperature, self.top_p)

    @property
    def is_greedy(self) -> bool:
        return self.temperature == 0

    def describe(self) -> str:
        """One plain phrase, e.g. "temperature 0.7, top_p 0.9 (profile chatbot)"."""
        if self.is_greedy:
            if self.profile and not self.overridden:  # a profile that deploys greedy
                return f"greedy (temperature 0, profile {self.profile})"
            return GREEDY_AS_COMPARISON
        values = f"temperature {_or_server_default(self.temperature)}, top_p {_or_server_default(self.top_p)}"
        if not self.profile:
            return values
        return values + (f" (overriding profile {self.profile})" if self.overridden else f" (profile {self.profile})")


def describe_sampling(sampling: Sampling | None) -> str:
    return sampling.describe() if sampling is not None else "not recorded"


def _or_server_default(value: float | None) -> str:
    return "server default" if value is None else f"{value:g}"


@dataclass(frozen=True)
class Distribution:
    """Percentiles of one per-request metric, in seconds."""

    p50: float
    p90: float
    p99: float
    mean: float
    count: int


@dataclass(frozen=True)
class Speculation:
    """Acceptance over one level; ``drafts`` are verify steps that had drafts."""

    acceptance_rate: float | None
    mean_acceptance_length: float | None
    per_position_acceptance: list[float]
    drafts: int
    draft_tokens: int
    accepted_tokens: int
    source: str = SOURCE_METRICS  # SOURCE_METRICS or SOURCE_RESPONSES (files before it: /metrics)

    @classmethod
    def from_kpi(
        cls, kpi: dict[str, Any], *, drafts: int, draft_tokens: int, accepted_tokens: int, source: str
    ) -> Speculation:
        """From the acceptance keys of ``peagle_serve.kpi`` (``acceptance_kpis``) and the counts behind them."""
        return cls(
            acceptance_rate=kpi["spec_acceptance_rate"],
            mean_acceptance_length=kpi["spec_mean_acceptance_length"],
            per_position_acceptance=kpi["spec_acceptance_per_position"] or [],
            drafts=drafts,
            draft_tokens=draft_tokens,
            accepted_tokens=accepted_tokens,
            source=source,
        )


@dataclass(frozen=True)
class ServerLatency:
    """Means over a level from vLLM's own latency histograms (URL targets only)."""

    ttft_mean_s: float | None
    tpot_mean_s: float | None
    e2e_mean_s: float | None
    queue_time_mean_s: float | None


@dataclass(frozen=True)
class OpenLoopLoad:
    """How an open-loop level was sent (open_loop.py) and what the load itself did."""

    offered_request_rate: float  # requests/s asked for; math.inf ("inf" in the JSON): all at once
    burstiness: float  # gamma shape of the inter-arrival times; 1 = Poisson
    max_concurrency: int | None  # the cap on requests in flight (vllm bench serve's --max-concurrency)
    seed: int
    achieved_request_rate: float  # requests sent / schedule start to the last send
    send_lag_max_s: float  # how far behind schedule the sender fell (slot waits excluded)
    send_lag_p99_s: float
    slot_wait_mean_s: float  # waits for a free --max-concurrency slot (0 without a cap)
    slot_wait_max_s: float
    in_flight_peak: int  # the load's own count of requests sent and not yet answered
    in_flight_mean: float  # time-averaged over the level's wall time

    @property
    def rate_text(self) -> str:
        return "inf" if math.isinf(self.offered_request_rate) else f"{self.offered_request_rate:g}"


@dataclass(frozen=True)
class SloResult:
    """The SLO a level was judged against (peagle.slo, vllm bench serve's definitions) and what it attained."""

    ttft_seconds: float | None
    tpot_seconds: float | None
    e2e_seconds: float | None
    target_attainment: float  # share of requests that must meet every bound
    source: str  # where the bounds came from, e.g. "profile chatbot" or "--slo"
    per_bound: dict[str, float]  # "ttft" / "tpot" / "e2el" -> share of the level's requests meeting it
    all_bounds: float  # share meeting every bound (failed requests meet none)
    good_requests: int
    goodput_requests_per_s: float  # good requests / the level's wall time

    @property
    def met(self) -> bool:
        return self.all_bounds >= self.target_attainment

    def as_slo(self):
        """The catalog ``Slo`` these bounds are (for peagle.slo and peagle.planning.planner.describe_slo)."""
        from peagle.catalog import Slo

        return Slo(
            ttft_seconds=self.ttft_seconds,
            tpot_seconds=self.tpot_seconds,
            e2e_seconds=self.e2e_seconds,
            attainment=self.target_attainment,
        )


@dataclass(frozen=True)
class LevelResult:
    """One level of one run: a closed-loop concurrency, or an open-loop request rate (``open_loop``)."""

    concurrency: int
    requests: int
    failed: int
    errors_by_type: dict[str, int]
    duration_s: float
    prompt_tokens: int
    output_tokens: int
    output_tokens_per_s: float
    requests_per_s: float
    ttft_s: Distribution | None
    tpot_s: Distribution | None
    itl_s: Distribution | None
    e2e_s: Distribution | None
    speculation: Speculation | None  # from the server's /metrics counters (URL targets)
    cost_per_million_output_tokens_usd: float | None
    server_latency: ServerLatency | None = None
    # From the successful responses' metrics.speculative_decoding, when the server sent it.
    speculation_from_responses: Speculation | None = None
    # Open-loop levels only; their ``concurrency`` is 0, so no reader takes one for a closed-loop level.
    open_loop: OpenLoopLoad | None = None
    slo: SloResult | None = None  # files from before SLOs were recorded have none
    host: HostConditions | None = None  # what the machine did meanwhile; files from before have none

    @property
    def noisy(self) -> bool:
        """Measured while the machine was busier than the run's limit (``host.busy`` says why)."""
        return self.host is not None and self.host.noisy

    @property
    def key(self) -> tuple[int, float]:
        """What identifies a level within a run: closed-loop concurrency, else the offered request rate."""
        return (0, self.open_loop.offered_request_rate) if self.open_loop else (self.concurrency, 0.0)

    @property
    def load_label(self) -> str:
        """``c=4`` for a closed-loop level, ``2 req/s`` (``inf req/s``) for an open-loop one."""
        return f"{self.open_loop.rate_text} req/s" if self.open_loop else f"c={self.concurrency}"

    @property
    def load_phrase(self) -> str:
        """``concurrency 4`` or ``request rate 2 req/s``, for sentences."""
        return f"request rate {self.load_label}" if self.open_loop else f"concurrency {self.concurrency}"

    @property
    def error_rate(self) -> float:
        return self.failed / self.requests if self.requests else 0.0

    @property
    def acceptance(self) -> Speculation | None:
        """The level's acceptance as reports and comparisons show it: from the responses when
        they carried it (exactly this level's requests, and the only source an endpoint has),
        else from /metrics."""
        return self.speculation_from_responses or self.speculation


@dataclass(frozen=True)
class RunResult:
    """One target (a server or endpoint in one configuration) over all levels."""

    label: str
    target: str
    model: str | None
    server_version: str | None
    max_model_len: int | None
    speculation: str  # "on", "off" or "unknown"
    speculative_tokens: float | None  # K as measured: draft tokens per verify step (answers or counters)
    price_per_hour_usd: float | None
    price_source: str | None
    notes: list[str]
    levels: list[LevelResult]
    sampling: Sampling | None = None  # None: a file from before runs recorded it, and no legacy settings line

    def level(self, concurrency: int) -> LevelResult | None:
        """The closed-loop level at ``concurrency``."""
        return next((level for level in self.levels if level.concurrency == concurrency and not level.open_loop), None)

    def level_at(self, key: tuple[int, float]) -> LevelResult | None:
        """The level with ``LevelResult.key`` ``key`` (closed or open loop)."""
        return next((level for level in self.levels if level.key == key), None)


@dataclass(frozen=True)
class BenchResults:
    created_utc: str
    environment: dict[str, Any]
    settings: dict[str, Any]
    runs: list[RunResult]
    regressions: list[dict[str, Any]] = field(default_factory=list)
    compared_to: str | None = None
    # Runs (or a run and its --compare-to baseline) sampled differently: compared, but not like for like.
    sampling_notes: list[str] = field(default_factory=list)
    # Levels of a --compare-to check left out: measured on a busy machine in this run or the baseline.
    not_compared: list[str] = field(default_factory=list)
    schema: str = SCHEMA


def results_to_json(results: BenchResults) -> str:
    payload = asdict(results)
    for run_payload, run in zip(payload["runs"], results.runs, strict=False):
        for level_payload, level in zip(run_payload["levels"], run.levels, strict=False):
            level_payload["error_rate"] = level.error_rate  # derived, stored for readers of the JSON
            if level.open_loop is not None:  # JSON has no infinity; vllm bench serve writes "inf" too
                load = level_payload["open_loop"]
                for name in ("offered_request_rate", "achieved_request_rate"):
                    load[name] = "inf" if math.isinf(load[name]) else load[name]
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


def load_results(path: Path) -> BenchResults:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"cannot read benchmark results {path}: {error}") from error
    if payload.get("schema") != SCHEMA:
        raise ValueError(
            f"{path} is not a peagle bench results file (schema {payload.get('schema')!r}, want {SCHEMA!r})"
        )
    legacy_sampling = _sampling_from_settings_line(payload["settings"].get("sampling"))
    runs = [_run_from_dict(run, legacy_sampling) for run in payload["runs"]]
    return BenchResults(
        created_utc=payload["created_utc"],
        environment=payload["environment"],
        settings=payload["settings"],
        runs=runs,
        regressions=payload.get("regressions", []),
        compared_to=payload.get("compared_to"),
        sampling_notes=payload.get("sampling_notes", []),
        not_compared=payload.get("not_compared", []),
    )


def _run_from_dict(raw: dict[str, Any], legacy_sampling: Sampling | None) -> RunResult:
    levels = [_level_from_dict(level) for level in raw["levels"]]
    sampling = Sampling(**raw["sampling"]) if raw.get("sampling") else legacy_sampling
    return RunResult(**{**_known(RunResult, raw), "levels": levels, "sampling": sampling})


# Files from before runs recorded their sampling said it in one settings line, e.g. "profile none,
# max_tokens 128, temperature 0.0, top_p server default, ignore_eos True" (docs/baselines/ has them).
_LEGACY_SAMPLING = re.compile(
    r"profile (?P<profile>\S+), .*temperature (?P<temperature>[0-9.]+), top_p (?P<top_p>[^,]+)"
)


def _sampling_from_settings_line(line: object) -> Sampling | None:
    found = _LEGACY_SAMPLING.match(line) if isinstance(line, str) else None
    if found is None:
        return None
    top_p = found["top_p"]
    return Sampling(
        temperature=float(found["temperature"]),
        top_p=None if top_p == "server default" else float(top_p),
        profile=None if found["profile"] == "none" else found["profile"],
    )


def _level_from_dict(raw: dict[str, Any]) -> LevelResult:
    values = _known(LevelResult, raw)
    for name in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
        values[name] = Distribution(**values[name]) if values.get(name) else None
    for name in ("speculation", "speculation_from_responses"):
        values[name] = Speculation(**values[name]) if values.get(name) else None
    values["server_latency"] = ServerLatency(**values["server_latency"]) if values.get("server_latency") else None
    if values.get("open_loop"):
        load = values["open_loop"]
        for name in ("offered_request_rate", "achieved_request_rate"):
            load[name] = float(load[name])  # "inf" -> math.inf
        values["open_loop"] = OpenLoopLoad(**_known(OpenLoopLoad, load))
    values["slo"] = SloResult(**_known(SloResult, values["slo"])) if values.get("slo") else None
    values["host"] = HostConditions(**_known(HostConditions, values["host"])) if values.get("host") else None
    return LevelResult(**values)


def _known(cls: type, raw: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {key: value for key, value in raw.items() if key in names}
