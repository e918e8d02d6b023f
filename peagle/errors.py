"""Errors a user can act on. Each message says what was given, what is allowed and
what to do; the CLI and the CDK app print it as is and exit 2."""


class PeagleError(Exception):
    """Base for user-facing errors (no traceback is shown for these)."""


class ConfigError(PeagleError):
    """The deployment file or an override is invalid."""


class PlanError(PeagleError):
    """The model pair, instance type, profile and K do not make a working deployment."""


class InstanceFitError(PlanError):
    """The pair, profile and K are fine, but not on this instance type: another one may fit."""
