"""The constructed pairs do what peagle/local/tiny_pair.py says, checked in plain torch (no engine).

The drafter is run the way vLLM 0.32 runs an EAGLE-3 drafter with parallel drafting
(vllm/model_executor/models/llama_eagle3.py for the layer; vllm/v1/spec_decode/utils.py,
``copy_and_expand_eagle_inputs_kernel``, for the inputs: the slot at position p holds
token x[p+1], then K-1 mask slots at the next positions), so a broken weight fails here
in seconds instead of as a low acceptance after an engine start. The heavy targets are
checked at the tiny target's shape: their weights are built by the same code at any size.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from speculation_model import PARTIAL_RATE_BAND_AT_K4, chain, speculate

from peagle.local import tiny_pair as construction
from peagle.local.tiny_pair import (
    DRAFT_OFFSETS,
    DRAFTER_HEADS,
    DRAFTER_KV_HEADS,
    HEAD_DIM,
    MASK_TOKEN_ID,
    PAIRS,
    TINY_TARGET,
    drafter_tensors,
    rule_p,
    target_rule_for,
    target_tensors,
)

EPS = 1e-6
PROMPT = [40, 41, 42, 7, 100, 101, 5, 200, 13]  # arbitrary, the mask id included


def small(spec):
    """The pair at the tiny target's shape (the heavy ones' weights are built by the same code)."""
    return dataclasses.replace(spec, target=TINY_TARGET)


def rms_norm(x, weight):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * weight


def neox_rope(x, positions):
    """vLLM's neox-style rotary embedding (vllm/model_executor/layers/rotary_embedding/common.py)."""
    half = HEAD_DIM // 2
    inv_freq = construction.ROPE_THETA ** (-torch.arange(half, dtype=torch.float64) * 2 / HEAD_DIM)
    angles = positions[:, None].double() * inv_freq[None, :]
    cos, sin = angles.cos().float()[:, None, :], angles.sin().float()[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def drafter_forward(w, token_ids, positions, aux_hidden):
    """Eagle3LlamaForCausalLM with one layer (llama_eagle3.py ``LlamaDecoderLayer.forward``, layer 0)."""
    embeds = rms_norm(w["embed_tokens.weight"][token_ids], w["layers.0.input_layernorm.weight"])
    residual = aux_hidden @ w["fc.weight"].T
    hidden = torch.cat([embeds, rms_norm(residual, w["layers.0.hidden_norm.weight"])], dim=-1)
    n = len(token_ids)
    q = (hidden @ w["layers.0.self_attn.q_proj.weight"].T).view(n, DRAFTER_HEADS, HEAD_DIM)
    k = (hidden @ w["layers.0.self_attn.k_proj.weight"].T).view(n, DRAFTER_KV_HEADS, HEAD_DIM)
    v = (hidden @ w["layers.0.self_attn.v_proj.weight"].T).view(n, DRAFTER_KV_HEADS, HEAD_DIM)
    q, k = neox_rope(q, positions), neox_rope(k, positions)
    group = DRAFTER_HEADS // DRAFTER_KV_HEADS  # GQA: query head i reads KV head i // group
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(HEAD_DIM)
    causal = positions[None, :] > positions[:, None]
    scores = scores.masked_fill(causal[None], float("-inf"))
    attended = torch.einsum("hqk,khd->qhd", scores.softmax(-1), v).reshape(n, -1)
    residual = residual + attended @ w["layers.0.self_attn.o_proj.weight"].T
    mlp_in = rms_norm(residual, w["layers.0.post_attention_layernorm.weight"])
    gate, up = mlp_in @ w["layers.0.mlp.gate_proj.weight"].T, mlp_in @ w["layers.0.mlp.up_proj.weight"].T
    residual = residual + (torch.nn.functional.silu(gate) * up) @ w["layers.0.mlp.down_proj.weight"].T
    return rms_norm(residual, w["norm.weight"]) @ w["lm_head.weight"].T


def drafts(weights, target_hidden_size, history, k):
    """The K draft tokens after ``history`` (prompt + every verified token, bonus last)."""
    # The slot at position p holds x[p+1]: real slots 0..len-2, then K-1 mask slots.
    token_ids = torch.tensor(history[1:] + [MASK_TOKEN_ID] * (k - 1))
    positions = torch.arange(len(token_ids))
    num_aux = weights["fc.weight"].shape[1] // target_hidden_size
    real = torch.randn(len(history) - 1, num_aux * target_hidden_size)  # ignored by design
    aux_hidden = torch.cat([real, weights["mask_hidden"].expand(k - 1, -1)])
    logits = drafter_forward(weights, token_ids, positions, aux_hidden)
    return logits[-k:].argmax(-1).tolist()


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_the_drafter_predicts_the_rule_k_steps_ahead_at_every_position(name):
    spec = small(PAIRS[name])
    p = rule_p()
    weights = drafter_tensors(spec.target, p)
    target = target_rule_for(spec)
    generated = chain(target, target[PROMPT[-1]], 20)
    # From the first drafting pass (bonus = first generated token) on: P^(j+1)(bonus) for
    # every draft position j, whatever the prompt and whether the target kept to P.
    for verified in (1, 2, 7, 20):
        history = PROMPT + generated[:verified]
        bonus = history[-1]
        assert drafts(weights, spec.target.hidden_size, history, DRAFT_OFFSETS) == chain(p, bonus, 9)[1:], verified


def test_the_drafter_still_predicts_right_after_a_one_token_prompt():
    weights = drafter_tensors(TINY_TARGET, rule_p())
    p = rule_p()
    for k in (1, 4, DRAFT_OFFSETS):
        assert drafts(weights, TINY_TARGET.hidden_size, [50, p[50]], k) == chain(p, p[50], k + 1)[1:], k


def test_every_other_offset_is_at_least_30_nats_below_the_chosen_one():
    """The attention is one-hot: with 2048 positions, no other offset gets e^-30 of the weight."""
    thetas = construction.rotary_thetas()
    deltas = torch.arange(-4096, 4097, dtype=torch.float64)
    logits = construction.ATTENTION_LOGIT_PER_PAIR * torch.cos(deltas[:, None] * thetas[None, :]).sum(-1)
    peak = logits[deltas == 0].item()
    assert peak == pytest.approx(construction.ATTENTION_LOGIT_PER_PAIR * construction.ROTARY_PAIRS_USED)
    assert peak - logits[deltas != 0].max().item() > 30


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_the_targets_greedy_next_token_is_its_rule(name):
    from transformers import LlamaConfig, LlamaForCausalLM

    spec = small(PAIRS[name])
    rule = target_rule_for(spec)
    shape = spec.target
    config = LlamaConfig(
        hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size,
        num_attention_heads=shape.num_heads,
        num_key_value_heads=shape.num_kv_heads,
        head_dim=HEAD_DIM,
        num_hidden_layers=shape.num_layers,
        vocab_size=construction.VOCAB_SIZE,
        rms_norm_eps=EPS,
        rope_theta=construction.ROPE_THETA,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).eval()
    model.load_state_dict(target_tensors(shape, rule, spec.logit_gap))
    tokens = torch.tensor([list(range(construction.VOCAB_SIZE))])
    with torch.no_grad():
        greedy = model(tokens).logits[0].argmax(-1).tolist()
    assert greedy == rule
    assert all(next_id in construction.CHARACTER_IDS for next_id in rule)  # never EOS or a marker


def test_only_the_partial_target_leaves_rule_p_and_at_the_share_it_claims():
    p = rule_p()
    assert target_rule_for(PAIRS["tiny"]) == p and target_rule_for(PAIRS["demo"]) == p
    partial = PAIRS["partial"]
    off_rule = construction.off_rule_tokens(partial)
    loop = chain(target_rule_for(partial), construction.CHARACTER_IDS[0], 2000)[-1000:]
    share = sum(token in off_rule for token in loop) / len(loop)
    assert share == pytest.approx(partial.off_rule_share, abs=0.01)


def test_the_pair_on_disk_is_the_one_checked_here(tiny_pair):
    """The written weights are the ones above, and config.json tells vLLM the shapes they assume."""
    import json

    from safetensors.torch import load_file

    on_disk = load_file(tiny_pair.drafter_dir / "model.safetensors")
    built = drafter_tensors(TINY_TARGET, rule_p())
    assert on_disk.keys() == built.keys()
    assert all(torch.equal(on_disk[name], built[name]) for name in built)
    drafter = json.loads((tiny_pair.drafter_dir / "config.json").read_text())
    target = json.loads((tiny_pair.target_dir / "config.json").read_text())
    assert (drafter["num_attention_heads"], drafter["num_key_value_heads"], drafter["head_dim"]) == (
        DRAFTER_HEADS,
        DRAFTER_KV_HEADS,
        HEAD_DIM,
    )
    # RoPE as the attention trick assumes it; KV heads and head_dim as the target's.
    assert drafter["rope_theta"] == target["rope_theta"] == construction.ROPE_THETA
    assert (drafter["num_key_value_heads"], drafter["head_dim"]) == (target["num_key_value_heads"], target["head_dim"])
    assert drafter["ptd_token_id"] == MASK_TOKEN_ID and drafter["target_hidden_size"] == target["hidden_size"]
    assert all(0 < layer < target["num_hidden_layers"] for layer in drafter["eagle_aux_hidden_state_layer_ids"])


def test_a_directory_holding_another_pair_is_not_replaced_silently(tiny_pair, capsys):
    from peagle.cli import main

    assert main(["local", "--pair", "demo", "--models-dir", str(tiny_pair.root), "--build-only"]) == 2
    assert "holds the 'tiny' pair, not 'demo'" in capsys.readouterr().err
    assert (tiny_pair.target_dir / "config.json").is_file()


def test_the_partial_pairs_acceptance_is_partial_for_every_prompt_and_falls_as_k_grows():
    """The band the engine test holds the partial pair to, for any first token on the target's loop."""
    target, drafter = target_rule_for(PAIRS["partial"]), rule_p()
    starts = set(chain(target, construction.CHARACTER_IDS[0], 600)[-300:])
    mean_rate = {}
    for k in (1, 2, 4, 8):
        runs = [speculate(target, drafter, start, 128, k) for start in starts]
        mean_rate[k] = sum(run.acceptance_rate for run in runs) / len(runs)
        if k == 4:
            low, high = PARTIAL_RATE_BAND_AT_K4
            assert all(low <= run.acceptance_rate <= high for run in runs)
            assert mean_rate[4] == pytest.approx(0.67, abs=0.01)  # what tiny_pair.py claims
    assert mean_rate[1] > mean_rate[2] > mean_rate[4] > mean_rate[8] > 0.5


def test_peagle_local_help_offers_every_pair(capsys):
    from peagle.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["local", "--help"])
    assert exit_info.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--pair {demo,partial,tiny}" in help_text
    assert all(f"{name}: {spec.summary}" in help_text for name, spec in PAIRS.items())
