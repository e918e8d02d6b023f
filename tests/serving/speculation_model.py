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
