"""What the answers themselves say about acceptance over a benchmark level.

With speculation on, the launcher has vLLM put each request's acceptance into its answer
(``metrics.speculative_decoding``; ``peagle_serve.contract`` quotes vLLM's rule): the one view
of acceptance a SageMaker endpoint gives through InvokeEndpoint, where ``/metrics`` is out of
reach. A level's figures are token-weighted: the requests' counts are summed (verify steps,
drafted and accepted tokens, steps that accepted each draft position) and turned into rates by
the launcher's own arithmetic (``peagle_serve.kpi.acceptance_kpis``), the same that turns
``/metrics`` deltas into the ``peagle_kpi`` line. Both sources then mean the same thing and agree
over the same requests. A mean of per-request rates would weigh a 10-token answer like a
1000-token one.
"""

from __future__ import annotations

from collections.abc import Sequence

from peagle.bench.results import SOURCE_RESPONSES, Speculation
from peagle.client import SpecDecodeMetrics
from peagle_serve.kpi import acceptance_kpis


def speculation_from_responses(metrics: Sequence[SpecDecodeMetrics]) -> Speculation | None:
    """The level's acceptance from its requests' metrics; None when no answer carried any."""
    if not metrics:
        return None
    accepted_per_position = [0] * max(len(item.acceptance_histogram) - 1 for item in metrics)
    for item in metrics:
        for position, steps in enumerate(item.accepted_per_position):
            accepted_per_position[position] += steps
    drafts = sum(item.num_spec_steps for item in metrics)
    draft_tokens = sum(item.num_draft_tokens for item in metrics)
    accepted = sum(item.num_accepted_draft_tokens for item in metrics)
    kpi = acceptance_kpis(
        drafts=drafts, draft_tokens=draft_tokens, accepted=accepted, accepted_per_position=accepted_per_position
    )
    return Speculation.from_kpi(
        kpi, drafts=drafts, draft_tokens=draft_tokens, accepted_tokens=accepted, source=SOURCE_RESPONSES
    )
