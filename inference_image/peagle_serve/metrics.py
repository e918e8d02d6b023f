"""Read vLLM's Prometheus ``/metrics`` into a snapshot that can be summed and diffed."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families  # a vLLM dependency

from .local_http import get_text


@dataclass
class MetricsSnapshot:
    """Samples by name; each a list of (labels, value). ``taken_at`` is monotonic."""

    samples: dict[str, list[tuple[dict[str, str], float]]] = field(default_factory=dict)
    taken_at: float = 0.0

    @classmethod
    def parse(cls, text: str, taken_at: float | None = None) -> MetricsSnapshot:
        samples: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                samples[sample.name].append((dict(sample.labels), float(sample.value)))
        return cls(dict(samples), time.monotonic() if taken_at is None else taken_at)

    def has(self, name: str) -> bool:
        return name in self.samples

    def total(self, name: str) -> float:
        """Sum over all label sets (engines, models); 0 when absent."""
        return sum(value for _, value in self.samples.get(name, ()))

    def by_label(self, name: str, label: str) -> dict[str, float]:
        totals: dict[str, float] = defaultdict(float)
        for labels, value in self.samples.get(name, ()):
            if label in labels:
                totals[labels[label]] += value
        return dict(totals)


def fetch_metrics(base_url: str, timeout: float = 5.0) -> MetricsSnapshot:
    status, body = get_text(base_url + "/metrics", timeout)
    if status != 200:
        raise OSError(f"GET /metrics answered {status}")
    return MetricsSnapshot.parse(body)
