"""Build the tiny target + P-EAGLE drafter pair that local mode and the tests serve.

A drafter with random weights is accepted ~never, which would make acceptance
metrics and the lossless test meaningless. So the pair is *constructed* rather than
trained (measured on vLLM 0.32.0 CPU: every position-0 draft accepted, mean acceptance
length 2.0 at K=4; tests/serving/test_serving_speculation.py checks the acceptance on every run):

- vocab = hidden = 256 and one-hot token embeddings (x4);
- every target layer's ``o_proj`` and ``down_proj`` are zero, so the residual stream
  stays the current token's one-hot vector and the final RMSNorm scales it to 16;
- the target ``lm_head`` is a "successor" matrix S (x10) with S[f(i), i] = 1, so the
  target's greedy next token is f(current token), a fixed function;
- the drafter's ``fc`` copies the deepest auxiliary hidden state (still the current
  token's one-hot), its own ``o_proj``/``down_proj`` are zero, and its ``lm_head``
  is S @ S, i.e. f(f(current)): exactly the token after the target's next one. So
  draft position 0 is always accepted; positions 1..K-1 (fed the mask token and
  the zero ``mask_hidden``) are mostly rejected. Mean acceptance length ~2 at K=4.

f maps every token to a printable character and never to a special token (EOS
included), so generations run to ``max_tokens`` and are fully deterministic. The
other weights (q/k/v, gate/up) are seeded random: they run, but cannot change the
result, which keeps the engine's real kernels in the path.

Everything is written with torch + safetensors + tokenizers/transformers; nothing
touches the Hugging Face hub.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

# Bump when the construction changes: a stale pair on disk is then rebuilt.
BUILDER_VERSION = 1
MANIFEST_NAME = "tiny-pair.json"

VOCAB_SIZE = 256
HIDDEN_SIZE = 256
NUM_TARGET_LAYERS = 4
NUM_HEADS = 4  # head_dim 64: a size every CPU attention backend supports
INTERMEDIATE_SIZE = 512
MAX_POSITION_EMBEDDINGS = 2048
EMBEDDING_SCALE = 4.0
LM_HEAD_SCALE = 10.0
# Aux hidden states the drafter reads (vLLM numbering: output of layer i-1).
# vLLM's default for eagle3, (2, L//2, L-3), collides for a 4-layer target.
AUX_LAYER_IDS = (1, 2, 3)
SEED = 20260310
# The most K the tiny drafter is declared "trained" for (PEAGLE_DRAFTER_TRAINED_K).
TRAINED_SPECULATIVE_TOKENS = 8

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

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>{{ message['content'] }}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@dataclass(frozen=True)
class TinyPair:
    """Where a built pair lives."""

    root: Path

    @property
    def target_dir(self) -> Path:
        return self.root / "target"

    @property
    def drafter_dir(self) -> Path:
        return self.root / "drafter"

    @property
    def trained_speculative_tokens(self) -> int:
        return TRAINED_SPECULATIVE_TOKENS


def character_vocabulary() -> list[str]:
    """The 256 token strings: specials, then one printable character per token."""
    characters = ["\n", "\t"] + [chr(code) for code in range(32, 127)]
    characters += [chr(code) for code in range(0xA1, 0x100) if code != 0xAD]  # no soft hyphen
    code = 0x410  # Cyrillic capitals onwards, to fill the table
    while len(SPECIAL_TOKENS) + len(characters) < VOCAB_SIZE:
        characters.append(chr(code))
        code += 1
    return list(SPECIAL_TOKENS) + characters


def ensure_tiny_pair(root: Path) -> TinyPair:
    """Build the pair under ``root`` unless an up-to-date one is already there."""
    pair = TinyPair(root=root)
    manifest = root / MANIFEST_NAME
    if manifest.is_file():
        try:
            if json.loads(manifest.read_text()).get("builder_version") == BUILDER_VERSION:
                return pair
        except json.JSONDecodeError:
            pass  # half-written: rebuild
    build_tiny_pair(root)
    return pair


def build_tiny_pair(root: Path) -> TinyPair:
    """Write target/ and drafter/ under ``root`` (replacing what is there)."""
    # Built into a sibling directory and renamed, so a crash never leaves a pair
    # that looks complete.
    staging = root.with_name(root.name + ".building")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "target").mkdir(parents=True)
    (staging / "drafter").mkdir(parents=True)

    successor = _successor_function()
    _write_tokenizer(staging / "target")
    _write_target(staging / "target", successor)
    _write_drafter(staging / "drafter", successor)
    (staging / MANIFEST_NAME).write_text(
        json.dumps(
            {
                "builder_version": BUILDER_VERSION,
                "trained_speculative_tokens": TRAINED_SPECULATIVE_TOKENS,
                "mask_token_id": MASK_TOKEN_ID,
                "successor": successor,
            },
            indent=1,
        )
    )
    shutil.rmtree(root, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(root)
    return TinyPair(root=root)


def _successor_function() -> list[int]:
    """f: token id -> the target's greedy next token id (seeded, deterministic).

    A permutation of the character ids; special ids map onto characters too, so
    generation never produces EOS or a chat marker.
    """
    import torch

    generator = torch.Generator().manual_seed(SEED)
    first_char = len(SPECIAL_TOKENS)
    char_ids = list(range(first_char, VOCAB_SIZE))
    shuffled = torch.randperm(len(char_ids), generator=generator).tolist()
    successor = [0] * VOCAB_SIZE
    for position, token_id in enumerate(char_ids):
        successor[token_id] = char_ids[shuffled[position]]
    for special_id in range(first_char):
        successor[special_id] = char_ids[special_id]
    return successor


def _successor_matrix(successor: list[int]):
    import torch

    matrix = torch.zeros(VOCAB_SIZE, HIDDEN_SIZE)
    for token_id, next_id in enumerate(successor):
        matrix[next_id, token_id] = 1.0
    return matrix


def _llama_config(num_layers: int) -> dict:
    return {
        "hidden_size": HIDDEN_SIZE,
        "intermediate_size": INTERMEDIATE_SIZE,
        "num_attention_heads": NUM_HEADS,
        "num_key_value_heads": NUM_HEADS,
        "num_hidden_layers": num_layers,
        "vocab_size": VOCAB_SIZE,
        "max_position_embeddings": MAX_POSITION_EMBEDDINGS,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "attention_bias": False,
        "torch_dtype": "float32",
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_ID,
        "pad_token_id": PAD_ID,
    }


def _one_hot_embeddings():
    import torch

    return torch.eye(VOCAB_SIZE, HIDDEN_SIZE) * EMBEDDING_SCALE


def _attention_and_mlp(prefix: str, generator, qkv_input_size: int) -> dict:
    """One decoder layer whose attention and MLP outputs are exactly zero."""
    import torch

    def random(rows: int, cols: int):
        return torch.randn(rows, cols, generator=generator) * 0.02

    head_dim = HIDDEN_SIZE // NUM_HEADS
    return {
        f"{prefix}.self_attn.q_proj.weight": random(NUM_HEADS * head_dim, qkv_input_size),
        f"{prefix}.self_attn.k_proj.weight": random(NUM_HEADS * head_dim, qkv_input_size),
        f"{prefix}.self_attn.v_proj.weight": random(NUM_HEADS * head_dim, qkv_input_size),
        f"{prefix}.self_attn.o_proj.weight": torch.zeros(HIDDEN_SIZE, NUM_HEADS * head_dim),
        f"{prefix}.mlp.gate_proj.weight": random(INTERMEDIATE_SIZE, HIDDEN_SIZE),
        f"{prefix}.mlp.up_proj.weight": random(INTERMEDIATE_SIZE, HIDDEN_SIZE),
        f"{prefix}.mlp.down_proj.weight": torch.zeros(HIDDEN_SIZE, INTERMEDIATE_SIZE),
        f"{prefix}.input_layernorm.weight": torch.ones(HIDDEN_SIZE),
        f"{prefix}.post_attention_layernorm.weight": torch.ones(HIDDEN_SIZE),
    }


def _write_target(directory: Path, successor: list[int]) -> None:
    import torch
    from safetensors.torch import save_file

    generator = torch.Generator().manual_seed(SEED + 1)
    tensors = {"model.embed_tokens.weight": _one_hot_embeddings()}
    for layer in range(NUM_TARGET_LAYERS):
        tensors.update(_attention_and_mlp(f"model.layers.{layer}", generator, HIDDEN_SIZE))
    tensors["model.norm.weight"] = torch.ones(HIDDEN_SIZE)
    tensors["lm_head.weight"] = _successor_matrix(successor) * LM_HEAD_SCALE
    save_file({k: v.contiguous() for k, v in tensors.items()}, directory / "model.safetensors")

    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        **_llama_config(NUM_TARGET_LAYERS),
    }
    (directory / "config.json").write_text(json.dumps(config, indent=1))
    (directory / "generation_config.json").write_text(
        json.dumps({"bos_token_id": BOS_ID, "eos_token_id": EOS_ID, "pad_token_id": PAD_ID})
    )


def _write_drafter(directory: Path, successor: list[int]) -> None:
    import torch
    from safetensors.torch import save_file

    generator = torch.Generator().manual_seed(SEED + 2)
    num_aux = len(AUX_LAYER_IDS)
    # EAGLE-3 checkpoints name weights without the `model.` prefix (vLLM adds it).
    tensors = _attention_and_mlp("layers.0", generator, 2 * HIDDEN_SIZE)
    tensors["layers.0.hidden_norm.weight"] = torch.ones(HIDDEN_SIZE)
    fc = torch.zeros(HIDDEN_SIZE, num_aux * HIDDEN_SIZE)
    fc[:, (num_aux - 1) * HIDDEN_SIZE :] = torch.eye(HIDDEN_SIZE)  # deepest aux state
    tensors["fc.weight"] = fc
    tensors["norm.weight"] = torch.ones(HIDDEN_SIZE)
    tensors["embed_tokens.weight"] = _one_hot_embeddings()
    matrix = _successor_matrix(successor)
    tensors["lm_head.weight"] = (matrix @ matrix) * LM_HEAD_SCALE
    # What the drafter sees at parallel-drafting (mask) positions; vLLM refuses a
    # parallel-drafting drafter without it.
    tensors["mask_hidden"] = torch.zeros(num_aux * HIDDEN_SIZE)
    save_file({k: v.contiguous() for k, v in tensors.items()}, directory / "model.safetensors")

    config = {
        "architectures": ["Eagle3LlamaForCausalLM"],
        "model_type": "llama",
        **_llama_config(1),
        "draft_vocab_size": VOCAB_SIZE,
        "target_hidden_size": HIDDEN_SIZE,
        "eagle_aux_hidden_state_layer_ids": list(AUX_LAYER_IDS),
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
