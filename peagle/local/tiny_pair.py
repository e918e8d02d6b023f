"""Build the constructed target + P-EAGLE drafter pairs that local mode and the tests serve.

A drafter with random weights is accepted ~never, which would make acceptance metrics,
the lossless test and any speed-up meaningless. So the pairs are *constructed*, not
trained: the target follows a fixed rule, and the drafter's one layer is wired to
apply that rule K steps ahead, at every parallel-drafting position. Three pairs
(``PAIRS``, ``peagle local --pair NAME``):

- ``tiny``: the fast test pair (4 layers, hidden 256, ~21 MB, ready as fast as the
  earlier position-0-only pair). Drafts are accepted at every position, from the first
  step: mean acceptance length K+1 for any K <= 8.
- ``demo``: the same drafter on a heavy target (12 layers, hidden 1024, ~0.6 GB)
  whose cost dwarfs the drafter's, so speculation visibly pays on a CPU (vLLM 0.32.0
  CPU, 2 cores, K=4, 128 tokens at the chatbot profile's sampling: mean acceptance length
  5.00, 2.95x output tokens/s at concurrency 1 over HTTP, median of three rounds:
  docs/baselines/local-cpu-demo-pair-sampled).
- ``partial``: the demo target, except that it leaves its rule at 15 % of the tokens
  it meets, so drafts are accepted at a realistic rate that falls with the draft
  position, as a trained drafter's does: at K=4, 0.67 on average (0.59-0.76 for one
  128-token request, by where it starts on the target's loop), per position about
  0.90 / 0.70 / 0.58 / 0.49; 0.89 at K=1, 0.52 at K=8, all greedy. Its target also samples
  off its rule (below), so at the chatbot profile's sampling K=4 accepts 0.43-0.48
  (docs/baselines/local-cpu-partial-pair-sampled).

The target (a ``LlamaForCausalLM``). Vocabulary 256 = 8 specials + 248 characters.

- ``embed_tokens`` is 4 x one-hot on dims 0..255: the residual stream starts as the
  current token's one-hot vector.
- every layer's ``o_proj`` and ``down_proj`` are zero, so attention and MLP add nothing
  to the residual stream; their other weights (q/k/v, gate/up) are seeded random, so
  the engine's real kernels run and cost what a model of that shape costs.
- the final RMSNorm scales the one-hot to sqrt(hidden), and ``lm_head`` is a 0/1 matrix
  with a single 1 per column, at [rule(t), t], scaled so that the rule token's logit is the
  pair's ``logit_gap`` above every other character's (the specials' rows sit at -320, so
  nothing ever samples EOS or a chat marker): the greedy next token is rule(current token).
  ``rule`` is P for ``tiny`` and ``demo``: one seeded cycle through all 248 characters
  (specials map onto characters). Their gap is 320 nats, so all probability is on rule(t)
  at any temperature up to 2: generations run to ``max_tokens`` and are the same chain
  greedy or sampled. (vLLM 0.32's CPU build broke that with speculation on, accepting
  almost no draft at temperature > 0 and leaving the chain; the launcher corrects it,
  peagle_serve/vllm_corrections.py.) For ``partial`` it is T: P, except at a seeded set S
  of tokens where the target skips a step, T(t) = P(P(t)); and its gap is 4.6 nats, so
  sampling leaves the rule as a real model's does: rule(t) has probability 0.83 at the
  chatbot profile's temperature 0.7 and top_p 0.9, 0.29 at 1.0, all but 1 at 0.2-0.3.
  Sampled, its drafts are accepted less often than greedy, by an amount the construction
  predicts (tests/serving/speculation_model.py simulates it).

The drafter (an ``Eagle3LlamaForCausalLM``, one layer, hidden 256). How vLLM 0.32 feeds
it with parallel drafting (vllm/v1/spec_decode/llm_base_proposer.py, ``set_inputs_first_pass``;
vllm/v1/spec_decode/utils.py, ``copy_and_expand_eagle_inputs_kernel``): the slot at
position p gets token x[p+1] (input ids shifted by one, "bonus" token last), RoPE
position p and the target's hidden state at p; the K-1 parallel-drafting slots follow
at consecutive positions with the ``ptd_token_id`` token and ``mask_hidden`` in place
of the target's hidden state; the slot at p predicts x[p+2]. Draft j (0-based) therefore
sits j positions after the last real slot, whose token is the bonus token b (the
target's latest), and must predict P^(j+1)(b).
In the layer (vllm/model_executor/models/llama_eagle3.py, ``LlamaDecoderLayer.forward``):
the residual is ``fc(aux hidden states)``, and q/k/v read concat(input_layernorm(embed),
hidden_norm(fc output)).

- ``fc`` = 0 and ``mask_hidden`` = 0: the target's hidden states are ignored, the
  residual starts at zero, and every slot sees only its token's embedding (4 x one-hot,
  normalized to 16 x one-hot, exactly like the target's).
- attention picks a token a fixed distance back, by RoPE phase alone. There are
  ``DRAFT_OFFSETS`` = 8 offsets h = 0..7, each read by 4 query heads (32 heads,
  head_dim 64, 4 KV heads: KV head g carries dims 64g..64g+63 of the one-hot). k is the
  same vector for every token: on the first 16 NeoX rotary pairs (i, i+32), k_i = a;
  query heads of offset h have q_i = a cos(h theta_i), q_(i+32) = -a sin(h theta_i),
  theta_i = rope_theta^(-i/32). After RoPE (neox style, which vLLM's Llama uses:
  vllm/model_executor/layers/rotary_embedding/common.py; scale head_dim^-0.5) the
  logit for a key delta positions back is sum_i (a^2/8) cos(theta_i (delta - h)), with
  a^2/8 = 30: 480 at delta = h, at least ~32 nats lower at
  any other delta up to 4096 (checked by tests/serving/test_serving_pair_construction.py),
  so each head attends exactly h positions back.
- ``v_proj`` = I/16 on the embedding half (v = the token's one-hot), except the mask
  token's column, which is zero: a head that lands on a parallel-drafting slot adds
  nothing.
- ``o_proj`` maps what the 4 heads of offset h carry (the one-hot of token t) to
  w_h x one-hot(P^(h+1)(t)), w_h = 2^(7-h). For draft j, heads h < j land on mask slots
  (zero), head j lands on the bonus token and votes P^(j+1)(b), and heads h > j land on
  earlier tokens; w_j outweighs all of those together, so draft j is P^(j+1)(b) from the
  very first step, whatever the prompt. (One offset c >= K-1 for every slot, with
  P^(c+1) in the head, also works, but is wrong for the first c-1 steps of every
  request, while that offset still points into the prompt.) ``down_proj`` = 0.
- the final norm and ``lm_head`` = 10 x I turn that vote into the draft token.

So with rule P the drafter is exact at every position up to K = 8 (the "trained" K);
with T, draft j is right exactly when the target keeps to P for the j+1 steps after b
(none of b and the j tokens after it is in S), like a trained drafter whose errors
compound with the position.

Everything is written with torch + safetensors + tokenizers/transformers; nothing
touches the Hugging Face hub.
"""

# pyright: reportMissingImports=false
# torch, safetensors, tokenizers and transformers are the serving stack's (requirements-serving.txt), imported only
# inside the functions that build a pair: the fast lane type-checks this module without them, the serving lane with
# them, so their imports are unresolved in one and a per-line ignore "unnecessary" in the other.

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path

# Bump when the construction changes: a stale pair on disk is then rebuilt.
BUILDER_VERSION = 3
MANIFEST_NAME = "tiny-pair.json"

VOCAB_SIZE = 256
HEAD_DIM = 64  # a size every CPU attention backend supports
MAX_POSITION_EMBEDDINGS = 2048
ROPE_THETA = 10000.0
EMBEDDING_SCALE = 4.0
LM_HEAD_SCALE = 10.0
SEED = 20260310

# The drafter: one layer, hidden = vocabulary (its residual stream is a one-hot vector).
DRAFTER_HIDDEN_SIZE = VOCAB_SIZE
DRAFTER_INTERMEDIATE_SIZE = 512
# Offsets the drafter's attention can read back: draft positions it predicts exactly.
DRAFT_OFFSETS = 8
# The most K the drafter is declared "trained" for (PEAGLE_DRAFTER_TRAINED_K).
TRAINED_SPECULATIVE_TOKENS = DRAFT_OFFSETS
# KV heads: each carries HEAD_DIM dims of the one-hot value, so together they hold it all.
DRAFTER_KV_HEADS = VOCAB_SIZE // HEAD_DIM
DRAFTER_HEADS = DRAFTER_KV_HEADS * DRAFT_OFFSETS
# Rotary pairs used for the position trick (the fastest-turning ones, theta_i >= 0.013).
ROTARY_PAIRS_USED = 16
# a^2 * head_dim^-0.5 per rotary pair: the attention logit is 30 x sum of cosines.
ATTENTION_LOGIT_PER_PAIR = 30.0

SPECIAL_TOKENS = (
    "<pad>",
    "<s>",
    "</s>",
    "<unk>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|mask|>",  # the parallel-drafting mask token (ptd_token_id)
)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
MASK_TOKEN_ID = SPECIAL_TOKENS.index("<|mask|>")
CHARACTER_IDS = range(len(SPECIAL_TOKENS), VOCAB_SIZE)

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>{{ message['content'] }}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


# The rule token over the other characters: 320 nats (10 x the demo target's normalized one-hot), so exp(-gap / T)
# underflows float32 for every temperature up to 2.
DETERMINISTIC_LOGIT_GAP = 320.0
# The partial target: its rule token has probability 0.75 at temperature 0.7 before top_p (0.83 within
# the chatbot profile's top_p 0.9), all but 1 at 0.2-0.3 (codegen, batch), 0.29 at 1.0 (rule_probability).
PARTIAL_LOGIT_GAP = 4.6


@dataclass(frozen=True)
class TargetShape:
    """The target's Llama dimensions (its weights are constructed the same way at any size)."""

    hidden_size: int
    num_layers: int
    intermediate_size: int
    num_heads: int
    num_kv_heads: int
    # Aux hidden states the drafter reads (vLLM numbering: output of layer i-1); fc
    # ignores them, but vLLM needs valid, distinct ids. Its default for eagle3,
    # (2, L//2, L-3), collides for a 4-layer target.
    aux_layer_ids: tuple[int, ...]


@dataclass(frozen=True)
class PairSpec:
    """One constructed pair: ``peagle local --pair NAME``."""

    name: str
    summary: str
    target: TargetShape
    # Share of the tokens on the target's path where it leaves rule P (0: never).
    off_rule_share: float = 0.0
    # The target's logit for its rule token over every other character (specials sit far below):
    # DETERMINISTIC_LOGIT_GAP puts all probability on the rule at any temperature up to 2; a small gap
    # lets sampling leave it, as a real model's does (rule_probability).
    logit_gap: float = DETERMINISTIC_LOGIT_GAP

    @property
    def served_model_name(self) -> str:
        return f"{self.name}-pair"


TINY_TARGET = TargetShape(
    hidden_size=256, num_layers=4, intermediate_size=512, num_heads=4, num_kv_heads=4, aux_layer_ids=(1, 2, 3)
)
# Heavy enough that a target step costs far more than the drafter's: without speculation
# ~11 output tok/s at concurrency 1 (vLLM 0.32.0 CPU, 2 cores, 128 tokens).
DEMO_TARGET = TargetShape(
    hidden_size=1024, num_layers=12, intermediate_size=3072, num_heads=16, num_kv_heads=4, aux_layer_ids=(1, 6, 11)
)

PAIRS = {
    spec.name: spec
    for spec in (
        PairSpec("tiny", "fast test pair; drafts accepted at every position", TINY_TARGET),
        PairSpec("demo", "heavy target; drafts accepted at every position, speculation pays", DEMO_TARGET),
        PairSpec(
            "partial",
            "heavy target that leaves its rule at 15 percent of its tokens and samples off it at T > 0.3; "
            "acceptance ~0.67 at K=4 greedy, lower sampled",
            DEMO_TARGET,
            off_rule_share=0.15,
            logit_gap=PARTIAL_LOGIT_GAP,
        ),
    )
}
DEFAULT_PAIR = PAIRS["tiny"]


@dataclass(frozen=True)
class TinyPair:
    """Where a built pair lives, and which one it is."""

    root: Path
    spec: PairSpec = DEFAULT_PAIR

    @property
    def target_dir(self) -> Path:
        return self.root / "target"

    @property
    def drafter_dir(self) -> Path:
        return self.root / "drafter"

    @property
    def trained_speculative_tokens(self) -> int:
        return TRAINED_SPECULATIVE_TOKENS

    @property
    def served_model_name(self) -> str:
        return self.spec.served_model_name


class PairDirectoryInUse(Exception):
    """The directory holds another pair; rebuilding it would silently replace that one."""


def character_vocabulary() -> list[str]:
    """The 256 token strings: specials, then one printable character per token."""
    characters = ["\n", "\t"] + [chr(code) for code in range(32, 127)]
    characters += [chr(code) for code in range(0xA1, 0x100) if code != 0xAD]  # no soft hyphen
    code = 0x410  # Cyrillic capitals onwards, to fill the table
    while len(SPECIAL_TOKENS) + len(characters) < VOCAB_SIZE:
        characters.append(chr(code))
        code += 1
    return list(SPECIAL_TOKENS) + characters


def ensure_tiny_pair(root: Path, spec: PairSpec = DEFAULT_PAIR) -> TinyPair:
    """Build ``spec`` under ``root`` unless an up-to-date copy is already there.

    A stale or half-written copy of the same pair is rebuilt; another pair is not
    replaced (``PairDirectoryInUse``): pass it to ``build_tiny_pair`` to do that.
    """
    manifest = root / MANIFEST_NAME
    try:
        recorded = json.loads(manifest.read_text()) if manifest.is_file() else {}
    except json.JSONDecodeError:
        recorded = {}  # half-written: rebuild
    if recorded:
        # Builder version 1 wrote only the tiny pair, without a name.
        recorded_name = recorded.get("pair", DEFAULT_PAIR.name)
        if recorded_name != spec.name:
            raise PairDirectoryInUse(
                f"{root} holds the {recorded_name!r} pair, not {spec.name!r}: use another directory "
                "(--models-dir), or --rebuild to replace it"
            )
        if recorded.get("builder_version") == BUILDER_VERSION and recorded.get("target_logit_gap") == spec.logit_gap:
            return TinyPair(root=root, spec=spec)
    return build_tiny_pair(root, spec)


def build_tiny_pair(root: Path, spec: PairSpec = DEFAULT_PAIR) -> TinyPair:
    """Write target/ and drafter/ under ``root`` (replacing what is there)."""
    # Built into a sibling directory and renamed, so a crash never leaves a pair
    # that looks complete.
    staging = root.with_name(root.name + ".building")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "target").mkdir(parents=True)
    (staging / "drafter").mkdir(parents=True)

    drafter_rule = rule_p()
    target_rule = target_rule_for(spec)
    _write_tokenizer(staging / "target")
    _write_target(staging / "target", spec.target, target_rule, spec.logit_gap)
    _write_drafter(staging / "drafter", spec.target, drafter_rule)
    (staging / MANIFEST_NAME).write_text(
        json.dumps(
            {
                "builder_version": BUILDER_VERSION,
                "pair": spec.name,
                "summary": spec.summary,
                "trained_speculative_tokens": TRAINED_SPECULATIVE_TOKENS,
                "mask_token_id": MASK_TOKEN_ID,
                # token id -> the target's greedy next token / the rule the drafter applies
                "target_rule": target_rule,
                "drafter_rule": drafter_rule,
                "target_logit_gap": spec.logit_gap,
            },
            indent=1,
        )
    )
    shutil.rmtree(root, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(root)
    return TinyPair(root=root, spec=spec)


def _p_cycle() -> list[int]:
    """The characters in the order P walks them (seeded)."""
    import torch

    generator = torch.Generator().manual_seed(SEED)
    chars = list(CHARACTER_IDS)
    return [chars[i] for i in torch.randperm(len(chars), generator=generator).tolist()]


def rule_p() -> list[int]:
    """P: token id -> next token id. One cycle through every character.

    A single cycle, so a generation from any token walks the same loop (which keeps the
    partial pair's off-rule share the same for every prompt). Special ids map onto
    characters, so generation never produces EOS or a chat marker.
    """
    cycle = _p_cycle()
    rule = [0] * VOCAB_SIZE
    for position, token_id in enumerate(cycle):
        rule[token_id] = cycle[(position + 1) % len(cycle)]
    for special_id in range(len(SPECIAL_TOKENS)):
        rule[special_id] = CHARACTER_IDS[special_id]
    return rule


def off_rule_tokens(spec: PairSpec) -> set[int]:
    """S: where the ``partial`` target skips a step of P. Empty for the other pairs.

    M tokens of P's cycle, seeded, no two adjacent: the target's loop then skips the M
    tokens that follow them and visits the other 248 - M, exactly M of them off-rule,
    spread at random. M is chosen so that M / (248 - M) is ``off_rule_share``.
    """
    import torch

    if spec.off_rule_share <= 0:
        return set()
    cycle = _p_cycle()
    count = round(spec.off_rule_share * len(cycle) / (1 + spec.off_rule_share))
    # M non-adjacent positions: sorted picks c_0 < ... from range(n - M - 1), shifted by
    # their rank; the last stays below n - 2, so it never neighbours position 0 either.
    generator = torch.Generator().manual_seed(SEED + 3)
    picks = sorted(torch.randperm(len(cycle) - count - 1, generator=generator)[:count].tolist())
    return {cycle[pick + rank] for rank, pick in enumerate(picks)}


def target_rule_for(spec: PairSpec) -> list[int]:
    """The target's greedy next token: P, or P(P(t)) at the off-rule tokens."""
    p = rule_p()
    skip = off_rule_tokens(spec)
    return [p[p[t]] if t in skip else p[t] for t in range(VOCAB_SIZE)]


def rule_probability(spec: PairSpec, temperature: float) -> float:
    """The target's probability of its rule token when sampling at ``temperature`` (> 0), before top_p
    or top_k: the rule token's logit is ``logit_gap`` above the n other characters', the specials' far
    below, so softmax gives 1 / (1 + n exp(-gap / T))."""
    others = len(CHARACTER_IDS) - 1
    return 1.0 / (1.0 + others * math.exp(-spec.logit_gap / temperature))


def rule_matrix(rule: list[int], width: int):
    """[VOCAB_SIZE, width] with a 1 at [rule[t], t] (dims >= VOCAB_SIZE stay 0)."""
    import torch

    matrix = torch.zeros(VOCAB_SIZE, width)
    for token_id, next_id in enumerate(rule):
        matrix[next_id, token_id] = 1.0
    return matrix


def _llama_config(*, hidden_size: int, num_layers: int, intermediate_size: int, heads: int, kv_heads: int) -> dict:
    return {
        "hidden_size": hidden_size,
        "intermediate_size": intermediate_size,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": HEAD_DIM,
        "num_hidden_layers": num_layers,
        "vocab_size": VOCAB_SIZE,
        "max_position_embeddings": MAX_POSITION_EMBEDDINGS,
        "rms_norm_eps": 1e-6,
        "rope_theta": ROPE_THETA,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "attention_bias": False,
        "torch_dtype": "float32",
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_ID,
        "pad_token_id": PAD_ID,
    }


def _one_hot_embeddings(width: int):
    import torch

    return torch.eye(VOCAB_SIZE, width) * EMBEDDING_SCALE


def _random(generator, rows: int, cols: int):
    import torch

    return torch.randn(rows, cols, generator=generator) * 0.02


def _target_layer(prefix: str, generator, shape: TargetShape) -> dict:
    """One decoder layer whose attention and MLP outputs are exactly zero."""
    import torch

    hidden = shape.hidden_size
    return {
        f"{prefix}.self_attn.q_proj.weight": _random(generator, shape.num_heads * HEAD_DIM, hidden),
        f"{prefix}.self_attn.k_proj.weight": _random(generator, shape.num_kv_heads * HEAD_DIM, hidden),
        f"{prefix}.self_attn.v_proj.weight": _random(generator, shape.num_kv_heads * HEAD_DIM, hidden),
        f"{prefix}.self_attn.o_proj.weight": torch.zeros(hidden, shape.num_heads * HEAD_DIM),
        f"{prefix}.mlp.gate_proj.weight": _random(generator, shape.intermediate_size, hidden),
        f"{prefix}.mlp.up_proj.weight": _random(generator, shape.intermediate_size, hidden),
        f"{prefix}.mlp.down_proj.weight": torch.zeros(hidden, shape.intermediate_size),
        f"{prefix}.input_layernorm.weight": torch.ones(hidden),
        f"{prefix}.post_attention_layernorm.weight": torch.ones(hidden),
    }


def target_tensors(shape: TargetShape, rule: list[int], logit_gap: float = DETERMINISTIC_LOGIT_GAP) -> dict:
    """The target's weights (HF Llama names)."""
    import torch

    generator = torch.Generator().manual_seed(SEED + 1)
    tensors = {"model.embed_tokens.weight": _one_hot_embeddings(shape.hidden_size)}
    for layer in range(shape.num_layers):
        tensors.update(_target_layer(f"model.layers.{layer}", generator, shape))
    tensors["model.norm.weight"] = torch.ones(shape.hidden_size)
    # The final norm turns the one-hot into sqrt(hidden) x one-hot: the rule token's logit is
    # lm_head[rule(t), t] x sqrt(hidden) = logit_gap, the other characters' 0, the specials' -320, so
    # sampling never emits EOS or a chat marker.
    normalized = math.sqrt(shape.hidden_size)
    lm_head = rule_matrix(rule, shape.hidden_size) * (logit_gap / normalized)
    lm_head[: len(SPECIAL_TOKENS), :VOCAB_SIZE] = -DETERMINISTIC_LOGIT_GAP / normalized
    tensors["lm_head.weight"] = lm_head
    return tensors


def _write_target(directory: Path, shape: TargetShape, rule: list[int], logit_gap: float) -> None:
    from safetensors.torch import save_file

    tensors = target_tensors(shape, rule, logit_gap)
    save_file({k: v.contiguous() for k, v in tensors.items()}, directory / "model.safetensors")
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        **_llama_config(
            hidden_size=shape.hidden_size,
            num_layers=shape.num_layers,
            intermediate_size=shape.intermediate_size,
            heads=shape.num_heads,
            kv_heads=shape.num_kv_heads,
        ),
    }
    (directory / "config.json").write_text(json.dumps(config, indent=1))
    (directory / "generation_config.json").write_text(
        json.dumps({"bos_token_id": BOS_ID, "eos_token_id": EOS_ID, "pad_token_id": PAD_ID})
    )


def rotary_thetas():
    """theta_i = rope_theta^(-2i/head_dim) for the NeoX pairs (i, i + head_dim/2) used."""
    import torch

    return ROPE_THETA ** (-torch.arange(ROTARY_PAIRS_USED, dtype=torch.float64) * 2 / HEAD_DIM)


def offset_query(offset: int, amplitude: float):
    """One head's q: after RoPE its dot product with ``offset_key`` peaks ``offset`` positions back."""
    import torch

    thetas = rotary_thetas()
    q = torch.zeros(HEAD_DIM, dtype=torch.float64)
    q[:ROTARY_PAIRS_USED] = amplitude * torch.cos(offset * thetas)
    q[HEAD_DIM // 2 : HEAD_DIM // 2 + ROTARY_PAIRS_USED] = -amplitude * torch.sin(offset * thetas)
    return q.float()


def offset_key(amplitude: float):
    import torch

    k = torch.zeros(HEAD_DIM)
    k[:ROTARY_PAIRS_USED] = amplitude
    return k


def drafter_tensors(shape: TargetShape, rule: list[int]) -> dict:
    """The drafter's weights (EAGLE-3 names: no ``model.`` prefix, vLLM adds it)."""
    import torch

    hidden = DRAFTER_HIDDEN_SIZE
    # The layer's q/k/v input is concat(normalized embedding, normalized fc output); RMSNorm
    # turns 4 x one-hot into sqrt(hidden) x one-hot, so weights on it are divided by that.
    normalized = math.sqrt(hidden)
    amplitude = math.sqrt(ATTENTION_LOGIT_PER_PAIR * math.sqrt(HEAD_DIM))  # a^2 * head_dim^-0.5 = 30

    # GQA: query head i reads KV head i // DRAFT_OFFSETS, so head g*DRAFT_OFFSETS + h is
    # "value slice g at offset h".
    q_heads = torch.stack([offset_query(h, amplitude) for _ in range(DRAFTER_KV_HEADS) for h in range(DRAFT_OFFSETS)])
    q_proj = torch.zeros(DRAFTER_HEADS * HEAD_DIM, 2 * hidden)
    q_proj[:, :VOCAB_SIZE] = q_heads.reshape(-1, 1) / normalized  # the same q for every token
    k_proj = torch.zeros(DRAFTER_KV_HEADS * HEAD_DIM, 2 * hidden)
    k_proj[:, :VOCAB_SIZE] = offset_key(amplitude).repeat(DRAFTER_KV_HEADS).reshape(-1, 1) / normalized
    v_proj = torch.zeros(DRAFTER_KV_HEADS * HEAD_DIM, 2 * hidden)
    v_proj[:, :VOCAB_SIZE] = torch.eye(VOCAB_SIZE) / normalized  # v = the token's one-hot
    v_proj[:, MASK_TOKEN_ID] = 0.0  # ...except a mask slot's, which votes for nothing

    # o_proj: the heads of offset h carry one-hot(t) (slice g in head g*DRAFT_OFFSETS + h);
    # send it to w_h x one-hot(P^(h+1)(t)). w_h = 2^(7-h): the nearest real token wins.
    o_proj = torch.zeros(hidden, DRAFTER_HEADS * HEAD_DIM)
    power = list(range(VOCAB_SIZE))
    for h in range(DRAFT_OFFSETS):
        power = [rule[t] for t in power]  # P^(h+1)
        weight = 2.0 ** (DRAFT_OFFSETS - 1 - h)
        for t in range(VOCAB_SIZE):
            g, u = divmod(t, HEAD_DIM)
            o_proj[power[t], (g * DRAFT_OFFSETS + h) * HEAD_DIM + u] = weight

    generator = torch.Generator().manual_seed(SEED + 2)
    num_aux = len(shape.aux_layer_ids)
    return {
        "embed_tokens.weight": _one_hot_embeddings(hidden),
        "layers.0.input_layernorm.weight": torch.ones(hidden),
        "layers.0.hidden_norm.weight": torch.ones(hidden),
        "layers.0.self_attn.q_proj.weight": q_proj,
        "layers.0.self_attn.k_proj.weight": k_proj,
        "layers.0.self_attn.v_proj.weight": v_proj,
        "layers.0.self_attn.o_proj.weight": o_proj,
        "layers.0.post_attention_layernorm.weight": torch.ones(hidden),
        # The MLP runs (real kernels) but adds nothing.
        "layers.0.mlp.gate_proj.weight": _random(generator, DRAFTER_INTERMEDIATE_SIZE, hidden),
        "layers.0.mlp.up_proj.weight": _random(generator, DRAFTER_INTERMEDIATE_SIZE, hidden),
        "layers.0.mlp.down_proj.weight": torch.zeros(hidden, DRAFTER_INTERMEDIATE_SIZE),
        # The target's hidden states are ignored: the residual stream starts at zero.
        "fc.weight": torch.zeros(hidden, num_aux * shape.hidden_size),
        "norm.weight": torch.ones(hidden),
        "lm_head.weight": torch.eye(VOCAB_SIZE, hidden) * LM_HEAD_SCALE,
        # What parallel-drafting slots get as hidden state; vLLM refuses a
        # parallel-drafting drafter without it.
        "mask_hidden": torch.zeros(num_aux * shape.hidden_size),
    }


def _write_drafter(directory: Path, shape: TargetShape, rule: list[int]) -> None:
    from safetensors.torch import save_file

    tensors = drafter_tensors(shape, rule)
    save_file({k: v.contiguous() for k, v in tensors.items()}, directory / "model.safetensors")
    config = {
        "architectures": ["Eagle3LlamaForCausalLM"],
        "model_type": "llama",
        **_llama_config(
            hidden_size=DRAFTER_HIDDEN_SIZE,
            num_layers=1,
            intermediate_size=DRAFTER_INTERMEDIATE_SIZE,
            heads=DRAFTER_HEADS,
            kv_heads=DRAFTER_KV_HEADS,
        ),
        "draft_vocab_size": VOCAB_SIZE,
        # sizes fc and mask_hidden (llama_eagle3.py: fc_input_size = target_hidden_size x aux count)
        "target_hidden_size": shape.hidden_size,
        "eagle_aux_hidden_state_layer_ids": list(shape.aux_layer_ids),
        "ptd_token_id": MASK_TOKEN_ID,
    }
    (directory / "config.json").write_text(json.dumps(config, indent=1))


def _write_tokenizer(directory: Path) -> None:
    """A character-level fast tokenizer with a chat template."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocabulary = {token: index for index, token in enumerate(character_vocabulary())}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocabulary, unk_token="<unk>"))
    # One token per character; Fuse joins them back without separators.
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    tokenizer.add_special_tokens(list(SPECIAL_TOKENS))

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        model_max_length=MAX_POSITION_EMBEDDINGS,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(directory)
