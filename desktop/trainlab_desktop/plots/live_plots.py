"""Live training plots (pyqtgraph), fed from ``RunCurves`` by a timer.

Imported only after the window is shown (pyqtgraph and numpy cost start-up
time).  Following pyqtgraph's ``scrollingPlots`` example: every curve is
created once; a QTimer at 20 Hz calls ``setData`` on the curves whose buffer
changed since the last refresh, never per batch; curves use peak
downsampling and clip-to-view so 100,000 points draw as a few thousand.

Plots: training loss (raw and smoothed; x axis switchable between step and
time), validation loss per epoch, every metric the run's task declares per
epoch (``metric_plots``: metrics that read alike share a plot, the
monitored one marked at its best epoch), and the learning rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QPushButton, QSlider, QVBoxLayout, QWidget

from trainlab.viewmodel.curves import RunCurves
from trainlab_desktop.common.flow_layout import FlowLayout, group
from trainlab_desktop.plots.axes import ElapsedAxis, EpochAxis, GridAxis, SteadyViewBox, grid_below
from trainlab_desktop.plots.metric_plots import MetricPlots, run_declarations

REFRESH_HZ = 20


@dataclass(frozen=True)
class PlotColors:
    """Colours the live plots use, chosen to read well on the theme's base."""

    background: str
    foreground: str
    grid_alpha: float
    loss_raw: str
    loss_smooth: str
    eval_loss: str
    accuracy: str  # the first declared metric's colour (accuracy, for classification)
    macro_f1: str  # the second's
    lr: str
    metric_extra: tuple[str, ...] = ()  # the colours of further metrics


LIGHT_PLOTS = PlotColors(
    background="#ffffff",
    foreground="#3c4043",
    grid_alpha=0.25,
    loss_raw="#9ec5f0",
    loss_smooth="#1a66c2",
    eval_loss="#d9480f",
    accuracy="#2b8a3e",
    macro_f1="#7048e8",
    lr="#5f6b7a",
    metric_extra=("#c2255c", "#e67700", "#0b7285", "#5c940d"),
)

DARK_PLOTS = PlotColors(
    background="#1e2227",
    foreground="#c9d1d9",
    grid_alpha=0.2,
    loss_raw="#3d5f8a",
    loss_smooth="#6cb6ff",
    eval_loss="#ff922b",
    accuracy="#69db7c",
    macro_f1="#b197fc",
    lr="#adb5bd",
    metric_extra=("#f783ac", "#ffd43b", "#66d9e8", "#a9e34b"),
)


def plot_colors(resolved_theme: str) -> PlotColors:
    return DARK_PLOTS if resolved_theme == "dark" else LIGHT_PLOTS


def _html(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _curve(plot: pg.PlotItem, name: str, smooth: bool = False) -> pg.PlotDataItem:
    """A per-step curve: clipped to the view, downsampled to what the pixels can show.

    A noisy curve keeps its envelope: the lowest and the highest value of each
    pixel column ("peak", one block a pixel, where pyqtgraph's default draws
    five and looks the same).  A ``smooth`` one (a moving average, the
    learning rate) loses nothing at one sample every two pixels, which keeps
    its two-pixel pen cheap: a wide pen leaves the raster engine's fast path,
    and drawn at pyqtgraph's default density it doubled the cost of a repaint.
    """
    if smooth:
        item = plot.plot([], [], name=name, autoDownsampleFactor=0.5)
        item.setDownsampling(auto=True, method="mean")
    else:
        item = plot.plot([], [], name=name, autoDownsampleFactor=1.0)
        item.setDownsampling(auto=True, method="peak")
    item.setClipToView(True)
    return item


class RateAxis(GridAxis):
    """The learning rate's axis: 0, 5e-4, 1e-3 (pyqtgraph's 0.0005, 0.001 did not
    fit the axis of a plot this small, and were cut to "0.00" or left out)."""

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph override
        return [_rate(v * scale) for v in values]


def _rate(value: float) -> str:
    if value == 0 or abs(value) < 1e-12:
        return "0"
    if 1e-2 <= abs(value) < 1e3:
        return f"{value:g}"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _axes(bottom: type[GridAxis], left: type[GridAxis] = GridAxis) -> dict[str, GridAxis]:
    return {"left": left("left"), "bottom": bottom("bottom")}


def _set(item: pg.PlotDataItem, x: np.ndarray, y: np.ndarray, finite: bool) -> None:
    if finite:
        item.setData(x, y, skipFiniteCheck=True)
    else:
        item.setData(x, y, connect="finite")


class LivePlots(QWidget):
    """The curves of the current (or an opened) run."""

    axisChanged = Signal(str)

    def __init__(self, parent: QWidget | None = None, colors: PlotColors = LIGHT_PLOTS):
        super().__init__(parent)
        pg.setConfigOptions(antialias=False, useNumba=False)
        self.curves = RunCurves()
        self.axis = "step"
        self._seen: dict[str, tuple] = {}
        self._colors = colors
        self._no_eval_loss = False  # evaluations came, none with a loss: the plot's title says so

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        bar = FlowLayout(spacing=12)  # wraps in a narrow window
        self.axis_combo = QComboBox(self)
        self.axis_combo.setObjectName("plot_axis")
        self.axis_combo.addItem(self.tr("Step"), "step")
        self.axis_combo.addItem(self.tr("Time"), "time")
        self.axis_combo.setToolTip(self.tr("What the horizontal axis of the loss and learning-rate plots counts"))
        self.axis_combo.currentIndexChanged.connect(lambda _: self.set_axis(self.axis_combo.currentData()))
        self.smoothing = QSlider(Qt.Orientation.Horizontal, self)
        self.smoothing.setRange(0, 99)
        self.smoothing.setValue(90)
        self.smoothing.setFixedWidth(120)
        self.smoothing.setToolTip(self.tr("Smoothing of the training loss (exponential moving average)"))
        self.smoothing_label = QLabel("0.90", self)
        self.smoothing.valueChanged.connect(self._smoothing_changed)
        self.log_scale = QCheckBox(self.tr("Log scale"), self)
        self.log_scale.setToolTip(self.tr("Show the training loss on a logarithmic scale"))
        self.log_scale.toggled.connect(lambda on: self.loss_plot.setLogMode(y=on))
        self.reset_zoom = QPushButton(self.tr("Fit"), self)
        self.reset_zoom.setToolTip(self.tr("Fit every plot to its data again"))
        self.reset_zoom.clicked.connect(self.fit)
        bar.addWidget(group(self, QLabel(self.tr("X axis:"), self), self.axis_combo))
        bar.addWidget(group(self, QLabel(self.tr("Smoothing:"), self), self.smoothing, self.smoothing_label))
        bar.addWidget(self.log_scale)
        bar.addWidget(self.reset_zoom)
        layout.addLayout(bar)

        self.view = pg.GraphicsLayoutWidget(self)
        self.view.setObjectName("live_plots")
        layout.addWidget(self.view, 1)
        # the per-step plots grow every frame of a live run: steady auto-range
        self.loss_plot = self.view.addPlot(row=0, col=0, colspan=3, axisItems=_axes(GridAxis),
                                           viewBox=SteadyViewBox())
        self.eval_loss_plot = self.view.addPlot(row=1, col=0, axisItems=_axes(EpochAxis))
        # the metric plots: as many as the run's metrics need, in the middle column
        self.metrics_layout = self.view.addLayout(row=1, col=1)
        self.metrics_layout.setContentsMargins(0, 0, 0, 0)
        self.lr_plot = self.view.addPlot(row=1, col=2, axisItems=_axes(GridAxis, RateAxis), viewBox=SteadyViewBox())
        self._set_steady(False)
        # room at the right for the last tick label of the bottom axes (400 of 0..400 was cut to "4")
        self.view.ci.setContentsMargins(2, 2, 14, 2)
        for plot in (self.eval_loss_plot, self.lr_plot):  # never squeezed to their axis by the metrics' titles
            plot.setMinimumWidth(self.SIDE_MIN_WIDTH)
        self._narrow = False  # the learning-rate plot on a row of its own (_arrange)
        self.view.ci.layout.setRowStretchFactor(0, 3)
        self.view.ci.layout.setRowStretchFactor(1, 2)
        for plot in (self.loss_plot, self.eval_loss_plot, self.lr_plot):
            plot.setMenuEnabled(True)
            plot.getViewBox().setMouseEnabled(x=True, y=True)
        # no legend: in the plot it covered the curves; the title names the
        # two curves in their colours (apply_colors)
        self.eval_loss_plot.setLabel("bottom", self.tr("epoch"))

        self.loss_raw = _curve(self.loss_plot, self.tr("loss"))
        self.loss_smooth = _curve(self.loss_plot, self.tr("smoothed"), smooth=True)
        self.eval_loss = self.eval_loss_plot.plot([], [], symbol="o", symbolSize=6)
        self.best_loss = self.eval_loss_plot.plot([], [], pen=None, symbol="star", symbolSize=14)  # monitor=loss
        self.metrics = MetricPlots(self.metrics_layout, colors, self.tr("epoch"))
        self.lr = _curve(self.lr_plot, self.tr("learning rate"), smooth=True)
        self._colors = colors
        self.apply_colors(colors)
        self._update_axis_labels()

        self.timer = QTimer(self)
        self.timer.setInterval(1000 // REFRESH_HZ)
        self.timer.timeout.connect(self.refresh)

    # -- arrangement -----------------------------------------------------------
    NARROW_WIDTH = 600  # under it, three plots side by side are too small to read
    SIDE_MIN_WIDTH = 128  # the validation loss and learning rate beside the metrics (their axis and a readable curve)
    WIDE_MIN_HEIGHT, NARROW_MIN_HEIGHT = 320, 480

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._arrange(self._too_narrow(event.size().width()))

    def _too_narrow(self, width: int) -> bool:
        """Whether the plots' second row cannot hold its three plots side by side at ``width``:
        under ``NARROW_WIDTH``, or less than the metrics' titles and the two other plots need."""
        if width < self.NARROW_WIDTH:
            return True
        metrics = self.metrics_layout.effectiveSizeHint(Qt.SizeHint.MinimumSize).width()
        grid = self.view.ci.layout
        left, _top, right, _bottom = grid.getContentsMargins()
        sides = sum(max(self.SIDE_MIN_WIDTH, plot.titleLabel.item.boundingRect().width()) for plot in (self.eval_loss_plot, self.lr_plot))
        needed = metrics + sides + left + right + 2 * grid.horizontalSpacing()
        # a little slack once wide, so a title a character longer does not flip the arrangement back and forth
        return width < needed + (0 if self._narrow else 8)

    def _arrange(self, narrow: bool) -> None:
        """Wide: validation loss, the metrics and the learning rate side by side
        under the training loss.  Narrow: the metrics on a row of their own (their
        title names each one), validation loss and learning rate under them, and
        the plots taller (the pane scrolls)."""
        if narrow == self._narrow:
            return
        self._narrow = narrow
        grid = self.view.ci
        for item in (self.loss_plot, self.eval_loss_plot, self.metrics_layout, self.lr_plot):
            grid.removeItem(item)
        if narrow:
            grid.addItem(self.loss_plot, row=0, col=0, colspan=2)
            grid.addItem(self.metrics_layout, row=1, col=0, colspan=2)
            grid.addItem(self.eval_loss_plot, row=2, col=0)
            grid.addItem(self.lr_plot, row=2, col=1)
        else:
            grid.addItem(self.loss_plot, row=0, col=0, colspan=3)
            grid.addItem(self.eval_loss_plot, row=1, col=0)
            grid.addItem(self.metrics_layout, row=1, col=1)
            grid.addItem(self.lr_plot, row=1, col=2)
        grid.layout.setRowStretchFactor(2, 2 if narrow else 0)
        self.setMinimumHeight(self.NARROW_MIN_HEIGHT if narrow else self.WIDE_MIN_HEIGHT)

    # -- appearance ----------------------------------------------------------
    def apply_colors(self, colors: PlotColors) -> None:
        self._colors = colors
        self._colors = colors
        self.view.setBackground(colors.background)
        for plot in (self.loss_plot, self.eval_loss_plot, self.lr_plot):
            for name in ("left", "bottom"):
                axis = plot.getAxis(name)
                axis.setPen(colors.foreground)
                axis.setTextPen(colors.foreground)
            grid_below(plot, colors.background, colors.grid_alpha)
        title, raw, smooth = self.tr("Training loss"), self.tr("loss"), self.tr("smoothed")
        raw = f"<span style='color:{colors.loss_raw}'>\u2014 {_html(raw)}</span>"
        smooth = f"<span style='color:{colors.loss_smooth}'><b>\u2014</b> {_html(smooth)}</span>"
        self.loss_plot.setTitle(f"<span style='color:{colors.foreground}'>{_html(title)}</span>&nbsp;&nbsp;&nbsp;{raw}&nbsp;&nbsp;{smooth}")
        self._title_eval_loss()
        self.lr_plot.setTitle(self.tr("Learning rate"), color=colors.foreground)
        self.metrics.apply_colors(colors)
        self._draw_metrics()
        self.loss_raw.setPen(pg.mkPen(colors.loss_raw, width=1))
        self.loss_smooth.setPen(pg.mkPen(colors.loss_smooth, width=2))
        self.eval_loss.setPen(pg.mkPen(colors.eval_loss, width=2))
        self.eval_loss.setSymbolBrush(colors.eval_loss)
        self.eval_loss.setSymbolPen(colors.eval_loss)
        self.best_loss.setSymbolBrush("#f2c94c")
        self.best_loss.setSymbolPen(colors.foreground)
        self.lr.setPen(pg.mkPen(colors.lr, width=2))

    # -- data ----------------------------------------------------------------
    def reset(self, curves: RunCurves | None = None) -> None:
        """Show ``curves`` (a new, empty set by default)."""
        self.curves = curves if curves is not None else RunCurves(self.smoothing.value() / 100)
        # The plots keep the last declarations until the run says its own
        # (show_run_metrics): rebuilding them here and again then would stall
        # the GUI thread twice at every Start of a non-classification task.
        self.metrics.clear()
        self._seen.clear()
        if self._no_eval_loss:
            self._no_eval_loss = False
            self._title_eval_loss()
        self.refresh()
        self.fit()

    def show_metrics(self, metrics, monitor: str) -> None:
        """Draw these declared metrics (``trainlab.Metric``), ``monitor`` marked at its best epoch."""
        self.metrics.declare(metrics, monitor)
        self._seen.pop("evals", None)
        self.refresh()

    def _title_eval_loss(self) -> None:
        """"Validation loss", or that it is not measured once the task's evaluations came without one."""
        title = self.tr("Validation loss: not measured") if self._no_eval_loss else self.tr("Validation loss")
        self.eval_loss_plot.setTitle(title, color=self._colors.foreground)
        if self.isVisible():  # a wider title: do the three plots still fit side by side?
            self._arrange(self._too_narrow(self.width()))

    def holds_run(self) -> bool:
        """Whether a run's curves are shown (a step or an evaluation drawn)."""
        return len(self.curves.train) > 0 or len(self.curves.evals) > 0

    def show_run_metrics(self, run_dir: str, task: str) -> None:
        """Draw the metrics the run in ``run_dir`` declares (its run.json, else its installed task)."""
        metrics, monitor = run_declarations(run_dir, task)
        self.show_metrics(metrics, monitor)

    def start_live(self) -> None:
        self._set_steady(True)
        self.timer.start()

    def stop_live(self) -> None:
        self.timer.stop()
        self.refresh()
        self._set_steady(False)  # the finished curves fit their plots exactly

    def _set_steady(self, steady: bool) -> None:
        for plot in (self.loss_plot, self.lr_plot):
            plot.getViewBox().set_steady(steady)

    def set_axis(self, axis: str) -> None:
        if axis not in ("step", "time") or axis == self.axis:
            return
        self.axis = axis
        index = self.axis_combo.findData(axis)
        if index != self.axis_combo.currentIndex():
            self.axis_combo.setCurrentIndex(index)
        self._update_axis_labels()
        self._seen.clear()
        self.refresh()
        self.loss_plot.enableAutoRange()
        self.lr_plot.enableAutoRange()
        self.axisChanged.emit(axis)

    def _update_axis_labels(self) -> None:
        for plot in (self.loss_plot, self.lr_plot):
            if self.axis == "time":
                plot.setAxisItems({"bottom": ElapsedAxis("bottom")})
                plot.setLabel("bottom", self.tr("time"))
            else:
                plot.setAxisItems({"bottom": GridAxis("bottom")})
                plot.setLabel("bottom", self.tr("step"))
            axis = plot.getAxis("bottom")
            axis.setPen(self._colors.foreground)
            axis.setTextPen(self._colors.foreground)
            grid_below(plot, self._colors.background, self._colors.grid_alpha)

    def _smoothing_changed(self, value: int) -> None:
        weight = value / 100
        self.smoothing_label.setText(f"{weight:.2f}")
        self.curves.set_smoothing(weight)
        self.refresh()

    def fit(self) -> None:
        for plot in (self.loss_plot, self.eval_loss_plot, self.lr_plot):
            plot.enableAutoRange()
        for plot in self.metrics.plots:
            plot.enableAutoRange(x=True)

    def refresh(self) -> bool:
        """Push changed buffers to their curves; True when something was drawn."""
        drawn = False
        train = self.curves.train
        key = (train.version, self.axis)
        if self._seen.get("train") != key:
            self._seen["train"] = key
            x = train.column(self.axis)
            finite = not train.nonfinite
            _set(self.loss_raw, x, train.column("loss"), finite)
            _set(self.loss_smooth, x, train.column("smooth"), finite)
            _set(self.lr, x, train.column("lr"), finite)
            drawn = True
        evals = self.curves.evals
        if self._seen.get("evals") != evals.version:
            self._seen["evals"] = evals.version
            losses = evals.column("loss")
            measured = bool(np.isfinite(losses).any())
            if measured:
                self.eval_loss.setData(evals.column("epoch"), losses, connect="finite")
            else:  # no evaluation measured a loss (object detection): no point, not a row of NaN
                self.eval_loss.setData([], [])
            if self._no_eval_loss != (len(evals) > 0 and not measured):
                self._no_eval_loss = not self._no_eval_loss
                self._title_eval_loss()
            self._draw_metrics()
            drawn = True
        return drawn

    def _draw_metrics(self) -> None:
        self.metrics.draw(self.curves, self.tr("best"), self.tr("last"))
        if self.isVisible():  # the titles' widths changed: do the three still fit side by side?
            self._arrange(self._too_narrow(self.width()))
        evals = self.curves.evals
        best = evals.column("best") > 0.5
        if self.metrics.monitored == "loss" and best.any():
            index = int(np.flatnonzero(best)[-1])
            self.best_loss.setData([evals.column("epoch")[index]], [evals.column("loss")[index]])
        else:
            self.best_loss.setData([], [])

    def point_counts(self) -> dict[str, int]:
        """How many points each curve holds (what the tests check)."""
        return {
            "loss": len(self.loss_raw.xData) if self.loss_raw.xData is not None else 0,
            "eval": len(self.eval_loss.xData) if self.eval_loss.xData is not None else 0,
            "lr": len(self.lr.xData) if self.lr.xData is not None else 0,
        }

    def metric_points(self) -> dict[str, int]:
        """How many points each metric's curve holds, by metric name."""
        return self.metrics.point_counts()

    @property
    def accuracy_plot(self):
        """The first metric plot (accuracy and macro F1, for classification)."""
        return self.metrics.plots[0]
