"""One way to acknowledge a cdk-nag finding: one finding, on one construct, with a reason."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, finding: str, reason: str) -> None:
    """``finding`` is the full id as cdk-nag reports it, e.g. 'AwsSolutions-IAM5[Resource::*]'."""
    Validations.of(scope).acknowledge(Acknowledgment(id=finding, reason=reason))
