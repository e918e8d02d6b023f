"""No function in the product runs over MAX_LINES lines (def line to last line), and no module over
MAX_MODULE_LINES: a longer function is split into well-named steps that read top-down, a longer module into
modules whose names say what they are. The product: peagle, peagle_cdk, inference_image, stacks and app.py
(peagle_cdk/serving_image is a link to inference_image, measured once)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("peagle", "peagle_cdk", "inference_image", "stacks", "app.py")
MAX_LINES = 80
MAX_MODULE_LINES = 800


def product_files() -> list[Path]:
    files: list[Path] = []
    for name in PRODUCT:
        root = ROOT / name
        if root.is_file():
            files.append(root)
            continue
        files += [path for path in sorted(root.rglob("*.py")) if "serving_image" not in path.relative_to(ROOT).parts]
    return files


def function_lengths(path: Path) -> dict[str, int]:
    """Each function's qualified name (Class.method, outer.inner) and its length in lines."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    lengths[name] = (child.end_lineno or child.lineno) - child.lineno + 1
                visit(child, name + ".")

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return lengths


def test_the_product_is_found():
    names = {path.relative_to(ROOT).as_posix() for path in product_files()}
    assert {"app.py", "peagle/planning/planner.py", "peagle_cdk/peagle_endpoint.py"} <= names
    assert "inference_image/peagle_serve/launcher.py" in names
    assert not any(name.startswith("peagle_cdk/serving_image/") for name in names)


def test_no_function_over_the_limit():
    too_long = {
        f"{path.relative_to(ROOT)}: {name} ({lines} lines)"
        for path in product_files()
        for name, lines in function_lengths(path).items()
        if lines > MAX_LINES
    }
    assert not too_long, f"split these into steps of at most {MAX_LINES} lines: {sorted(too_long)}"


def test_no_module_over_the_limit():
    too_long = {
        f"{path.relative_to(ROOT)} ({lines} lines)"
        for path in product_files()
        if (lines := path.read_text(encoding="utf-8").count("\n")) > MAX_MODULE_LINES
    }
    assert not too_long, f"split these into modules of at most {MAX_MODULE_LINES} lines: {sorted(too_long)}"
