"""peagle.cloud_assembly: one reader of a synthesized app. The intrinsic functions are resolved by one resolver in
two modes (symbolic for access, concrete for preflight, simulate and smoke), manifest.json is read in one module,
and no tool reads an app through another tool's package."""

from __future__ import annotations

import ast
from pathlib import Path

from peagle.cloud_assembly import Assembly, AssemblyStack, StackTemplate

REPO = Path(__file__).resolve().parents[2]
PRODUCT = [REPO / "peagle", REPO / "peagle_cdk", REPO / "stacks", REPO / "app.py"]
# What a tool imported from another tool to read an app, before this package: access's loader, preflight's
# template reader and its cdk.out lookup.
OTHER_TOOLS_READERS = ("peagle.access.assembly", "peagle.preflight.template", "peagle.preflight.cli")

TEMPLATE = {
    "Resources": {
        "Model": {"Type": "AWS::SageMaker::Model", "Properties": {"ModelName": "chat-model"}},
        "Group": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "/aws/sagemaker/Endpoints/chat"}},
        "Role": {"Type": "AWS::IAM::Role", "Properties": {}},
    },
    "Parameters": {"Size": {"Type": "String", "Default": "large"}},
}


def _both(value):
    """(symbolic, concrete) readings of ``value`` in the template above."""
    stack = AssemblyStack("Chat", "chat-stack", Path("Chat.template.json"), TEMPLATE)
    return Assembly([stack]).resolve(stack, value), StackTemplate(TEMPLATE, source="t").resolve(value)


def test_the_modes_agree_where_the_template_fixes_the_value():
    # A name the template writes: the same text in both modes, whatever function wrote it.
    for value in (
        {"Fn::GetAtt": ["Model", "ModelName"]},
        {"Fn::Sub": "${Model.ModelName}"},
        {"Ref": "Group"},
        {"Fn::Select": [1, {"Fn::Split": ["/", "a/chat-model/b"]}]},
        {"Fn::Join": ["-", [{"Fn::Select": [0, ["chat", "code"]]}, "model"]]},
        {"Fn::If": ["Always", "x", "x"]},
    ):
        symbolic, concrete = _both(value)
        assert symbolic == concrete and symbolic is not None, value


def test_the_modes_differ_only_where_a_deploy_decides():
    # Symbolic: a named placeholder, so two forms of one ARN compare equal; concrete: undecided unless given.
    symbolic, concrete = _both({"Fn::GetAtt": ["Role", "Arn"]})
    assert symbolic == "arn:aws:iam::${AWS::AccountId}:role/${Chat/Role}" and concrete is None
    symbolic, concrete = _both({"Fn::Sub": "${AWS::Region}-${Size}"})
    assert symbolic == "${AWS::Region}-large" and concrete is None  # a parameter is the deploy's, not the default
    template = StackTemplate(TEMPLATE, source="t")
    assert template.resolve({"Ref": "AWS::Region"}, {"AWS::Region": "us-east-1"}) == "us-east-1"
    assert template.fixed({"Fn::Sub": "${AWS::Region}/${Model.ModelName}"}) == "${AWS::Region}/chat-model"
    assert template.render({"Fn::GetAtt": ["Role", "Arn"]}) == "${Role.Arn}"


def _product_modules():
    for root in PRODUCT:
        yield from ([root] if root.is_file() else root.rglob("*.py"))


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def test_manifest_json_is_read_in_one_module():
    readers = [
        str(path.relative_to(REPO))
        for path in _product_modules()
        if any(
            isinstance(node, ast.Constant) and node.value == "manifest.json"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        )
    ]
    assert readers == ["peagle/cloud_assembly/manifest.py"]


def test_no_tool_reads_an_app_through_another_tools_package():
    found = sorted(
        f"{path.relative_to(REPO)} imports {module}"
        for path in _product_modules()
        for module in _imports(path)
        if module in OTHER_TOOLS_READERS and path.parent.name != module.split(".")[1]
    )
    assert found == []
