"""Prompt lengths in tokens, by a Hugging Face tokenizer (`peagle prompts --tokenizer`).

transformers is the serving stack's (requirements-serving.txt), not the CLI's: this module imports it only when
called and says how to get it when it is missing.
"""

# pyright: reportMissingImports=false
# (the fast lane's venv has no transformers, the serving lane's has it; an unresolved import here is expected in
# the first and a per-line ignore would be "unnecessary" in the second, so the rule is off for this one-import module)

from __future__ import annotations


def input_token_counts(tokenizer_path: str, bodies: list[dict]) -> list[int]:
    """Input tokens per prompt: the chat template's for messages when the tokenizer has one, else the
    messages' text contents joined."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise ValueError(
            "--tokenizer needs the transformers package (the serving stack installs it: `make local`), or leave "
            "--tokenizer out: lengths are then counted in characters"
        ) from None

    from peagle.prompts_capture.convert import input_text

    try:
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    except (OSError, ValueError) as error:
        raise ValueError(f"--tokenizer {tokenizer_path}: cannot load a tokenizer from it ({error})") from None
    counts = []
    for body in bodies:
        if "messages" in body and getattr(tokenizer, "chat_template", None):
            try:
                # The rendered text, tokenized as a completion is: apply_chat_template(tokenize=True) returns a
                # BatchEncoding (input_ids, attention_mask) in recent transformers, whose len() is 2, not the tokens.
                text = tokenizer.apply_chat_template(body["messages"], tokenize=False, add_generation_prompt=True)
                counts.append(len(tokenizer(text, add_special_tokens=False)["input_ids"]))
                continue
            except Exception:  # a message shape the template refuses: count its text instead
                pass
        counts.append(len(tokenizer(input_text(body))["input_ids"]))
    return counts
