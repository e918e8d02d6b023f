"""recommendation.md and the two snippets: per sampling, the closed-loop table (tokens/s and TPOT) and the open-loop
one (goodput within the SLO), each figure a mean with its 95% interval over the rounds; the best per level, or
"cannot tell" naming the settings it cannot be told from; the proposed schedule and, when it was served, how it
did against the static K its bands name; and the setting to deploy, in both doors' words."""

from __future__ import annotations

from pathlib import Path

from peagle.bench.intervals import Interval, Verdict
from peagle.tune.choose import (
    GOODPUT,
    TOKENS,
    Candidate,
    Recommendation,
    decision_temperature,
    greedy_versus_sampled,
    recommend,
    slo_verdict,
    verdict,
)
from peagle.tune.measured import candidates_by_sampling, noisy_levels
from peagle.tune.proposal import Proposal, check_schedule, propose

INTERVAL_NOTE = (
    "Figures are means over the rounds with their 95% interval (Student t; peagle/bench/intervals.py), each round "
    "on its own prompt-and-arrival seed. Two settings are told apart only when the interval of their difference, "
    "paired by round (same seed), excludes no difference; otherwise the level says **cannot tell** and names them."
)


class TuneFailed(RuntimeError):
    """A candidate could not be served or measured."""


def _figure(interval: Interval | None, digits: int, scale: float = 1.0) -> str:
    """ "64.2 ± 3.1", or "64.2" from one run."""
    if interval is None:
        return "-"
    text = f"{interval.mean * scale:.{digits}f}"
    half = interval.half_width
    return text if half is None else f"{text} ± {half * scale:.{digits}f}"


def _ratio_text(ratio: Interval | None, versus: str) -> str:
    if ratio is None:
        return ""
    if ratio.low is None or ratio.high is None:
        return f"{ratio.mean:.2f}x {versus}"
    return f"{ratio.mean:.2f}x {versus} (95% interval {ratio.low:.2f} to {ratio.high:.2f}x)"


def _cell(candidate: Candidate, level) -> str:
    tpot = candidate.tpot_interval(level)
    text = _figure(candidate.interval(TOKENS, level), 1)
    return f"{text} ({_figure(tpot, 1, 1000)})" if tpot else text


def _goodput_cell(candidate: Candidate, level) -> str:
    goodput = _figure(candidate.interval(GOODPUT, level), 2)
    return f"{goodput} ({_figure(candidate.interval(TOKENS, level), 1)} tok/s)"


def _table_rows(candidates, levels, cell) -> list[str]:
    """The separator row and one row per candidate, ``cell(candidate, level)`` in each column."""
    rows = ["|---|" + "---|" * len(levels)]
    return rows + [f"| {c.label} | " + " | ".join(cell(c, level) for level in levels) + " |" for c in candidates]


def _runs_note(candidates) -> list[str]:
    runs = max(candidate.runs for candidate in candidates)
    if runs == 1:
        return ["One run per setting (1 run, no interval): the order of close settings may be noise.", ""]
    return [
        f"Each setting was measured {runs} times, in interleaved rounds: cells are means ± the 95% interval.",
        "",
    ]


def _level_line(choice, where: str, unit: str, digits: int) -> str:
    speedup = _ratio_text(choice.speedup, "speculation off") or (
        f"{choice.speedup_vs_off:.2f}x speculation off" if choice.speedup_vs_off else ""
    )
    figure = f"{choice.tokens_per_s:.{digits}f} {unit}" + (f", {speedup}" if speedup else "")
    if choice.cannot_tell:
        return f"- {where}: cannot tell: {', '.join(choice.cannot_tell)} (highest mean {choice.best}, {figure})"
    return f"- {where}: {choice.best} ({figure})"


def _undecided_text(recommendation: Recommendation, where: str) -> str:
    if not recommendation.undecided:
        return ""
    levels = ", ".join(f"{choice.concurrency:g}" for choice in recommendation.undecided)
    return (
        f" This rests on a cannot-tell at {where} {levels}: the best there is not told apart from the others; more "
        "rounds (--repeat) narrow the intervals."
    )


def band_text(band: tuple[float, float], by_goodput: bool) -> str:
    return f"request rates {band[0]:g}-{band[1]:g} req/s" if by_goodput else f"concurrency {band[0]:g}-{band[1]:g}"


def _closed_section(candidates, recommendation: Recommendation, band) -> list[str]:
    levels = [choice.concurrency for choice in recommendation.levels]
    lines = ["### Closed loop: output tokens/s (TPOT p50 ms) by concurrency", "", *_runs_note(candidates)]
    lines.append("| setting | " + " | ".join(f"c={c:g} tok/s (TPOT p50 ms)" for c in levels) + " |")
    lines += _table_rows(candidates, levels, _cell)
    lines += ["", "Best at each level:", ""]
    lines += [
        _level_line(choice, f"concurrency {choice.concurrency:g}", "tok/s", 1) for choice in recommendation.levels
    ]
    where = band_text(band, False) if band else "the measured levels"
    lines += [
        "",
        f"Best for {where}: {recommendation.chosen.label} (static choice gives up at most "
        f"{recommendation.worst_shortfall:.0%} against the best at any level). Dynamic schedules: "
        f"{recommendation.dynamic_verdict}." + _undecided_text(recommendation, "concurrency"),
        "",
    ]
    return lines


def _open_section(candidates, recommendation: Recommendation, band, by_goodput: bool) -> list[str]:
    levels = [choice.concurrency for choice in recommendation.levels]
    if not by_goodput:
        title = "### Open loop: output tokens/s (TPOT p50 ms) by request rate"
        header, cell = [f"{rate:g} req/s tok/s (TPOT p50 ms)" for rate in levels], _cell
    else:
        title = "### Open loop: goodput, requests/s within the SLO (tokens/s), by request rate"
        header, cell = [f"{rate:g} req/s: goodput req/s (tok/s)" for rate in levels], _goodput_cell
    lines = [title, "", *_runs_note(candidates), "| setting | " + " | ".join(header) + " |"]
    lines += _table_rows(candidates, levels, cell)
    unit = "req/s within the SLO" if by_goodput else "tok/s"
    lines += ["", "Most goodput at each request rate:" if by_goodput else "Best at each request rate:", ""]
    lines += [
        _level_line(choice, f"{choice.concurrency:g} req/s", unit, 2 if by_goodput else 1)
        for choice in recommendation.levels
    ]
    where = band_text(band, True) if band else "the measured request rates"
    measure = "of the best goodput" if by_goodput else "against the best"
    lines += [
        "",
        f"Best for {where}: {recommendation.chosen.label} (gives up at most {recommendation.worst_shortfall:.0%} "
        f"{measure} at any rate). Dynamic schedules: {recommendation.dynamic_verdict}."
        + _undecided_text(recommendation, "request rates"),
        "",
    ]
    return lines


class SamplingDecision:
    """One sampling's candidates and recommendations: closed loop by tokens/s, open loop by goodput (with an SLO
    recorded) or tokens/s. The closed loop decides when measured (it is what the schedule's bands stand for)."""

    def __init__(self, sampling, closed, open_, band, slo_text: str | None) -> None:
        self.sampling, self.closed, self.open = sampling, closed, open_
        self.by_goodput = bool(open_) and slo_text is not None and all(c.goodput_rps for c in open_)
        self.closed_recommendation = recommend(closed, band) if closed else None
        open_band = None if closed else band  # --band is of the loop that decides
        objective = GOODPUT if self.by_goodput else TOKENS
        self.open_recommendation = recommend(open_, open_band, objective=objective) if open_ else None
        self.open_by_tokens = recommend(open_, open_band) if open_ and self.by_goodput and not closed else None

    @property
    def decided(self) -> Recommendation:
        decided = self.closed_recommendation or self.open_recommendation
        assert decided is not None  # a group has runs of one loop or the other
        return decided

    @property
    def decides_by_goodput(self) -> bool:
        return self.closed_recommendation is None and self.by_goodput

    def proposal(self) -> Proposal | None:
        """The schedule proposed from the closed-loop static candidates (None: fewer than two measured)."""
        from peagle.local.cli import LOCAL_MAX_NUM_SEQS
        from peagle.local.tiny_pair import TRAINED_SPECULATIVE_TOKENS

        statics = [c for c in self.closed if not c.is_dynamic]
        if len(statics) < 2:
            return None
        return propose(statics, LOCAL_MAX_NUM_SEQS, TRAINED_SPECULATIVE_TOKENS)


def decisions(runs, band, slo_text: str | None) -> dict:
    """``{sampling key: SamplingDecision}`` in the order first measured."""
    return {
        key: SamplingDecision(sampling, closed, open_, band, slo_text)
        for key, (sampling, closed, open_) in candidates_by_sampling(runs).items()
    }


def decided_key(groups: dict, temperature: float | None, top_p: float | None):
    """The sampling group measured at ``temperature``, the one at the deployed top_p when several are."""
    matching = [key for key in groups if (key[0] if key else None) == temperature]
    return next((key for key in matching if key and key[1] == top_p), matching[0])


def slo_text_of(runs) -> str | None:
    """The SLO the runs' levels were judged against, as `peagle plan` prints it (None: none recorded)."""
    from peagle.planning.planner import describe_slo

    recorded = next((level.slo for run in runs for level in run.levels if level.open_loop and level.slo), None)
    return describe_slo(recorded.as_slo()) if recorded else None


def proposal_to_measure(runs, deployed) -> Proposal | None:
    """The proposal from the decided sampling's closed-loop runs, when it is a schedule not measured yet."""
    groups = decisions(runs, None, slo_text_of(runs))
    temperature, _ = decision_temperature({key[0] if key else None for key in groups}, deployed.temperature)
    decision = groups[decided_key(groups, temperature, deployed.top_p)]
    proposal = decision.proposal()
    if proposal is None or proposal.bands is None:
        return None
    measured = {candidate.schedule for candidate in decision.closed if candidate.is_dynamic}
    return None if proposal.bands in measured else proposal


def _proposal_checks(decision: SamplingDecision, proposal: Proposal) -> list[str]:
    schedule = next((c for c in decision.closed if c.schedule == proposal.bands), None)
    if schedule is None:
        return [
            "Not measured (--no-measure-proposal, or stored runs without it): it is not recommended until it is.",
            "",
        ]
    statics = [c for c in decision.closed if not c.is_dynamic]
    lines = ["Measured, against the static K its band names at each level (paired by round):", ""]
    for check in check_schedule(schedule, statics):
        named = "off" if check.band_k == 0 else f"K={check.band_k}"
        told = "below it" if check.below else "cannot tell" if check.verdict is Verdict.CANNOT_TELL else "above it"
        lines.append(f"- concurrency {check.level}: {_ratio_text(check.versus_band_k, named)}: {told}")
    return [*lines, ""]


def _goodput_versus(decision: SamplingDecision, chosen_label: str) -> list[str]:
    """At each request rate: the chosen setting's goodput against off and the best static K."""
    if not decision.closed or not decision.open or not decision.by_goodput:
        return []
    chosen = next((c for c in decision.open if c.label == chosen_label), None)
    if chosen is None:
        return [f"{chosen_label} was not measured at the request rates: its goodput is not known.", ""]
    lines = [
        f"Goodput of {chosen_label} at each request rate, against off and the best static K (paired by round):",
        "",
    ]
    lines += [_goodput_line(chosen, decision.open, rate) for rate in sorted(chosen.goodput_rps)]
    return [*lines, ""]


def _goodput_line(chosen: Candidate, candidates, rate: float) -> str:
    statics = [c for c in candidates if not c.is_dynamic and c is not chosen and rate in c.goodput_rps]
    best = max(statics, key=lambda c: c.goodput_rps[rate], default=None)
    off = next((c for c in statics if c.speculative_tokens == 0), None)
    references = [off] if off else []
    references += [best] if best is not None and best is not off else []
    parts = [
        f"{reference.label} {_figure(reference.interval(GOODPUT, rate), 2)}: "
        + _goodput_verdict(verdict(chosen, reference, GOODPUT, rate))
        for reference in references
    ]
    return f"- {rate:g} req/s: {_figure(chosen.interval(GOODPUT, rate), 2)} req/s; " + "; ".join(parts)


def _goodput_verdict(told: Verdict) -> str:
    return {Verdict.FIRST: "more", Verdict.SECOND: "less", Verdict.CANNOT_TELL: "cannot tell"}[told]


def _proposal_section(decision: SamplingDecision) -> list[str]:
    from peagle.local.cli import LOCAL_MAX_NUM_SEQS

    proposal = decision.proposal()
    if proposal is None:
        return []
    lines = [
        f"### Proposed schedule (batch sizes 1-{LOCAL_MAX_NUM_SEQS}, the local server's max_num_seqs)",
        "",
        f"Proposed: **{proposal.label}**. Each closed-loop level stands for the batch sizes above the level before "
        "it; each band takes the static K with the most tokens/s there, then the launcher's rules (batch size 1 "
        "drafts, K within the trained K, no band that falls below K=0 beyond the interval), equal neighbours merged:",
        "",
        *[f"- {reason}" for reason in proposal.reasons],
        "",
    ]
    if proposal.bands:
        lines += _proposal_checks(decision, proposal)
    return lines


def _sampling_section(decision: SamplingDecision, band, *, decided: bool) -> list[str]:
    from peagle.bench.results import describe_sampling

    sampling = decision.sampling
    lines = ["## Sampling: " + (describe_sampling(sampling) if sampling else "not recorded by these runs"), ""]
    lines += ["The recommendation below is made at this sampling.", ""] if decided else []
    if decision.closed_recommendation:
        lines += _closed_section(decision.closed, decision.closed_recommendation, band)
    if decision.open_recommendation:
        open_band = None if decision.closed else band
        lines += _open_section(decision.open, decision.open_recommendation, open_band, decision.by_goodput)
    if decided and decision.closed_recommendation:
        lines += _proposal_section(decision)
        proposal = decision.proposal()
        served = {candidate.label for candidate in decision.open}
        proposed = [proposal.label] if proposal and proposal.bands and proposal.label in served else []
        for label in dict.fromkeys([*proposed, decision.decided.chosen.label]):  # the schedule, then the choice
            lines += _goodput_versus(decision, label)
    return lines


def _recommended_lines(decision: SamplingDecision, band, why: str) -> list[str]:
    """The choice at the decided sampling, why, and the lines that apply it in both doors."""
    from peagle.tune.doors import library_expression

    decided = decision.decided
    chosen = decided.chosen
    where = "request rates" if decision.decides_by_goodput else "concurrency"
    return [
        f"Recommended: **{chosen.label}**"
        + (f" for {band_text(band, decision.decides_by_goodput)}" if band else " over the measured levels")
        + f", at {why} (static choice gives up at most {decided.worst_shortfall:.0%} against the best at any level)."
        + _undecided_text(decided, where),
        f"Dynamic schedules: {decided.dynamic_verdict}.",
        "",
        "Apply it in the deployment file (deployment-snippet.yaml):",
        "",
        "```yaml",
        decided.deployment_snippet().rstrip(),
        "```",
        "",
        "or with the CDK library (library-snippet.py): "
        f"`PeagleEndpoint(..., speculation={library_expression(chosen.speculative_tokens, chosen.schedule)})`.",
        "",
        "Plots and per-run reports: `comparison/`. Measurements on one machine at one time: re-run when the "
        "instance type, the pair, the profile or the traffic (prompt lengths, concurrency) change.",
    ]


def _header_lines(deployed, why: str, prompts_text: str, seeds_text: str, decision, slo_text) -> list[str]:
    lines = [
        "# Speculation settings measured, and the one to deploy",
        "",
        f"Deployed sampling: {deployed.describe()}. The recommendation is made at {why}: acceptance, and so the "
        "best K, depends on the temperature, and greedy decoding overstates it on a real drafter.",
        "",
    ]
    if prompts_text:
        lines += [f"Prompts: {prompts_text}. Acceptance, and so the best K, depends on the prompts too.", ""]
    if seeds_text:
        lines += [seeds_text, ""]
    lines += [INTERVAL_NOTE, ""]
    if decision.decides_by_goodput:
        lines += [
            f"The candidates are ranked by goodput: requests/s answered within the SLO ({slo_text}), measured with "
            "requests arriving at each rate (open loop). Output tokens/s is shown beside it.",
            "",
        ]
    return lines


def write_recommendation(out: Path, runs, band, deployed, prompts_text: str = "", seeds_text: str = "") -> None:
    """recommendation.md (a table and a decision per sampling, the deployed one first), deployment-snippet.yaml and
    library-snippet.py, decided at the deployed temperature (choose.decision_temperature); printed too."""
    from peagle.tune.doors import library_snippet

    noisy = noisy_levels(runs)
    slo_text = slo_text_of(runs)
    groups = candidates_by_sampling(runs)
    if noisy and not any(c.tokens_per_s for _, closed, open_ in groups.values() for c in [*closed, *open_]):
        raise TuneFailed(
            "machine busy: every level was measured on a busy machine, so nothing is chosen from them ("
            + "; ".join(noisy[:3])
            + "); stop the other work (a second engine, a test suite) and run again"
        )
    decided_groups = decisions(runs, band, slo_text)
    temperature, why = decision_temperature({key[0] if key else None for key in decided_groups}, deployed.temperature)
    key = decided_key(decided_groups, temperature, deployed.top_p)
    decision = decided_groups[key]
    lines = _header_lines(deployed, why, prompts_text, seeds_text, decision, slo_text)
    for other in sorted(decided_groups, key=lambda other: other != key):  # the decided sampling first
        group = decided_groups[other]
        lines += _sampling_section(group, band, decided=other == key)
        if group.open_by_tokens and group.open_recommendation and slo_text is not None:
            lines += [slo_verdict(group.open_recommendation, group.open_by_tokens, slo_text), ""]
    # Greedy against the sampled temperatures, at the decided top_p (recorded samplings only).
    same_top_p = [other for other in decided_groups if other and key and other[1] == key[1]]
    comparison = greedy_versus_sampled({other[0]: decided_groups[other].decided.chosen.label for other in same_top_p})
    lines += [comparison, ""] if comparison else []
    if noisy:
        lines += [
            f"**{len(noisy)} level(s) measured on a busy machine were left out**: the choice is made without "
            "them, so a level where any candidate was noisy decided nothing (each run's report.md, 'Machine during "
            "each level', says what the machine did); measure them again on a quiet machine:",
            "",
            *[f"- {line}" for line in noisy],
            "",
        ]
    lines += _recommended_lines(decision, band, why)
    chosen = decision.decided.chosen
    (out / "recommendation.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "deployment-snippet.yaml").write_text(decision.decided.deployment_snippet(), encoding="utf-8")
    (out / "library-snippet.py").write_text(library_snippet(chosen.speculative_tokens, chosen.schedule), "utf-8")
    print("\n".join(lines[2:]))
    names = ("recommendation.md", "deployment-snippet.yaml", "library-snippet.py")
    written = ", ".join(str(out / name) for name in names)
    print(f"\nwritten: {written}, {out / 'comparison'}")
