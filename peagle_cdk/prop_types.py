"""Props checked where they enter the library: a wrong type raises a TypeError that names the prop, the
type expected and what was given (``latency_sla must be a Duration, e.g. Duration.seconds(10), not str
'10s'``), instead of an AttributeError from deep inside the construct.

CDK's own classes (``Duration``, ``ec2.SubnetSelection``) are checked with isinstance. Its interfaces
(``ec2.IVpc``, ``iam.IRole``, ...) are Protocols in jsii's Python binding, which isinstance cannot check, and
an imported resource (``ec2.Vpc.from_lookup``) is a proxy of no public class: they are recognised by the
attribute every implementation has (``vpc_id``, ``role_arn``, ...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration

# jsii interface -> (how a message names it, an attribute every implementation has)
INTERFACES = {
    "IVpc": ("an ec2.IVpc", "vpc_id"),
    "ISecurityGroup": ("an ec2.ISecurityGroup", "security_group_id"),
    "IRole": ("an iam.IRole", "role_arn"),
    "IKey": ("a kms.IKey", "key_arn"),
    "IBucket": ("an s3.IBucket", "bucket_name"),
    "IRepository": ("an ecr.IRepository", "repository_uri_for_tag"),
    "ITopic": ("an sns.ITopic", "topic_arn"),
}


# What a scalar prop allows, in the words of every refusal.
WHOLE, NUMBER, BOOLEAN, TEXT = "a whole number", "a number", "True or False", "a string"


def _given(value: Any) -> str:
    shown = repr(value)
    return f"{type(value).__name__} {shown[:60]}{'...' if len(shown) > 60 else ''}"


def refused(owner: str, name: str, value: Any, allowed: str) -> str:
    """The one message shape of a wrong type, at every prop and value-type argument: what was given, what is
    allowed (``Autoscaling: min_capacity must be a whole number, not str '0'``). The settings sections the value
    types build refuse a wrong scalar in these words too (peagle_cdk/settings_model.py, ``build``)."""
    return f"{owner}: {name} must be {allowed}, not {_given(value)}"


def check_duration(owner: str, name: str, value: Any, example: str) -> None:
    """``value`` is a Duration or None."""
    if value is not None and not isinstance(value, Duration):
        raise TypeError(refused(owner, name, value, f"a Duration, e.g. {example}"))


def check_instance(owner: str, name: str, value: Any, expected: type | tuple[type, ...], described: str) -> None:
    """``value`` is one of ``expected`` or None; ``described`` says how to make one."""
    if value is not None and not isinstance(value, expected):
        raise TypeError(refused(owner, name, value, described))


def check_number(owner: str, name: str, value: Any, *, whole: bool = False) -> None:
    """``value`` is a number (an int when ``whole``) or None; bool is not a number here."""
    allowed = (int,) if whole else (int, float)
    if value is not None and (isinstance(value, bool) or not isinstance(value, allowed)):
        raise TypeError(refused(owner, name, value, WHOLE if whole else NUMBER))


def check_interface(owner: str, name: str, value: Any, interface: str) -> None:
    """``value`` implements the jsii ``interface`` (a key of INTERFACES) or is None."""
    described, attribute = INTERFACES[interface]
    if value is not None and not hasattr(value, attribute):
        raise TypeError(refused(owner, name, value, described))


def check_interfaces(owner: str, name: str, values: Any, interface: str) -> None:
    """``values`` is a list (or tuple) of ``interface`` implementations, or None."""
    if values is None:
        return
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence):
        raise TypeError(refused(owner, name, values, f"a list of {INTERFACES[interface][0]}"))
    for index, value in enumerate(values):
        check_interface(owner, f"{name}[{index}]", value, interface)
