"""A setting named in a message: the reference a rule writes, and the names a field has at each front door.

One settings model (peagle.settings.DeploymentConfig) has three doors: the deployment file (key paths, plus the CDK
app's ``-c`` keys), PeagleEndpoint's props (value types and keyword arguments), and `peagle plan`'s flags. A rule names
a setting with ``setting("autoscaling.max_capacity")``, or advises a value with ``setting("autoscaling.enabled",
False)``; the message carries that reference as a marker, which peagle/settings/words.py spells for a door when the
message is shown. A field declares its names at the other doors with ``Field(json_schema_extra=spelled(...))``.
This module knows no field: the sections import it to declare theirs.
"""

from __future__ import annotations

import json
import re
from enum import Enum
from typing import Any

from pydantic.config import JsonDict

OPEN, CLOSE, EQUALS = "\u27e6", "\u27e7", "\u2254"  # ⟦path⟧ and ⟦path≔json⟧: no setting name or value holds them
UNSET = object()  # a reference without a value: it names the setting, advises none


class Door(str, Enum):
    FILE = "file"
    PROPS = "props"
    CLI = "cli"


def setting(path: str, value: Any = UNSET) -> str:
    """A reference to the setting at ``path`` (dotted, as in the file) in a message; with ``value``, the advice
    to set it to that value."""
    if value is UNSET:
        return f"{OPEN}{path}{CLOSE}"
    return f"{OPEN}{path}{EQUALS}{json.dumps(value)}{CLOSE}"


def spelled(prop: str, *, flag: str | None = None, **values: str) -> JsonDict:
    """A field's names at the other doors, for ``Field(json_schema_extra=...)``. ``prop``: how a construct user
    sets it, "..." standing for the value (``Autoscaling(max_capacity=...)``); ``flag``: `peagle plan`'s
    option; ``values``: whole spellings of particular values at the props door, keyed by their JSON
    (``false="autoscaling=None"``)."""
    return {"prop": prop, "flag": flag, "prop_values": dict(values)}


def named_in_words(spelled: str) -> str:
    """A props spelling with a ``...`` to fill in, as the words that name the setting: ``Autoscaling(min_capacity=...)``
    -> ``min_capacity of Autoscaling``; ``a PeagleEndpoint.add_async_endpoint(...) call`` -> ``a
    PeagleEndpoint.add_async_endpoint call``; ``ServingImage.build_in_account(base=BaseImage.pull_through_cache(...))``
    -> ``BaseImage.pull_through_cache``."""
    keyword = re.search(r"([\w.]*?)(?:\.\.\.)?\((\w+)=\.\.\.\)", spelled)
    if keyword:
        return f"{keyword[2]} of {keyword[1]}"
    if " " in spelled:
        return spelled.replace("(...)", "")
    callees = re.findall(r"([\w.]+?)(?:\.\.\.)?\(\.\.\.\)", spelled)
    return callees[-1] if callees else spelled.replace("...", "")


def duration(value: Any, unit: str) -> str:
    """A number of ``unit`` as the Duration a construct user passes."""
    return f"Duration.{unit}({value:g})" if isinstance(value, int | float) else f"Duration.{unit}({value})"
