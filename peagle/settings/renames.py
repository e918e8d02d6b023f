"""Old keys of a section that still load, with a warning naming the new one."""

from __future__ import annotations

import warnings
from typing import Any


def renamed(data: Any, section: str, renames: dict[str, str]) -> Any:
    """Keys renamed so that one concept has one name in the file, the props, the plan and the docs (the
    headroom, the latency SLA). An old key still loads, with a FutureWarning (shown to users by default)
    naming the new one; both at once are refused."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    for old, new in renames.items():
        if old not in data:
            continue
        if new in data:
            raise ValueError(f"{section}.{old} is the old name of {section}.{new}; give only {new}")
        warnings.warn(
            f"{section}.{old} is deprecated: it is now {section}.{new} (same meaning and value); rename it in the "
            "deployment file",
            FutureWarning,
            stacklevel=2,
        )
        data[new] = data.pop(old)
    return data
