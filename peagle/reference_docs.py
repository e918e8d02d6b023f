"""Reference pages generated from the code and data they describe, so they cannot drift from it.

- docs/deployment-file.md: every field of ``DeploymentConfig`` (peagle/settings/), nested models
  walked, with its type, default, allowed values or bounds and its ``Field(description=...)``.
- docs/catalog.md: the model pairs, instance types and profiles of peagle/catalog/*.yaml.
- peagle_cdk/catalog_ids.py (a whole file): the same ids as constants for construct users' IDEs.

Each page keeps its hand-written prose; only the text between a block's markers is generated::

    <!-- BEGIN GENERATED: <block> (python -m peagle.reference_docs) -->
    ...
    <!-- END GENERATED: <block> -->

``python -m peagle.reference_docs`` rewrites the blocks; ``--check`` only compares, names the stale
files and exits 1 (tests/infra/test_reference_docs.py asserts the same).
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
import types
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from peagle import settings as config_module
from peagle.catalog import ProfileName, load_catalog
from peagle.planning.planner import MIN_COMPUTE_CAPABILITY, describe_slo
from peagle.settings import DeploymentConfig

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAIRS_YAML = Path(__file__).resolve().parent / "catalog" / "pairs.yaml"
COMMAND = "python -m peagle.reference_docs"

# Values a field validator allows that its type does not show.
_VALIDATED_VALUES: dict[tuple[type[BaseModel], str], tuple[Any, ...]] = {
    (config_module.ObservabilitySettings, "log_retention_days"): config_module.LOG_RETENTION_DAYS,
}


def begin_marker(block: str) -> str:
    return f"<!-- BEGIN GENERATED: {block} ({COMMAND}) -->"


def end_marker(block: str) -> str:
    return f"<!-- END GENERATED: {block} -->"


# --- shared rendering -------------------------------------------------------------------------


def _cell(text: str) -> str:
    """One Markdown table cell: one line, pipes escaped (GitHub honours the escape inside code too),
    and outside code spans ``<`` and ``*`` escaped, so `<name>` is text rather than an HTML tag."""
    parts = " ".join(str(text).split()).split("`")
    for index in range(0, len(parts), 2):
        parts[index] = re.sub(r"<(?=[A-Za-z/!?])", "&lt;", parts[index]).replace("*", "\\*")
    return "`".join(parts).replace("|", "\\|")


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [_row(header), "|" + "---|" * len(header), *(_row(row) for row in rows)]


def _number(value: object) -> str:
    """A bound as the docs print it: a number by ``g`` (annotated_types types bounds only as comparable)."""
    return format(value, "g")


def _value(value: Any) -> str:
    """A value as a deployment file spells it."""
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _anchor(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.lower()).replace(" ", "-")


def _prose(docstring: str | None) -> str:
    """A docstring as Markdown paragraphs: lines joined, reST ``code`` as `code`."""
    if not docstring:
        return ""
    paragraphs = inspect.cleandoc(docstring).split("\n\n")
    return "\n\n".join(" ".join(part.split()).replace("``", "`") for part in paragraphs)


# --- the deployment file ----------------------------------------------------------------------


def _bounds(metadata: list[Any]) -> list[str]:
    lower = upper = None
    others = []
    for item in metadata:
        if isinstance(item, annotated_types.Ge):
            lower = (">=", item.ge)
        elif isinstance(item, annotated_types.Gt):
            lower = (">", item.gt)
        elif isinstance(item, annotated_types.Le):
            upper = ("<=", item.le)
        elif isinstance(item, annotated_types.Lt):
            upper = ("<", item.lt)
        elif getattr(item, "pattern", None):
            others.append(f"matches `{item.pattern}`")
    if lower and upper and lower[0] == ">=" and upper[0] == "<=":
        bounds = [f"{_number(lower[1])} to {_number(upper[1])}"]
    else:
        bounds = [f"{bound[0]} {_number(bound[1])}" for bound in (lower, upper) if bound]
    return bounds + others


def _split_optional(annotation: Any) -> tuple[Any, bool]:
    if get_origin(annotation) in (Union, types.UnionType):
        args = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(args) < len(get_args(annotation)):
            return (args[0] if len(args) == 1 else Union[tuple(args)]), True  # noqa: UP007 (a runtime union)
    return annotation, False


def nested_models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (in lists, maps, unions and Annotated), outermost first."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in nested_models(arg)]


class _Section:
    def __init__(self, path: str, model: type[BaseModel]):
        self.path, self.model = path, model

    @property
    def heading(self) -> str:
        return f"`{self.path}`" if self.path else "Top level"

    @property
    def link(self) -> str:
        return f"[`{self.path}`](#{_anchor(self.heading)})"


class _Walk:
    """Pre-order over the nested models of DeploymentConfig, one section per path."""

    def __init__(self) -> None:
        self.sections: list[_Section] = []
        self.rows: dict[str, list[list[str]]] = {}

    def section(self, path: str, model: type[BaseModel]) -> _Section:
        section = _Section(path, model)
        self.sections.append(section)
        self.rows[path] = [self._field_row(section, name, info) for name, info in model.model_fields.items()]
        return section

    def _child(self, parent: _Section, key: str, model: type[BaseModel]) -> str:
        path = f"{parent.path}.{key}" if parent.path else key
        return self.section(path, model).link

    def _type(self, parent: _Section, name: str, annotation: Any) -> tuple[str, list[str]]:
        """(type text, allowed values) of one annotation; nested models become sections."""
        origin = get_origin(annotation)
        if origin is Annotated:
            inner, *metadata = get_args(annotation)
            text, allowed = self._type(parent, name, inner)
            bounds = _bounds(metadata)
            return (f"{text} ({', '.join(bounds)})" if bounds else text), allowed
        if origin is Literal:
            values = get_args(annotation)
            kinds = sorted({type(value).__name__ for value in values})
            return " or ".join(kinds), [_value(value) for value in values]
        if isinstance(annotation, type) and issubclass(annotation, Enum):
            return "str", [_value(member) for member in annotation]
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return f"mapping, {self._child(parent, name, annotation)}", []
        if origin is list:
            (item,) = get_args(annotation)
            if isinstance(item, type) and issubclass(item, BaseModel):
                return f"list of mappings, {self._child(parent, name + '[]', item)}", []
            text, allowed = self._type(parent, name, item)
            return f"list of {text}", allowed
        if origin is dict:
            key, item = get_args(annotation)
            key_text, key_allowed = self._type(parent, name, key)
            if key_allowed:
                key_text = f"{key_text} ({', '.join(key_allowed)})"
            if isinstance(item, type) and issubclass(item, BaseModel):
                return f"map of {key_text} to mapping, {self._child(parent, name + '.<key>', item)}", []
            text, _ = self._type(parent, name, item)
            return f"map of {key_text} to {text}", []
        if origin in (Union, types.UnionType):
            texts = [self._type(parent, name, arg)[0] for arg in get_args(annotation)]
            return ", ".join(texts[:-1]) + " or " + texts[-1], []
        return getattr(annotation, "__name__", str(annotation)), []

    def _field_row(self, section: _Section, name: str, info: FieldInfo) -> list[str]:
        annotation, optional = _split_optional(info.annotation)
        metadata = list(info.metadata)
        if get_origin(annotation) is Annotated:
            annotation, *inner = get_args(annotation)
            metadata += inner
        text, allowed = self._type(section, name, annotation)
        if optional:
            text += " or null"
        allowed = [*allowed, *_bounds(metadata)]
        validated = _VALIDATED_VALUES.get((section.model, name))
        if validated:
            allowed.append("one of " + ", ".join(_value(value) for value in validated))
        if info.default is PydanticUndefined:
            default = "required"
        elif isinstance(info.default, BaseModel):
            default = "its fields' defaults"
        elif info.default == "":
            default = '`""`'
        else:
            default = f"`{_value(info.default)}`"
        allowed_text = ", ".join(
            f"`{value}`" if not value.startswith(("matches", "one of")) else value for value in allowed
        )
        return [f"`{name}`", text, default, allowed_text, info.description or ""]


def deployment_file_reference() -> str:
    walk = _Walk()
    walk.section("", DeploymentConfig)
    lines = [
        f"Generated from the pydantic models in `peagle/settings/` (and `peagle/catalog/schema.py` for "
        f"`custom_pairs` and `custom_instances`) by `{COMMAND}`: change a field's `Field(description=...)` "
        "there and regenerate, never this block. Unknown keys are errors; `null` (or leaving a key out) "
        "takes the default.",
    ]
    for section in walk.sections:
        lines += ["", f"### {section.heading}", ""]
        prose = _prose(section.model.__doc__)
        if prose:
            lines += [prose, ""]
        lines += _table(["key", "type", "default", "allowed", "description"], walk.rows[section.path])
    return "\n".join(lines)


# --- the catalogs -----------------------------------------------------------------------------


def yaml_markers(text: str) -> dict[tuple[str, ...], str]:
    """Keys marked ``# estimate: ...`` or ``# unverified: ...`` in a YAML text, by key path:
    {('pairs', 'qwen3-8b', 'drafter', 'trained_k'): 'unverified', ...}."""
    markers: dict[tuple[str, ...], str] = {}
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        match = re.match(r"^(\s*)([\w.-]+):", line)
        if not match:
            continue
        indent = len(match.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match.group(2)))
        mark = re.search(r"\s#\s*(estimate|unverified)\b", line, re.IGNORECASE)
        if mark:
            markers[tuple(key for _, key in stack)] = mark.group(1).lower()
    return markers


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def _quantization(name: str) -> str:
    return name if name.startswith(("bf", "fp16")) else name.upper()


def _marked(text: str, markers: dict[tuple[str, ...], str], *path: str) -> str:
    mark = markers.get(("pairs", *path))
    return f"{text} ({mark})" if mark else text


def catalog_pairs() -> str:
    catalog = load_catalog()
    markers = yaml_markers(PAIRS_YAML.read_text(encoding="utf-8"))
    profiles = list(ProfileName)
    rows = []
    for pair_id, pair in catalog.pairs.items():
        target, drafter = pair.target, pair.drafter
        weights = f"{target.weight_bytes / 1e9:.1f} + " + _marked(
            f"{drafter.weight_bytes / 1e9:.1f}", markers, pair_id, "drafter", "weight_bytes"
        )
        rows.append(
            [
                f"`{pair_id}`",
                f"{target.hf_id} ({_quantization(target.quantization)})",
                drafter.hf_id,
                _marked(str(drafter.trained_k), markers, pair_id, "drafter", "trained_k"),
                " / ".join(str(pair.recommended_k[profile]) for profile in profiles),
                weights,
                _marked(str(drafter.layers), markers, pair_id, "drafter", "layers"),
                f"{pair.min_compute_capability:.1f} / {pair.min_vllm_version}",
            ]
        )
    header = [
        "pair id",
        "target",
        "P-EAGLE drafter",
        "trained K",
        "K " + " / ".join(profile.value for profile in profiles),
        "weights GB (target + drafter)",
        "drafter layers",
        "min CC / vLLM",
    ]
    lines = _table(header, rows)
    lines += ["", "Per pair (`description`, drafter `format`, `vllm_flags`, `known_fixes`, `notes`):", ""]
    for pair_id, pair in catalog.pairs.items():
        parts = [pair.description, f"Drafter format `{pair.drafter.format}`"]
        if pair.vllm_flags:
            parts.append(
                "vLLM flags " + ", ".join(f"`{name}: {_value(value)}`" for name, value in pair.vllm_flags.items())
            )
        parts += [f"Known fix: {fix}" for fix in pair.known_fixes]
        parts += [
            "Container environment "
            + ", ".join(f"`{name}={value}`" for name, value in rule.variables.items())
            + f" on compute capability >= {rule.min_compute_capability:.1f}"
            + (f" and < {rule.below_compute_capability:.1f}" if rule.below_compute_capability is not None else "")
            + " only"
            for rule in pair.target.gpu_environment
        ]
        parts += pair.notes
        lines.append(f"- `{pair_id}`: " + " ".join(_sentence(part) for part in parts if part))
    return "\n".join(lines)


def _planner_note(cc: float, supports_fp8: bool) -> str:
    if cc < MIN_COMPUTE_CAPABILITY:
        return f"rejected (vLLM needs CC {MIN_COMPUTE_CAPABILITY:.1f})"
    needed = min(pair.min_compute_capability for pair in load_catalog().pairs.values())
    if cc < needed:
        return f"rejected for bf16/MXFP4 (every catalog pair needs CC {needed:.1f})"
    exact, runs = load_catalog().runtime.serving_image.runs_on(cc)
    if runs is None:
        return "rejected (no kernels of the serving image run on this CC)"
    notes = ["fp8 KV cache"] if supports_fp8 else []
    if not exact:
        notes.append(f"runs the image's CC {runs:.1f} kernels (warns)")
    return "; ".join(notes)


def catalog_instances() -> str:
    catalog = load_catalog()
    rows = [
        [
            f"`{name}`",
            f"{inst.gpu_count} x {inst.gpu}",
            f"{inst.gpu_memory_gib:.1f}",
            f"{inst.cc:.1f}",
            str(inst.vcpus),
            f"{inst.memory_gib:g}",
            "yes" if inst.local_nvme else "no",
            f"{inst.price_per_hour_usd:g}" + ("" if inst.price_verified else " (estimate)"),
            _planner_note(inst.cc, inst.supports_fp8),
        ]
        for name, inst in catalog.instances.items()
    ]
    header = [
        "instance type",
        "GPUs",
        "GiB per GPU (usable)",
        "CC",
        "vCPUs",
        "host GiB",
        "local NVMe",
        "$/hour",
        "planner",
    ]
    lines = _table(header, rows)
    lines += [
        "",
        f"Prices: USD per instance-hour, {catalog.price_region}, as of {catalog.price_date}; source: {catalog.price_source}.",
    ]
    return "\n".join(lines)


def catalog_profiles() -> str:
    catalog = load_catalog()
    rows = []
    for name, profile in catalog.profiles.items():
        sampling = profile.sampling
        rows.append(
            [
                f"`{name.value}`",
                profile.description,
                f"T {sampling.temperature:g}, top_p {sampling.top_p:g}, {sampling.max_tokens} tokens",
                f"{profile.max_model_len} (down to {profile.min_model_len})",
                str(profile.max_num_seqs),
                str(profile.typical_context_tokens),
                f"{profile.latency_sla_p90_seconds:g} s",
                describe_slo(profile.slo),
            ]
        )
    header = [
        "profile",
        "for",
        "sampling",
        "max_model_len",
        "max_num_seqs",
        "typical context tokens",
        "p90 latency SLA",
        "SLO",
    ]
    return "\n".join(_table(header, rows))


# --- the pages --------------------------------------------------------------------------------


def library_props() -> str:
    """docs/library.md: PeagleEndpoint's props, from their one declaration (peagle_cdk/peagle_endpoint_props.py)."""
    from peagle_cdk.library_reference import props_rows  # the construct library, read only for its pages

    return "\n".join(_table(["prop", "type", "default", "what it is", "deployment file"], props_rows()))


def library_value_types() -> str:
    """docs/library.md: the value types' factories, from their signatures (peagle_cdk/library_reference.py)."""
    from peagle_cdk.library_reference import value_type_rows

    return "\n".join(_table(["type", "factories", "what it chooses"], value_type_rows()))


BLOCKS: dict[Path, dict[str, Callable[[], str]]] = {
    DOCS / "deployment-file.md": {"deployment-file": deployment_file_reference},
    DOCS / "catalog.md": {"pairs": catalog_pairs, "instances": catalog_instances, "profiles": catalog_profiles},
    DOCS / "library.md": {"peagle-endpoint-props": library_props, "value-types": library_value_types},
}


def catalog_ids_module() -> str:
    """peagle_cdk/catalog_ids.py: the catalog's pair ids, instance types and profiles as constants, so an IDE
    completes them (the props still take plain strings, custom pairs and instance types among them)."""
    catalog = load_catalog()

    def constant(value: str) -> str:
        return re.sub(r"[^A-Z0-9]+", "_", value.upper().removeprefix("ML.")).strip("_")

    def members(values) -> list[str]:
        names = [getattr(value, "value", value) for value in values]  # ProfileName members are (str, Enum)
        return [f'    {constant(name)} = "{name}"' for name in names]

    lines = [
        f'"""The catalog\'s ids as constants (generated from peagle/catalog/*.yaml by `{COMMAND}`; do not edit).',
        "",
        '    PeagleEndpoint(stack, "Chat", model=ModelPairs.GPT_OSS_20B, instance_type=InstanceTypes.G6E_XLARGE,',
        "                   profile=Profiles.CHATBOT, ...)",
        "",
        "Plain strings are the same values; `peagle catalog` prints what each one is.",
        '"""',
        "",
        "",
        "class ModelPairs:",
        '    """Target + P-EAGLE drafter pairs (peagle/catalog/pairs.yaml)."""',
        "",
        *members(catalog.pairs),
        "",
        "",
        "class InstanceTypes:",
        '    """SageMaker instance types with their GPU facts and price (peagle/catalog/instances.yaml)."""',
        "",
        *members(catalog.instances),
        "",
        "",
        "class Profiles:",
        '    """Workload profiles: sampling, lengths, SLO (peagle/catalog/profiles.yaml)."""',
        "",
        *members(catalog.profiles),
    ]
    return "\n".join(lines) + "\n"


# Whole files generated from their source.
FILES: dict[Path, Callable[[], str]] = {ROOT / "peagle_cdk" / "catalog_ids.py": catalog_ids_module}


class MarkerError(ValueError):
    pass


def render(text: str, blocks: dict[str, Callable[[], str]]) -> str:
    """``text`` with each block's markers enclosing its freshly generated content."""
    for block, generate in blocks.items():
        begin, end = begin_marker(block), end_marker(block)
        if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
            raise MarkerError(f"expected one {begin!r} followed by one {end!r}")
        head, rest = text.split(begin)
        _, tail = rest.split(end)
        text = f"{head}{begin}\n{generate()}\n{end}{tail}"
    return text


def stale_pages(pages: dict[Path, dict[str, Callable[[], str]]] | None = None) -> list[Path]:
    pages = BLOCKS if pages is None else pages
    return [
        path
        for path, blocks in pages.items()
        if render(path.read_text(encoding="utf-8"), blocks) != path.read_text(encoding="utf-8")
    ]


def stale_files() -> list[Path]:
    return [
        path for path, generate in FILES.items() if not path.is_file() or path.read_text(encoding="utf-8") != generate()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=COMMAND, description="Regenerate (or --check) the generated reference blocks in docs/."
    )
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 naming the stale pages")
    args = parser.parse_args(argv)
    stale, files = stale_pages(), stale_files()
    if args.check:
        for path in stale + files:
            print(f"stale: {path.relative_to(ROOT)} (regenerate: {COMMAND})", file=sys.stderr)
        return 1 if stale or files else 0
    for path in stale:
        path.write_text(render(path.read_text(encoding="utf-8"), BLOCKS[path]), encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    for path in files:
        path.write_text(FILES[path](), encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
