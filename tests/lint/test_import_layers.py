"""The house's import rules that a refactor could break without a test going red (issue 45): the core (the settings
package, the planner, the plan record, the catalog) imports no tool package and nothing of the container but its
contract; the settings package imports only itself, the catalog and the contract; and no files of the product import
each other in a loop. Every import counts, as `farm-studio look` counts them: at the top of a module, inside a
function and under ``if TYPE_CHECKING:``."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRODUCT = [REPO / "peagle", REPO / "peagle_cdk", REPO / "stacks", REPO / "app.py", REPO / "inference_image"]
CORE = ["peagle/settings", "peagle/planning", "peagle/catalog"]
# A tool is a package of peagle with a command of its own (a cli.py): `peagle simulate`, `peagle preflight`, ...
TOOLS = sorted(f"peagle.{path.parent.name}" for path in (REPO / "peagle").glob("*/cli.py"))
CONTAINER_CONTRACT = "peagle_serve.contract"
# The container's own check of its PEAGLE_* settings (and the error it raises), which the deployment rules run at synth
# (peagle/planning/deployment_rules.py, _launcher_settings) so a setting the launcher would refuse at start fails
# before a GPU instance is paid for: the same check on both sides of the contract, not a reach into the launcher.
CONTAINER_CHECKS = {CONTAINER_CONTRACT, "peagle_serve.settings", "peagle_serve.errors"}


def _files(root: Path) -> list[Path]:
    return [root] if root.suffix == ".py" else sorted(root.rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[0] == "inference_image":  # peagle_serve is found there (pyproject's packages.find)
        parts = parts[1:]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path, modules: set[str]) -> Iterator[str]:
    """Every product module ``path`` imports: ``from a import b`` imports a.b when that is a module, else a."""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = (f"{base}.{node.module}" if node.module else base) if node.level else node.module or ""
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                yield submodule if submodule in modules else module


def _graph() -> dict[str, set[str]]:
    """Each product module -> the product modules it imports."""
    files = {_module_name(path): path for root in PRODUCT for path in _files(root)}
    return {
        name: {found for found in _imported(path, set(files)) if found in files and found != name}
        for name, path in files.items()
    }


def _in(module: str, packages: list[str]) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def test_the_tools_are_found():
    assert {"peagle.simulate", "peagle.preflight", "peagle.access", "peagle.bench"} <= set(TOOLS)


def test_the_core_imports_no_tool_and_of_the_container_only_its_contract():
    graph = _graph()
    core = [_module_name(path) for root in CORE for path in _files(REPO / root)]
    wrong = {
        f"{module} -> {target}"
        for module in core
        for target in graph[module]
        if _in(target, [*TOOLS, "peagle_cdk", "stacks", "app"])
        or (_in(target, ["peagle_serve"]) and target not in CONTAINER_CHECKS)
    }
    assert not wrong, f"the core reaches up into a tool or the container's launcher: {sorted(wrong)}"


def test_the_settings_import_only_themselves_the_catalog_and_the_contract():
    graph = _graph()
    wrong = {
        f"{module} -> {target}"
        for module in graph
        if _in(module, ["peagle.settings"])
        for target in graph[module]
        if not _in(target, ["peagle.settings", "peagle.catalog", CONTAINER_CONTRACT])
    }
    assert not wrong, f"the settings package reaches out of itself: {sorted(wrong)}"


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_modules_import_each_other_in_a_loop():
    assert _circles(_graph()) == []


def test_the_settings_package_loads_lazily_only_its_own_modules():
    # peagle/settings/__init__.py hands its names on lazily (importlib, PEP 562) so that every command's error types
    # do not load the whole settings model; the import graph above cannot see those imports, so they are held here.
    import peagle.settings

    homes = set(vars(peagle.settings)["_HOME"].values())
    assert homes and all(home.startswith("peagle.settings.") for home in homes), sorted(homes)
    for name in peagle.settings.__all__:
        assert getattr(peagle.settings, name) is not None
