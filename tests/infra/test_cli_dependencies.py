"""A command whose optional dependency is missing says which make target installs it."""

from __future__ import annotations

import builtins
import importlib.util

import pytest

from peagle.cli import main


@pytest.mark.parametrize(
    ("blocked", "argv", "target"),
    [
        ("vllm", ["local", "--port", "18999"], "make serving-deps"),
        ("boto3", ["invoke", "--endpoint", "x", "--prompt", "hi", "--region", "us-east-1"], "make client-deps"),
    ],
)
def test_a_missing_optional_dependency_names_the_command_that_installs_it(monkeypatch, capsys, blocked, argv, target):
    real_import = builtins.__import__

    def without(name, *args, **kwargs):
        if name == blocked or name.startswith(blocked + "."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(builtins, "__import__", without)
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == blocked else real_find_spec(name, *a)
    )
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"needs the Python package {blocked!r}" in err and target in err
