"""Tools > Caches in the real window: what the token cache holds, its size limit, and clearing it."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt

from trainlab.system import cache
from trainlab.engine.prepare import prepare_task
from helpers import sample_head


def open_caches(qtbot, window):
    window.menus.caches_action.trigger()
    dialog = window.cache_dialog
    qtbot.waitExposed(dialog)
    return dialog


def test_the_caches_dialog_shows_clears_and_caps_the_token_cache(qtbot, window, tmp_path):
    data = sample_head(tmp_path)
    prepare_task("text-classification", str(data), {"device": "cpu"})
    dialog = open_caches(qtbot, window)
    assert "tokens: 2 entries" in dialog.contents.text()
    assert dialog.limit.value() == 5.0 and dialog.clear_button.isEnabled()

    dialog.limit.setValue(2.5)
    dialog.limit.editingFinished.emit()
    assert cache.limit_bytes() == 2_500_000_000  # remembered in settings.json, as `trainlab cache --limit-gb` does

    qtbot.mouseClick(dialog.clear_button, Qt.MouseButton.LeftButton)
    assert cache.report().entries == []
    assert "The caches are empty." in dialog.contents.text() and not dialog.clear_button.isEnabled()


def test_a_limit_of_zero_empties_the_cache_at_once(qtbot, window, tmp_path):
    prepare_task("text-classification", str(sample_head(tmp_path)), {"device": "cpu"})
    dialog = open_caches(qtbot, window)
    dialog.limit.setValue(0.0)
    dialog.limit.editingFinished.emit()
    assert cache.report().entries == [] and "The caches are empty." in dialog.contents.text()
