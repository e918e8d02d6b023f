"""A synthesized cloud assembly (cdk.out) with its template values resolved in the symbolic mode (peagle/
cloud_assembly/modes.py): what `peagle access` and the CDK plugin compare a grant with a request through, and what
finds which resource a value refers to."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from peagle.cloud_assembly.intrinsics import Resolver, resource_of
from peagle.cloud_assembly.manifest import (
    MANIFEST,
    AssemblyError,
    AssemblyStack,
    manifest_entries,
    read_json,
    stack_of,
    stacks_in,
)
from peagle.cloud_assembly.modes import SymbolicMode
from peagle.cloud_assembly.resource_kinds import kind_of


class Assembly(Resolver):
    """The stacks of a cloud assembly, and their template values as symbolic strings."""

    def __init__(self, stacks: Sequence[AssemblyStack]) -> None:
        super().__init__(stacks, SymbolicMode())
        self._by_value: dict[str, list[tuple[AssemblyStack, str]]] | None = None

    # --- loading -------------------------------------------------------------------------------------------------

    @classmethod
    def from_cdk_out(cls, directory: str | Path) -> Assembly:
        """Every CloudFormation stack of the assembly in ``directory``, nested assemblies (CDK Stages) included."""
        directory = Path(directory)
        if not directory.is_dir():
            raise AssemblyError(
                f"{directory} is not a directory: run `cdk synth` first (it writes the cloud assembly to cdk.out), "
                "or pass the directory it wrote"
            )
        stacks = list(stacks_in(directory))
        if not stacks:
            raise AssemblyError(f"{directory / MANIFEST} lists no CloudFormation stack: run `cdk synth` again")
        return cls(stacks)

    @classmethod
    def from_template_files(cls, paths: Sequence[str | Path]) -> Assembly:
        """The stacks of these template files (what a CDK policy-validation plugin is given): ids, names and
        environments from a manifest.json beside them when there is one, else each file's stem."""
        stacks = []
        for path in map(Path, paths):
            known = manifest_entries(path.parent).get(path.resolve())
            if known is not None:
                stacks.append(stack_of(path.parent, *known))
            else:
                stem = path.name.removesuffix(".template.json") if path.name.endswith(".template.json") else path.stem
                stacks.append(AssemblyStack(stem, stem, path, read_json(path, "stack template")))
        return cls(stacks)

    # --- which resource a value refers to ---------------------------------------------------------------------

    def find_resource(self, stack: AssemblyStack | str, value: Any) -> tuple[AssemblyStack, str] | None:
        """The (stack, logical id) ``value`` refers to: a Ref or Fn::GetAtt of it, an Fn::ImportValue of an output
        that does, or any value resolving to one of a resource's Ref or attribute values (its name, ARN, URI...),
        a resource of ``stack`` first, then the first in assembly order."""
        stack = self._as_stack(stack)
        if value is None:
            return None
        direct = self._refers_to(stack, value)
        if direct is not None:
            return direct
        text = self.resolve(stack, value)
        matches = self._resource_values().get(text, []) if text is not None else []
        return next((match for match in matches if match[0] is stack), matches[0] if matches else None)

    def _refers_to(self, stack: AssemblyStack, value: Any) -> tuple[AssemblyStack, str] | None:
        if not (isinstance(value, Mapping) and len(value) == 1):
            return None
        ((function, argument),) = value.items()
        if function == "Fn::GetAtt":
            argument = argument.partition(".")[0] if isinstance(argument, str) else (argument or [None])[0]
        if function in ("Ref", "Fn::GetAtt") and isinstance(argument, str) and resource_of(stack, argument):
            return stack, argument
        if function == "Fn::ImportValue":
            name = self.resolve(stack, argument)
            exporter = self._exporter(stack, name) if name is not None else None
            return self.find_resource(exporter[0], exporter[1].get("Value")) if exporter else None
        return None

    def _resource_values(self) -> dict[str, list[tuple[AssemblyStack, str]]]:
        """Every resource's Ref and table attribute values -> the resources having it (built once)."""
        if self._by_value is None:
            self._by_value = {}
            for stack, logical_id, attribute in self._resource_attributes():
                value = self._attribute(stack, logical_id, attribute)
                if value is not None and (stack, logical_id) not in self._by_value.get(value, []):
                    self._by_value.setdefault(value, []).append((stack, logical_id))
        return self._by_value

    def _resource_attributes(self) -> Iterator[tuple[AssemblyStack, str, str | None]]:
        for stack in self.stacks:
            for logical_id, resource in stack.resources().items():
                kind = kind_of(resource)
                for attribute in (None, *(kind.attributes if kind else ())):
                    yield stack, logical_id, attribute
