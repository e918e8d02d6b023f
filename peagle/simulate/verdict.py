"""One property of a timeline, judged: a pass or a fail with what was seen and, for a failure, the setting to
change with the value the simulation suggests (peagle/simulate/verdicts.py lists the properties)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Verdict:
    name: str
    passed: bool
    detail: str
    # For a failure: what to change, to what, and what the simulation then shows. Finding it simulates the
    # change, so it is worked out when first read (a report reads it once per scenario, not per run).
    suggest: Callable[[], str] | None = field(default=None, repr=False, compare=False)
    # False: nothing here can tell (the detail says what would); a report prints "not checked", never a pass.
    checked: bool = True
    _fix: str | None = field(default=None, repr=False, compare=False)

    @property
    def fix(self) -> str | None:
        if self._fix is None and self.suggest is not None:
            self._fix = self.suggest()
        return self._fix
