"""The example deployments the simulator's tests run: every deployments/*.yaml by name. A module of its own, not
conftest.py, so a test imports it by a name no other folder's conftest shares (a bare `from conftest import`
finds whichever conftest pytest put first on sys.path)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_DEPLOYMENTS = sorted(path.stem for path in (REPO_ROOT / "deployments").glob("*.yaml"))
