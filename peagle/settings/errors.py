"""Errors a user can act on. Each message says what was given, what is allowed and
what to do; the CLI and the CDK app print it as is and exit 2.

A message names settings as references (peagle/settings/refs.py): ``str()`` spells them as the
deployment file does; ``in_words(door)`` as the construct's props or `peagle plan`'s flags do."""

from __future__ import annotations

from peagle.settings.refs import Door
from peagle.settings.words import in_words


class PeagleError(Exception):
    """Base for user-facing errors (no traceback is shown for these)."""

    def __str__(self) -> str:
        return self.in_words(Door.FILE)

    def in_words(self, door: Door | str) -> str:
        """The message with every setting spelled for ``door`` (file, props or cli)."""
        return in_words(super().__str__(), door)


class ConfigError(PeagleError):
    """The deployment file or an override is invalid."""


class PlanError(PeagleError):
    """The model pair, instance type, profile and K do not make a working deployment."""


class InstanceFitError(PlanError):
    """The pair, profile and K are fine, but not on this instance type: another one may fit."""
