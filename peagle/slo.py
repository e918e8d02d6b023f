"""Whether a request met its SLO, and what a set of requests attained: the definitions of
`vllm bench serve` (vLLM 0.32.0, vllm/benchmarks/serve.py, ``calculate_metrics``: "if output_len <= 1,
we regard tpot as 0 for goodput"; a request is good when every bound ``s >= r``; ``request_goodput =
good_completed / dur_s``), so that its --goodput and ours count the same.

- TTFT: time from sending the request to its first output token;
- TPOT: (E2EL - TTFT) / (output tokens - 1), the time per output token after the first; a request
  with one output token has none and meets any TPOT bound;
- E2EL: time from sending the request to its last byte;
- goodput: requests per second that meet every bound of the SLO; attainment: their share of the
  requests sent (a failed request meets none).

``vllm bench serve --goodput ttft:MS tpot:MS e2el:MS`` takes the bounds in milliseconds;
``parse_goodput`` reads that syntax, so a bound can be given the same way to both tools.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from peagle.catalog import Slo
from peagle.settings.errors import PeagleError

# The SLO spelling's bound names and the Slo fields they set (also how AIPerf-job results name them).
SLO_BOUND_FIELDS = {"ttft": "ttft_seconds", "tpot": "tpot_seconds", "e2el": "e2e_seconds"}


class SloError(PeagleError):
    """An SLO given on the command line that cannot be read."""


@dataclass(frozen=True)
class RequestTiming:
    ok: bool
    ttft_seconds: float | None
    e2e_seconds: float | None
    output_tokens: int

    @property
    def tpot_seconds(self) -> float | None:
        if self.ttft_seconds is None or self.e2e_seconds is None or self.output_tokens < 2:
            return None
        return (self.e2e_seconds - self.ttft_seconds) / (self.output_tokens - 1)


def bounds_met(slo: Slo, request: RequestTiming) -> dict[str, bool]:
    """Each set bound -> whether ``request`` met it (a failed request meets none)."""
    values = {"ttft": request.ttft_seconds, "tpot": request.tpot_seconds, "e2el": request.e2e_seconds}
    met = {}
    for key, field in SLO_BOUND_FIELDS.items():
        bound = getattr(slo, field)
        if bound is None:
            continue
        value = values[key]
        if not request.ok:
            met[key] = False
        elif value is None:
            met[key] = key == "tpot"  # no token after the first: nothing to be slow at
        else:
            met[key] = value <= bound
    return met


@dataclass(frozen=True)
class Attainment:
    requests: int
    per_bound: Mapping[str, float]  # bound -> share of requests meeting it
    all_bounds: float  # share meeting every bound
    good_requests: int

    def goodput(self, duration_seconds: float) -> float:
        return self.good_requests / duration_seconds if duration_seconds > 0 else 0.0

    def meets(self, slo: Slo) -> bool:
        return self.requests > 0 and self.all_bounds >= slo.attainment


def attainment(slo: Slo, requests: Iterable[RequestTiming]) -> Attainment:
    met = [bounds_met(slo, request) for request in requests]
    keys = [key for key, field in SLO_BOUND_FIELDS.items() if getattr(slo, field) is not None]
    count = len(met)
    good = sum(1 for request in met if all(request.values()))
    return Attainment(
        requests=count,
        per_bound={key: (sum(1 for r in met if r[key]) / count if count else 0.0) for key in keys},
        all_bounds=good / count if count else 0.0,
        good_requests=good,
    )


def parse_goodput(text: str, *, attainment: float) -> Slo:
    """``ttft:1000 tpot:100 e2el:10000`` (milliseconds, vllm bench serve's --goodput) -> an Slo."""
    values: dict[str, float] = {}
    for item in text.replace(",", " ").split():
        key, _, number = item.partition(":")
        if key not in SLO_BOUND_FIELDS:
            raise SloError(f"unknown SLO bound {key!r} in {text!r}; bounds: ttft, tpot, e2el (milliseconds)")
        try:
            milliseconds = float(number)
        except ValueError:
            raise SloError(f"{item!r}: the bound must be a number of milliseconds, like ttft:1000") from None
        if not milliseconds > 0:
            raise SloError(f"{item!r}: the bound must be above 0 ms")
        values[SLO_BOUND_FIELDS[key]] = milliseconds / 1000
    if not values:
        raise SloError(f"no bound in {text!r}; give e.g. ttft:1000 tpot:100 e2el:10000 (milliseconds)")
    if not 0 < attainment <= 1:
        raise SloError(f"the attainment must be above 0 and at most 1, not {attainment:g}")
    return Slo(**values, attainment=attainment)


def as_goodput_argument(slo: Slo) -> str:
    """The ``--goodput`` argument of vllm bench serve for ``slo``."""
    return " ".join(
        f"{key}:{getattr(slo, field) * 1000:g}"
        for key, field in SLO_BOUND_FIELDS.items()
        if getattr(slo, field) is not None
    )


def add_slo_arguments(parser, *, default: str, what: str = "") -> None:
    """``--slo`` (alias ``--goodput``) and ``--attainment``, as peagle bench, capacity and tune take them."""
    parser.add_argument(
        "--slo",
        "--goodput",
        dest="slo",
        metavar="BOUNDS",
        help="SLO bounds in milliseconds, vllm bench serve's --goodput syntax, e.g. 'ttft:1000 tpot:100 e2el:10000' "
        f"(default: {default}){what}",
    )
    parser.add_argument(
        "--attainment",
        type=float,
        help="share of requests that must meet every bound, above 0 and at most 1 (default: the profile's)",
    )


def slo_over(base: Slo, base_source: str, bounds: str | None, attainment: float | None) -> tuple[Slo, str]:
    """``--slo`` bounds and ``--attainment`` in place of the parts of ``base``, and where the result came from."""
    if attainment is not None and not 0 < attainment <= 1:
        raise SloError(f"--attainment {attainment:g}: the attainment must be above 0 and at most 1, not {attainment:g}")
    if bounds is not None:
        chosen = base.attainment if attainment is None else attainment
        source = "--slo" + (" --attainment" if attainment is not None else f", {base_source}'s attainment")
        return parse_goodput(bounds, attainment=chosen), source
    if attainment is not None:
        return base.model_copy(update={"attainment": attainment}), f"{base_source}'s bounds, --attainment"
    return base, base_source
