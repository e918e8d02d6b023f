"""A setting named in a message, and how each front door spells it.

One settings model (peagle.config.DeploymentConfig) has three doors: the deployment file (key paths,
plus the CDK app's ``-c`` keys), PeagleEndpoint's props (value types and keyword arguments), and
`peagle plan`'s flags. A rule names a setting with ``setting("autoscaling.max_capacity")``, or advises a
value with ``setting("autoscaling.enabled", False)``; the message carries that reference as a marker,
and ``in_words(message, door)`` spells it when the message is shown, from the field's own metadata:

- the file: the key path (``autoscaling.max_capacity``; with a value ``autoscaling.enabled: false``);
- the props: ``Field(json_schema_extra=spelled("Autoscaling(max_capacity=...)"))`` on the model's field, or
  the section's ``PROP_TYPE`` for a value type passed whole (``SloSettings(ttft_seconds=...)``); a Duration
  for a field in seconds or minutes (``Duration.minutes(5)``);
- the CLI: the field's flag (``--instance ml.g6e.2xlarge``), else the file key (`peagle plan --deployment`).

A field with no ``prop`` spelling is one only the file sets; the props door then names the file key.

Where the app's recorded plan is known (``in_words(message, door, recorded=plan)``: `peagle simulate`, `peagle
preflight`), a value advised at the props door is the whole prop, the app's own settings kept
(``autoscaling=Autoscaling(min_capacity=1, max_capacity=5)``, peagle/props_values.py), and a setting named without a
value is named in words (``min_capacity of Autoscaling``), never as code with a ``...`` to fill in.
"""

from __future__ import annotations

import json
import re
from enum import Enum
from typing import TYPE_CHECKING, Any, get_args

from pydantic import BaseModel
from pydantic.config import JsonDict

if TYPE_CHECKING:
    from peagle.planner import Plan

OPEN, CLOSE, EQUALS = "\u27e6", "\u27e7", "\u2254"  # ⟦path⟧ and ⟦path≔json⟧: no setting name or value holds them
_UNSET = object()


class Door(str, Enum):
    FILE = "file"
    PROPS = "props"
    CLI = "cli"


def setting(path: str, value: Any = _UNSET) -> str:
    """A reference to the setting at ``path`` (dotted, as in the file) in a message; with ``value``, the advice
    to set it to that value."""
    if value is _UNSET:
        return f"{OPEN}{path}{CLOSE}"
    return f"{OPEN}{path}{EQUALS}{json.dumps(value)}{CLOSE}"


def spelled(prop: str, *, flag: str | None = None, **values: str) -> JsonDict:
    """A field's names at the other doors, for ``Field(json_schema_extra=...)``. ``prop``: how a construct user
    sets it, "..." standing for the value (``Autoscaling(max_capacity=...)``); ``flag``: `peagle plan`'s
    option; ``values``: whole spellings of particular values at the props door, keyed by their JSON
    (``false="autoscaling=None"``)."""
    return {"prop": prop, "flag": flag, "prop_values": dict(values)}


def in_words(message: str, door: Door | str = Door.FILE, recorded: Plan | None = None) -> str:
    """``message`` with every setting reference spelled for ``door``; ``recorded``: the plan the app recorded, whose
    settings a value advised at the props door keeps (peagle/props_values.py)."""
    door = Door(door)
    out, rest = [], message
    while OPEN in rest:
        before, _, rest = rest.partition(OPEN)
        reference, _, rest = rest.partition(CLOSE)
        path, has_value, value = reference.partition(EQUALS)
        given = json.loads(value) if has_value else _UNSET
        spelled = _whole(path, given, recorded) if door is Door.PROPS and recorded is not None else None
        out += [before, spelled or _spell(path, given, door)]
    return "".join([*out, rest])


def _whole(path: str, value: Any, recorded: Plan) -> str | None:
    """The setting at ``path`` as the whole prop the app recorded (with ``value`` set), or named in words where the
    props spelling holds a ``...``; None: the usual spelling, which holds none."""
    from peagle.props_values import current_prop, whole_prop

    found = whole_prop({path: value}, recorded) if value is not _UNSET else current_prop(path, recorded)
    if found is not None:
        return found
    spelled = _spell(path, value, Door.PROPS)
    return named_in_words(spelled) if "..." in spelled else None


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


def field_words(path: str) -> dict[str, Any]:
    """The metadata of the field at ``path`` (dotted; ``[...]`` list items and dict keys walked through), with
    ``unit`` ("seconds", "minutes" or None, from the name's suffix), ``name`` (the last field's) and ``own`` (whether
    the last field has a prop spelling of its own, not its section's)."""
    from peagle.config import DeploymentConfig  # the model imports this module

    model: type[BaseModel] | None = DeploymentConfig
    found: dict[str, Any] = {}
    name, own = "", False
    for part in path.replace("[", ".[").split("."):
        if model is None or part.startswith("[") or part not in model.model_fields:
            continue  # a list index, a dict key (custom_pairs.<id>) or a name below the model
        info = model.model_fields[part]
        name = part
        extra = dict(info.json_schema_extra) if isinstance(info.json_schema_extra, dict) else {}
        value_type = getattr(model, "PROP_TYPE", None)  # a section a construct user passes whole
        if not extra.get("prop") and value_type:
            extra["prop"] = f"{value_type}({part}=...)"
        own = bool(extra.get("prop"))
        if own or not found:
            found = extra
        model = _model_in(info.annotation)
    unit = next((unit for unit in ("seconds", "minutes") if name.endswith(f"_{unit}")), None)
    return {"prop": None, "flag": None, "prop_values": {}, **found, "unit": unit, "name": name, "own": own}


def duration(value: Any, unit: str) -> str:
    """A number of ``unit`` as the Duration a construct user passes."""
    return f"Duration.{unit}({value:g})" if isinstance(value, int | float) else f"Duration.{unit}({value})"


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds (itself, in a list or dict, or optional), else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in get_args(annotation):
        inner = _model_in(argument)
        if inner is not None:
            return inner
    return None


def _spell(path: str, value: Any, door: Door) -> str:
    words = field_words(path)
    given = value is not _UNSET
    if door is Door.PROPS and words["prop"]:
        special = words["prop_values"].get(json.dumps(value)) if given else None
        if special:
            return special
        if not given:
            return words["prop"]
        shown = duration(value, words["unit"]) if words["unit"] else repr(value)
        return words["prop"].replace("...", shown) if "..." in words["prop"] else f"{words['prop']}={shown}"
    if door is Door.CLI and words["flag"]:
        return f"{words['flag']} {value}" if given else words["flag"]
    return f"{path}: {_yaml(value)}" if given else path


def _yaml(value: Any) -> str:
    return json.dumps(value) if isinstance(value, bool) or value is None else str(value)
