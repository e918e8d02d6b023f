"""What greedy speculative decoding yields on a constructed pair, computed from its rules.

The pairs of peagle/local/tiny_pair.py are deterministic: the target's next token is
``target_rule[t]`` and draft j after the bonus token b is ``drafter_rule`` applied j+1
times to b. So the tokens, the steps and the drafts accepted at each position are
known in advance, and a test can hold the engine to them exactly. Steps as vLLM 0.32
counts them: every step drafts K tokens, accepts the longest correct prefix and adds
one target token; the last step may run past ``max_tokens`` (vLLM still counts its
accepted drafts, then truncates the output).
"""

from __future__ import annotations

from dataclasses import dataclass

# The partial pair's acceptance rate at K=4, one 128-token request (tiny_pair.py): 0.67 on
# average, 0.59-0.76 by where on the target's loop the request starts.
PARTIAL_RATE_BAND_AT_K4 = (0.55, 0.80)


def chain(rule: list[int], start: int, length: int) -> list[int]:
    """``start``, rule(start), rule(rule(start)), ... (``length`` tokens)."""
    tokens = [start]
    for _ in range(length - 1):
        tokens.append(rule[tokens[-1]])
    return tokens


@dataclass(frozen=True)
class Speculation:
    steps: int
    accepted_per_position: tuple[int, ...]

    @property
    def accepted(self) -> int:
        return sum(self.accepted_per_position)

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / (self.steps * len(self.accepted_per_position))

    @property
    def mean_acceptance_length(self) -> float:
        return 1 + self.accepted / self.steps


def speculate(
    target_rule: list[int], drafter_rule: list[int], first_token: int, max_tokens: int, k: int
) -> Speculation:
    """The speculation of one request whose first generated token is ``first_token``."""
    accepted = [0] * k
    steps, generated = 0, 1  # the first token comes from the prefill, without drafts
    bonus = first_token
    while generated < max_tokens:
        drafts = chain(drafter_rule, bonus, k + 1)[1:]
        truth = chain(target_rule, bonus, k + 2)[1:]
        run = 0
        while run < k and drafts[run] == truth[run]:
            accepted[run] += 1
            run += 1
        steps += 1
        generated += run + 1
        bonus = truth[run]
    return Speculation(steps=steps, accepted_per_position=tuple(accepted))


def simulate_sampled(
    target_rule: list[int], drafter_rule: list[int], first_token: int, max_tokens: int, k: int, q: float, rng
) -> tuple[Speculation, list[int]]:
    """One request of lossless speculative sampling (Leviathan et al. 2023, as vLLM's rejection sampler
    does it for a drafter without draft probabilities): draft j is accepted with the target's probability
    of it; on a rejection the token comes from the target's distribution without the rejected draft;
    after K acceptances a bonus token from the target. The target puts ``q`` on its rule token and the
    rest evenly on the other characters (the constructed pairs' specials are never sampled)."""
    characters = sorted(set(target_rule))
    others = len(characters) - 1

    def sample(context: int, excluded: int | None) -> int:
        rule = target_rule[context]
        if excluded != rule and rng.random() < q:
            return rule
        while True:  # another character, evenly (excluding a rejected draft changes q by < 0.1 %)
            token = characters[rng.randrange(len(characters))]
            if token not in (rule, excluded):
                return token

    accepted = [0] * k
    tokens, steps, bonus = [first_token], 0, first_token
    while len(tokens) < max_tokens:
        drafts = chain(drafter_rule, bonus, k + 1)[1:]
        context, out = bonus, []
        for j, draft in enumerate(drafts):
            if rng.random() < (q if draft == target_rule[context] else (1 - q) / others):
                accepted[j] += 1
                out.append(draft)
                context = draft
            else:
                out.append(sample(context, draft))
                break
        else:
            out.append(sample(context, None))
        steps += 1
        tokens += out
        bonus = out[-1]
    return Speculation(steps=steps, accepted_per_position=tuple(accepted)), tokens[:max_tokens]


@dataclass(frozen=True)
class Prediction:
    """The acceptance rate a set of requests should show: mean and spread over simulated repeats."""

    mean: float
    sd: float


def predict_sampled_acceptance(
    target_rule: list[int],
    drafter_rule: list[int],
    first_tokens: list[int],
    max_tokens: int,
    k: int,
    q: float,
    *,
    repeats: int = 300,
    seed: int = 0,
) -> Prediction:
    """The acceptance rate (accepted / drafted tokens) over requests starting at ``first_tokens``."""
    import random
    import statistics

    rng = random.Random(seed)
    rates = []
    for _ in range(repeats):
        results = [simulate_sampled(target_rule, drafter_rule, t, max_tokens, k, q, rng)[0] for t in first_tokens]
        rates.append(sum(r.accepted for r in results) / sum(r.steps * k for r in results))
    return Prediction(mean=statistics.fmean(rates), sd=statistics.stdev(rates))
