"""The constructed pairs, served for real: drafts accepted where tiny_pair.py says, output unchanged.

Every pair is deterministic, so what speculation must give is computed in advance
(speculation_model.py) and the engine's spec-decode counters are held to it. The tiny
pair runs on the session's shared server (K=4); the demo and partial pairs get one
engine each, started as a user would (`peagle local --pair NAME`), class-scoped so
that only one runs at a time.

Greedy and sampled alike: the tiny and demo targets and the drafter put all probability
on one token (a logit gap of 320 nats, beyond float32 at any temperature up to 2), so
lossless speculative sampling must emit the target's chain and accept exactly the drafts
greedy decoding accepts, at any temperature, top_p or top_k. The partial target samples
off its rule (rule_probability), so there the engine's acceptance and output are held to
what lossless sampling of that target gives, within stated tolerances. That is what
vLLM 0.32's CPU build broke (peagle_serve/vllm_corrections.py): at T > 0 it accepted
almost no draft and left the target's distribution.

"Lossless" without a second engine: the output with speculation must be the target's
rule chain, and the demo target run without any speculation (transformers' Llama, an
independent implementation, on the very weights served) must give that same rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from local_engine import TEST_KPI_INTERVAL_SECONDS, LocalServer, free_port, peagle_local_command, spawn
from serving_requests import GREEDY, SAMPLINGS, completion, metrics
from speculation_model import PARTIAL_RATE_BAND_AT_K4, Speculation, chain, predict_sampled_acceptance, speculate

from peagle.local.cli import default_models_dir
from peagle.local.tiny_pair import (
    CHARACTER_IDS,
    DETERMINISTIC_LOGIT_GAP,
    PAIRS,
    SPECIAL_TOKENS,
    VOCAB_SIZE,
    TinyPair,
    ensure_tiny_pair,
    rule_p,
    target_rule_for,
)
from peagle_serve.contract import VllmMetric

pytestmark = pytest.mark.engine

K = 4
PROMPTS = ["hello", "The quick brown fox", "x", '{"a": 1}']


def built(name: str) -> TinyPair:
    return ensure_tiny_pair(default_models_dir(name), PAIRS[name])


def serve(pair: TinyPair, *setting: str) -> Iterator[LocalServer]:
    """`peagle local --pair` as a user starts it, with ``setting`` (default ``--speculative-tokens K``)."""
    port = free_port()
    server = spawn(
        peagle_local_command(
            "--pair",
            pair.spec.name,
            "--models-dir",
            str(pair.root),
            "--port",
            str(port),
            *(setting or ("--speculative-tokens", str(K))),
            "--kpi-interval-seconds",
            str(TEST_KPI_INTERVAL_SECONDS),
        ),
        port=port,
    )
    try:
        server.wait_until_ready()
        yield server
    finally:
        server.stop()


@dataclass
class Run:
    """What the engine did for PROMPTS: its spec-decode counter deltas, each request's tokens."""

    observed: dict[str, float]
    outputs: list[list[int]]

    @property
    def acceptance_rate(self) -> float:
        return self.observed["accepted"] / self.observed["draft_tokens"]

    @property
    def per_position(self) -> list[float]:
        return [self.observed[f"position_{j}"] for j in range(K)]


def run_prompts(url: str, max_tokens: int, sampling: dict) -> Run:
    """Send PROMPTS one by one with ``sampling``; the engine's spec-decode counter deltas and outputs."""
    before = metrics(url)
    outputs = [completion(url, prompt, max_tokens, sampling)["choices"][0]["token_ids"] for prompt in PROMPTS]
    after = metrics(url)

    def delta(name: str) -> float:
        return after.total(name) - before.total(name)

    per_position = after.by_label(VllmMetric.SPEC_ACCEPTED_PER_POS, "position")
    per_position_before = before.by_label(VllmMetric.SPEC_ACCEPTED_PER_POS, "position")
    observed = {
        "drafts": delta(VllmMetric.SPEC_DRAFTS),
        "draft_tokens": delta(VllmMetric.SPEC_DRAFT_TOKENS),
        "accepted": delta(VllmMetric.SPEC_ACCEPTED),
        **{f"position_{j}": per_position[str(j)] - per_position_before.get(str(j), 0) for j in range(K)},
    }
    return Run(observed=observed, outputs=outputs)


def rule_probability_at(pair: str, sampling: dict) -> float:
    """The target's probability of its rule token under ``sampling`` (1.0 greedy): the construction's
    logits (rule token ``logit_gap`` above the other characters, specials far below), filtered by vLLM's
    own top_k/top_p implementation, whose semantics (ties at the k-th logit kept, the nucleus cut on an
    ascending cumulative sum) are vLLM's definition, not what is under test here."""
    import torch
    from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p_pytorch

    if sampling["temperature"] == 0:
        return 1.0
    spec, rule_token = PAIRS[pair], CHARACTER_IDS[0]
    logits = torch.zeros(1, VOCAB_SIZE)
    logits[0, : len(SPECIAL_TOKENS)] = -DETERMINISTIC_LOGIT_GAP
    logits[0, rule_token] = spec.logit_gap
    logits /= sampling["temperature"]
    top_k = torch.tensor([sampling["top_k"]]) if "top_k" in sampling else None
    top_p = torch.tensor([sampling["top_p"]])
    filtered = apply_top_k_top_p_pytorch(logits, top_k, top_p, allow_cpu_sync=True)
    return filtered.softmax(-1)[0, rule_token].item()


def check_exact(run: Run, pair: str, max_tokens: int) -> Speculation:
    """A pair that puts all probability on its rule: each output is the rule's chain (lossless), and the
    engine accepted exactly the drafts the rules predict; returns that prediction."""
    target_rule, drafter_rule = target_rule_for(PAIRS[pair]), rule_p()
    steps, accepted = 0, [0] * K
    for tokens in run.outputs:
        assert tokens == chain(target_rule, tokens[0], max_tokens), tokens
        expected = speculate(target_rule, drafter_rule, tokens[0], max_tokens, K)
        steps += expected.steps
        accepted = [a + b for a, b in zip(accepted, expected.accepted_per_position, strict=True)]
    expected = Speculation(steps=steps, accepted_per_position=tuple(accepted))
    assert (run.observed["drafts"], tuple(run.per_position)) == (expected.steps, expected.accepted_per_position)
    return expected


# Every case on the shared tiny server; the heavier pairs take a few, to keep engine time short.
CASES = {"greedy": GREEDY, **SAMPLINGS}
FEW_CASES = {name: CASES[name] for name in ("greedy", "chatbot T0.7 top_p0.9", "T1.0 top_p0.9 top_k20")}


@pytest.mark.parametrize("sampling", list(CASES.values()), ids=list(CASES))
def test_the_tiny_pair_accepts_drafts_at_every_position(local_server, sampling):
    run = run_prompts(local_server.url, max_tokens=48, sampling=sampling)
    assert run.observed["drafts"] > 0 and run.observed["draft_tokens"] == K * run.observed["drafts"]
    # Every draft at every position accepted: the histogram is [0, 0, 0, 0, steps].
    assert run.per_position == [run.observed["drafts"]] * K, run.observed
    check_exact(run, "tiny", max_tokens=48)


@pytest.fixture(scope="module")
def demo_pair() -> TinyPair:
    return built("demo")


@pytest.fixture(scope="class")
def demo_server(demo_pair) -> Iterator[LocalServer]:
    yield from serve(demo_pair)


@pytest.fixture(scope="class")
def partial_server() -> Iterator[LocalServer]:
    yield from serve(built("partial"))


class TestDemoPair:
    @pytest.mark.parametrize("sampling", list(FEW_CASES.values()), ids=list(FEW_CASES))
    def test_every_draft_is_accepted_and_the_output_is_the_targets(self, demo_server, sampling):
        run = run_prompts(demo_server.url, max_tokens=96, sampling=sampling)
        assert run.per_position == [run.observed["drafts"]] * K, run.observed
        assert 1 + run.observed["accepted"] / run.observed["drafts"] >= 4.5, run.observed
        check_exact(run, "demo", max_tokens=96)
        assert demo_server.kpi_records() == [] or demo_server.kpi_records()[-1]["model_pair"] == "demo-pair"

    def test_the_demo_target_without_speculation_follows_the_same_rule(self, demo_pair):
        """transformers' Llama on the served weights: greedy, no drafter, an independent implementation."""
        import torch
        from transformers import LlamaForCausalLM

        model = LlamaForCausalLM.from_pretrained(demo_pair.target_dir, torch_dtype=torch.float32)
        tokens = torch.arange(model.config.vocab_size)[None, :]
        with torch.no_grad():
            greedy = model(tokens).logits[0].argmax(-1).tolist()
        assert greedy == target_rule_for(PAIRS["demo"])


# The partial target samples off its rule at these (top_p always given: the server's default, the chatbot
# profile's 0.9, would apply to a request without it): the chatbot profile's sampling, vLLM's default
# temperature, and top_k (which keeps every logit tied at the k-th, here all the other characters).
PARTIAL_CASES = {
    "chatbot T0.7 top_p0.9": {"temperature": 0.7, "top_p": 0.9},
    "T1.0 top_p1": {"temperature": 1.0, "top_p": 1.0},
    "T0.7 top_p1 top_k20": {"temperature": 0.7, "top_p": 1.0, "top_k": 20},
}


class TestPartialPair:
    def test_greedy_acceptance_is_partial_falls_with_the_position_and_is_what_the_rules_predict(self, partial_server):
        # Tolerance: none. The construction predicts every step (speculation_model.speculate); the band
        # is the construction's own spread over where a request starts on the target's loop.
        run = run_prompts(partial_server.url, max_tokens=128, sampling=GREEDY)
        assert PARTIAL_RATE_BAND_AT_K4[0] <= run.acceptance_rate <= PARTIAL_RATE_BAND_AT_K4[1], run.observed
        assert run.per_position[0] > run.per_position[1] > run.per_position[2] > run.per_position[3] > 0
        check_exact(run, "partial", max_tokens=128)

    @pytest.mark.parametrize("case", list(PARTIAL_CASES))
    def test_sampled_acceptance_and_output_are_what_lossless_sampling_of_the_target_gives(self, partial_server, case):
        """Stated tolerance: 4 standard deviations of the construction's own prediction, simulated
        (speculation_model.simulate_sampled) from the requests' first tokens; the output's share of
        tokens that follow the target's rule within 4 binomial standard deviations of rule_probability."""
        sampling = PARTIAL_CASES[case]
        q = rule_probability_at("partial", sampling)
        run = run_prompts(partial_server.url, max_tokens=128, sampling=sampling)
        target_rule = target_rule_for(PAIRS["partial"])
        predicted = predict_sampled_acceptance(target_rule, rule_p(), [tokens[0] for tokens in run.outputs], 128, K, q)
        assert abs(run.acceptance_rate - predicted.mean) <= 4 * predicted.sd, (run.observed, predicted)
        # The check tells sampling from greedy: the same requests decoded greedily accept far more.
        greedy = [speculate(target_rule, rule_p(), tokens[0], 128, K) for tokens in run.outputs]
        greedy_rate = sum(g.accepted for g in greedy) / sum(g.steps * K for g in greedy)
        assert predicted.mean + 4 * predicted.sd < greedy_rate, (predicted, greedy_rate)
        transitions = [(a, b) for tokens in run.outputs for a, b in zip(tokens, tokens[1:], strict=False)]
        share = sum(b == target_rule[a] for a, b in transitions) / len(transitions)
        assert abs(share - q) <= 4 * math.sqrt(q * (1 - q) / len(transitions)), (share, q, len(transitions))
        assert run.per_position[0] > run.per_position[1] > run.per_position[2] > run.per_position[3] > 0
