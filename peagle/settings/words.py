"""A setting named in a message, spelled as each front door spells it.

One settings model (peagle.settings.DeploymentConfig) has three doors: the deployment file (key paths,
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
(``autoscaling=Autoscaling(min_capacity=1, max_capacity=5)``, peagle/settings/props_values.py), and a setting named
without a value is named in words (``min_capacity of Autoscaling``), never as code with a ``...`` to fill in.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, get_args

from pydantic import BaseModel

from peagle.settings.refs import CLOSE, EQUALS, OPEN, UNSET, Door, duration, named_in_words

if TYPE_CHECKING:
    from peagle.settings.props_values import RecordedProps


def in_words(message: str, door: Door | str = Door.FILE, recorded: RecordedProps | None = None) -> str:
    """``message`` with every setting reference spelled for ``door``; ``recorded``: the plan the app recorded, whose
    settings a value advised at the props door keeps (peagle/settings/props_values.py)."""
    door = Door(door)
    out, rest = [], message
    while OPEN in rest:
        before, _, rest = rest.partition(OPEN)
        reference, _, rest = rest.partition(CLOSE)
        path, has_value, value = reference.partition(EQUALS)
        given = json.loads(value) if has_value else UNSET
        spelled = _whole(path, given, recorded) if door is Door.PROPS and recorded is not None else None
        out += [before, spelled or _spell(path, given, door)]
    return "".join([*out, rest])


def _whole(path: str, value: Any, recorded: RecordedProps) -> str | None:
    """The setting at ``path`` as the whole prop the app recorded (with ``value`` set), or named in words where the
    props spelling holds a ``...``; None: the usual spelling, which holds none."""
    from peagle.settings.props_values import current_prop, whole_prop  # only when a props message is spelled

    found = whole_prop({path: value}, recorded) if value is not UNSET else current_prop(path, recorded)
    if found is not None:
        return found
    spelled = _spell(path, value, Door.PROPS)
    return named_in_words(spelled) if "..." in spelled else None


def field_words(path: str) -> dict[str, Any]:
    """The metadata of the field at ``path`` (dotted; ``[...]`` list items and dict keys walked through), with
    ``unit`` ("seconds", "minutes" or None, from the name's suffix), ``name`` (the last field's) and ``own`` (whether
    the last field has a prop spelling of its own, not its section's)."""
    # Here, not at the top: every command's error types (peagle/settings/errors.py) spell their messages through
    # this module, and a message with no setting in it must not load the whole settings model.
    from peagle.settings.deployment import DeploymentConfig

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
    given = value is not UNSET
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
