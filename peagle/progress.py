"""Progress for long work: tqdm bars on stderr, shown only when stderr is a terminal.

One helper for every command (bench requests, stage uploads, batch records and jobs),
so they all behave alike: progress never mixes into stdout (which stays for results and
can be piped), and a CI log, where stderr is a file or a pipe, stays quiet. tqdm is
pinned in requirements-client.txt, installed with the boto3/httpx the same commands need.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import IO, Any


def is_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is an interactive terminal (tests replace this to force progress on)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def progress_enabled(stream: IO[str] | None = None) -> bool:
    return is_terminal(sys.stderr if stream is None else stream)


def progress_bar(
    *,
    total: float | None,
    unit: str,
    desc: str = "",
    enabled: bool | None = None,
    position: int = 0,
    leave: bool = True,
    **options: Any,
) -> Any:
    """A tqdm bar on stderr; ``enabled=None`` means "when stderr is a terminal".

    ``unit="B"`` counts bytes, shown scaled (KiB, MiB, GiB and their rates). A disabled
    bar accepts every call and prints nothing.
    """
    from tqdm import tqdm

    if unit == "B":
        options = {"unit_scale": True, "unit_divisor": 1024, **options}
    return tqdm(
        total=total,
        unit=unit,
        desc=desc,
        file=sys.stderr,
        disable=not (progress_enabled() if enabled is None else enabled),
        dynamic_ncols=True,
        position=position,
        leave=leave,
        **options,
    )


def write_line(text: str, *, file: IO[str] | None = None) -> None:
    """Print a line without tearing a bar that is on screen (the bar is redrawn below it)."""
    from tqdm import tqdm

    tqdm.write(text, file=sys.stdout if file is None else file)


def thread_safe_counter(*bars: Any) -> Callable[[int], None]:
    """One function advancing every bar in ``bars``, safe to call from worker threads
    (boto3's upload ``Callback``)."""
    lock = threading.Lock()

    def update(amount: int) -> None:
        with lock:
            for bar in bars:
                bar.update(amount)

    return update
