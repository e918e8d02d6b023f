"""The launcher's rules for a local pair's K and K-by-batch-size schedule, checked before a command serves it.

`peagle tune` (its --k and --schedule candidates) and `peagle capacity` (--speculative-tokens or
--speculative-schedule) each start `peagle local` for a setting; a setting the launcher would refuse is found
here first, with the launcher's own checks (inference_image/peagle_serve/contract.py: schedule_problems,
schedule_coverage_problems) and `peagle local`'s parser, so nothing is started for a setting that cannot run.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def speculation_problems(ks: Sequence[int], schedules: Sequence[str], *, k_flag: str, schedule_flag: str) -> list[str]:
    """Every K above the local drafters' trained K and every schedule the launcher would refuse, each naming
    the flag and value given and what to do; empty when all can be served."""
    from peagle.local.cli import LOCAL_MAX_NUM_SEQS, parse_schedule
    from peagle.local.tiny_pair import TRAINED_SPECULATIVE_TOKENS
    from peagle_serve.contract import schedule_coverage_problems, schedule_problems

    trained_k = TRAINED_SPECULATIVE_TOKENS
    problems = [
        f"{k_flag} {k}: above the {trained_k} tokens the local drafters are trained for; use K <= {trained_k}"
        for k in ks
        if k > trained_k
    ]
    for text in schedules:
        try:
            bands = parse_schedule(text)
        except argparse.ArgumentTypeError as error:
            problems.append(f"{schedule_flag} {text}: {error}")
            continue
        found = schedule_problems(bands, trained_k=trained_k)
        found = found or schedule_coverage_problems(bands, LOCAL_MAX_NUM_SEQS)
        problems += [f"{schedule_flag} {text}: {problem}" for problem in found]
    return problems
