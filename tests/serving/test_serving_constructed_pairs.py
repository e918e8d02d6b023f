"""The constructed pairs, served for real: drafts accepted where tiny_pair.py says, output unchanged.

Every pair is deterministic, so what speculation must give is computed in advance
(speculation_model.py) and the engine's spec-decode counters are held to it. The tiny
pair runs on the session's shared server (K=4); the demo and partial pairs get one
engine each, started as a user would (`peagle local --pair NAME`), class-scoped so
that only one runs at a time.

Greedy and sampled alike: target and drafter put all probability on one token (a logit
gap of 320 nats, beyond float32 at any temperature up to 2), so lossless speculative
sampling must emit the target's chain and accept exactly the drafts greedy decoding
accepts, at any temperature, top_p or top_k. That is the property vLLM 0.32's CPU
build broke (peagle_serve/vllm_corrections.py): at T > 0 it accepted almost no draft and
left the chain.

"Lossless" without a second engine: the output with speculation must be the target's
rule chain, and the demo target run without any speculation (transformers' Llama, an
independent implementation, on the very weights served) must give that same rule.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from local_engine import TEST_KPI_INTERVAL_SECONDS, LocalServer, free_port, peagle_local_command, spawn
from serving_requests import GREEDY, SAMPLINGS, completion, metrics
from speculation_model import PARTIAL_RATE_BAND_AT_K4, Speculation, chain, speculate

from peagle.local.cli import default_models_dir
from peagle.local.tiny_pair import PAIRS, TinyPair, ensure_tiny_pair, rule_p, target_rule_for
from peagle_serve.contract import VllmMetric

pytestmark = pytest.mark.engine

K = 4
PROMPTS = ["hello", "The quick brown fox", "x", '{"a": 1}']


def built(name: str) -> TinyPair:
    return ensure_tiny_pair(default_models_dir(name), PAIRS[name])


def serve(pair: TinyPair) -> Iterator[LocalServer]:
    port = free_port()
    server = spawn(
        peagle_local_command(
            "--pair",
            pair.spec.name,
            "--models-dir",
            str(pair.root),
            "--port",
            str(port),
            "--speculative-tokens",
            str(K),
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


def run_prompts(url: str, pair: str, max_tokens: int, sampling: dict) -> tuple[dict[str, float], Speculation]:
    """Send PROMPTS one by one with ``sampling``; check each output against the target's rule; return
    the engine's spec-decode counter deltas and what the rules say they must be (greedy or not)."""
    target_rule, drafter_rule = target_rule_for(PAIRS[pair]), rule_p()
    before = metrics(url)
    steps, accepted = 0, [0] * K
    for prompt in PROMPTS:
        choice = completion(url, prompt, max_tokens, sampling)["choices"][0]
        first = target_rule[choice["prompt_token_ids"][-1]]
        # Lossless: exactly the target's own continuation (its only token of nonzero probability), whatever
        # was drafted and however it was sampled.
        assert choice["token_ids"] == chain(target_rule, first, max_tokens), (prompt, sampling)
        expected = speculate(target_rule, drafter_rule, first, max_tokens, K)
        steps += expected.steps
        accepted = [a + b for a, b in zip(accepted, expected.accepted_per_position, strict=True)]
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
    return observed, Speculation(steps=steps, accepted_per_position=tuple(accepted))


# Every case on the shared tiny server; the heavier pairs take a few, to keep engine time short.
CASES = {"greedy": GREEDY, **SAMPLINGS}
FEW_CASES = {name: CASES[name] for name in ("greedy", "chatbot T0.7 top_p0.9", "T1.0 top_p0.9 top_k20")}


@pytest.mark.parametrize("sampling", list(CASES.values()), ids=list(CASES))
def test_the_tiny_pair_accepts_drafts_at_every_position(local_server, sampling):
    observed, expected = run_prompts(local_server.url, "tiny", max_tokens=48, sampling=sampling)
    assert observed["drafts"] > 0 and observed["draft_tokens"] == K * observed["drafts"]
    # Every draft at every position accepted: the histogram is [0, 0, 0, 0, steps].
    assert [observed[f"position_{j}"] for j in range(K)] == [observed["drafts"]] * K, observed
    assert (observed["drafts"], observed["accepted"]) == (expected.steps, expected.accepted), expected


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
        observed, expected = run_prompts(demo_server.url, "demo", max_tokens=96, sampling=sampling)
        assert [observed[f"position_{j}"] for j in range(K)] == [observed["drafts"]] * K, observed
        mean_acceptance_length = 1 + observed["accepted"] / observed["drafts"]
        assert mean_acceptance_length >= 4.5, observed
        assert (observed["drafts"], observed["accepted"]) == (expected.steps, expected.accepted), expected
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


class TestPartialPair:
    @pytest.mark.parametrize("sampling", list(FEW_CASES.values()), ids=list(FEW_CASES))
    def test_acceptance_is_partial_falls_with_the_position_and_is_what_the_rules_predict(
        self, partial_server, sampling
    ):
        # Tolerance: none. The construction predicts every step (speculation_model.speculate), sampled or not;
        # the band is the construction's own spread over where a request starts on the target's loop.
        observed, expected = run_prompts(partial_server.url, "partial", max_tokens=128, sampling=sampling)
        rate = observed["accepted"] / observed["draft_tokens"]
        assert PARTIAL_RATE_BAND_AT_K4[0] <= rate <= PARTIAL_RATE_BAND_AT_K4[1], observed
        per_position = [observed[f"position_{j}"] for j in range(K)]
        assert per_position[0] > per_position[1] > per_position[2] > per_position[3] > 0, observed
        # Deterministic: the very steps and accepted drafts the rules predict.
        assert (observed["drafts"], tuple(per_position)) == (expected.steps, expected.accepted_per_position)
