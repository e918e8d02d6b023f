"""The endpoint's kind (production variants or an inference-component pool) is decided once by the planner
(peagle/planning/unit_plan.py, peagle/planning/planner.py) and looked at again only where the strategy is chosen
(peagle_cdk/unit_strategy.py) and where the simulator reads what the template's scalable target scales
(peagle/simulate/unit_shape.py, UnitShape, built in peagle/simulate/scenarios.py). Everything else asks the unit plan,
the strategy or the shape (issue 45): a new test of the kind elsewhere fails here."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("peagle", "peagle_cdk")
UNIT_PLANS = {"ComponentPool", "VariantUnits", "ComponentEndpoint", "VariantEndpoint"}
# Where the kind may be looked at, and why.
ALLOWED = {
    "peagle/planning/planner.py",  # decides it
    "peagle/planning/unit_plan.py",  # the tagged unit plan and its recorded form
    "peagle_cdk/unit_strategy.py",  # chooses the strategy once
    "peagle/simulate/unit_shape.py",  # UnitShape.pooled: the simulator's one reading of the template's unit
}


def _kind_tests(tree: ast.AST) -> list[int]:
    """Lines that test a kind: isinstance(x, <a unit plan or unit class>), ``<x>.components is [not] None`` (the plan's
    old flag), ``<x>.shape.kind ==``, ``is ComponentEndpoint`` or a read of ``<x>.pooled`` (the shape's kind)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "pooled":
            found.append(node.lineno)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2:
            names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            if names & UNIT_PLANS:
                found.append(node.lineno)
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            attributes = {side.attr for side in sides if isinstance(side, ast.Attribute)}
            names = {side.id for side in sides if isinstance(side, ast.Name)}
            shape_kind = any(
                isinstance(side, ast.Attribute) and side.attr == "kind" and "shape" in ast.unparse(side.value)
                for side in sides
            )
            if shape_kind or (names & UNIT_PLANS):
                found.append(node.lineno)
            if "components" in attributes and any(isinstance(s, ast.Constant) and s.value is None for s in sides):
                found.append(node.lineno)
    return found


def kind_tests() -> dict[str, list[int]]:
    found = {}
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            try:
                lines = _kind_tests(ast.parse(path.read_text(encoding="utf-8")))
            except FileNotFoundError:  # moved while the tree was walked
                continue
            if lines:
                found[str(path.relative_to(ROOT))] = lines
    return found


def test_the_kind_is_looked_at_only_where_it_is_decided_chosen_or_read_from_the_template():
    outside = {path: lines for path, lines in kind_tests().items() if path not in ALLOWED}
    assert outside == {}, "ask the unit plan, the strategy or the shape instead (this module's docstring)"


def test_the_check_finds_a_kind_test():
    code = (
        "if plan.components is not None:\n    pass\nif isinstance(units, ComponentPool):\n    pass\n"
        "if setup.shape.kind == 'copies':\n    pass\nif image.kind == 'mirror':\n    pass\n"
        "if self.shape.pooled:\n    pass\n"
    )
    assert _kind_tests(ast.parse(code)) == [1, 3, 5, 9]
