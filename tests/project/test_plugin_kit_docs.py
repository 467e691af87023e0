"""docs/plugins.md's reference names every hook and every Task method as the code has them; docs/plugin-kit.md names every check and fixture."""

from __future__ import annotations

import inspect
import re

from helpers import ROOT
from trainlab.api import hookspecs
from trainlab.api.families import ClassificationTask, MultiLabelTask, RegressionTask
from trainlab.api.taskbase import Task
from trainlab.testing import pytest_plugin
from trainlab.testing.checks import CHECKS

DOCS = ROOT / "docs"
ROW = re.compile(r"^\| `(\w+)\(([^)]*)\)` \| ([^|]+) \|", re.MULTILINE)


def reference() -> dict[str, tuple[list[str], str]]:
    text = (DOCS / "plugins.md").read_text(encoding="utf-8")
    section = text.split("\n## 12. Reference", 1)[1].split("\n## ", 1)[0]
    return {name: ([p.strip() for p in params.split(",") if p.strip()], kind.strip()) for name, params, kind in ROW.findall(section)}


def parameters(func) -> list[str]:
    return [p for p in inspect.signature(func).parameters if p != "self"]


def test_every_hook_is_in_the_reference_with_its_parameters():
    documented = {name: params for name, (params, _) in reference().items() if name.startswith("trainlab_")}
    specs = {name: parameters(getattr(hookspecs, name)) for name in dir(hookspecs) if name.startswith("trainlab_")}
    assert documented == specs


def test_every_task_method_is_in_the_reference_with_its_parameters_and_kind():
    documented = {name: entry for name, entry in reference().items() if not name.startswith("trainlab_")}
    methods = {name: parameters(func) for name, func in vars(Task).items() if callable(func) and not name.startswith("_")}
    assert {name: params for name, (params, _) in documented.items()} == methods
    for name, (_, kind) in documented.items():
        source = inspect.getsource(getattr(Task, name))
        if kind == "required":
            assert "raise NotImplementedError" in source, f"{name} is documented required but Task has a default"
        elif kind == "family":
            assert all(name in vars(base) for base in (ClassificationTask, RegressionTask, MultiLabelTask)), name
        else:
            assert kind == "optional", f"{name}: kind {kind!r}"
            assert "raise NotImplementedError" not in source or name == "load_trained_model", f"{name} is documented optional but Task has no default"


def test_the_kit_doc_names_every_check_and_fixture():
    text = (DOCS / "plugin-kit.md").read_text(encoding="utf-8")
    fixtures = [name for name, value in vars(pytest_plugin).items() if name.startswith("trainlab_") and callable(value)]
    assert len(fixtures) >= 8
    missing = [name for name in (*CHECKS, *fixtures, "window_offers_the_task") if f"`{name}`" not in text]
    assert not missing, f"docs/plugin-kit.md does not name {missing}"
