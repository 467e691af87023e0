"""The window at its 960x640 minimum (a laptop screen): nothing overlaps or is cut off.

At that size the run controls and the plots' bar wrap onto more rows, the
metrics plot gets a row of its own, and the run pane scrolls vertically
instead of squeezing its parts over each other.  The first launch's size
never exceeds the screen's free area.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPoint, QRect
from PySide6.QtWidgets import QAbstractButton, QComboBox, QScrollArea, QSpinBox


def _rect_in(widget, ancestor) -> QRect:
    return QRect(widget.mapTo(ancestor, QPoint(0, 0)), widget.size())


def _controls(pane) -> dict[str, object]:
    """The visible buttons, drop-downs and spin boxes under ``pane``, by name."""
    found = {}
    for kind in (QAbstractButton, QComboBox, QSpinBox):
        for w in pane.findChildren(kind):
            if w.isVisibleTo(pane):
                found[w.objectName() or f"{type(w).__name__}:{getattr(w, 'text', lambda: '')()}"] = w
    return found


def _settle(qtbot, window, width, height):
    window.resize(width, height)
    qtbot.waitUntil(lambda: window.width() == width and window.height() == height, timeout=5000)
    qtbot.wait(100)  # the layouts' deferred passes


def test_the_run_pane_at_the_minimum_size_wraps_and_scrolls(qtbot, window):
    window.show_page("train")
    page = window.train_page
    scroll = page.widget(1)  # the splitter's second pane: the run
    assert isinstance(scroll, QScrollArea)
    _settle(qtbot, window, 1360, 860)
    assert not page.plots._narrow
    start, stop = (page.controls.findChild(QAbstractButton, n) for n in ("start_button", "stop_button"))
    assert _rect_in(start, scroll.widget()).y() == _rect_in(stop, scroll.widget()).y()  # one row when wide

    _settle(qtbot, window, *window.minimumSize().toTuple())
    pane = scroll.widget()
    viewport = scroll.viewport().width()
    assert pane.width() <= viewport, "the run pane is cut off at the right"
    controls = _controls(page.controls)
    assert {"start_button", "queue_button", "pause_button", "stop_button", "more_button", "more_epochs", "run_mode"} <= set(controls)
    rects = {name: _rect_in(w, pane) for name, w in controls.items()}
    names = list(rects)
    for i, a in enumerate(names):
        assert rects[a].right() < viewport, f"{a} is cut off at the right ({rects[a]} in a {viewport}-pixel pane)"
        for b in names[i + 1 :]:
            assert not rects[a].intersects(rects[b]), f"{a} {rects[a]} overlaps {b} {rects[b]}"
    assert _rect_in(stop, pane).y() > _rect_in(start, pane).y(), "the buttons did not wrap"
    # the plots: the narrow arrangement, tall enough to read, the pane scrolls to them
    assert page.plots._narrow and page.plots.height() >= page.plots.NARROW_MIN_HEIGHT
    assert pane.height() > scroll.viewport().height() and scroll.verticalScrollBar().maximum() > 0
    bar_widgets = [page.plots.axis_combo, page.plots.smoothing, page.plots.log_scale, page.plots.reset_zoom]
    for w in bar_widgets:
        assert _rect_in(w, pane).right() < viewport, f"{w.objectName() or type(w).__name__} is cut off"

    _settle(qtbot, window, 1360, 860)  # and back
    assert not page.plots._narrow


def test_the_first_launch_fits_the_screen(qtbot, window):
    free = window.screen().availableGeometry().size()
    size = window._first_size()
    assert size.width() <= max(free.width(), window.minimumWidth())
    assert size.height() <= max(free.height(), window.minimumHeight())
    assert size.width() >= window.minimumWidth() and size.height() >= window.minimumHeight()


def test_the_progress_line_never_resizes_the_plots(qtbot, window):
    """The line under the bar changes several times a second while a run trains:
    its text must not set the pane's width, or each change resizes and repaints
    every plot beside it (what made the window stutter during a run)."""
    window.show_page("train")
    page = window.train_page
    _settle(qtbot, window, 960, 640)
    plots = page.plots
    width = plots.width()
    resized = []
    plots.installEventFilter(_ResizeSpy(plots, resized))
    for text in ("Epoch 1 of 20 \u00b7 step 9 of 900", "Epoch 12 of 20 \u00b7 step 10,512 of 18,000 \u00b7 ETA 1 h 12 min \u00b7 12,345.6 samples/s \u00b7 evaluating " * 2):
        window.controls.show_done(text)
        qtbot.wait(50)  # the layouts' deferred passes
    assert resized == []
    assert plots.width() == width
    assert window.controls.line.toolTip() == text  # a cut line still tells it all


class _ResizeSpy(QObject):
    def __init__(self, parent, seen):
        super().__init__(parent)
        self.seen = seen

    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Resize:
            self.seen.append(event.size().width())
        return False
