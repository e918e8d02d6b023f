"""Which seed each level runs on: a rate's repeat i on seed + i, for its synthetic prompts and its arrivals, so
the repeats that a verdict pools are different samples of the workload (not one sample measured again), and
two runs with the same --seed measured level by level on the same prompts and arrivals compare paired by seed
(peagle/bench/intervals.py). A --prompts-file's prompts are the workload itself: its repeats change the
arrivals only."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from peagle.bench.prompts import PromptCase, synthetic_prompts


def prompts_by_repeat(
    prompts: Sequence[PromptCase], *, buckets: Sequence[str] | None, seed: int
) -> Callable[[int], tuple[Sequence[PromptCase], int | None]]:
    """(prompts, the seed they were drawn from) for a rate's repeat i: synthetic prompts of ``buckets`` drawn from
    seed + i (repeat 0's are ``prompts``, the run's own), or, with ``buckets`` None (a prompts file), ``prompts``
    in every repeat and no prompts seed."""
    if buckets is None:
        return lambda repeat: (prompts, None)
    drawn: dict[int, Sequence[PromptCase]] = {0: prompts}

    def at(repeat: int) -> tuple[Sequence[PromptCase], int | None]:
        if repeat not in drawn:
            drawn[repeat] = synthetic_prompts(buckets, seed=seed + repeat)
        return drawn[repeat], seed + repeat

    return at


def seeds_note(*, from_file: bool, seed: int) -> str:
    """The report's note on what a repeat changes."""
    if from_file:
        return (
            f"a rate's repeats change the arrivals only (arrival seed {seed} + repeat): every level sends the "
            "prompts file's prompts, in its order"
        )
    return (
        f"a rate's repeat i draws its own synthetic prompts and arrivals from seed {seed} + i (capacity.json: each "
        "point's prompts_seed and seed), so two runs with the same --seed compare level by level"
    )
