"""The opaque grid: the same picture as pyqtgraph's translucent one, drawn beneath the data."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QColor, QImage, QPainter

from trainlab_desktop.plots.axes import GridAxis, SteadyViewBox, blend, grid_below

BACKGROUNDS = ("#ffffff", "#1e2227")


def test_blend_is_alpha_compositing_over_the_background():
    over = blend(QColor(60, 64, 67, 64), QColor("#ffffff"))
    a = 64 / 255
    assert over.alpha() == 255
    assert (over.red(), over.green(), over.blue()) == pytest.approx(
        (60 * a + 255 * (1 - a), 64 * a + 255 * (1 - a), 67 * a + 255 * (1 - a)), abs=1
    )
    assert blend(QColor(10, 20, 30), QColor("#000000")) == QColor(10, 20, 30)  # opaque stays as is


def _plot(qtbot, axis_type, background: str, curve: bool = False):
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(420, 300)
    view.setBackground(background)
    plot = view.addPlot(axisItems={"left": axis_type("left"), "bottom": axis_type("bottom")})
    plot.setXRange(0, 10, padding=0)
    plot.setYRange(0, 1, padding=0)
    for name in ("left", "bottom"):
        plot.getAxis(name).setPen("#3c4043")
        plot.getAxis(name).setTextPen("#3c4043")
    if curve:
        plot.plot([0, 10], [0.5, 0.5], pen=pg.mkPen("#d9480f", width=1))
    view.show()
    qtbot.waitExposed(view)
    return view, plot


def _render(view) -> np.ndarray:
    image = QImage(view.size(), QImage.Format.Format_RGB32)
    painter = QPainter(image)
    view.render(painter)
    painter.end()
    pointer = image.constBits()
    return np.frombuffer(pointer, np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4)[:, : image.width(), :3].copy()


@pytest.mark.parametrize("background", BACKGROUNDS)
def test_opaque_grid_looks_like_the_translucent_one(qtbot, background):
    """Rendered side by side, the two grids differ by at most rounding, except
    where two grid lines cross: translucent lines darken each other there."""
    reference, plot = _plot(qtbot, pg.AxisItem, background)
    plot.showGrid(x=True, y=True, alpha=0.25)
    ours, plot = _plot(qtbot, GridAxis, background)
    grid_below(plot, background, 0.25)
    expected, got = _render(reference).astype(int), _render(ours).astype(int)
    drawn = (expected != np.array(QColor(background).getRgb()[2::-1])).any(axis=2)
    assert drawn.sum() > 1000  # the grid (and the axes) really are in the picture
    vertical = np.zeros_like(drawn)  # drawn, with a drawn pixel above or below
    vertical[1:-1] = drawn[1:-1] & (drawn[:-2] | drawn[2:])
    horizontal = np.zeros_like(drawn)  # drawn, with a drawn pixel left or right
    horizontal[:, 1:-1] = drawn[:, 1:-1] & (drawn[:, :-2] | drawn[:, 2:])
    crossing = vertical & horizontal
    difference = np.abs(expected - got).max(axis=2)
    assert difference[~crossing].max() <= 2
    assert (difference > 2).sum() < 0.1 * drawn.sum()


def test_grid_pens_are_opaque_and_pass_under_the_curve(qtbot):
    view, plot = _plot(qtbot, GridAxis, "#ffffff", curve=True)
    grid_below(plot, "#ffffff", 0.25)
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        _, ticks, _ = axis.generateDrawSpecs(QPainter())
        assert ticks and all(pen.color().alpha() == 255 for pen, _, _ in ticks)
        assert axis.zValue() < plot.getViewBox().zValue()
    # where the horizontal curve crosses a vertical grid line, the curve wins
    pixels = _render(view)
    curve_rgb = np.array(QColor("#d9480f").getRgb()[2::-1])
    rows = np.where((pixels == curve_rgb).all(axis=2).sum(axis=1) > 100)[0]
    assert rows.size, "the curve was not drawn"
    row = pixels[rows[0]]
    left, right = np.where((row == curve_rgb).all(axis=1))[0][[0, -1]]
    assert (row[left : right + 1] == curve_rgb).all()  # unbroken by the grid


def _steady_plot(qtbot):
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(420, 300)
    plot = view.addPlot(viewBox=SteadyViewBox())
    curve = plot.plot([], [])
    view.show()
    qtbot.waitExposed(view)
    return view, plot, curve


def _settle(view, plot):
    plot.getViewBox().updateAutoRange()


def test_steady_range_moves_in_steps_while_the_curve_grows(qtbot):
    view, plot, curve = _steady_plot(qtbot)
    box = plot.getViewBox()
    ranges = []
    for n in range(100, 2001, 10):  # a run adding ten steps a frame
        x = np.arange(1, n + 1, dtype=float)
        curve.setData(x, 1 / (1 + x * 1e-3))
        _settle(view, plot)
        (x0, x1), (y0, y1) = box.viewRange()
        assert x0 <= 1 and x1 >= n  # every point is in view...
        assert y0 <= 1 / (1 + n * 1e-3) and y1 >= 1 / (1 + 1e-3)
        ranges.append((x0, x1, y0, y1))
    # ...and each range moved in a few steps, not in each of the 190 frames:
    # x by a quarter of the span at a time over a 20-fold growth (log 20 / log 1.25 = 13.4)
    x_changes = sum(1 for a, b in zip(ranges, ranges[1:]) if a[:2] != b[:2])
    y_changes = sum(1 for a, b in zip(ranges, ranges[1:]) if a[2:] != b[2:])
    assert x_changes <= 16 and y_changes <= 20, (x_changes, y_changes)
    assert (ranges[-1][1] - ranges[-1][0]) <= 2.0 * 2000  # never absurdly loose


def test_steady_off_fits_exactly_and_zoom_still_takes_over(qtbot):
    view, plot, curve = _steady_plot(qtbot)
    box = plot.getViewBox()
    x = np.arange(1, 1001, dtype=float)
    curve.setData(x, x * 2)
    _settle(view, plot)
    loose = box.viewRange()[0]
    box.set_steady(False)
    _settle(view, plot)
    exact = box.viewRange()[0]
    assert exact[1] - exact[0] < loose[1] - loose[0]
    assert 1000 < exact[1] <= 1000 + 0.1 * 999  # pyqtgraph's own padding only (2 to 10 %)
    box.set_steady(True)
    box.setXRange(100, 200, padding=0)  # the user zooms in: auto-range is off, whatever the policy
    curve.setData(np.arange(1, 5001, dtype=float), np.arange(1, 5001, dtype=float))
    _settle(view, plot)
    assert box.viewRange()[0] == pytest.approx([100, 200])
