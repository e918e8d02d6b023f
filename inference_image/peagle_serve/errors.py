"""Errors the launcher reports and the exit codes it uses for them."""

from __future__ import annotations

# Exit codes, so a SageMaker log reader (and the tests) can tell failures apart.
EXIT_CONFIG_ERROR = 2  # bad settings: nothing was started
EXIT_SELF_CHECK_FAILED = 3  # engine up, but the warm-up / speculation check failed
EXIT_STARTUP_TIMEOUT = 4  # engine did not become healthy in time
EXIT_ENGINE_DIED = 5  # vLLM exited on its own with status 0 (a non-zero status is passed on)


class ConfigError(Exception):
    """One or more settings are wrong; each entry says what to fix."""

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


class SelfCheckError(Exception):
    """The engine runs but does not serve as configured (e.g. speculation is off)."""
