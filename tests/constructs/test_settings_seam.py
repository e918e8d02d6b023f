"""The construct library meets the settings model (peagle/config.py) in one module,
peagle_cdk/settings_model.py: the scaling code reads the plan and the monitoring its thresholds, so a
change to a section of the deployment file reaches the constructs through the plan or that one seam."""

from __future__ import annotations

import ast
from pathlib import Path

import peagle_cdk
from peagle.config import parse_deployment_config
from peagle.planner import plan_deployment

LIBRARY = Path(peagle_cdk.__file__).parent
SEAM = LIBRARY / "settings_model.py"


def _imports_config(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "peagle.config":
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "peagle" and any(a.name == "config" for a in node.names):
            return True
        if isinstance(node, ast.Import) and any(alias.name == "peagle.config" for alias in node.names):
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
