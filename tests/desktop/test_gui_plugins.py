"""The plugins dialog: a broken plugin is listed with its reason and traceback."""

from __future__ import annotations

import importlib.metadata as md
import textwrap

import pytest

pytest.importorskip("PySide6")

from trainlab.pluginhost import host as pluginhost  # noqa: E402
from trainlab.pluginhost.host import PluginRegistry  # noqa: E402

GOOD = '''
from trainlab import hookimpl, TaskSpec

@hookimpl
def trainlab_api_version():
    return "2.0"

@hookimpl
def trainlab_tasks():
    return [TaskSpec(id="toy-task", title="Toy task", factory="toy_good:Factory")]

class Factory:  # what the factory path names: a good plugin's factory exists (discovery checks it)
    pass
'''

BROKEN = '''
from trainlab import hookimpl

@hookimpl
def trainlab_api_version():
    return "2.0"

def _explode():
    raise RuntimeError("the toy plugin is broken on purpose")

@hookimpl
def trainlab_tasks():
    _explode()
'''


@pytest.fixture
def registry(tmp_path, monkeypatch):
    (tmp_path / "toy_good.py").write_text(textwrap.dedent(GOOD), encoding="utf-8")
    (tmp_path / "toy_broken.py").write_text(textwrap.dedent(BROKEN), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [
        md.EntryPoint("toy-good", "toy_good", pluginhost.GROUP),
        md.EntryPoint("toy-broken", "toy_broken", pluginhost.GROUP),
        md.EntryPoint("toy-missing", "toy_missing_module", pluginhost.GROUP),
    ]
    return PluginRegistry.discover(eps)


def _row(dialog, name):
    tree = dialog.tree
    for index in range(tree.topLevelItemCount()):
        item = tree.topLevelItem(index)
        if item.text(0) == name:
            return item
    raise AssertionError(f"{name} not listed")


def test_dialog_lists_every_plugin_and_shows_the_traceback_of_a_broken_one(qtbot, registry):
    from trainlab_desktop.dialogs.plugins import PluginsDialog

    dialog = PluginsDialog(registry)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)

    assert dialog.tree.topLevelItemCount() == 3
    assert _row(dialog, "toy-good").text(3) == "toy-task"
    assert _row(dialog, "toy-good").text(4) == "Loaded"
    assert _row(dialog, "toy-broken").text(4) == "Failed"
    assert _row(dialog, "toy-missing").text(4) == "Failed"
    assert "2 could not be loaded" in dialog.summary.text()

    dialog.select_plugin("toy-broken")
    assert "trainlab_tasks() raised RuntimeError" in dialog.detail_message.text()
    # The traceback is there but folded until the user asks for it.
    assert dialog.traceback_toggle.isVisible()
    assert not dialog.traceback_view.isVisible()
    qtbot.mouseClick(dialog.traceback_toggle, qtbot_left())
    assert dialog.traceback_view.isVisible()
    text = dialog.traceback_view.toPlainText()
    assert "_explode" in text and "broken on purpose" in text

    dialog.select_plugin("toy-missing")
    assert "ModuleNotFoundError" in dialog.detail_message.text()

    dialog.select_plugin("toy-good")
    assert not dialog.traceback_toggle.isVisible()


def test_blocking_a_plugin_is_saved_and_takes_effect_at_the_next_discovery(qtbot, registry, tmp_path):
    from trainlab_desktop.dialogs.plugins import PluginsDialog

    dialog = PluginsDialog(registry)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.select_plugin("toy-good")
    assert dialog.block_button.text() == "Block"
    assert not dialog.restart_note.isVisible()

    with qtbot.waitSignal(dialog.blockChanged) as blocker:
        qtbot.mouseClick(dialog.block_button, qtbot_left())
    assert blocker.args == ["toy-good", True]
    assert dialog.restart_note.isVisible()
    assert "restart" in _row(dialog, "toy-good").text(4)
    assert dialog.block_button.text() == "Unblock"
    assert "toy-good" in pluginhost.blocked_names()

    eps = [md.EntryPoint("toy-good", "toy_good", pluginhost.GROUP)]
    again = PluginRegistry.discover(eps)
    assert again.plugins[0].status == "blocked"
    assert "toy-task" not in again.tasks

    reopened = PluginsDialog(again)
    qtbot.addWidget(reopened)
    reopened.select_plugin("toy-good")
    assert reopened.block_button.text() == "Unblock"
    qtbot.mouseClick(reopened.block_button, qtbot_left())
    assert "toy-good" not in pluginhost.blocked_names()
    assert PluginRegistry.discover(eps).plugins[0].status == "ok"


def test_copy_details_puts_the_traceback_on_the_clipboard(qtbot, registry):
    from PySide6.QtGui import QGuiApplication

    from trainlab_desktop.dialogs.plugins import PluginsDialog

    dialog = PluginsDialog(registry)
    qtbot.addWidget(dialog)
    dialog.select_plugin("toy-broken")
    qtbot.mouseClick(dialog.copy_button, qtbot_left())
    copied = QGuiApplication.clipboard().text()
    assert copied.startswith("plugin: toy-broken")
    assert "status: failed" in copied and "broken on purpose" in copied


def qtbot_left():
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton
