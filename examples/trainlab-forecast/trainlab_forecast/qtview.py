"""The window's view of the worst forecast windows (the ``trainlab.views`` entry point ``forecast-windows``).

Only TrainLab's window imports this module, when it shows a run whose
evaluation names the view; the plugin module (``trainlab_forecast``) imports
no Qt.  Each window is drawn small: the values given (grey), the true ones
(green) and the forecast (orange, dashed), captioned with its series, start
and error.
"""

import math

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QGridLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

COLUMNS = 3
COLOURS = {"given": QColor("#8a8f98"), "true": QColor("#1f9d55"), "forecast": QColor("#e07b00")}


class WindowPlot(QWidget):
    """One window's lines, scaled to fit."""

    def __init__(self, lines, parent=None):
        super().__init__(parent)
        self.lines = lines
        self.setMinimumSize(180, 90)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def paintEvent(self, event):  # noqa: N802 - Qt's name
        points = [(x, y) for line in self.lines for x, y in zip(line.xs, line.y) if math.isfinite(y)]
        if not points:
            return
        x0, x1 = min(p[0] for p in points), max(p[0] for p in points)
        y0, y1 = min(p[1] for p in points), max(p[1] for p in points)
        w, h = self.width() - 8, self.height() - 8

        def at(x, y):
            return QPointF(4 + (x - x0) / ((x1 - x0) or 1) * w, 4 + (1 - (y - y0) / ((y1 - y0) or 1)) * h)

        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(self.palette().mid().color(), 1, Qt.PenStyle.DotLine))
        painter.drawLine(at(0.5, y0), at(0.5, y1))  # where the forecast starts
        for line in self.lines:
            pen = QPen(COLOURS.get(line.label, QColor("#2f6fde")), 2)
            if line.style == "dashed":
                pen.setStyle(Qt.PenStyle.DashLine)
            painter.setPen(pen)
            shown = [at(x, y) for x, y in zip(line.xs, line.y) if math.isfinite(y)]
            for a, b in zip(shown, shown[1:]):
                painter.drawLine(a, b)
        painter.end()


class ForecastWindowsView(QWidget):
    """The worst windows as small plots, worst first."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("forecastWindows")
        self.plots = []
        self.captions = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.legend = QLabel("<span style='color:#8a8f98'>\u2014 given</span>  <span style='color:#1f9d55'>\u2014 true</span>"
                             "  <span style='color:#e07b00'>- - forecast</span>")
        layout.addWidget(self.legend)
        self.grid = QGridLayout()
        layout.addLayout(self.grid)

    def show_detail(self, detail, run_dir):
        for index, row in enumerate(detail.worst_first()):
            series = row.get("forecast")
            if series is None:
                continue
            plot = WindowPlot(series.lines)
            caption = QLabel(f"{row.get('series', '')} from {int(row.get('start') or 0)} \u00b7 MAE {row.get('mae', float('nan')):.3g}")
            cell = QWidget()
            box = QVBoxLayout(cell)
            box.setContentsMargins(0, 0, 0, 6)
            box.addWidget(plot)
            box.addWidget(caption)
            self.grid.addWidget(cell, index // COLUMNS, index % COLUMNS)
            self.plots.append(plot)
            self.captions.append(caption.text())
