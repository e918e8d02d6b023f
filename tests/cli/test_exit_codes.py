"""One exit-code table for every `peagle` command (peagle/cli_errors.py, ExitCode): no module declares its own
codes, and no command returns a bare number in their place."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from peagle.cli import build_parser
from peagle.cli_errors import ExitCode

PEAGLE = Path(__file__).resolve().parents[2] / "peagle"
TABLE = PEAGLE / "cli_errors.py"


def _modules() -> list[Path]:
    return sorted(path for path in PEAGLE.rglob("*.py") if path != TABLE)


def _assigned_names(node: ast.Assign | ast.AnnAssign) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [part.id for target in targets for part in ast.walk(target) if isinstance(part, ast.Name)]


def test_no_module_declares_its_own_exit_codes():
    found = [
        f"{path.relative_to(PEAGLE.parent)}:{node.lineno} {name}"
        for path in _modules()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for name in _assigned_names(node)
        if name.upper().startswith("EXIT_") or name.upper().endswith("_EXIT_CODE")
    ]
    assert found == [], f"exit codes belong in peagle/cli_errors.py (ExitCode): {found}"


def _command_modules() -> list[Path]:
    """The module of every registered `peagle` subcommand's handler."""
    subparsers = next(action for action in build_parser()._actions if action.dest == "command")
    assert isinstance(subparsers.choices, dict)
    return sorted(
        {Path(inspect.getsourcefile(parser.get_default("handler")) or "") for parser in subparsers.choices.values()}
    )


def test_every_command_returns_codes_from_the_table():
    """A handler or a step of it returns ExitCode members (or what another step returned), never a literal."""
    modules = _command_modules()
    assert len(modules) >= 13  # catalog and plan share peagle/commands_plan.py
    literals = [
        f"{path.relative_to(PEAGLE.parent)}:{node.lineno} {ast.unparse(node)}"
        for path in modules
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant) and type(node.value.value) is int
    ]
    assert literals == [], f"return an ExitCode member (peagle/cli_errors.py): {literals}"


def test_local_refuses_with_the_launchers_config_error():
    """`peagle local` passes on the launcher's status once it runs; its own refusals before the engine starts
    exit as the launcher's do for bad settings."""
    from peagle_serve.errors import EXIT_CONFIG_ERROR

    assert ExitCode.BAD_INPUT == EXIT_CONFIG_ERROR
