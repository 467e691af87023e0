"""Plot axes that cost what they should while a run draws 20 frames a second.

Two things made a repaint of the live plots slow on the GUI thread, and both
are fixed here without changing what the user sees.

The grid.

pyqtgraph draws a grid by stretching each axis tick across the plot with a
translucent pen.  Qt's raster engine draws a translucent one-pixel line many
times slower than an opaque one, and the grid was most of the time a repaint
of the four live plots took.  During a run the plots repaint 20 times a
second on the GUI thread, so a translucent grid keeps the event loop from
answering for a good share of every second (``bench/gui_latency.py``
measures it).

These axes draw the same colours opaquely: each tick pen's colour is blended
over the plot's background before drawing, which is what the translucent pen
would have produced on that background.  ``grid_below`` then stacks the axes
under the plot's data, so an opaque grid line passes beneath a curve rather
than cutting through it.

The ranges.  pyqtgraph's auto-range fits the view to the data exactly, so
while a run adds steps every frame moves the x range (and usually the y range)
and every axis computes and draws its ticks again: with the grid fixed, that
was still two thirds of a frame.  ``SteadyViewBox`` auto-ranges with
headroom: the range jumps ahead of the data by a margin and stays until the
data leaves it (or it has become much too loose), so the axes change a few
dozen times in a long run and a frame mostly redraws the curves.  Zooming,
panning, pyqtgraph's "A" button and its menu behave as before; with
``steady`` off (a finished run) auto-range fits exactly again.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QGraphicsItem

from trainlab_desktop.common.formatting import format_offset


def blend(color: QColor, background: QColor) -> QColor:
    """``color`` drawn with its alpha over an opaque ``background``, as an opaque colour."""
    alpha = color.alphaF()
    if alpha >= 1.0:
        return QColor(color)
    return QColor.fromRgbF(
        color.redF() * alpha + background.redF() * (1 - alpha),
        color.greenF() * alpha + background.greenF() * (1 - alpha),
        color.blueF() * alpha + background.blueF() * (1 - alpha),
    )


class GridAxis(pg.AxisItem):
    """An ``AxisItem`` whose ticks and grid lines are drawn in opaque colours.

    Until ``set_background`` has been called it draws exactly as pyqtgraph does.
    """

    def __init__(self, orientation: str, *args, **kwargs) -> None:
        self._background: QColor | None = None
        self._opaque: dict[int, QColor] = {}  # translucent rgba -> its blend (a handful of alphas)
        super().__init__(orientation, *args, **kwargs)

    def set_background(self, color) -> None:
        self._background = QColor(color)
        self._opaque.clear()
        self.picture = None  # pyqtgraph's cached drawing: redraw with the new colours
        self.update()

    def generateDrawSpecs(self, p):  # noqa: N802 - pyqtgraph override
        specs = super().generateDrawSpecs(p)
        background = self._background
        if specs is None or background is None:
            return specs
        axis_spec, tick_specs, text_specs = specs
        replaced: dict[int, QPen] = {}  # pyqtgraph shares one pen among a level's ticks
        opaque = []
        for pen, start, end in tick_specs:
            new = replaced.get(id(pen))
            if new is None:
                new = replaced[id(pen)] = self._opaque_pen(pen, background)
            opaque.append((new, start, end))
        return axis_spec, opaque, text_specs

    def _opaque_pen(self, pen: QPen, background: QColor) -> QPen:
        color = pen.color()
        if color.alpha() == 255:
            return pen
        blended = self._opaque.get(color.rgba())
        if blended is None:
            blended = self._opaque[color.rgba()] = blend(color, background)
        pen = QPen(pen)
        pen.setColor(blended)
        return pen


class ElapsedAxis(GridAxis):
    """Seconds since the start, written as m:ss or h:mm:ss."""

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph override
        return [format_offset(v * scale) for v in values]


class EpochAxis(GridAxis):
    """Whole epochs only: no 1.5 or 2.5 ticks on a per-epoch plot."""

    def tickValues(self, minVal, maxVal, size):  # noqa: N802,N803 - pyqtgraph override
        levels = []
        for spacing, values in super().tickValues(minVal, maxVal, size):
            whole = [v for v in values if abs(v - round(v)) < 1e-9]
            if whole:
                levels.append((max(spacing, 1.0), whole))
        return levels


class DateAxis(GridAxis, pg.DateAxisItem):
    """Wall-clock time (pyqtgraph's ``DateAxisItem``) with the opaque grid."""


class SteadyViewBox(pg.ViewBox):
    """A ``ViewBox`` whose auto-range moves in steps, with headroom (see the module).

    ``headroom`` is, per axis, the fraction of the data's span added below and
    above it when the range has to move: the default suits a curve that grows
    to the right (x) and wanders up and down (y).  Keep a little on the left
    of x too: pyqtgraph pads the range by a fraction of the span, so the
    padded left end moves left as the curve grows.
    """

    LOOSE = 2.0  # refit once the range is this many times wider than it needs to be
    # With steady off, a range that holds the data and is at most this share
    # wider than the exact fit stays: a downsampled, clipped curve's bounds
    # depend on the view, and the fit otherwise wobbles by a fraction of a
    # percent every frame, redrawing the axes each time.
    JITTER = 0.02

    def __init__(self, *args, headroom=((0.05, 0.25), (0.1, 0.1)), **kwargs) -> None:
        self.headroom = headroom
        self.steady = True
        super().__init__(*args, **kwargs)

    def setRange(self, rect=None, xRange=None, yRange=None, padding=None, update=True,  # noqa: N802,N803
                 disableAutoRange=True):
        if rect is None and not disableAutoRange:  # pyqtgraph's auto-range asking
            current = self.viewRange()
            choose = self._steady if self.steady else self._exact
            xRange = choose(0, current[0], xRange)
            yRange = choose(1, current[1], yRange)
            if xRange is None and yRange is None:
                return
        super().setRange(rect, xRange, yRange, padding, update, disableAutoRange)

    def _steady(self, axis: int, current, wanted):
        """The range to move to for an auto-range that wants ``wanted``; None to stay."""
        if wanted is None:
            return None
        low, high = float(wanted[0]), float(wanted[1])
        span = high - low
        if span <= 0:
            return wanted  # one point or none: let pyqtgraph decide
        inside = current[0] <= low and high <= current[1]
        if inside and (current[1] - current[0]) <= self.LOOSE * span * (1 + sum(self.headroom[axis])):
            return None
        below, above = self.headroom[axis]
        return [low - below * span, high + above * span]

    def _exact(self, axis: int, current, wanted):
        """pyqtgraph's exact fit, without the wobble (``JITTER``)."""
        if wanted is None:
            return None
        low, high = float(wanted[0]), float(wanted[1])
        holds = current[0] <= low and high <= current[1]
        if holds and (current[1] - current[0]) - (high - low) <= self.JITTER * (high - low):
            return None
        return wanted

    def set_steady(self, steady: bool) -> None:
        """Steps with headroom (a live run) or an exact fit (pyqtgraph's own)."""
        if steady != self.steady:
            self.steady = steady
            self.queueUpdateAutoRange()


def grid_below(plot: pg.PlotItem, background, alpha: float) -> None:
    """Show ``plot``'s grid at ``alpha`` over ``background``, drawn beneath its data.

    The plot's left and bottom axes should be ``GridAxis`` instances (pass them
    as ``axisItems`` when the plot is made); others keep pyqtgraph's drawing.
    """
    plot.showGrid(x=True, y=True, alpha=alpha)
    below_data = plot.getViewBox().zValue() - 1
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        if isinstance(axis, GridAxis):
            axis.set_background(background)
        # PlotItem stacks its axes over its ViewBox; beneath it, the grid lines
        # pass under the curves (no other part of an axis overlaps the data)
        axis.setZValue(below_data)
        # An axis changes only when its range does (rarely, with SteadyViewBox),
        # while the curves over it repaint 20 times a second: keep its drawing,
        # grid and labels, as a pixmap: a repaint of the live plots then redraws
        # only the curves.
        axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)


class HeadroomRange:
    """Keeps a plot's y axis on ``low``..``high`` with a margin in pixels
    beyond each end, fitted again whenever the plot is resized.

    A fixed range padded by a fraction of the span puts the top value on (or a
    few pixels from) the plot's edge, where a marker drawn there (the best
    epoch's star at an accuracy of 1.0) is cut in half and a grid line at 100 %
    reads as the frame; the margin wanted is a number of pixels, whatever the
    plot's height.  ``release`` hands the axis back to auto-range.
    """

    def __init__(self, plot: pg.PlotItem, low: float, high: float, *, top_px: float = 10.0, bottom_px: float = 3.0):
        self.view = plot.getViewBox()
        self.low, self.high = float(low), float(high)
        self.top_px, self.bottom_px = top_px, bottom_px
        self.held = True
        self.view.sigResized.connect(lambda _view: self.apply())
        self.apply()

    def hold(self) -> None:
        self.held = True
        self.apply()

    def release(self) -> None:
        if self.held:
            self.held = False
            self.view.enableAutoRange(y=True)

    def bounds(self) -> tuple[float, float]:
        """The y range that leaves the margins at the plot's current height."""
        span = self.high - self.low
        height = float(self.view.height())
        usable = height - self.top_px - self.bottom_px
        if usable < 8:  # not laid out yet (or tiny): a plain fraction of the span
            return self.low - 0.03 * span, self.high + 0.12 * span
        per_pixel = span / usable
        return self.low - self.bottom_px * per_pixel, self.high + self.top_px * per_pixel

    def apply(self) -> None:
        if self.held:
            low, high = self.bounds()
            self.view.setYRange(low, high, padding=0)
