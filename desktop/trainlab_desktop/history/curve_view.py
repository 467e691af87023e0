"""The run history's curves: one run's, or several overlaid, live while they train.

``RunCurvesView`` draws loss per step (training smoothed, validation dashed
with a marker per evaluation) and the learning rate, and below them the
validation metrics each run's task declares, per epoch: metrics that read
alike share a plot (accuracy and F1 together, errors in a unit apart), and
runs of different families compared get a row of plots per family, so a
forecast's MAE is never drawn on a classifier's accuracy axis.  Each run is
a ``RunTrace``: its ``trainlab.viewmodel.curves.RunCurves``
fed by the run folder's one tolerant tail (``RunDir.tail()``), so a run that
is still training grows every ``TAIL_MS`` and a half-written last line is
never drawn.

pyqtgraph is imported when the curves are first shown, not when this module
is, so the window comes up without it.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from trainlab.api.descriptors import Metric
from trainlab.api.errors import UsageError
from trainlab.api.events import Finished
from trainlab.runfolder.index import RunDir
from trainlab.viewmodel.history import declarations
from trainlab_desktop.common.formatting import metric_title

TAIL_MS = 500  # a followed run's metrics.jsonl
# Qualitative colours (Tableau 10) that read on light and dark backgrounds.
RUN_COLORS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")
SYMBOLS = ("o", "t", "s", "d", "+", "x")  # one per metric sharing a plot
BOUNDED = ("percent", "score")  # fractions and scores up to 1 share a plot


def metric_groups(metrics: Sequence[Metric]) -> list[list[Metric]]:
    """The metrics split into plots: the bounded ones together, then one plot per other display and unit."""
    groups: dict[tuple[str, str], list[Metric]] = {}
    for metric in metrics:
        key = ("bounded", "") if metric.display in BOUNDED else (metric.display, metric.unit)
        groups.setdefault(key, []).append(metric)
    return list(groups.values())


class RunTrace:
    """One run in the curves view: its data, its tail, its plot items."""

    def __init__(self, run_dir: str, color: str) -> None:
        from trainlab.viewmodel.curves import RunCurves

        folder = RunDir(run_dir)
        self.run_dir = run_dir
        self.problem = ""  # what is wrong with its run.json, shown beside its name
        # A run that ended without its "finished" event (killed, interrupted)
        # is not live either: run.json says it is over.
        ended = False
        record = None
        try:
            record = folder.read_record()
            self.title, ended = record.title, record.finished
        except UsageError as exc:
            self.title, self.problem = folder.path.name, str(exc)
        # what its task declares (as run.json recorded it, else the installed task's, else its family's)
        self.family, self.metrics, self.monitor = declarations(record, record.task if record is not None else "")
        self.color = color
        self.curves = RunCurves()
        self.tail = folder.tail()
        self.finished = ended
        self.items: dict[str, Any] = {}
        self.seen: dict[str, int] = {}

    def poll(self) -> bool:
        """Read what was appended; True when there is something new to draw."""
        events = self.tail.read_new()
        if self.tail.restarted:
            self.curves.clear()
            self.finished = False
        if not events:
            return self.tail.restarted
        self.curves.add_events(events)
        if any(isinstance(e, Finished) for e in events):
            self.finished = True
        return True


class RunCurvesView(QWidget):
    """Curves of one run, or several overlaid (one colour per run).

    Plots: loss per step (training smoothed, validation dashed with a marker
    per evaluation), the learning rate, and each family's declared validation
    metrics per epoch (a row of plots per family).
    Runs that are still training are tailed every ``TAIL_MS``.
    """

    # emitted after new points were drawn (tests and status bars use it)
    updated = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.traces: list[RunTrace] = []
        self._plots_built = False
        self.legend = QLabel()
        self.legend.setObjectName("curvesLegend")
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.log_scale = QCheckBox(self.tr("Log scale"))
        self.log_scale.setToolTip(self.tr("Show the loss on a logarithmic scale (runs whose losses differ a lot)"))
        self.log_scale.toggled.connect(self._log_scale_toggled)
        self.log_scale.setVisible(False)
        self.empty = QLabel(self.tr("Select a run to see its curves; select several to compare them."))
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        head.addWidget(self.legend, 1)
        head.addWidget(self.log_scale)
        self._layout.addLayout(head)
        self._layout.addWidget(self.empty, 1)
        self.timer = QTimer(self)
        self.timer.setInterval(TAIL_MS)
        self.timer.timeout.connect(self.poll)

    # -- plots (built lazily: pyqtgraph is not imported before the window shows) --
    def _build_plots(self) -> None:
        if self._plots_built:
            return
        import pyqtgraph as pg

        from trainlab_desktop.plots.axes import GridAxis

        self._pg = pg
        self.view = pg.GraphicsLayoutWidget()
        self.view.setObjectName("historyCurves")

        def axes(bottom=GridAxis):
            return {"left": GridAxis("left"), "bottom": bottom("bottom")}

        self._axes = axes
        self.loss_plot = self.view.addPlot(row=0, col=0, title=self.tr("Loss"), axisItems=axes())
        self.lr_plot = self.view.addPlot(row=0, col=1, title=self.tr("Learning rate"), axisItems=axes())
        self.loss_plot.setLabel("bottom", self.tr("step"))
        self.lr_plot.setLabel("bottom", self.tr("step"))
        self.metric_plots: list[tuple[str, list[Metric], Any]] = []  # (family, metrics, plot), a row per family
        self._layout.addWidget(self.view, 1)
        self._plots_built = True
        self.loss_plot.setLogMode(y=self.log_scale.isChecked())
        self.apply_palette()

    def _build_metric_plots(self) -> None:
        """A row of plots per family of the shown runs: its declared metrics, grouped by how they read."""
        from trainlab_desktop.plots.axes import EpochAxis

        for _, _, plot in self.metric_plots:
            self.view.removeItem(plot)
        self.metric_plots = []
        families: dict[str, list[Metric]] = {}
        for trace in self.traces:
            declared = families.setdefault(trace.family or "", [])
            declared += [m for m in trace.metrics if m.name not in {d.name for d in declared}]
        several = len(families) > 1
        for row, (family, metrics) in enumerate(families.items(), start=1):
            for col, group in enumerate(metric_groups(metrics)):
                names = " \u00b7 ".join(metric_title(m.name, m) for m in group)
                unit = group[0].unit if group[0].display not in BOUNDED else ""
                title = self.tr("Validation {metrics}").format(metrics=names) + (f" ({unit})" if unit else "")
                if several:
                    title = (family or self.tr("other")) + ": " + title
                plot = self.view.addPlot(row=row, col=col, title=title, axisItems=self._axes(EpochAxis))
                plot.setLabel("bottom", self.tr("epoch"))
                # a classifier's accuracy and F1 on 0..1, as before; anything else (an R\u00b2 below 0,
                # a percentage error above 100%) ranges itself
                if group[0].display in BOUNDED and family in ("classification", "multilabel"):
                    plot.setYRange(0, 1, padding=0.02)
                    plot.enableAutoRange(y=False)
                self.metric_plots.append((family, group, plot))
        self.apply_palette()

    def metric_plot_titles(self) -> list[str]:
        """The titles of the metric plots, a row per family (what tests and screenshots read)."""
        return [plot.titleLabel.text for _, _, plot in self.metric_plots] if self._plots_built else []

    def _log_scale_toggled(self, on: bool) -> None:
        if self._plots_built:
            self.loss_plot.setLogMode(y=on)
            self.loss_plot.enableAutoRange()

    def plots(self) -> list[Any]:
        if not self._plots_built:
            return []
        return [self.loss_plot, self.lr_plot, *(plot for _, _, plot in self.metric_plots)]

    def apply_palette(self) -> None:
        if not self._plots_built:
            return
        from trainlab_desktop.plots.axes import grid_below

        palette = self.palette()
        background = palette.color(QPalette.ColorRole.Base)
        foreground = palette.color(QPalette.ColorRole.Text)
        self.view.setBackground(background)
        for plot in self.plots():
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

    # -- runs ---------------------------------------------------------------------
    def show_runs(self, run_dirs: Sequence[str]) -> None:
        """Show these runs (one: its curves; several: overlaid); [] clears."""
        run_dirs = list(dict.fromkeys(str(d) for d in run_dirs))
        if [t.run_dir for t in self.traces] == run_dirs:
            self.poll()
            return
        for trace in self.traces:
            for item in trace.items.values():
                item.getViewBox() and item.getViewBox().removeItem(item)
        self.traces = [RunTrace(d, RUN_COLORS[i % len(RUN_COLORS)]) for i, d in enumerate(run_dirs)]
        self.empty.setVisible(not self.traces)
        if not self.traces:
            self.legend.clear()
            self.log_scale.setVisible(False)
            if self._plots_built:
                self.view.setVisible(False)
            self.timer.stop()
            return
        self._build_plots()
        self._build_metric_plots()
        self.view.setVisible(True)
        self.log_scale.setVisible(True)
        single = len(self.traces) == 1
        pg = self._pg
        for trace in self.traces:
            color = QColor(trace.color)
            if single:
                faint = QColor(color)
                faint.setAlpha(70)
                trace.items["raw"] = self._curve(self.loss_plot, pg.mkPen(faint, width=1))
            trace.items["smooth"] = self._curve(self.loss_plot, pg.mkPen(color, width=2))
            trace.items["val_loss"] = self.loss_plot.plot(
                [], [], pen=pg.mkPen(color, width=2, style=Qt.PenStyle.DashLine), symbol="o", symbolSize=6,
                symbolBrush=color, symbolPen=color,
            )
            for family, group, plot in self.metric_plots:
                if family != (trace.family or ""):
                    continue
                for index, metric in enumerate(group):
                    if metric.name not in {m.name for m in trace.metrics}:
                        continue
                    style = Qt.PenStyle.SolidLine if index == 0 else Qt.PenStyle.DashLine
                    width = 3 if metric.name == trace.monitor else 2
                    symbol = SYMBOLS[index % len(SYMBOLS)]
                    trace.items[metric.name] = plot.plot(
                        [], [], pen=pg.mkPen(color, width=width, style=style), symbol=symbol, symbolSize=6, symbolBrush=color, symbolPen=color
                    )
            trace.items["lr"] = self._curve(self.lr_plot, pg.mkPen(color, width=2))
        self._update_legend()
        self.poll(force=True)
        for plot in self.plots():
            plot.enableAutoRange(x=True)
        self.loss_plot.enableAutoRange()
        self.lr_plot.enableAutoRange()

    def _curve(self, plot, pen):
        item = plot.plot([], [], pen=pen)
        item.setDownsampling(auto=True, method="peak")
        item.setClipToView(True)
        return item

    def _update_legend(self) -> None:
        parts = []
        for trace in self.traces:
            state = "" if trace.finished else " " + self.tr("(live)")
            if trace.problem:  # a damaged run.json: its curves still show, the reason beside them
                state += f" <i>({_html(trace.problem)})</i>"
            parts.append(
                f'<span style="color:{trace.color}; font-size:14pt">\u25a0</span>&nbsp;{_html(trace.title)}{state}'
            )
        if len(self.traces) == 1:
            parts.append(self.tr("solid: training loss (smoothed), dashed: validation loss"))
        self.legend.setText("&nbsp;&nbsp;&nbsp;".join(parts))

    def poll(self, force: bool = False) -> bool:
        """Read new events of every shown run; redraw the ones that changed."""
        drawn = False
        for trace in self.traces:
            if (trace.poll() or force) and self._plots_built:
                self._draw(trace)
                drawn = True
        live = any(not t.finished for t in self.traces)
        if live and not self.timer.isActive():
            self.timer.start()
        elif not live:
            self.timer.stop()
        if drawn:
            self._update_legend()
            self.updated.emit()
        return drawn

    def _draw(self, trace: RunTrace) -> None:
        train, evals = trace.curves.train, trace.curves.evals
        if trace.seen.get("train") != train.version:
            trace.seen["train"] = train.version
            step = train.column("step")
            connect = "finite" if train.nonfinite else "all"
            if "raw" in trace.items:
                trace.items["raw"].setData(step, train.column("loss"), connect=connect)
            trace.items["smooth"].setData(step, train.column("smooth"), connect=connect)
            trace.items["lr"].setData(step, train.column("lr"), connect=connect)
        if trace.seen.get("evals") != evals.version:
            trace.seen["evals"] = evals.version
            losses = evals.column("loss")
            if any(map(math.isfinite, losses)):
                trace.items["val_loss"].setData(evals.column("step"), losses, connect="finite")
            else:  # no evaluation measured a loss (object detection): no point, not a row of NaN
                trace.items["val_loss"].setData([], [])
            for metric in trace.metrics:
                if metric.name in trace.items:
                    trace.items[metric.name].setData(evals.column("epoch"), trace.curves.eval_values(metric.name), connect="finite")

    def point_counts(self) -> dict[str, dict[str, int]]:
        """Points drawn per run and curve (what tests check)."""
        out = {}
        for trace in self.traces:
            out[trace.run_dir] = {
                name: (0 if item.xData is None else len(item.xData)) for name, item in trace.items.items()
            }
        return out

    def following(self) -> list[str]:
        return [t.run_dir for t in self.traces if not t.finished]


def _html(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

