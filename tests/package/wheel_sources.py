"""What the package tests build a wheel from, and how they run a step: shared by test_library_wheel.py (the examples
from the wheel) and test_library_doc.py (docs/library.md's install, run as written)."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def packaged_sources(destination: Path) -> Path:
    """A copy of what pyproject.toml packages (the top directories its package finder searches), to build the
    wheel from.

    Built in the repository, setuptools would reuse its build/ directory, where modules renamed or
    deleted since the last build survive and end up in the wheel.
    """
    find = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    tops = {pattern.split(".")[0] for pattern in find["include"]} | set(find["where"])
    tops = {top for top in tops if top != "." and (REPO_ROOT / top).is_dir()}
    destination.mkdir()
    shutil.copy2(REPO_ROOT / "pyproject.toml", destination)
    for top in sorted(tops):
        # symlinks=True keeps peagle_cdk/serving_image -> ../inference_image a link, as in the repository.
        shutil.copytree(REPO_ROOT / top, destination / top, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def run(command: list[str], **options) -> subprocess.CompletedProcess:
    """``command`` run to completion; a non-zero exit fails the test with both outputs."""
    result = subprocess.run(command, capture_output=True, text=True, **options)
    assert result.returncode == 0, f"{command[:4]} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result
