"""The plots of the results pages: themed pyqtgraph plots in one canvas.

Imported only by the pages that draw (regression, other families), so the
window and the classification results never load pyqtgraph.  Colours follow
the widget's palette (light and dark themes) as the history's curves do.
"""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QVBoxLayout, QWidget

from trainlab_desktop.plots.axes import EpochAxis, GridAxis, grid_below

ACCENT = QColor("#2f6fde")  # the results view's blue (score bars, the confusion matrix)
WARM = QColor("#e0493e")
MUTED = QColor("#8a8f98")


class PlotCanvas(QWidget):
    """A grid of plots that follow the palette; ``add_plot`` makes each."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = pg.GraphicsLayoutWidget()
        self.plots: list[Any] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)

    def add_plot(self, row: int, col: int, title: str, bottom: str = "", left: str = "", epochs: bool = False) -> Any:
        axes = {"left": GridAxis("left"), "bottom": (EpochAxis if epochs else GridAxis)("bottom")}
        plot = self.view.addPlot(row=row, col=col, title=title, axisItems=axes)
        if bottom:
            plot.setLabel("bottom", bottom)
        if left:
            plot.setLabel("left", left)
        plot.setMenuEnabled(False)
        self.plots.append(plot)
        self.apply_palette()
        return plot

    def clear(self) -> None:
        self.view.clear()
        self.plots = []

    def foreground(self) -> QColor:
        return self.palette().color(QPalette.ColorRole.Text)

    def apply_palette(self) -> None:
        palette = self.palette()
        background = palette.color(QPalette.ColorRole.Base)
        foreground = palette.color(QPalette.ColorRole.Text)
        self.view.setBackground(background)
        for plot in self.plots:
            grid_below(plot, background, 0.2)
            for name in ("left", "bottom"):
                axis = plot.getAxis(name)
                axis.setPen(foreground)
                axis.setTextPen(foreground)
            plot.titleLabel.setText(plot.titleLabel.text, color=foreground.name())

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self.apply_palette()


def pen(color: QColor, width: float = 1.5, **kwargs) -> Any:
    return pg.mkPen(color, width=width, **kwargs)


def brush(color: QColor, alpha: int = 255) -> Any:
    faded = QColor(color)
    faded.setAlpha(alpha)
    return pg.mkBrush(faded)
