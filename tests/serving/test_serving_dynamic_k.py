"""K by batch size, served for real: the output under a schedule is the target's own, at every band.

Greedy decoding of the partial pair is deterministic (tiny_pair.py: the target's rule T, drafts accepted at
a rate that falls with the position), so what the engine must emit is known in advance: the rule's chain
from each answer's first token (speculation_model.chain), whatever K a step drafted. A schedule with three
bands (K=4 alone, K=2 at 2-3 requests, K=0 from 4) is served with the launcher's corrections (the CPU build's,
and dynamic-k-draft-width, peagle_serve/vllm_corrections.py, which narrows the drafter's pass to the step's
K), and requests are sent one at a time, three at once and eight at once, so steps run in every band and
switch between them while requests are mid-answer (drafts proposed at one K are verified in a step of another).

The drafter's KV cache staying in step across a K=0 spell is not observable with the constructed drafter,
which predicts from the bonus token alone; docs/baselines/k-by-load measures acceptance under the schedule.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from local_engine import LocalServer
from serving_requests import GREEDY, completion, metrics
from speculation_model import chain
from test_serving_constructed_pairs import serve

from peagle.local.cli import default_models_dir
from peagle.local.tiny_pair import PAIRS, ensure_tiny_pair, target_rule_for
from peagle_serve.contract import VllmMetric
from peagle_serve.vllm_corrections import DYNAMIC_K_DRAFT_WIDTH

pytestmark = pytest.mark.engine

SCHEDULE = "1-1:4,2-3:2,4-16:0"
PROMPTS = ["hello", "The quick brown fox", "x", '{"a": 1}', "abc", "zz top", "0123", "the end"]
TOKENS = 48


@pytest.fixture(scope="module")
def scheduled_server() -> Iterator[LocalServer]:
    yield from serve(
        ensure_tiny_pair(default_models_dir("partial"), PAIRS["partial"]), "--speculative-schedule", SCHEDULE
    )


def _answers(url: str, prompts: list[str], at_once: int) -> tuple[list[list[int]], float]:
    """Each prompt's greedy answer (token ids), sent ``at_once`` at a time, and the draft tokens per answer."""
    before = metrics(url)
    with ThreadPoolExecutor(max_workers=at_once) as pool:
        bodies = list(pool.map(lambda prompt: completion(url, prompt, TOKENS, GREEDY), prompts))
    after = metrics(url)
    drafted = after.total(VllmMetric.SPEC_DRAFT_TOKENS) - before.total(VllmMetric.SPEC_DRAFT_TOKENS)
    return [body["choices"][0]["token_ids"] for body in bodies], drafted / len(prompts)


@pytest.mark.parametrize("at_once", [1, 3, 8])
def test_greedy_output_under_a_schedule_is_the_targets_own(scheduled_server, at_once):
    target_rule = target_rule_for(PAIRS["partial"])
    outputs, _ = _answers(scheduled_server.url, PROMPTS[: max(at_once, 2)], at_once)
    for tokens in outputs:
        assert len(tokens) == TOKENS
        assert tokens == chain(target_rule, tokens[0], TOKENS), tokens


def test_the_schedule_drafts_less_when_busy_and_the_width_correction_is_applied(scheduled_server):
    _, alone = _answers(scheduled_server.url, PROMPTS[:2], 1)
    _, busy = _answers(scheduled_server.url, PROMPTS, 8)
    # Alone every step drafts K=4; eight at once, most steps run in the K=0 band (only the steps while the
    # requests arrive and leave draft): the schedule took effect.
    assert busy < alone / 2, (busy, alone)
    log = "\n".join(scheduled_server.stderr_lines + scheduled_server.stdout_lines)
    assert f"vLLM correction {DYNAMIC_K_DRAFT_WIDTH.name}" in log, scheduled_server.output_tail()
