"""The live plots' validation metrics: every metric the run's task declares.

Metrics that read alike share a plot: the bounded ones (``percent`` and
``score`` displays: accuracy, F1, R^2) in one, each other display (errors in
the target's units, counts, a plugin's own format) in its own, so that an MAE
of 40 never flattens an R^2 of 0.9.  Each plot's title names its metrics, in
their colours, with the latest value in the metric's display form; the
monitored metric is drawn thicker, its title in bold, and a star marks it at
the best epoch.

What a run declares comes from its ``run.json`` (``declared_metrics`` and the
``monitor`` parameter, as the engine recorded them), else from the installed
task; a run that declares nothing shows whatever metrics its evaluations
carry, and before any run the plots show the chosen task's (the Train page
declares them), else the classification family's.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from trainlab.api.descriptors import FAMILY_METRICS, Metric
from trainlab.api.errors import UsageError
from trainlab.runfolder.display import metric_kind
from trainlab.runfolder.index import RunDir
from trainlab.viewmodel.results import recorded_declarations, task_spec
from trainlab_desktop.common.formatting import format_metric, metric_title
from trainlab_desktop.plots.axes import EpochAxis, GridAxis, HeadroomRange, grid_below

BOUNDED = ("percent", "score")
SYMBOLS = ("o", "t", "s", "d", "+", "x")
TITLE_METRICS_PER_LINE = 2
STAR_SIZE = 14  # pixels; a bounded plot keeps half of it and a little more above 1.0
DEFAULT_METRICS, DEFAULT_MONITOR = FAMILY_METRICS["classification"]


def metric_groups(metrics: Sequence[Metric]) -> list[list[Metric]]:
    """The metrics split into plots: the bounded ones together, then one plot per other display."""
    groups: dict[str, list[Metric]] = {}
    for metric in metrics:
        key = "bounded" if metric.display in BOUNDED else metric.display
        groups.setdefault(key, []).append(metric)
    return list(groups.values())


def _drawn_as(metrics: Sequence[Metric]) -> list[tuple[str, str, str]]:
    """What of each metric the plots show (a run.json's declarations carry no help text)."""
    return [(m.name, m.title, m.display) for m in metrics]


def run_declarations(run_dir: str, task: str) -> tuple[tuple[Metric, ...], str]:
    """The metrics and monitor of the run in ``run_dir`` (of task ``task``):
    as its run.json recorded them, else as the installed task declares them."""
    metrics: tuple[Metric, ...] = ()
    monitor = ""
    try:
        record = RunDir(run_dir).read_record() if run_dir else None
    except (UsageError, OSError):
        record = None
    if record is not None:
        _, metrics = recorded_declarations(record)
        chosen = record.parameters.get("monitor")
        monitor = chosen if isinstance(chosen, str) else ""
        task = task or record.task
    spec = task_spec(task) if not metrics or not monitor else None
    if spec is not None:
        metrics = metrics or spec.metric_specs()
        monitor = monitor or spec.default_monitor()
    return tuple(metrics), monitor


class MetricPlots:
    """One plot per group of metrics, in a row of the live plots' layout."""

    def __init__(self, layout: Any, colors: Any, epoch_label: str = "epoch") -> None:
        self.layout = layout  # a pg.GraphicsLayout inside the live plots' view
        self.colors = colors
        self.epoch_label = epoch_label
        self.declared: tuple[Metric, ...] = ()  # what the run declares (empty: not known)
        self.monitor = ""
        self.shown: tuple[Metric, ...] = ()
        self.plots: list[Any] = []
        self.groups: list[list[Metric]] = []
        self.curves: dict[str, Any] = {}
        self.best: Any = None  # the star on the monitored metric
        self.ranges: dict[int, HeadroomRange] = {}  # plot index -> the 0..1 range of a bounded plot
        self._build(DEFAULT_METRICS)

    # -- what to draw -------------------------------------------------------------
    def declare(self, metrics: Sequence[Metric], monitor: str) -> None:
        """The run's declared metrics and monitor (none: draw what the evaluations carry)."""
        self.declared = tuple(metrics)
        self.monitor = monitor
        wanted = self.declared or DEFAULT_METRICS
        if _drawn_as(wanted) != _drawn_as(self.shown) or self._built_monitor != self.monitored:
            self._build(wanted)
        else:
            # The same plots: a rebuild (new pyqtgraph PlotItems) is the largest
            # stall of the GUI thread at a run's start (bench/gui_latency.py).
            self.clear()

    def _wanted(self, seen: Sequence[str]) -> tuple[Metric, ...]:
        if self.declared:
            known = {m.name for m in self.declared}
            return self.declared + tuple(Metric(n, display=_display(n)) for n in seen if n not in known)
        if seen:
            defaults = {m.name: m for m in DEFAULT_METRICS}
            return tuple(defaults.get(n) or Metric(n, display=_display(n)) for n in seen)
        return DEFAULT_METRICS

    @property
    def monitored(self) -> str:
        return self.monitor or (DEFAULT_MONITOR if not self.declared else "")

    # -- plots ---------------------------------------------------------------------
    def _build(self, metrics: Sequence[Metric]) -> None:
        self.layout.clear()
        self.plots, self.curves, self.best, self.ranges = [], {}, None, {}
        self.shown = tuple(metrics)
        self._built_monitor = self.monitored
        self.groups = metric_groups(self.shown)
        for column, group in enumerate(self.groups):
            plot = self.layout.addPlot(row=0, col=column, axisItems={"left": GridAxis("left"), "bottom": EpochAxis("bottom")})
            plot.setMenuEnabled(True)
            plot.setLabel("bottom", self.epoch_label)
            if all(m.display in BOUNDED for m in group):
                # 0..1 with room above 1.0 for the whole star (a perfect score sat on the edge, half cut off)
                self.ranges[column] = HeadroomRange(plot, 0, 1, top_px=STAR_SIZE / 2 + 3, bottom_px=3)
            self.plots.append(plot)
            for metric in group:
                self.curves[metric.name] = plot.plot([], [])
            if any(m.name == self.monitored for m in group):
                self.best = plot.plot([], [], pen=None, symbol="star", symbolSize=STAR_SIZE)
        self.apply_colors(self.colors)

    def clear(self) -> None:
        """No data in the plots, which stay as they are."""
        for curve in self.curves.values():
            curve.setData([], [])
        if self.best is not None:
            self.best.setData([], [])

    def color(self, name: str) -> str:
        palette = (self.colors.accuracy, self.colors.macro_f1, *self.colors.metric_extra)
        index = next((i for i, m in enumerate(self.shown) if m.name == name), 0)
        return palette[index % len(palette)]

    def apply_colors(self, colors: Any) -> None:
        self.colors = colors
        for plot in self.plots:
            for side in ("left", "bottom"):
                axis = plot.getAxis(side)
                axis.setPen(colors.foreground)
                axis.setTextPen(colors.foreground)
            grid_below(plot, colors.background, colors.grid_alpha)
        for index, metric in enumerate(self.shown):
            color = self.color(metric.name)
            curve = self.curves[metric.name]
            width = 3 if metric.name == self.monitored else 2
            style = Qt.PenStyle.SolidLine if index % 2 == 0 else Qt.PenStyle.DashLine
            curve.setPen(pg.mkPen(color, width=width, style=style))
            curve.setSymbol(SYMBOLS[index % len(SYMBOLS)])
            curve.setSymbolSize(6)
            curve.setSymbolBrush(color)
            curve.setSymbolPen(color)
        if self.best is not None:
            self.best.setSymbolBrush("#f2c94c")
            self.best.setSymbolPen(colors.foreground)

    # -- data ----------------------------------------------------------------------
    def draw(self, curves: Any, best_label: str, last_label: str = "last") -> None:
        """Every shown metric's values per epoch, the best epoch; the titles say the last epoch's
        value (``last_label``) and, beside the star, the monitored metric's best (``best_label``)."""
        wanted = self._wanted(curves.metric_names())
        if [m.name for m in wanted] != [m.name for m in self.shown]:
            self._build(wanted)
        epoch = curves.evals.column("epoch")
        latest: dict[str, float | None] = {}
        best_value = self._best_value(curves)
        for index, (plot, group) in enumerate(zip(self.plots, self.groups)):
            held = self.ranges.get(index)
            outside = False
            for metric in group:
                values = curves.eval_values(metric.name)
                self.curves[metric.name].setData(epoch, values, connect="finite")
                finite = values[np.isfinite(values)]
                latest[metric.name] = float(finite[-1]) if finite.size else None
                outside = outside or bool(finite.size and (finite.min() < 0 or finite.max() > 1))
            if held is not None:  # an R^2 below 0 early on: show it rather than clip it
                if outside:
                    held.release()
                else:
                    held.hold()
            self._title(plot, group, latest, best_label, last_label, best_value)
        if self.best is not None:
            best = curves.evals.column("best") > 0.5
            values = curves.eval_values(self.monitored)
            if best.any():
                index = int(np.flatnonzero(best)[-1])
                self.best.setData([epoch[index]], [values[index]])
            else:
                self.best.setData([], [])

    def _best_value(self, curves: Any) -> float | None:
        """The monitored metric's value at its best epoch (None before one)."""
        if self.best is None or not self.monitored:
            return None
        best = curves.evals.column("best") > 0.5
        if not best.any():
            return None
        value = float(curves.eval_values(self.monitored)[int(np.flatnonzero(best)[-1])])
        return value if np.isfinite(value) else None

    def _title(
        self, plot: Any, group: list[Metric], latest: dict[str, float | None], best_label: str, last_label: str, best_value: float | None
    ) -> None:
        parts = []
        monitored = None
        for metric in group:
            text = _html(metric_title(metric.name, metric))
            if latest.get(metric.name) is not None:  # the last epoch's, said so: the run's result is its best
                text += f" {_html(last_label)} " + _html(format_metric(metric.name, latest[metric.name], metric))
            if metric.name == self.monitored:
                monitored = metric
                text = f"<b>{text}</b>"
            parts.append(f"<span style='color:{self.color(metric.name)}'>{text}</span>")
        separator = f"<span style='color:{self.colors.foreground}'> \u00b7 </span>"
        # two metrics a line: four of them with their values on one line (object detection's
        # mAPs and recall) are wider than the pane, and a title's width is its plot's least width
        lines = [parts[i : i + TITLE_METRICS_PER_LINE] for i in range(0, len(parts), TITLE_METRICS_PER_LINE)]
        title = "<br>".join(separator.join(line) for line in lines)
        if monitored is not None:
            # as precise as the run's "Finished:" line, which states the same best; on a
            # line of its own beside other metrics: a title's width is its plot's least
            # width, and one line of it all squeezed the plot beside it to its axis
            best = f" {_html(format_metric(monitored.name, best_value, monitored, detail=True))}" if best_value is not None else ""
            title += "<br>" if len(group) > 1 else separator
            title += f"<span style='color:{self.colors.foreground}'>\u2605 {_html(best_label)}{best}</span>"
        plot.setTitle(title)

    def point_counts(self) -> dict[str, int]:
        return {name: 0 if c.xData is None else len(c.xData) for name, c in self.curves.items()}

    def titles(self) -> list[str]:
        """Each plot's title as plain text (what tests read)."""
        import re

        return [re.sub(r"<[^>]+>", "", p.titleLabel.text.replace("<br>", " \u00b7 ")).replace("&amp;", "&").replace("&lt;", "<")
                for p in self.plots]


def _display(name: str) -> str:
    return metric_kind(name)


def _html(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
