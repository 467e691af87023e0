"""The `trainlab_window` example of docs/plugin-kit.md, run as written, on the toy regression task (a row task)."""

from __future__ import annotations

import inspect
import re

import pytest

from helpers import ROOT, write_toy_regression_csv

DOC = ROOT / "docs" / "plugin-kit.md"


def documented_example() -> str:
    """The python block after the marker naming this file, with the toy plugin's names."""
    text = DOC.read_text(encoding="utf-8")
    marker = text.index("<!-- the example below is run by tests/desktop/test_plugin_kit_window.py -->")
    block = re.search(r"```python\n(.*?)```", text[marker:], re.DOTALL)
    assert block, "docs/plugin-kit.md: no python block after the marker"
    return block.group(1).replace('"my-plugin"', '"toy"').replace('"my-task"', '"toy-regression"')


@pytest.fixture
def trainlab_plugin(toy_plugin):
    return "toy"


@pytest.fixture
def trainlab_make_tiny_data():
    return lambda task_id, folder: write_toy_regression_csv(folder / "rows.csv", rows=48)


def test_the_documented_window_example_trains_and_predicts(request):
    namespace: dict = {}
    exec(compile(documented_example(), str(DOC), "exec"), namespace)
    example = namespace["test_train_and_try_in_the_window"]
    assert "trainlab_plugin" in namespace  # the example says which plugin is under test
    example(**{name: request.getfixturevalue(name) for name in inspect.signature(example).parameters})
