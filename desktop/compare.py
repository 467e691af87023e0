"""Comparing runs: their smoothed training loss and validation accuracy overlaid.

Opened from the run history (``RunHistoryView.runsOverlaid``).  Each run's
curves are read from its ``metrics.jsonl`` off the GUI thread.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from trainlab.desktop import background
from trainlab.desktop.curves import RunCurves
from trainlab.desktop.style import PlotColors

RUN_COLORS = ("#1a66c2", "#d9480f", "#2b8a3e", "#7048e8", "#0c8599", "#c2255c", "#e67700", "#5c940d")


def run_label(run_dir: Path) -> str:
    try:
        data = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return run_dir.name
    return str(data.get("name") or data.get("id") or run_dir.name)


def _load(run_dirs: list[str]) -> list[tuple[str, RunCurves | None, str]]:
    out = []
    for folder in run_dirs:
        path = Path(folder)
        try:
            out.append((run_label(path), RunCurves.from_metrics(path / "metrics.jsonl"), ""))
        except (OSError, ValueError) as exc:
            out.append((run_label(path), None, str(exc)))
    return out


class CompareDialog(QDialog):
    def __init__(self, run_dirs: list[str], colors: PlotColors, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(self.tr("Compare runs"))
        self.resize(1000, 640)
        self.loaded = False
        layout = QVBoxLayout(self)
        self.note = QLabel(self.tr("Reading %n run(s)\u2026", "", len(run_dirs)), self)
        self.note.setProperty("role", "muted")
        layout.addWidget(self.note)
        self.view = pg.GraphicsLayoutWidget(self)
        self.view.setBackground(colors.background)
        self.loss_plot = self.view.addPlot(row=0, col=0, title=self.tr("Training loss (smoothed)"))
        self.accuracy_plot = self.view.addPlot(row=1, col=0, title=self.tr("Validation accuracy"))
        for plot in (self.loss_plot, self.accuracy_plot):
            plot.showGrid(x=True, y=True, alpha=colors.grid_alpha)
            plot.addLegend(offset=(-10, 10))
            for name in ("left", "bottom"):
                plot.getAxis(name).setPen(colors.foreground)
                plot.getAxis(name).setTextPen(colors.foreground)
        self.loss_plot.setLabel("bottom", self.tr("step"))
        self.accuracy_plot.setLabel("bottom", self.tr("epoch"))
        layout.addWidget(self.view, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        background.start(lambda: _load(run_dirs), self._show, lambda m, tb: self.note.setText(m))

    def _show(self, runs: list[tuple[str, RunCurves | None, str]]) -> None:
        problems = []
        for index, (label, curves, error) in enumerate(runs):
            if curves is None:
                problems.append(f"{label}: {error}")
                continue
            color = RUN_COLORS[index % len(RUN_COLORS)]
            train = curves.train
            item = self.loss_plot.plot(train.column("step"), train.column("smooth"), name=label, pen=pg.mkPen(color, width=2),
                                       connect="finite")
            item.setDownsampling(auto=True, method="peak")
            item.setClipToView(True)
            evals = curves.evals
            self.accuracy_plot.plot(evals.column("epoch"), evals.column("accuracy"), name=label,
                                    pen=pg.mkPen(color, width=2), symbol="o", symbolSize=6, symbolBrush=color)
        self.note.setText("\n".join(problems))
        self.note.setVisible(bool(problems))
        self.loaded = True
