"""The construct library meets the settings model (peagle/settings/) in one module,
peagle_cdk/settings_model.py: the scaling code reads the plan and the monitoring its thresholds, so a
change to a section of the deployment file reaches the constructs through the plan or that one seam."""

from __future__ import annotations

import ast
from pathlib import Path

import peagle_cdk
from peagle.planning.planner import plan_deployment
from peagle.settings import parse_deployment_config

LIBRARY = Path(peagle_cdk.__file__).parent
SEAM = LIBRARY / "settings_model.py"


# What every module may use: the error types and how a message names a setting (peagle/settings/refs.py, words.py).
NOT_THE_MODEL = {"peagle.settings.errors", "peagle.settings.refs", "peagle.settings.words"}


def _is_model(module: str) -> bool:
    return (module == "peagle.settings" or module.startswith("peagle.settings.")) and module not in NOT_THE_MODEL


def _imports_config(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and _is_model(node.module or ""):
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "peagle"
            and any(a.name == "settings" for a in node.names)
        ):
            return True
        if isinstance(node, ast.Import) and any(_is_model(alias.name) for alias in node.names):
            return True
    return False


def test_only_the_seam_imports_the_settings_model():
    importers = sorted(path.name for path in LIBRARY.glob("*.py") if _imports_config(path))
    assert importers == [SEAM.name]


def test_the_plan_carries_the_autoscaling_the_constructs_build():
    config = parse_deployment_config({"autoscaling": {"headroom": 0.6, "scale_in_cooldown_seconds": 600}})
    # The plan's copy, with the bounds resolved for the mode (the policies read only the plan).
    assert plan_deployment(config).autoscaling == config.autoscaling.model_copy(
        update={"min_capacity": 1, "max_capacity": 2}
    )
    assert plan_deployment(parse_deployment_config({"autoscaling": {"enabled": False}})).autoscaling is None
