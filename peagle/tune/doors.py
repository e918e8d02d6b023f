"""The setting `peagle tune` recommends, in both doors' words: the deployment file's `speculation:` lines
(deployment-snippet.yaml) and the CDK library's `Speculation` (library-snippet.py).

A schedule measured on the local server has bands up to its max_num_seqs; a deployment runs up to its own
plan's (`peagle plan` shows it), which tune does not know. The last band is therefore written to end at the
largest max_num_seqs a deployment may set, so the snippet covers any plan. vLLM 0.32 fills each band only up to
its max_num_seqs (vllm/v1/spec_decode/dynamic/utils.py, build_dynamic_sd_schedule_lookup: "# Fill the current
configured inclusive range with its K value." over ``range(max(range_start, next_batch_size),
min(range_end, vllm_max_batch_size) + 1)``), so a last band that ends past it applies up to it, and the
project's coverage rule allows it (peagle_serve/contract.py, schedule_coverage_problems: "the last one may end
past it"). The snippets say up to which batch size the bands were measured.
"""

from __future__ import annotations

from collections.abc import Sequence

ScheduleBands = Sequence[tuple[int, int, int]]


def largest_max_num_seqs() -> int:
    """The largest max_num_seqs a deployment file may give (profile_overrides.max_num_seqs, its `le` bound)."""
    from annotated_types import Le

    from peagle.settings.profile import ProfileOverrides

    metadata = ProfileOverrides.model_fields["max_num_seqs"].metadata
    (bound,) = [item.le for item in metadata if isinstance(item, Le) and isinstance(item.le, int)]
    return bound


def deployable_bands(schedule: ScheduleBands) -> list[tuple[int, int, int]]:
    """The bands with the last one running to the largest max_num_seqs a deployment may set."""
    bands = [(low, high, k) for low, high, k in sorted(schedule)]
    low, high, k = bands[-1]
    return [*bands[:-1], (low, max(high, largest_max_num_seqs()), k)]


def _tail_note(schedule: ScheduleBands) -> str:
    """Two comment lines: where the bands were measured, and what the last one does past that."""
    measured_to = max(high for _, high, _ in schedule)
    return (
        f"# Bands measured on a server running up to {measured_to} requests at once; the last band carries\n"
        "# its K to any max_num_seqs (vLLM looks up none past yours: `peagle plan` shows it).\n"
    )


def deployment_snippet(speculative_tokens: int, schedule: ScheduleBands | None) -> str:
    """The deployment file's lines for a static K, or for a schedule."""
    if not schedule:
        return f"speculation:\n  speculative_tokens: {speculative_tokens}\n"
    bands = "\n".join(
        f"    - {{min_batch: {low}, max_batch: {high}, speculative_tokens: {k}}}"
        for low, high, k in deployable_bands(schedule)
    )
    return f"{_tail_note(schedule)}speculation:\n  schedule:\n{bands}\n"


def library_expression(speculative_tokens: int, schedule: ScheduleBands | None) -> str:
    """``Speculation.by_batch_size([(1, 2, 4), (3, 1024, 0)])``, ``Speculation.fixed(4)`` or ``Speculation.off()``."""
    if schedule:
        return f"Speculation.by_batch_size({deployable_bands(schedule)!r})"
    return "Speculation.off()" if speculative_tokens == 0 else f"Speculation.fixed({speculative_tokens})"


def library_snippet(speculative_tokens: int, schedule: ScheduleBands | None) -> str:
    """library-snippet.py: the same setting for `PeagleEndpoint(..., speculation=speculation)` (peagle_cdk)."""
    note = _tail_note(schedule) if schedule else ""
    return (
        '"""The speculation `peagle tune` recommends, for the CDK library:\n'
        'PeagleEndpoint(..., speculation=speculation)."""\n'
        "\n"
        "from peagle_cdk import Speculation\n"
        "\n"
        f"{note}speculation = {library_expression(speculative_tokens, schedule)}\n"
    )
