"""Helpers for vLLM option lists: find, pop and redact options.

The ``SM_VLLM_*`` variables become options in ``contract.decode_vllm_env``, the one
place that maps them. Everything vLLM does not know fails in vLLM's own argument
parser, which names the option; the launcher then exits with vLLM's status.
"""

from __future__ import annotations

# Option values never written to logs.
_SECRET_OPTIONS = frozenset({"--api-key", "--hf-token"})


def _normalise(token: str) -> str:
    # vLLM's FlexibleArgumentParser accepts --max_model_len as --max-model-len.
    if not token.startswith("--"):
        return token
    name, sep, value = token.partition("=")
    return name.replace("_", "-") + sep + value


def pop_option(args: list[str], option: str, *, takes_value: bool = True) -> tuple[list[str | None], list[str]]:
    """Remove every occurrence of ``option`` from ``args``.

    Returns (the values given, in order; None for a bare flag) and the remaining
    args. Handles ``--opt value``, ``--opt=value`` and the underscore spelling.
    """
    values: list[str | None] = []
    remaining: list[str] = []
    index = 0
    while index < len(args):
        token = _normalise(args[index])
        if token == option:
            if takes_value:
                values.append(args[index + 1] if index + 1 < len(args) else None)
                index += 2
            else:
                values.append(None)
                index += 1
            continue
        if token.startswith(option + "="):
            values.append(token[len(option) + 1 :])
            index += 1
            continue
        remaining.append(args[index])
        index += 1
    return values, remaining


def has_option(args: list[str], option: str) -> bool:
    return any(_normalise(token) == option or _normalise(token).startswith(option + "=") for token in args)


def option_value(args: list[str], option: str) -> str | None:
    """The last value given for ``option`` (argparse semantics: last one wins)."""
    values, _ = pop_option(list(args), option)
    return values[-1] if values else None


def redact(args: list[str]) -> list[str]:
    """A copy of ``args`` safe to log."""
    shown: list[str] = []
    hide_next = False
    for token in args:
        if hide_next:
            shown.append("***")
            hide_next = False
            continue
        name, sep, _ = _normalise(token).partition("=")
        if name in _SECRET_OPTIONS:
            if sep:
                shown.append(name + "=***")
            else:
                shown.append(token)
                hide_next = True
            continue
        shown.append(token)
    return shown
