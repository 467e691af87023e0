"""The data field of the real window: a long path reads at both ends."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from test_gui_window import write_toy_csv  # noqa: E402


def test_a_long_data_path_is_elided_in_the_middle_and_whole_when_edited(qtbot, window, tmp_path):
    deep = tmp_path.joinpath(*[f"a-rather-long-folder-name-{i}" for i in range(6)])
    deep.mkdir(parents=True)
    data = write_toy_csv(deep / "reviews-of-the-year.csv")
    window.resize(1280, 800)  # the size the README pictures show
    window.show_page("train")
    panel = window.data_panel
    assert window.select_task("toy-classification")
    panel.set_path(str(data))
    qtbot.waitUntil(lambda: not panel.checking, timeout=60_000)
    field = panel.path_edit
    window.nav.setFocus()  # the field is not being edited
    qtbot.waitUntil(lambda: "\u2026" in field.text(), timeout=5000)
    shown = field.text()
    head, tail = shown.split("\u2026")
    assert str(data).startswith(head) and str(data).endswith(tail)
    assert len(head) > 3, (shown, field.width())
    assert tail.endswith("reviews-of-the-year.csv")  # where it lives and what it is
    assert field.fontMetrics().horizontalAdvance(shown) <= field.width()
    assert field.toolTip() == str(data) and panel.path() == str(data)
    assert window.start_blockers() == []

    # editing works on the whole path
    field.setFocus()
    qtbot.waitUntil(field.hasFocus, timeout=5000)
    assert field.text() == str(data)
    other = write_toy_csv(tmp_path / "other.csv")
    field.selectAll()
    qtbot.keyClicks(field, str(other))
    qtbot.keyClick(field, Qt.Key.Key_Return)
    assert panel.path() == str(other)
    qtbot.waitUntil(lambda: not panel.checking, timeout=60_000)
    assert field.toolTip() == str(other)
